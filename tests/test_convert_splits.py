"""Splits from conversion: a ``split`` column of the metadata file, or split folders in the
``videofolder`` convention, give one root per split, read back by ``load_dataset`` as splits."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import datasets
import numpy as np
import pytest

import hf_lvf
from hf_lvf.location import find_roots

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
    summary = hf_lvf.convert.convert_videos(
        _tree(tmp_path / "videos"), out, workers=0, progress=False
    )
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
    summary = hf_lvf.convert.convert_videos(folder, out, workers=0, progress=False)
    assert list(summary.splits) == ["train", "val"]
    # make_labelled_folder: clip_0 of each class is "val", clip_1 "train"
    assert _paths(out / "train") == [("cat/clip_1.mp4", 7, 0), ("dog/clip_1.mp4", 7, 1)]
    assert _paths(out / "val") == [("cat/clip_0.mp4", 6, 0), ("dog/clip_0.mp4", 6, 1)]
    assert "split" not in hf_lvf.read_layout(str(out / "val")).fields  # the root is the split
    one = hf_lvf.convert.convert_videos(
        folder, tmp_path / "one", workers=0, progress=False, splits="none"
    )
    assert one.splits == {} and hf_lvf.read_layout(str(one.root)).fields["split"] == "string"


def test_a_split_name_datasets_refuses_is_an_error_before_any_work(tmp_path):
    folder = make_labelled_folder(tmp_path / "videos", per_class=1, num_frames=4, size=(16, 24))
    with open(folder / "metadata.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerows([["file_name", "split"], ["cat/clip_0.mp4", "my split"]])
        writer.writerow(["dog/clip_0.mp4", "train"])
    with pytest.raises(ValueError, match=r"split 'my split' \(of 'cat/clip_0.mp4'\) is not a"):
        hf_lvf.convert.convert_videos(folder, tmp_path / "clips", workers=0, progress=False)
    assert not (tmp_path / "clips").exists()
    with pytest.raises(ValueError, match=r"splits must be 'auto' or 'none', got 'yes'"):
        hf_lvf.convert.convert_videos(folder, tmp_path / "clips", splits="yes")


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


# --- writing over what is there: overwrite replaces it whole, a failure leaves it ---------------


def _old_root(out: Path) -> list[tuple[str, int, int]]:
    """One video of 3 frames written at ``out`` by ``write_frames``; its ``_paths``."""
    frames = [np.full((16, 24, 3), 7, np.uint8)] * 3
    hf_lvf.write.write_frames(out, [("old", frames, {"label": 5})])
    return _paths(out)


def _spoil_val(folder: Path) -> Path:
    """make_labelled_folder's ``val`` clips made undecodable: converting its split fails
    (no video of it converts) after ``train``, the split converted first, is complete."""
    for name in ("cat", "dog"):
        (folder / name / "clip_0.mp4").write_bytes(b"not a video")
    return folder


def _left_beside(out: Path) -> list[str]:
    """Scratch folders of writes of ``out`` left beside it."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


TRAIN = [("cat/clip_1.mp4", 7, 0), ("dog/clip_1.mp4", 7, 1)]
VAL = [("cat/clip_0.mp4", 6, 0), ("dog/clip_0.mp4", 6, 1)]


def test_overwrite_replaces_a_root_by_split_roots(tmp_path):
    out = tmp_path / "clips"
    _old_root(out)
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))
    summary = hf_lvf.convert.convert_videos(
        folder, out, workers=0, progress=False, mode="overwrite"
    )
    assert sorted(p.name for p in out.iterdir()) == ["train", "val"]  # no old _metadata.json
    assert (_paths(out / "train"), _paths(out / "val")) == (TRAIN, VAL)
    assert {n: s.root for n, s in summary.splits.items()} == {
        "train": out / "train",
        "val": out / "val",
    }
    assert (summary.root, summary.num_videos, summary.num_frames) == (out, 4, 26)
    assert _left_beside(out) == []
    ds = datasets.load_dataset("hf_lvf", data_dir=str(out), window_length=3, hop_size=3)
    assert {s: sorted(set(d["filename"])) for s, d in ds.items()} == {
        "train": ["cat/clip_1.mp4", "dog/clip_1.mp4"],
        "val": ["cat/clip_0.mp4", "dog/clip_0.mp4"],
    }


