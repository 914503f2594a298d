"""convert_videos of a ``datasets`` dataset with a ``Video`` column (datasets' own feature,
saved to disk): read with ``decode=False``, pixels decoded by PyAV only."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import numpy as np
from _videos import decode_rgb, write_video

from hf_lvf import VideoWindows
from hf_lvf.convert import convert_videos


def _dataset(tmp_path: Path) -> datasets.Dataset:
    files = [str(write_video(tmp_path / f"v{i}.mp4", 8 + i, fps=10, seed=i)) for i in range(3)]
    features = datasets.Features(
        {
            "video": datasets.Video(),
            "label": datasets.ClassLabel(names=["cat", "dog"]),
            "note": datasets.Value("string"),
        }
    )
    data = {"video": files, "label": [1, 0, 1], "note": ["a", "b", "c"]}
    ds = datasets.Dataset.from_dict(data, features=features)
    ds.save_to_disk(str(tmp_path / "saved"))
    return datasets.load_from_disk(str(tmp_path / "saved"))


def test_video_dataset_from_disk(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    summary = convert_videos(ds, tmp_path / "root", workers=0, lossless=True)
    assert summary.num_videos == 3
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert meta["label_names"] == ["cat", "dog"]
    assert [v["metadata"]["label"] for v in meta["videos"]] == [1, 0, 1]
    assert [v["metadata"]["note"] for v in meta["videos"]] == ["a", "b", "c"]
    assert meta["lineage"]["source_format"] == "datasets"
    windows = VideoWindows(tmp_path / "root", window_length=8)
    frames = windows[0]["video"]
    source = np.stack(decode_rgb(tmp_path / "v0.mp4")[:8])
    np.testing.assert_array_equal(frames, source)  # lossless: PyAV's decode, exactly


def test_iterable_dataset(tmp_path: Path) -> None:
    ds = _dataset(tmp_path).to_iterable_dataset()
    summary = convert_videos(ds, tmp_path / "root", workers=0)
    assert summary.num_videos == 3


def test_saved_to_disk_folder(tmp_path: Path) -> None:
    _dataset(tmp_path)
    summary = convert_videos(tmp_path / "saved", tmp_path / "root", workers=0)
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert summary.num_videos == 3 and meta["label_names"] == ["cat", "dog"]
    assert meta["lineage"]["source"] == str(tmp_path / "saved")


def test_rows_are_copied_beside_the_root_and_removed(tmp_path: Path, monkeypatch) -> None:
    import hf_lvf.convert.hf_datasets as hf_datasets

    seen = []
    original = hf_datasets.dataset_sources

    def spy(dataset, scratch):
        seen.append(scratch)
        return original(dataset, scratch)

    monkeypatch.setattr("hf_lvf.convert.imports.dataset_sources", spy)
    convert_videos(_dataset(tmp_path), tmp_path / "root", workers=0)
    (scratch,) = seen
    assert scratch.parent == tmp_path and scratch.name.startswith(".root.tmp-")
    assert not scratch.exists()
