"""convert_videos of a LeRobot v3 dataset. The dataset is written from LeRobot's published v3
layout by tests/_lerobot.py (LeRobot needs Python 3.12 and does not install here), with AV1
videos (libsvtav1) when this PyAV can encode them, else H.264."""

from __future__ import annotations

import io
import json
from pathlib import Path

import lance
import numpy as np
import pytest
from _lerobot import FPS, TASKS, write_lerobot
from _videos import decode_rgb
from PIL import Image

from hf_lvf.convert import convert_videos
from hf_lvf.errors import SkippedVideoWarning, VideoDecodeError

TOP, WRIST = "observation.images.top", "observation.images.wrist"


def _table(root: Path):
    return lance.dataset(str(root)).to_table()


def test_each_episode_a_video_with_its_columns_exact(tmp_path: Path) -> None:
    columns = write_lerobot(tmp_path / "ds")
    summary = convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, codec="png")
    assert (summary.num_videos, summary.num_frames) == (3, 16)
    table = _table(tmp_path / "root").flatten()
    np.testing.assert_array_equal(
        np.stack(table.column("observation.state").to_numpy(zero_copy_only=False)),
        columns["observation.state"],
    )
    assert table.schema.field("action").type.value_type == "float"  # float32 stays float32
    for name in ("action", "timestamp", "frame_index", "episode_index", "index", "task_index"):
        got = table.column(name).to_numpy(zero_copy_only=False)
        want = columns[name]
        np.testing.assert_array_equal(np.stack(got) if want.ndim == 2 else got, want)
    assert table.column("task").to_pylist() == [TASKS[e % 2] for e in columns["episode_index"]]
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert [v["metadata"]["episode"] for v in meta["videos"]] == [0, 1, 2]
    assert [v["metadata"]["length"] for v in meta["videos"]] == [5, 7, 4]
    assert [v["T"] for v in meta["videos"]] == [5, 7, 4]
    assert meta["videos"][1]["metadata"]["tasks"] == TASKS[1]
    assert meta["videos"][0]["metadata"]["fps"] == FPS
    assert meta["lineage"]["source_format"] == "lerobot"
    assert meta["lineage"]["camera"] == TOP


def test_frames_are_the_episode_frames_none_shifted(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds")
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, codec="png")
    source = decode_rgb(tmp_path / f"ds/videos/{TOP}/chunk-000/file-000.mp4")

    rows = _table(tmp_path / "root").column("bytes").to_pylist()
    stored = [np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in rows]
    assert len(stored) == len(source) == 16
    for i, (a, b) in enumerate(zip(stored, source, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"frame {i}")
    # Neighbouring frames differ, so a shift by one would have failed above.
    assert not np.array_equal(source[5], source[6])


def test_two_cameras_one_root_every_camera_a_stream(tmp_path: Path) -> None:
    columns = write_lerobot(tmp_path / "ds", cameras=(TOP, WRIST))
    summary = convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, codec="png")
    assert summary.num_videos == 3 and summary.num_frames == 16
    assert sorted(p.name for p in (tmp_path / "root").iterdir() if p.is_dir()) == [
        "_transactions",
        "_versions",
        "data",
    ]  # one root, not one per camera
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert meta["video_column"] == TOP
    assert meta["streams"] == {
        WRIST: {"H": 64, "W": 64, "encoding": "png", "quality": None, "lossless": True}
    }
    table = _table(tmp_path / "root").flatten().flatten()
    # The per-frame fields are stored once, beside both cameras.
    assert table.column_names.count("observation.state") == 1
    np.testing.assert_array_equal(
        np.stack(table.column("observation.state").to_numpy(zero_copy_only=False)),
        columns["observation.state"],
    )
    for camera, name in ((TOP, "bytes"), (WRIST, f"{WRIST}")):
        stored = [np.asarray(Image.open(io.BytesIO(b))) for b in table.column(name).to_pylist()]
        source = decode_rgb(tmp_path / f"ds/videos/{camera}/chunk-000/file-000.mp4")
        for i, (a, b) in enumerate(zip(stored, source, strict=True)):
            np.testing.assert_array_equal(a, b, err_msg=f"{camera} frame {i}")
    assert table.column("bytes").to_pylist() != table.column(WRIST).to_pylist()