def test_overwrite_replaces_split_roots_by_one_root_and_by_other_splits(tmp_path):
    out = tmp_path / "clips"
    hf_lvf.convert.convert_videos(_tree(tmp_path / "tree"), out, workers=0, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["train", "validation"]
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))
    hf_lvf.convert.convert_videos(folder, out, workers=0, progress=False, overwrite=True)
    # the old "validation" split is gone: the new videos' splits are train and val
    assert sorted(p.name for p in out.iterdir()) == ["train", "val"]
    assert (_paths(out / "train"), _paths(out / "val")) == (TRAIN, VAL)
    one = hf_lvf.convert.convert_videos(
        folder, out, workers=0, progress=False, mode="overwrite", splits="none"
    )
    assert one.splits == {} and not (out / "train").exists() and not (out / "val").exists()
    assert _paths(out) == [(p, n, label) for p, n, label in sorted(TRAIN + VAL)]
    assert find_roots(out) == {"train": [str(out / "_metadata.json")]}
    assert _left_beside(out) == []


@pytest.mark.parametrize("before", ["root", "splits", "nothing"])
def test_a_failure_in_a_later_split_leaves_what_was_there(tmp_path, before):
    out = tmp_path / "clips"
    if before == "root":
        old = {".": _old_root(out)}
    elif before == "splits":
        hf_lvf.convert.convert_videos(_tree(tmp_path / "tree"), out, workers=0, progress=False)
        old = {s: _paths(out / s) for s in ("train", "validation")}
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))
    mode = "create" if before == "nothing" else "overwrite"
    with (
        pytest.warns(hf_lvf.errors.SkippedVideoWarning),
        pytest.raises(
            hf_lvf.errors.VideoDecodeError, match=r"none of the 2 input videos could be converted"
        ),
    ):
        hf_lvf.convert.convert_videos(_spoil_val(folder), out, workers=0, progress=False, mode=mode)
    assert _left_beside(out) == []
    if before == "nothing":  # no half of a dataset: train alone is not left
        assert not out.exists()
        return
    assert {s: _paths(out / s) for s in old} == old  # readable, as it was
    if before == "root":
        assert sorted(p.name for p in out.iterdir()) == ["_metadata.json", "_transactions"] + [
            "_versions",
            "data",
        ]


def test_create_refuses_a_root_or_a_taken_split_before_any_work(tmp_path):
    out = tmp_path / "clips"
    old = _old_root(out)
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))
    with pytest.raises(FileExistsError) as info:
        hf_lvf.convert.convert_videos(folder, out, workers=0, progress=False)
    assert str(info.value) == (
        f"{str(out)!r} is a root (it has a _metadata.json); the new videos make one root each "
        f"in it ('{out}/train', '{out}/val'), which would not replace it: pass "
        "overwrite=True (mode='overwrite') to replace it, or choose another folder"
    )
    assert _paths(out) == old and not (out / "train").exists()
    # an existing folder that is not a root takes new splits beside what it holds, all or none
    shelf = tmp_path / "shelf"
    (shelf / "val").mkdir(parents=True)
    (shelf / "README.md").write_text("mine")
    with pytest.raises(
        FileExistsError, match=rf"^'{shelf}/val' already exists; pass overwrite=True"
    ):
        hf_lvf.convert.convert_videos(folder, shelf, workers=0, progress=False)
    (shelf / "val").rmdir()
    with (
        pytest.warns(hf_lvf.errors.SkippedVideoWarning),
        pytest.raises(hf_lvf.errors.VideoDecodeError),
    ):
        hf_lvf.convert.convert_videos(
            _spoil_val(make_labelled_folder(tmp_path / "bad", per_class=2, size=(16, 24))),
            shelf,
            workers=0,
            progress=False,
        )
    assert sorted(p.name for p in shelf.iterdir()) == ["README.md"] and _left_beside(shelf) == []
    hf_lvf.convert.convert_videos(folder, shelf, workers=0, progress=False)
    assert sorted(p.name for p in shelf.iterdir()) == ["README.md", "train", "val"]
    assert (_paths(shelf / "train"), _paths(shelf / "val")) == (TRAIN, VAL)


def test_overwrite_waits_for_no_writer_of_a_split_it_would_replace(tmp_path):
    from hf_lvf.write.append import write_lock

    out = tmp_path / "clips"
    hf_lvf.convert.convert_videos(_tree(tmp_path / "tree"), out, workers=0, progress=False)
    old = _paths(out / "validation")
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))
    with (
        write_lock(out / "validation"),
        pytest.raises(BlockingIOError, match=rf"another process is writing '{out}/validation'"),
    ):  # an append to it under way: its videos would be lost with the old folder
        hf_lvf.convert.convert_videos(folder, out, workers=0, progress=False, mode="overwrite")
    assert _paths(out / "validation") == old and not (out / "val").exists()


