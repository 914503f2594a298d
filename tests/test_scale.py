"""Issue 17: the video table as columns, parsed once and mapped by every process that opens it.

Roots here are written the way another tool would (``lance.write_dataset`` and ``json``),
with many tiny videos: 8 frames of 16x16, one WebP encoded once for every row.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

import hf_lvf
from hf_lvf.errors import LayoutError
from hf_lvf.layout import read_layout
from hf_lvf.layout import table as table_cache

FRAMES = 8
_SCHEMA = pa.schema([("video_id", pa.int32()), ("frame_idx", pa.int32()), ("bytes", pa.binary())])


def _webp() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (30, 160, 90)).save(buf, format="WEBP", quality=65)
    return buf.getvalue()


def write_many(root: Path, num_videos: int, *, label_mod: int = 7, extra: dict | None = None):
    """A root of ``num_videos`` videos of 8 frames, as another tool writes it."""
    rows = np.arange(num_videos * FRAMES)
    frame = _webp()
    table = pa.table(
        {
            "video_id": pa.array((rows // FRAMES).astype(np.int32)),
            "frame_idx": pa.array((rows % FRAMES).astype(np.int32)),
            "bytes": pa.array([frame] * len(rows), pa.binary()),
        },
        schema=_SCHEMA,
    )
    lance.write_dataset(table, str(root), mode="overwrite")
    write_metadata(root, num_videos, label_mod=label_mod, extra=extra)
    return root


def write_metadata(root: Path, num_videos: int, *, label_mod: int = 7, extra=None) -> None:
    videos = [
        {
            "id": i,
            "key": f"clip_{i:06d}",
            "path": f"/raw/clip_{i:06d}.mp4",
            "T": FRAMES,
            "H": 16,
            "W": 16,
            "start_row": FRAMES * i,
            "metadata": {"label": i % label_mod},
            **(extra or {}),
        }
        for i in range(num_videos)
    ]
    meta = {"layout": "lance-video-frames", "videos": videos}
    (root / "_metadata.json").write_text(json.dumps(meta))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty table cache, and no table remembered by this process."""
    folder = tmp_path / "table-cache"
    monkeypatch.setenv("HF_LVF_CACHE", str(folder))
    table_cache._OPEN.clear()
    yield folder
    table_cache._OPEN.clear()


@pytest.fixture(scope="module")
def big_root(tmp_path_factory):
    return write_many(tmp_path_factory.mktemp("many") / "root", 20_000)


def _cached_files(folder: Path) -> list[Path]:
    table_cache.wait_for_writes()
    return sorted((folder / "tables").glob("*.arrow")) if (folder / "tables").exists() else []