def test_delta_timestamps_per_camera_as_lerobot_reads_them(tmp_path: Path) -> None:
    """Every frame a sample (LeRobot's indexing), with delta_timestamps for the second
    camera and for ``action``: the camera's images and the action chunk at the offsets,
    clamped to the episode with ``_is_pad``, as ``LeRobotDataset(delta_timestamps=...)``
    gives them."""
    from hf_lvf import VideoWindows

    columns = write_lerobot(tmp_path / "ds", cameras=(TOP, WRIST))
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, codec="png")
    # TOP is the camera of ``video`` (bytes): at offsets under its own key, as LeRobot has it
    deltas = {TOP: [-0.2, 0.0], WRIST: [-0.1, 0.0], "action": [0.0, 0.1, 0.2]}
    view = VideoWindows(tmp_path / "root", sampling="every_frame", delta_timestamps=deltas)
    assert len(view) == 16 and view.streams_at_offsets == {WRIST: (64, 64), TOP: (64, 64)}
    images = {
        camera: decode_rgb(tmp_path / f"ds/videos/{camera}/chunk-000/file-000.mp4")
        for camera in (TOP, WRIST)
    }
    starts = np.cumsum([0, 5, 7])  # the episodes' first global index (lengths 5, 7, 4)
    lengths = [5, 7, 4]
    for index, sample in enumerate(view.iter_samples()):
        episode = int(np.searchsorted(starts, index, side="right") - 1)
        frame = index - starts[episode]
        for key, offsets in deltas.items():
            reached = [frame + round(d * FPS) for d in offsets]
            clamped = [starts[episode] + min(max(f, 0), lengths[episode] - 1) for f in reached]
            pad = [not 0 <= f < lengths[episode] for f in reached]
            assert sample[key + "_is_pad"].tolist() == pad, (index, key)
            if key == "action":
                want = columns["action"][clamped]
            else:
                want = np.stack([images[key][k] for k in clamped])
            np.testing.assert_array_equal(sample[key], want, err_msg=f"{index} {key}")
        np.testing.assert_array_equal(sample["video"], images[TOP][index][None])


def test_one_camera_of_two(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds", cameras=(TOP, WRIST))
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, camera=WRIST)
    assert (tmp_path / "root/_metadata.json").is_file()
    with pytest.raises(ValueError, match="'observation.images.side'"):
        convert_videos(
            tmp_path / "ds", tmp_path / "r2", workers=0, camera="observation.images.side"
        )


