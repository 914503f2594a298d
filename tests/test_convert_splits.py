"""Splits from conversion: a ``split`` column of the metadata file, or split folders in the
``videofolder`` convention, give one root per split, read back by ``load_dataset`` as splits."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import datasets
import pytest

import hf_lvf

pytest.importorskip("av")
from _videos import make_labelled_folder, write_video  # noqa: E402


def _tree(folder: Path) -> Path:
    """videos/train/{cat,dog}/ and videos/validation/{cat}/: validation lacks a class."""
    specs = [("train/cat/a.mp4", 6), ("train/dog/b.mp4", 7), ("validation/cat/c.mp4", 8)]
    for i, (rel, n) in enumerate(specs):
        write_video(folder / rel, n, (16, 24), seed=i)
    return folder


def _paths(root: Path) -> list[tuple[str, int, int]]:
    meta = json.loads((root / "_metadata.json").read_text())
    return [(v["path"], v["T"], v["metadata"].get("label")) for v in meta["videos"]]


def test_split_folders_give_one_root_each(tmp_path):
    out = tmp_path / "clips"
    summary = hf_lvf.convert_videos(_tree(tmp_path / "videos"), out, workers=0, progress=False)
    assert sorted(summary.splits) == ["train", "validation"]
    assert (summary.root, summary.num_videos, summary.num_frames) == (out, 3, 21)
    assert summary.splits["train"].root == out / "train"
    assert _paths(out / "train") == [("cat/a.mp4", 6, 0), ("dog/b.mp4", 7, 1)]
    assert _paths(out / "validation") == [("cat/c.mp4", 8, 0)]  # labels shared by the splits
    ds = datasets.load_dataset("hf_lvf", data_dir=str(out), window_length=3, hop_size=3)
    assert {s: len(d) for s, d in ds.items()} == {"train": 4, "validation": 2}
    assert ds["validation"].features["label"].names == ["cat", "dog"]
    assert set(ds["train"]["filename"]) == {"cat/a.mp4", "dog/b.mp4"}


def test_a_split_column_gives_one_root_per_split(tmp_path):
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))
    out = tmp_path / "clips"
    summary = hf_lvf.convert_videos(folder, out, workers=0, progress=False)
    assert list(summary.splits) == ["train", "val"]
    # make_labelled_folder: clip_0 of each class is "val", clip_1 "train"
    assert _paths(out / "train") == [("cat/clip_1.mp4", 7, 0), ("dog/clip_1.mp4", 7, 1)]
    assert _paths(out / "val") == [("cat/clip_0.mp4", 6, 0), ("dog/clip_0.mp4", 6, 1)]
    assert "split" not in hf_lvf.read_layout(str(out / "val")).fields  # the root is the split
    one = hf_lvf.convert_videos(folder, tmp_path / "one", workers=0, progress=False, splits="none")
    assert one.splits == {} and hf_lvf.read_layout(str(one.root)).fields["split"] == "string"


def test_a_split_name_datasets_refuses_is_an_error_before_any_work(tmp_path):
    folder = make_labelled_folder(tmp_path / "videos", per_class=1, num_frames=4, size=(16, 24))
    with open(folder / "metadata.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerows([["file_name", "split"], ["cat/clip_0.mp4", "my split"]])
        writer.writerow(["dog/clip_0.mp4", "train"])
    with pytest.raises(ValueError, match=r"split 'my split' \(of 'cat/clip_0.mp4'\) is not a"):
        hf_lvf.convert_videos(folder, tmp_path / "clips", workers=0, progress=False)
    assert not (tmp_path / "clips").exists()
    with pytest.raises(ValueError, match=r"splits must be 'auto' or 'none', got 'yes'"):
        hf_lvf.convert_videos(folder, tmp_path / "clips", splits="yes")


def test_the_command_line_converts_splits_and_names_their_roots(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "clips"
    done = subprocess.run(
        [sys.executable, "-m", "hf_lvf.cli", "convert", str(_tree(tmp_path / "videos")), str(out)]
        + ["--workers", "0", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for split, count in (("train", 2), ("validation", 1)):
        noun = "videos" if count > 1 else "video"
        line = rf"^split {split} +{re.escape(str(out / split))} \({count} {noun}\)$"
        assert re.search(line, done.stdout, re.M), done.stdout
    assert (out / "validation" / "_metadata.json").is_file()
