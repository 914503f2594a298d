"""A LeRobot 2-camera training sample (issue 46): through hf_lvf, and as LeRobot reads it from
its MP4s (PyAV: open, seek to the keyframe before, decode to the last frame asked for).

The dataset is written in LeRobot v3's layout by this script (``meta/info.json``, the
episodes', tasks' and data parquet files, one MP4 per camera holding every episode), its
videos encoded as LeRobot encodes them: AV1 (libsvtav1) where this PyAV has it, else H.264,
yuv420p, a keyframe every 2 frames (LeRobot's ``g=2``, which keeps its seeks short), CRF 30.
``hf_lvf.convert.convert_videos`` converts it to a root (JPEG q90; each camera a stream).

A sample is a diffusion-policy's: both cameras at ``[-0.1, 0.0]`` s, ``observation.state``
at the same, and ``action`` at 16 steps ``[0.0, 0.1, ..., 1.5]`` s, at random indices:

- **LeRobot's read (PyAV)**: per sample and camera, the MP4 opened, a seek to the first
  time asked for (the keyframe before it), frames decoded until the last, the closest to
  each time kept, as float32 ``(K, C, H, W)`` in [0, 1]; the fields sliced from the data
  table in memory (LeRobot's ``hf_dataset``), padded at the episode's edges;
- **hf_lvf**: ``hf_lvf.LeRobotWindows(root, delta_timestamps=...)``: ``ds[i]`` one at a time,
  and ``safe_dataloader(ds, shuffle=True, batch_size=8, num_workers=0)`` (which reads ahead
  of its known order);
- **the limit**: the JPEG frames a sample needs (2 cameras x 2 times), decoded once each on
  every core (the per-frame decode time, measured here, over the cores).

The pixels of both reads are compared (PSNR: the JPEG of the conversion against the decoded
video) so that both read the same sample. One run, the ratios taken within it.

    python benchmarks/bench_lerobot.py            # 6 episodes x 80 frames of 240x320
    python benchmarks/bench_lerobot.py --quick    # 2 episodes x 12 frames of 48x64: a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import av
import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import hf_lvf
from hf_lvf.convert import convert_videos
from hf_lvf.decode import decode_frame
from hf_lvf.write.synthetic import synthetic_frames

FPS = 10
CAMERAS = ("observation.images.top", "observation.images.wrist")
IMAGE_DELTAS = [-0.1, 0.0]
ACTION_DELTAS = [round(0.1 * k, 1) for k in range(16)]
TOLERANCE_S = 1e-4
TASK = "pick the cube"


def write_lerobot(folder: Path, lengths: list[int], height: int, width: int) -> dict:
    """LeRobot v3's layout; returns the per-frame columns (dataset order)."""
    total, n = sum(lengths), len(lengths)
    starts = np.cumsum([0, *lengths[:-1]])
    frame_index = np.concatenate([np.arange(k) for k in lengths])
    rng = np.random.default_rng(0)
    columns = {
        "observation.state": rng.standard_normal((total, 6)).astype(np.float32),
        "action": rng.standard_normal((total, 6)).astype(np.float32),
        "timestamp": (frame_index / FPS).astype(np.float32),
        "frame_index": frame_index.astype(np.int64),
        "episode_index": np.repeat(np.arange(n), lengths).astype(np.int64),
        "index": np.arange(total, dtype=np.int64),
        "task_index": np.zeros(total, np.int64),
    }

    def arrow(values: np.ndarray) -> pa.Array:
        if values.ndim == 2:
            return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])
        return pa.array(values)

    (folder / "data/chunk-000").mkdir(parents=True)
    table = pa.table({k: arrow(v) for k, v in columns.items()})
    pq.write_table(table, folder / "data/chunk-000/file-000.parquet")
    (folder / "meta/episodes/chunk-000").mkdir(parents=True)
    episodes = {
        "episode_index": list(range(n)),
        "tasks": [[TASK]] * n,
        "length": list(lengths),
        "data/chunk_index": [0] * n,
        "data/file_index": [0] * n,
        "dataset_from_index": starts.tolist(),
        "dataset_to_index": (starts + np.array(lengths)).tolist(),
    }
    vector = {"dtype": "float32", "shape": [6], "names": None}
    features = {"observation.state": vector, "action": vector}
    for name in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        features[name] = {"dtype": str(columns[name].dtype), "shape": [1], "names": None}
    for c, camera in enumerate(CAMERAS):
        features[camera] = {"dtype": "video", "shape": [height, width, 3], "names": None}
        episodes[f"videos/{camera}/chunk_index"] = [0] * n
        episodes[f"videos/{camera}/file_index"] = [0] * n
        episodes[f"videos/{camera}/from_timestamp"] = (starts / FPS).tolist()
        episodes[f"videos/{camera}/to_timestamp"] = ((starts + np.array(lengths)) / FPS).tolist()
        path = folder / f"videos/{camera}/chunk-000/file-000.mp4"
        write_video(path, synthetic_frames(total, height, width, seed=c + 1), height, width)
    pq.write_table(pa.table(episodes), folder / "meta/episodes/chunk-000/file-000.parquet")
    pq.write_table(pa.table({"task_index": [0], "task": [TASK]}), folder / "meta/tasks.parquet")
    info = {
        "codebase_version": "v3.0",
        "fps": FPS,
        "total_episodes": n,
        "total_frames": total,
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
        "features": features,
    }
    (folder / "meta/info.json").write_text(json.dumps(info, indent=2))
    return columns