def test_missing_parquet_is_a_named_error(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds")
    (tmp_path / "ds/data/chunk-000/file-000.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="data/chunk-000/file-000.parquet"):
        convert_videos(tmp_path / "ds", tmp_path / "root", workers=0)
    assert not (tmp_path / "root").exists()


def test_corrupt_video_is_a_named_skip(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds")
    video = tmp_path / f"ds/videos/{TOP}/chunk-000/file-000.mp4"
    video.write_bytes(b"\x00" * 64 + video.read_bytes()[64:200])
    with (
        pytest.warns(SkippedVideoWarning, match="episode_000000"),
        pytest.raises(VideoDecodeError, match="none of the 3 input videos"),
    ):
        convert_videos(tmp_path / "ds", tmp_path / "root", workers=0)
    assert not (tmp_path / "root").exists()


def test_append_a_second_dataset(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "a")
    write_lerobot(tmp_path / "b", lengths=(3, 3))
    convert_videos(tmp_path / "a", tmp_path / "root", workers=0)
    summary = convert_videos(tmp_path / "b", tmp_path / "root", workers=0, mode="append")
    assert summary.num_videos == 2
    table = _table(tmp_path / "root")
    assert table.num_rows == 22
    assert table.column("episode_index").to_pylist()[16:] == [0, 0, 0, 1, 1, 1]
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert [v["key"] for v in meta["videos"]][-2:] == ["b/episode_000000", "b/episode_000001"]


def test_cli_convert_one_camera(tmp_path: Path, capsys) -> None:
    from hf_lvf.cli import main

    write_lerobot(tmp_path / "ds", cameras=(TOP, WRIST))
    args = ["convert", str(tmp_path / "ds"), str(tmp_path / "root"), "--workers", "0"]
    assert main([*args, "--camera", WRIST, "--no-progress"]) == 0
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert meta["lineage"]["camera"] == WRIST and len(meta["videos"]) == 3


def test_worker_processes_read_the_episodes_rows(tmp_path: Path) -> None:
    """Workers read each episode's per-frame rows themselves: the same root as in-process."""
    write_lerobot(tmp_path / "ds")
    convert_videos(tmp_path / "ds", tmp_path / "here", workers=0, codec="png", progress=False)
    convert_videos(tmp_path / "ds", tmp_path / "pool", workers=2, codec="png", progress=False)
    assert _table(tmp_path / "pool").to_pylist() == _table(tmp_path / "here").to_pylist()


def test_append_without_the_fields_is_refused(tmp_path: Path) -> None:
    from _videos import write_video

    write_lerobot(tmp_path / "ds")
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, progress=False)
    before = (tmp_path / "root/_metadata.json").read_bytes()
    clip = write_video(tmp_path / "plain.mp4", 8, (64, 64), fps=10)
    with pytest.raises(ValueError, match="per-frame"):
        convert_videos(clip, tmp_path / "root", workers=0, mode="append", progress=False)
    assert (tmp_path / "root/_metadata.json").read_bytes() == before


def test_episodes_in_several_files(tmp_path: Path) -> None:
    """Episodes 2 and 3 in file-001 (data and video), from_timestamp counted from its start."""
    columns = write_lerobot(tmp_path / "ds", lengths=(5, 7, 4, 6), split=2)
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, codec="png")
    table = _table(tmp_path / "root")
    np.testing.assert_array_equal(table.column("index").to_numpy(), columns["index"])
    source = [
        *decode_rgb(tmp_path / f"ds/videos/{TOP}/chunk-000/file-000.mp4"),
        *decode_rgb(tmp_path / f"ds/videos/{TOP}/chunk-000/file-001.mp4"),
    ]

    stored = [
        np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in table["bytes"].to_pylist()
    ]
    assert len(stored) == len(source) == 22
    for i, (a, b) in enumerate(zip(stored, source, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"frame {i}")


def test_fps_other_than_the_datasets_is_refused(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds")
    with pytest.raises(ValueError, match="fps=5 differs from the LeRobot dataset's fps 10"):
        convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, fps=5)
    assert not (tmp_path / "root").exists()


def _episodes(root: Path) -> list[tuple[str, int]]:
    meta = json.loads((root / "_metadata.json").read_text())
    return [(v["key"], v["T"]) for v in meta["videos"]]


def test_overwrite_with_two_cameras_replaces_what_was_there_or_leaves_it(tmp_path: Path) -> None:
    out = tmp_path / "root"
    write_lerobot(tmp_path / "one")  # a root of one camera at out, then two cameras over it
    convert_videos(tmp_path / "one", out, workers=0)
    write_lerobot(tmp_path / "ds", lengths=(4, 6), cameras=(TOP, WRIST))
    convert_videos(tmp_path / "ds", out, workers=0, mode="overwrite")
    old = _episodes(out)
    assert old == [("ds/episode_000000", 4), ("ds/episode_000001", 6)]
    assert WRIST in json.loads((out / "_metadata.json").read_text())["streams"]
    # a failure in the second camera leaves the root as it was
    write_lerobot(tmp_path / "new", lengths=(3, 3, 3), cameras=(TOP, WRIST))
    video = tmp_path / f"new/videos/{WRIST}/chunk-000/file-000.mp4"
    video.write_bytes(b"\x00" * 64 + video.read_bytes()[64:200])
    with (
        pytest.warns(SkippedVideoWarning),
        pytest.raises(VideoDecodeError, match="none of the 3 input videos"),
    ):
        convert_videos(tmp_path / "new", out, workers=0, mode="overwrite")
    assert _episodes(out) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "new", "one", "root"]
    with pytest.raises(ValueError, match=r"is inside '.*/new', which overwrite=True"):
        convert_videos(tmp_path / "new", tmp_path / "new", workers=0, mode="overwrite")
    assert (tmp_path / "new" / "meta" / "info.json").is_file()


def test_cameras_in_the_order_asked_and_appended_to(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds", cameras=(TOP, WRIST))
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, camera=[WRIST, TOP])
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert meta["video_column"] == WRIST and list(meta["streams"]) == [TOP]
    # A second dataset of the same cameras grows the root: its episodes carry both cameras.
    write_lerobot(tmp_path / "ds2", lengths=(3, 3), cameras=(TOP, WRIST))
    convert_videos(
        tmp_path / "ds2", tmp_path / "root", workers=0, camera=[WRIST, TOP], mode="append"
    )
    table = _table(tmp_path / "root").flatten().flatten()
    assert table.num_rows == 16 + 6 and table.column(TOP).null_count == 0


def test_proxies_written_with_the_conversion(tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds", cameras=(TOP, WRIST))
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, proxies=[32])
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert meta["streams"]["proxy_32"] == {
        "proxy_of": "bytes",
        "H": 32,
        "W": 32,
        "encoding": "jpeg",
        "quality": 90,
        "size": 32,
    }
    assert list(meta["streams"]) == [WRIST, "proxy_32"]
    with pytest.raises(ValueError, match="proxies= writes proxies into a new root"):
        convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, proxies=[32], mode="append")