@pytest.mark.parametrize("splits", ["auto", "none"])
def test_overwrite_refuses_a_folder_that_holds_its_inputs(tmp_path, splits):
    """Replacing it would delete the videos being converted, once they are converted."""
    shelf = tmp_path / "shelf"
    folder = make_labelled_folder(shelf / "videos", per_class=2, num_frames=6, size=(16, 24))
    files = sorted(p.relative_to(shelf).as_posix() for p in shelf.rglob("*"))
    with pytest.raises(ValueError) as info:
        hf_lvf.convert.convert_videos(
            folder, shelf, workers=0, progress=False, mode="overwrite", splits=splits
        )
    assert str(info.value) == (
        f"the input {str(folder / 'cat' / 'clip_0.mp4')!r} is inside {str(shelf)!r}, which "
        "overwrite=True (mode='overwrite') replaces, deleting what it holds: write the output "
        "elsewhere"
    )
    assert sorted(p.relative_to(shelf).as_posix() for p in shelf.rglob("*")) == files
    assert _left_beside(shelf) == []


def test_the_command_line_overwrites_a_root_by_splits(tmp_path, capsys):
    from hf_lvf.cli import main

    out = tmp_path / "clips"
    _old_root(out)
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))
    args = ["convert", str(folder), str(out), "--workers", "0", "--no-progress"]
    assert main(args) != 0
    assert "would not replace it: pass --overwrite to replace it," in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert re.search(
        rf"^split val +{re.escape(str(out / 'val'))} \(2 videos\)$", capsys.readouterr().out, re.M
    )
    assert sorted(p.name for p in out.iterdir()) == ["train", "val"]
    assert (_paths(out / "train"), _paths(out / "val")) == (TRAIN, VAL)


@pytest.mark.s3
def test_on_an_object_store_what_cannot_be_replaced_whole_is_refused_before_any_work(s3, tmp_path):
    """Nothing renames on an object store: a root and a folder of roots cannot replace one
    another there, nor can splits drop an old one, so those are refused, naming the keys."""
    from hf_lvf.location import read_root_file

    options, bucket = s3.options(), s3.new_bucket()
    folder = make_labelled_folder(tmp_path / "videos", per_class=2, num_frames=6, size=(16, 24))

    def convert(uri, inputs=folder, **kwargs):
        kwargs = {"workers": 0, "progress": False, "storage_options": options, **kwargs}
        return hf_lvf.convert.convert_videos(inputs, uri, **kwargs)

    def paths(uri):
        meta = json.loads(read_root_file(uri, "_metadata.json", storage_options=options))
        return [(v["path"], v["T"], v["metadata"].get("label")) for v in meta["videos"]]

    root = f"s3://{bucket}/root"
    hf_lvf.write.write_frames(
        root, [("old", [np.zeros((16, 24, 3), np.uint8)] * 3, None)], storage_options=options
    )
    keys = s3.keys(bucket)
    for mode in ("create", "overwrite"):
        with pytest.raises(FileExistsError) as info:
            convert(root, mode=mode)
        assert str(info.value).startswith(
            f"'{root}' is a root (it has a _metadata.json); the new videos make one root each "
            f"below it ('{root}/train', '{root}/val'), and an object store cannot replace a root "
            f"by them (nothing renames there): its _metadata.json would stay and go on naming "
            f"its old videos. Delete '{root}' first"
        )
        assert s3.keys(bucket) == keys  # nothing written
    splits = f"s3://{bucket}/splits"
    convert(splits)
    keys = s3.keys(bucket)
    with pytest.raises(
        FileExistsError,
        match=rf"^'{splits}' holds the roots '{splits}/train', '{splits}/val': a root written "
        "at it would leave them below it, and an object store cannot replace a folder of roots",
    ):
        convert(splits, mode="overwrite", splits="none")
    with pytest.raises(
        FileExistsError,
        match=rf"^'{splits}' holds the root '{splits}/val': the new videos do not replace it",
    ):  # the tree's splits are train and validation: val would be read beside them
        convert(splits, _tree(tmp_path / "tree"), mode="overwrite")
    with pytest.raises(FileExistsError, match=rf"holds the roots '{splits}/train', '{splits}/val"):
        convert(splits)  # create
    assert s3.keys(bucket) == keys
    # the same splits again: each is replaced (one after the other; see hf_lvf.write.folders)
    again = make_labelled_folder(tmp_path / "v2", per_class=2, num_frames=4, size=(16, 24))
    summary = convert(splits, again, mode="overwrite")
    assert summary.splits["val"].root == f"{splits}/val"
    assert (paths(f"{splits}/train"), paths(f"{splits}/val")) == (
        [("cat/clip_1.mp4", 5, 0), ("dog/clip_1.mp4", 5, 1)],
        [("cat/clip_0.mp4", 4, 0), ("dog/clip_0.mp4", 4, 1)],
    )