def write_video(path: Path, frames, height: int, width: int) -> None:
    """An MP4 as LeRobot encodes one: AV1 (else H.264), yuv420p, g=2, CRF 30."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1's banner: errors only
    codec = "libsvtav1" if "libsvtav1" in av.codecs_available else "libx264"
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=FPS, options={"g": "2", "crf": "30"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for image in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


class PyAVReads:
    """LeRobot's read of a sample: fields from the table in memory, each camera's frames
    decoded from its MP4 after a seek (``decode_video_frames`` with the PyAV backend)."""

    def __init__(self, folder: Path, columns: dict, lengths: list[int]):
        self.folder, self.columns = folder, columns
        self.starts = np.cumsum([0, *lengths])

    def frames(self, camera: str, times: list[float]) -> np.ndarray:
        path = self.folder / f"videos/{camera}/chunk-000/file-000.mp4"
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            first, last = min(times), max(times)
            container.seek(int(first / stream.time_base), stream=stream, backward=True)
            loaded, stamps = [], []
            for frame in container.decode(stream):
                stamps.append(float(frame.pts * stream.time_base))
                loaded.append(frame.to_ndarray(format="rgb24"))
                if stamps[-1] >= last - TOLERANCE_S:
                    break
        stamps = np.asarray(stamps)
        picks = [int(np.argmin(np.abs(stamps - t))) for t in times]
        assert all(abs(stamps[p] - t) < TOLERANCE_S for p, t in zip(picks, times, strict=True))
        frames = np.stack([loaded[p] for p in picks])
        return frames.transpose(0, 3, 1, 2).astype(np.float32) / 255  # (K, C, H, W)

    def __getitem__(self, index: int) -> dict:
        episode = int(np.searchsorted(self.starts, index, side="right") - 1)
        lo, hi = int(self.starts[episode]), int(self.starts[episode + 1])
        sample = {}
        for key, deltas in (("observation.state", IMAGE_DELTAS), ("action", ACTION_DELTAS)):
            want = index + np.round(np.asarray(deltas) * FPS).astype(np.int64)
            sample[key] = self.columns[key][np.clip(want, lo, hi - 1)]
            sample[f"{key}_is_pad"] = (want < lo) | (want >= hi)
        # LeRobot's query: the clamped frames' timestamps, after the episode's from_timestamp.
        want = index + np.round(np.asarray(IMAGE_DELTAS) * FPS).astype(np.int64)
        stamps = self.columns["timestamp"][np.clip(want, lo, hi - 1)]
        times = [lo / FPS + float(t) for t in stamps]
        for camera in CAMERAS:
            sample[camera] = self.frames(camera, times)
        return sample


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    error = float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
    return float("inf") if error == 0 else 10 * np.log10(1.0 / error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--samples", type=int, help="random samples each read (default 120)")
    args = parser.parse_args()
    episodes, frames, (height, width) = (2, 12, (48, 64)) if args.quick else (6, 80, (240, 320))
    count = args.samples or (8 if args.quick else 120)
    lengths = [frames] * episodes
    work = Path(tempfile.mkdtemp(prefix="hf_lvf-bench-lerobot-"))
    columns = write_lerobot(work / "lerobot", lengths, height, width)
    started = time.perf_counter()
    convert_videos(  # --quick: in this process (a pool's start would be most of the run)
        work / "lerobot", work / "root", codec="jpeg", quality=90, progress=False,
        workers=0 if args.quick else None,
    )  # fmt: skip
    converted = time.perf_counter() - started
    deltas = {camera: IMAGE_DELTAS for camera in CAMERAS}
    deltas |= {"observation.state": IMAGE_DELTAS, "action": ACTION_DELTAS}
    ds = hf_lvf.LeRobotWindows(work / "root", delta_timestamps=deltas)
    reference = PyAVReads(work / "lerobot", columns, lengths)
    indices = np.random.default_rng(0).permutation(len(ds))[:count].tolist()

    # The same samples: fields exactly, pixels within the conversion's JPEG.
    worst = float("inf")
    for index in indices[:4]:
        ours, theirs = ds[index], reference[index]
        for key in ("observation.state", "action", "action_is_pad"):
            np.testing.assert_array_equal(np.asarray(ours[key]), theirs[key], err_msg=key)
        for camera in CAMERAS:
            worst = min(worst, psnr(ours[camera].numpy(), theirs[camera]))

    def timed(read) -> float:
        started = time.perf_counter()
        read()
        return time.perf_counter() - started

    pyav_s = timed(lambda: [reference[i] for i in indices])
    item_s = timed(lambda: [ds[i] for i in indices])
    # Every sample once, shuffled: the loader knows its order and reads ahead of it.
    loader = hf_lvf.safe_dataloader(ds, batch_size=8, shuffle=True, seed=0, num_workers=0)
    loader_s = timed(lambda: list(loader)) * count / len(ds)  # seconds per `count` samples
    # The limit: each sample's 4 JPEG frames decoded once, on every core.
    table = lance.dataset(str(work / "root")).to_table(columns=["bytes"])
    blobs = table.column("bytes").to_pylist()[: min(64, table.num_rows)]
    decode_s = timed(lambda: [decode_frame(b) for b in blobs]) / len(blobs)
    cores = len(os.sched_getaffinity(0))
    limit = cores / (2 * len(IMAGE_DELTAS) * decode_s)

    print(
        f"\n{count} random samples of 2 cameras at {height}x{width} (x{len(IMAGE_DELTAS)}), state "
        f"and 16 actions; {episodes} episodes x {frames} frames; converted in {converted:.1f} s; "
        f"{cores} cores; hf_lvf's pixels {worst:.1f} dB (PSNR) of the MP4's, at worst\n"
    )
    print("| read | samples/s | vs LeRobot's (PyAV) | vs the limit |")
    print("| --- | ---: | ---: | ---: |")
    rows = [
        ("LeRobot's: PyAV seek + decode per camera", pyav_s),
        ("hf_lvf LeRobotWindows, ds[i]", item_s),
        ("hf_lvf safe_dataloader (reads ahead)", loader_s),
    ]
    for name, seconds in rows:
        rate = count / seconds
        print(f"| {name} | {rate:.1f} | {pyav_s / seconds:.2f}x | {rate / limit:.2f}x |")
    print(f"| LIMIT: 4 JPEG decodes a sample on {cores} cores | {limit:.1f} | | 1.00x |")


if __name__ == "__main__":
    main()