def test_windows_of_a_big_root_are_right(big_root, fresh_cache):
    w = hf_lvf.VideoWindows(str(big_root), window_length=4, hop_size=2)
    assert len(w) == 20_000 * 3
    rng = np.random.default_rng(0)
    picks = rng.choice(len(w), 200, replace=False)
    for i in picks.tolist():
        info = w.segment_info(i)
        assert (info["video_idx"], info["start_frame"]) == (i // 3, (i % 3) * 2)
        assert info["filename"] == f"/raw/clip_{i // 3:06d}.mp4"
    samples = w.take(picks[:20])
    assert [s["label"] for s in samples] == [(i // 3) % 7 for i in picks[:20].tolist()]
    assert [s["video_idx"] for s in samples] == (picks[:20] // 3).tolist()


def test_second_open_maps_the_cache_and_parses_nothing(big_root, fresh_cache, monkeypatch):
    first = read_layout(str(big_root))
    assert len(_cached_files(fresh_cache)) == 1
    table_cache._OPEN.clear()  # as a new process: only the cache folder is left

    def refuse(*args, **kwargs):
        raise AssertionError("parsed _metadata.json again")

    monkeypatch.setattr(table_cache, "parse_metadata", refuse)
    second = read_layout(str(big_root))
    assert second.num_frames.tolist() == first.num_frames.tolist()
    assert second.field_values("label").tolist() == first.field_values("label").tolist()
    # The columns are views of the mapped file, not copies.
    assert not second.start_rows.flags.owndata


def test_pickles_carry_the_location_not_the_table(big_root, fresh_cache):
    w = hf_lvf.VideoWindows(str(big_root), window_length=4, hop_size=2)
    data = pickle.dumps(w)
    assert len(data) < 4096  # 20,000 videos; the table stayed in the cache
    back = pickle.loads(data)
    assert len(back) == len(w)
    assert back[12_345]["label"] == w[12_345]["label"] == (12_345 // 3) % 7
    assert len(pickle.dumps(w.layout)) < 4096


def test_streaming_shards_carry_no_table(big_root, fresh_cache):
    from datasets import load_dataset

    ds = load_dataset(
        "hf_lvf", data_dir=str(big_root), window_length=4, hop_size=2, streaming=True
    )["train"]
    assert len(pickle.dumps(ds)) < 64 * 1024
    first = next(iter(ds))
    assert (first["video_idx"], first["start_frame"], first["label"]) == (0, 0, 0)


def test_a_replaced_metadata_file_is_never_read_through_a_stale_table(tmp_path, fresh_cache):
    root = write_many(tmp_path / "root", 50)
    old = hf_lvf.VideoWindows(str(root), window_length=4, hop_size=2)
    assert len(old) == 150
    write_many(root, 49, label_mod=5)  # another tool rewrites the root: one video fewer
    new = hf_lvf.VideoWindows(str(root), window_length=4, hop_size=2)
    assert len(new) == 147 and new[-1]["label"] == 48 % 5
    # A view opened before keeps its table (it reads the Lance version it opened with)...
    assert len(pickle.loads(pickle.dumps(old))) == 150
    # ...but where that table is gone too, it is refused, never read as the new one.
    data = pickle.dumps(old)
    for path in _cached_files(fresh_cache):
        path.unlink()
    table_cache._OPEN.clear()
    with pytest.raises(LayoutError, match="was replaced since this view of the root was opened"):
        pickle.loads(data)


def test_a_missing_cache_is_rebuilt_in_the_worker(tmp_path, fresh_cache):
    root = write_many(tmp_path / "root", 30)
    data = pickle.dumps(hf_lvf.VideoWindows(str(root), window_length=8))
    for path in _cached_files(fresh_cache):
        path.unlink()
    table_cache._OPEN.clear()
    w = pickle.loads(data)
    assert len(w) == 30 and w[29]["label"] == 29 % 7
    assert len(_cached_files(fresh_cache)) == 1


def test_a_damaged_cache_file_is_rebuilt(tmp_path, fresh_cache, caplog):
    root = write_many(tmp_path / "root", 30)
    read_layout(str(root))
    (path,) = _cached_files(fresh_cache)
    path.write_bytes(path.read_bytes()[:100])
    table_cache._OPEN.clear()
    layout = read_layout(str(root))
    assert len(layout) == 30 and layout.field_values("label").tolist() == [i % 7 for i in range(30)]


def test_an_unwritable_cache_still_opens(tmp_path, monkeypatch):
    root = write_many(tmp_path / "root", 10)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("HF_LVF_CACHE", str(blocker))
    table_cache._OPEN.clear()
    w = hf_lvf.VideoWindows(str(root), window_length=8)
    assert len(w) == 10 and w[3]["label"] == 3


def test_concurrent_first_opens(tmp_path, fresh_cache):
    root = write_many(tmp_path / "root", 3000)
    script = textwrap.dedent(
        f"""
        import hf_lvf
        w = hf_lvf.VideoWindows({str(root)!r}, window_length=4, hop_size=2)
        print(len(w), w[8999]["label"])
        """
    )
    env = {**os.environ, "HF_LVF_CACHE": str(fresh_cache)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, text=True)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4
    assert outputs == [["9000", str(2999 % 7)]] * 4
    files = list((fresh_cache / "tables").iterdir())
    assert len(files) == 1 and files[0].suffix == ".arrow"  # no temporary file left


def test_entries_that_need_the_lenient_path(tmp_path, fresh_cache):
    # An int key and a string fps are not what the fast path takes; FORMAT.md allows both.
    root = write_many(tmp_path / "root", 5, extra={"key": 7, "fps": "29.97", "note": [1]})
    layout = read_layout(str(root))
    assert layout.table.column("key").to_pylist() == ["7"] * 5
    assert np.isnan(layout.video_fps).all()
    assert layout.videos[2].extra == {"fps": "29.97", "note": [1]}
    assert layout.videos[2].key == "7"


def test_columns_and_fields(tmp_path, fresh_cache):
    root = tmp_path / "root"
    write_many(root, 4)
    meta = json.loads((root / "_metadata.json").read_text())
    meta["videos"][0]["metadata"] = {"label": 1, "score": 2, "flag": True, "fps": 25}
    meta["videos"][1]["metadata"] = {"label": None, "score": 0.5, "flag": False}
    meta["videos"][2]["fps"] = 30
    meta["label_names"] = ["a", "b"]
    (root / "_metadata.json").write_text(json.dumps(meta))
    layout = read_layout(str(root))
    assert layout.fields == {"label": "int64", "score": "float64", "flag": "int8", "fps": "int64"}
    assert layout.field_values("label").tolist() == [1, -1, 2 % 7, 3 % 7]
    assert layout.field_values("flag").tolist() == [1, 0, -1, -1]
    assert np.isnan(layout.field_values("score")[2:]).all()
    fps = layout.video_fps  # the entry's fps, else metadata["fps"]
    assert (fps[0], fps[2]) == (25.0, 30.0) and np.isnan(fps[[1, 3]]).all()
    assert layout.header["label_names"] == ["a", "b"]
    assert layout.paths_of(np.array([3, 0])) == ["/raw/clip_000003.mp4", "/raw/clip_000000.mp4"]


def test_append_keeps_the_text_of_every_entry(tmp_path, fresh_cache):
    from hf_lvf.write.synthetic import synthetic_frames

    root = hf_lvf.write.write_frames(
        tmp_path / "root",
        [(f"clip_{i}", synthetic_frames(3, 8, 8, seed=i), {"label": i}) for i in range(3)],
    )
    before = (root / "_metadata.json").read_bytes()
    start = before.index(b'"videos": [')
    old_entries = before[start : before.index(b"\n ]", start)]  # up to its last entry's "}"
    hf_lvf.write.write_frames(
        root, [("new", synthetic_frames(2, 8, 8, seed=9), {"label": 7})], mode="append"
    )
    after = (root / "_metadata.json").read_bytes()
    assert old_entries in after  # the existing entries, byte for byte
    meta = json.loads(after)
    assert [v["key"] for v in meta["videos"]] == ["clip_0", "clip_1", "clip_2", "new"]
    assert (meta["n_videos"], meta["num_rows"], meta["videos"][3]["start_row"]) == (4, 11, 9)
    w = hf_lvf.VideoWindows(str(root), window_length=2)
    assert [s["label"] for s in w.take([0, len(w) - 1])] == [0, 7]
