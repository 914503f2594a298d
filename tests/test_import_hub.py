"""Imports from the Hub stand-in (tests/hub_server.py): a LeRobot v3 dataset (layout written from
its published format, see tests/_lerobot.py), webdataset shards, a ``datasets`` video dataset
pushed with ``push_to_hub`` and a videofolder repo, each pinned to a commit."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import lance
import pytest
import webdataset as wds
from _lerobot import write_lerobot
from _videos import write_video

from hf_lvf import build_card, describe
from hf_lvf.card.describe import format_description
from hf_lvf.convert import convert_videos

pytestmark = pytest.mark.hub


def _upload(hub, repo: str, folder: Path, extra: dict[str, bytes] | None = None) -> str:
    hub.create_repo(repo, exist_ok=True)
    files = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    return hub.commit(repo, {**files, **(extra or {})})


def _rows(root: Path) -> list[dict]:
    table = lance.dataset(str(root)).to_table()
    return table.to_pylist()


def test_lerobot_from_the_hub_equals_local(hub, tmp_path: Path) -> None:
    write_lerobot(tmp_path / "ds")
    sha = _upload(hub, "org/robot", tmp_path / "ds", {"unrelated/big.bin": b"x" * 100_000})
    hub.commit("org/robot", {"meta/info.json": b"{}"})  # the branch moves on: the pin holds
    convert_videos(tmp_path / "ds", tmp_path / "local", workers=0, codec="png")
    hub.inject(500, path_contains="file-000.mp4", times=1)  # retried as Hub reads are
    convert_videos(f"hf://datasets/org/robot@{sha}", tmp_path / "remote", workers=0, codec="png")
    assert _rows(tmp_path / "remote") == _rows(tmp_path / "local")
    assert hub.count("unrelated/big.bin") == 0  # only what is needed is read
    meta = json.loads((tmp_path / "remote/_metadata.json").read_text())
    assert meta["lineage"]["source"] == "hf://datasets/org/robot"
    assert meta["lineage"]["source_revision"] == sha
    described = describe(tmp_path / "remote")
    assert described["lineage"]["source_revision"] == sha
    source = f"LeRobot dataset hf://datasets/org/robot at revision {sha}"
    assert source in format_description(described)
    assert f"Imported from {source}" in str(build_card(tmp_path / "remote"))


def test_webdataset_shards_from_the_hub(hub, tmp_path: Path) -> None:
    (tmp_path / "shards").mkdir()
    with wds.TarWriter(str(tmp_path / "shards/00000.tar")) as sink:
        for n in range(2):
            mp4 = write_video(tmp_path / f"{n}.mp4", 8, fps=10, seed=n).read_bytes()
            sink.write({"__key__": f"{n:03d}", "mp4": mp4, "txt": f"caption {n}"})
    sha = _upload(hub, "org/shards", tmp_path / "shards")
    summary = convert_videos(
        f"hf://datasets/org/shards@{sha}/00000.tar", tmp_path / "root", workers=0
    )
    assert summary.num_videos == 2
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert [v["metadata"]["caption"] for v in meta["videos"]] == ["caption 0", "caption 1"]
    assert meta["lineage"]["source_revision"] == sha


def test_videofolder_repo_and_pushed_dataset(hub, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    for i, label in enumerate(["cat", "dog", "cat"]):
        write_video(folder / "train" / label / f"v{i}.mp4", 8, fps=10, seed=i)
    sha = _upload(hub, "org/folder", folder)
    summary = convert_videos(f"hf://datasets/org/folder@{sha}", tmp_path / "root", workers=0)
    assert summary.num_videos == 3 and list(summary.splits) == ["train"]  # train/: a split
    meta = json.loads((tmp_path / "root/train/_metadata.json").read_text())
    assert meta["label_names"] == ["cat", "dog"]
    assert meta["lineage"]["source_revision"] == sha
    # The same repo streamed by datasets: rows name their files on the Hub, fetched by workers.
    streamed = datasets.load_dataset("org/folder", split="train", streaming=True, revision=sha)
    summary = convert_videos(streamed, tmp_path / "streamed", workers=0)
    rows = json.loads((tmp_path / "streamed/_metadata.json").read_text())
    assert summary.num_videos == 3 and rows["label_names"] == ["cat", "dog"]
    assert sorted(v["checksum"] for v in rows["videos"]) == sorted(
        v["checksum"] for v in meta["videos"]
    )

    features = datasets.Features(
        {"video": datasets.Video(), "label": datasets.ClassLabel(names=["cat", "dog"])}
    )
    files = sorted(folder.rglob("*.mp4"))
    videos = [{"bytes": f.read_bytes(), "path": f.name} for f in files]
    ds = datasets.Dataset.from_dict({"video": videos, "label": [0, 0, 1]}, features=features)
    # What push_to_hub writes (a parquet shard, video bytes embedded), committed to the
    # stand-in directly: datasets 5.2's push_to_hub loses its temporary shard file against it.
    ds.to_parquet(str(tmp_path / "train.parquet"))
    hub.create_repo("org/pushed")
    sha = hub.commit(
        "org/pushed",
        {"data/train-00000-of-00001.parquet": (tmp_path / "train.parquet").read_bytes()},
    )
    loaded = datasets.load_dataset("org/pushed", split="train")
    summary = convert_videos(loaded, tmp_path / "pushed", workers=0)
    meta = json.loads((tmp_path / "pushed/_metadata.json").read_text())
    assert summary.num_videos == 3 and meta["label_names"] == ["cat", "dog"]
    assert [v["metadata"]["label"] for v in meta["videos"]] == [0, 0, 1]
    # Straight from the repo, pinned to the commit: its rows streamed, decode=False.
    summary = convert_videos(f"hf://datasets/org/pushed@{sha}", tmp_path / "direct", workers=0)
    direct = json.loads((tmp_path / "direct/_metadata.json").read_text())
    assert summary.num_videos == 3 and direct["label_names"] == ["cat", "dog"]
    assert [v["checksum"] for v in direct["videos"]] == [v["checksum"] for v in meta["videos"]]
    assert direct["lineage"]["source_revision"] == sha
