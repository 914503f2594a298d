"""A LeRobot v3 dataset on disk, written from LeRobot's published v3 layout (lerobot 0.6 needs
Python 3.12 and does not install here, so its writer cannot be used).

Layout written (LeRobot v3.0, lerobot/datasets/utils.py and lerobot_dataset.py):
``meta/info.json``, ``meta/stats.json`` (the cameras'), ``meta/tasks.parquet`` (tasks as the
pandas index, ``task_index``),
``meta/episodes/chunk-000/file-000.parquet``, ``data/chunk-000/file-000.parquet`` (per frame),
``videos/<camera>/chunk-000/file-000.mp4``: every episode of a camera in one MP4, episode ``e``
from ``from_timestamp`` to ``to_timestamp``. Videos are AV1 (libsvtav1, LeRobot's default
codec) when this PyAV can encode it, else H.264.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hf_lvf.write.synthetic import synthetic_frames

FPS = 10
TASKS = ["pick the cube", "place the cube"]


def _codec() -> str:
    return "libsvtav1" if "libsvtav1" in av.codecs_available else "libx264"


def write_camera(path: Path, frames: list[np.ndarray], size: int = 64) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(_codec(), rate=FPS)
        stream.width, stream.height, stream.pix_fmt = size, size, "yuv420p"
        stream.codec_context.time_base = Fraction(1, FPS)
        for i, array in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(array, format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, FPS)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_lerobot(
    root: Path,
    lengths=(5, 7, 4),
    cameras=("observation.images.top",),
    size: int = 64,
    split: int | None = None,
) -> dict[str, np.ndarray]:
    """Write the dataset; returns its per-frame columns (all episodes, in order).

    ``split``: episodes from this one on go to a second data file and a second video file
    per camera (``file-001``), their ``from_timestamp`` counted from that file's start, as
    LeRobot starts a new file when one reaches its size limit."""
    total = sum(lengths)
    rng = np.random.default_rng(0)
    episode = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.cumsum([0, *lengths[:-1]])
    frame_index = np.concatenate([np.arange(n) for n in lengths])
    columns = {
        "observation.state": rng.standard_normal((total, 6)).astype(np.float32),
        "action": rng.standard_normal((total, 6)).astype(np.float32),
        "timestamp": (frame_index / FPS).astype(np.float32),
        "frame_index": frame_index.astype(np.int64),
        "episode_index": episode.astype(np.int64),
        "index": np.arange(total, dtype=np.int64),
        "task_index": (episode % 2).astype(np.int64),
    }

    def arrow(values: np.ndarray) -> pa.Array:
        if values.ndim == 2:
            return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), 6)
        return pa.array(values)

    n = len(lengths)
    split = n if split is None else split
    file_of = np.array([0 if e < split else 1 for e in range(n)])
    first_row = int(starts[split]) if split < n else int(total)
    (root / "data/chunk-000").mkdir(parents=True)
    table = pa.table({k: arrow(v) for k, v in columns.items()})
    for f, rows in enumerate([(0, first_row), (first_row, int(total))]):
        if rows[1] > rows[0]:
            pq.write_table(
                table.slice(rows[0], rows[1] - rows[0]),
                root / f"data/chunk-000/file-{f:03d}.parquet",
            )
    # Each episode's start within its video file.
    in_file = starts - np.where(file_of == 1, first_row, 0)
    features = {
        "observation.state": {"dtype": "float32", "shape": [6], "names": None},
        "action": {"dtype": "float32", "shape": [6], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
    }
    episodes: dict[str, list] = {
        "episode_index": list(range(len(lengths))),
        "tasks": [[TASKS[e % 2]] for e in range(len(lengths))],
        "length": list(lengths),
        "data/chunk_index": [0] * len(lengths),
        "data/file_index": file_of.tolist(),
        "dataset_from_index": starts.tolist(),
        "dataset_to_index": (starts + np.array(lengths)).tolist(),
    }
    stats: dict[str, dict[str, list]] = {}
    for c, camera in enumerate(cameras):
        features[camera] = {
            "dtype": "video",
            "shape": [size, size, 3],
            "names": ["height", "width", "channels"],
        }
        # One synthetic sequence cut in two: frame i of the dataset is frame i of the stream.
        frames = list(synthetic_frames(total, size, size, seed=c + 1))
        # meta/stats.json's entry, as LeRobot writes a camera's: per channel, (3, 1, 1), of
        # pixels in [0, 1] (LeRobot samples and shrinks frames first: these are whole).
        pixels = np.stack(frames).astype(np.float64).reshape(-1, 3) / 255
        stats[camera] = {
            "mean": pixels.mean(0).reshape(3, 1, 1).tolist(),
            "std": pixels.std(0).reshape(3, 1, 1).tolist(),
            "min": pixels.min(0).reshape(3, 1, 1).tolist(),
            "max": pixels.max(0).reshape(3, 1, 1).tolist(),
            "count": [total],
        }
        for f, rows in enumerate([(0, first_row), (first_row, int(total))]):
            if rows[1] > rows[0]:
                path = root / f"videos/{camera}/chunk-000/file-{f:03d}.mp4"
                write_camera(path, frames[rows[0] : rows[1]], size)
        episodes[f"videos/{camera}/chunk_index"] = [0] * len(lengths)
        episodes[f"videos/{camera}/file_index"] = file_of.tolist()
        episodes[f"videos/{camera}/from_timestamp"] = (in_file / FPS).tolist()
        episodes[f"videos/{camera}/to_timestamp"] = ((in_file + np.array(lengths)) / FPS).tolist()
    (root / "meta/episodes/chunk-000").mkdir(parents=True)
    pq.write_table(pa.table(episodes), root / "meta/episodes/chunk-000/file-000.parquet")
    pd.DataFrame({"task_index": [0, 1]}, index=TASKS).to_parquet(root / "meta/tasks.parquet")
    info = {
        "codebase_version": "v3.0",
        "robot_type": "test",
        "total_episodes": len(lengths),
        "total_frames": total,
        "total_tasks": len(TASKS),
        "chunks_size": 1000,
        "fps": FPS,
        "splits": {"train": f"0:{len(lengths)}"},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
        "features": features,
    }
    (root / "meta/info.json").write_text(json.dumps(info, indent=2))
    (root / "meta/stats.json").write_text(json.dumps(stats, indent=2))
    return columns
