"""The examples in dataset_scripts/ run as a user would run them, on generated videos."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest
from _roots import read_meta
from _videos import decode_rgb, make_labelled_folder, webp_roundtrip, write_video
from PIL import Image

from hf_lvf import VideoWindows

SCRIPTS = Path(__file__).resolve().parents[1] / "dataset_scripts"


def script_main(name: str):
    """The ``main`` of ``dataset_scripts/<name>``, loaded as the file it is (not a package)."""
    return runpy.run_path(str(SCRIPTS / name))["main"]


def test_convert_labelled_folder(tmp_path: Path, capsys) -> None:
    folder = make_labelled_folder(tmp_path / "clips", classes=("walk", "run"), num_frames=12)
    write_video(folder / "run" / "wide.webm", 12, (32, 64), seed=9)  # another aspect ratio
    summary = script_main("convert_labelled_folder.py")(
        [str(folder), str(tmp_path / "root"), "--resize", "24", "--fps", "15", "--workers", "0"]
        + ["--window-length", "4"]
    )
    out = capsys.readouterr().out
    assert summary.num_videos == 5
    meta = read_meta(tmp_path / "root")
    assert meta["label_names"] == ["run", "walk"]
    assert [(v["path"], v["H"], v["W"], v["T"]) for v in meta["videos"]] == [
        ("run/clip_0.mp4", 24, 36, 6),
        ("run/clip_1.mp4", 24, 36, 7),
        ("run/wide.webm", 24, 48, 6),
        ("walk/clip_0.mp4", 24, 36, 6),
        ("walk/clip_1.mp4", 24, 36, 7),
    ]
    assert [v["metadata"]["label"] for v in meta["videos"]] == [0, 0, 0, 1, 1]
    assert "5 videos, 32 frames, 0 skipped" in out
    assert (
        "17 windows of 4 frames; sample 0: (4, 24, 24, 3) from 'run/clip_0.mp4', label 0 (run)"
        in out
    )


def test_frames_to_root(tmp_path: Path, capsys) -> None:
    frames_dir = tmp_path / "frames"
    sources = {}
    for label, name, ext, n in [("b_run", "x", ".png", 5), ("a_walk", "y", ".jpg", 3)]:
        folder = frames_dir / label / name
        folder.mkdir(parents=True)
        frames = decode_rgb(write_video(tmp_path / f"{name}.webm", n, (24, 40)))
        for i, frame in enumerate(frames):
            Image.fromarray(frame).save(folder / f"{i:06d}{ext}", quality=95)
        sources[f"{label}/{name}"] = [
            np.asarray(Image.open(p).convert("RGB")) for p in sorted(folder.iterdir())
        ]
    root = script_main("frames_to_root.py")([str(frames_dir), str(tmp_path / "root")])
    assert "2 videos, 8 frames" in capsys.readouterr().out
    meta = read_meta(root)
    assert [(v["path"], v["T"], v["metadata"]) for v in meta["videos"]] == [
        ("a_walk/y", 3, {"label": 0}),
        ("b_run/x", 5, {"label": 1}),
    ]
    windows = VideoWindows(root)
    got = windows.read_video(np.arange(len(windows)))[:, 0]
    want = np.stack(sources["a_walk/y"] + sources["b_run/x"])
    np.testing.assert_array_equal(got, [webp_roundtrip(f) for f in want])


@pytest.mark.hub
def test_convert_and_push(tmp_path: Path, hub, capsys) -> None:
    folder = make_labelled_folder(tmp_path / "clips", num_frames=8, metadata=False)
    uri = script_main("convert_and_push.py")(
        [str(folder), "me/clips", "--split", "train", "--workers", "0", "--token", hub.token]
        + ["--window-length", "4"]
    )
    assert uri == "hf://datasets/me/clips/train"
    out = capsys.readouterr().out
    assert "converted 4 videos (0 skipped)" in out
    assert f"read it with hf_lvf.VideoWindows({uri!r})" in out
    assert "train/_metadata.json" in hub.list_files("me/clips")
    meta = json.loads(hub.read_file("me/clips", "train/_metadata.json"))
    assert [v["metadata"]["label"] for v in meta["videos"]] == [0, 0, 1, 1]
    remote = VideoWindows(uri, window_length=4)
    assert len(remote) == 2 * ((8 - 3) + (9 - 3))  # clips of 8 and 9 frames per class
    assert remote[-1]["label"] == 1 and remote[-1]["filename"] == "dog/clip_1.mp4"
