"""``label`` is a ``datasets.ClassLabel`` wherever the root names its labels (``label_names``):
in ``VideoWindows.features``, map-style and streaming ``load_dataset``, and the card."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

import hf_lvf
from hf_lvf.write.synthetic import write_synthetic_root

NAMES = ["cat", "dog", "eel"]
PARAMS = {"window_length": 4, "hop_size": 4}


def _named_root(path: Path, names: list[str] | None = NAMES) -> Path:
    root = write_synthetic_root(path, num_videos=6, num_frames=8, frame_size=(16, 16))
    meta = json.loads((root / "_metadata.json").read_text())
    meta["label_names"] = names
    (root / "_metadata.json").write_text(json.dumps(meta))
    return root


def test_label_is_a_class_label_in_every_front_end(tmp_path):
    root = _named_root(tmp_path / "clips")
    want = datasets.ClassLabel(names=NAMES)
    assert hf_lvf.VideoWindows(root, **PARAMS).features["label"] == want
    ds = datasets.load_dataset("hf_lvf", data_dir=str(root), split="train", **PARAMS)
    assert ds.features["label"] == want
    assert [ds.features["label"].int2str(r["label"]) for r in ds] == [
        NAMES[i % 3] for i in range(6) for _ in range(2)
    ]
    parts = ds.train_test_split(test_size=0.5, stratify_by_column="label", seed=0)
    assert sorted(parts["test"]["label"]) == [0, 0, 1, 1, 2, 2]
    stream = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **PARAMS
    )
    assert stream.features["label"] == want
    assert next(iter(stream))["label"] == 0


def test_labels_out_of_the_names_stay_integers(tmp_path):
    root = _named_root(tmp_path / "clips", ["cat", "dog"])  # label 2 has no name
    assert hf_lvf.VideoWindows(root, **PARAMS).features["label"] == datasets.Value("int64")


def test_the_card_names_the_labels(tmp_path):
    text = str(hf_lvf.build_card(_named_root(tmp_path / "clips"), window_length=4))
    assert "| cat (0) | 2 |\n| dog (1) | 2 |\n| eel (2) | 2 |\n" in text


def test_a_root_converted_from_class_folders_has_class_labels(tmp_path):
    pytest.importorskip("av")
    from _videos import make_labelled_folder

    src = make_labelled_folder(tmp_path / "src", classes=("cat", "dog"), metadata=False)
    root = tmp_path / "clips"
    hf_lvf.convert.convert_videos(src, root, workers=1, progress=False)
    ds = datasets.load_dataset("hf_lvf", data_dir=str(root), split="train", window_length=4)
    assert ds.features["label"].names == ["cat", "dog"]


def test_label_names_in_a_metadata_file_become_class_labels(tmp_path):
    pytest.importorskip("av")
    from _videos import write_video

    src = tmp_path / "src"
    for i, name in enumerate(["a.mp4", "b.mp4", "c.mp4"]):
        write_video(src / name, 4, (16, 16), seed=i)
    (src / "metadata.csv").write_text("file_name,label\na.mp4,zebra\nb.mp4,ant\nc.mp4,zebra\n")
    root = tmp_path / "clips"
    hf_lvf.convert.convert_videos(src, root, workers=0, progress=False)
    meta = json.loads((root / "_metadata.json").read_text())
    assert meta["label_names"] == ["ant", "zebra"]
    assert [v["metadata"]["label"] for v in meta["videos"]] == [1, 0, 1]
    features = hf_lvf.VideoWindows(root, window_length=4).features
    assert features["label"] == datasets.ClassLabel(names=["ant", "zebra"])