def test_meta_kept_fps_features_and_stats_over_every_data_file(tmp_path: Path) -> None:
    """What a policy reads of LeRobotDataset.meta: fps, features and per-field stats (mean,
    std, min, max per element), computed at conversion over all data files (two here)."""
    columns = write_lerobot(tmp_path / "ds", split=2)
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0)
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())["lerobot"]
    info = json.loads((tmp_path / "ds/meta/info.json").read_text())
    assert meta["fps"] == FPS and meta["features"] == info["features"]
    for name in ("observation.state", "action"):
        values = columns[name].astype(np.float64)
        stats = meta["stats"][name]
        np.testing.assert_allclose(stats["mean"], values.mean(0), rtol=1e-6)
        np.testing.assert_allclose(stats["std"], values.std(0), rtol=1e-6)
        np.testing.assert_array_equal(stats["min"], values.min(0))
        np.testing.assert_array_equal(stats["max"], values.max(0))
        assert stats["count"] == [16]


def test_two_cameras_read_back_through_video_windows(tmp_path: Path) -> None:
    """A 2-camera conversion is a root hf_lvf reads: both cameras' pixels exact (PNG), the
    per-frame fields beside them, each window's frames those of its episode."""
    from hf_lvf import VideoWindows

    columns = write_lerobot(tmp_path / "ds", cameras=(TOP, WRIST))
    convert_videos(tmp_path / "ds", tmp_path / "root", workers=0, codec="png")
    sources = {
        camera: np.stack(decode_rgb(tmp_path / f"ds/videos/{camera}/chunk-000/file-000.mp4"))
        for camera in (TOP, WRIST)
    }
    view = VideoWindows(tmp_path / "root", window_length=3)
    assert view.streams == {WRIST: (64, 64)}
    starts = np.cumsum([0, *(v.num_frames for v in view.videos)])
    seen = 0
    for sample in view.iter_samples():
        rows = starts[sample["video_idx"]] + np.asarray(sample["frame_indices"])
        np.testing.assert_array_equal(sample["video"], sources[TOP][rows])
        np.testing.assert_array_equal(sample[WRIST], sources[WRIST][rows])
        np.testing.assert_array_equal(
            sample["observation.state"], columns["observation.state"][rows]
        )
        seen += 1
    assert seen == len(view) > 0
    assert not np.array_equal(sources[TOP], sources[WRIST])  # the cameras differ
