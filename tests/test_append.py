"""Growing a root: append in place, atomically; readers keep the version they opened."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import lance
import numpy as np
import pytest
from _loading import PROJECT_ROOT, TIMEOUT
from _roots import make_frames

from hf_lvf import VideoWindows
from hf_lvf.write import write_frames
from hf_lvf.write.append import write_lock

LENGTHS = (7, 5, 9, 6, 8, 5, 7, 6, 10)  # 6 videos, then 3 appended
FIRST, NEW = range(6), range(6, 9)
WINDOW = {"window_length": 3, "hop_size": 2}


def _videos(ids):
    return [
        (f"clip_{i}", iter(make_frames(LENGTHS[i], 32, 48, seed=i)), {"label": i % 3}) for i in ids
    ]


def _snapshot(root: Path) -> dict:
    """Everything a reader could see: the metadata bytes, the windows' pixels, the frames'
    WebP bytes (in row order) of the version the metadata names."""
    meta = (root / "_metadata.json").read_bytes()
    version = json.loads(meta).get("lance_version")
    table = lance.dataset(str(root), version=version).to_table()
    return {
        "metadata": meta,
        "bytes": table.column("bytes").to_pylist(),
        "windows": [s["video"].tobytes() for s in VideoWindows(root, **WINDOW)],
    }


def _data_files_referenced(root: Path) -> bool:
    ds = lance.dataset(str(root))
    referenced = {f.path for frag in ds.get_fragments() for f in frag.metadata.files}
    return referenced == {p.name for p in (root / "data").iterdir()}


@pytest.fixture
def six(tmp_path) -> Path:
    return write_frames(tmp_path / "root", _videos(FIRST))


def test_append_keeps_old_frames_and_equals_a_fresh_write(six, tmp_path):
    before = _snapshot(six)
    opened_before = VideoWindows(six, **WINDOW)
    write_frames(six, _videos(NEW), mode="append")
    fresh = write_frames(tmp_path / "fresh", _videos(range(9)))

    after = _snapshot(six)
    assert after["bytes"][: len(before["bytes"])] == before["bytes"]  # frames untouched
    assert after["bytes"] == _snapshot(fresh)["bytes"]
    assert after["windows"] == _snapshot(fresh)["windows"]
    assert after["windows"][: len(before["windows"])] == before["windows"]
    meta = json.loads(after["metadata"])
    fresh_meta = json.loads((fresh / "_metadata.json").read_bytes())
    assert meta["videos"] == fresh_meta["videos"]  # ids 6, 7, 8, start rows after the old ones
    assert (meta["n_videos"], meta["num_rows"]) == (9, sum(LENGTHS))
    assert meta["lance_version"] == lance.dataset(str(six)).version == 2
    assert meta["lineage"]["appends"][0]["videos"] == 3
    # A reader opened before the append reads the old windows to the end.
    assert [s["video"].tobytes() for s in opened_before] == before["windows"]
    assert len(VideoWindows(six, **WINDOW)) > len(opened_before)
    assert _data_files_referenced(six)
    assert sorted(p.name for p in six.parent.iterdir()) == ["fresh", "root"]  # no leftovers


@pytest.mark.parametrize("streaming", [True, False])
def test_dataset_opened_before_an_append_keeps_its_windows(six, tmp_path, streaming):
    params = {"data_dir": str(six), "split": "train", "streaming": streaming, **WINDOW}
    if not streaming:
        params["cache_dir"] = str(tmp_path / "cache")
    opened = datasets.load_dataset("hf_lvf", **params)
    want = [s["video"].tobytes() for s in VideoWindows(six, **WINDOW)]
    write_frames(six, _videos(NEW), mode="append")
    assert [np.asarray(r["video"], dtype=np.uint8).tobytes() for r in opened] == want
    reopened = datasets.load_dataset("hf_lvf", **params)  # the same cache: it sees the change
    assert len(list(reopened)) == len(VideoWindows(six, **WINDOW)) > len(want)


def test_failed_append_leaves_the_root_as_it_was(six):
    before = _snapshot(six)

    def broken():
        yield from _videos([6])
        yield ("clip_7", iter([np.zeros((32, 48), np.uint8)]), None)  # not RGB

    with pytest.raises(ValueError, match=r"frame 0 of video 'clip_7' must be a \(H, W, 3\)"):
        write_frames(six, broken(), mode="append")
    assert _snapshot(six) == before
    assert lance.dataset(str(six)).version == 1
    assert _data_files_referenced(six)  # the fragments of clip_6 were removed


def _run_killed(code: str) -> int:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return proc.returncode


@pytest.mark.parametrize("moment", ["writing", "after_commit", "metadata_rename"])
def test_sigkill_mid_append_leaves_the_old_root_and_needs_no_cleanup(six, tmp_path, moment):
    before = _snapshot(six)
    returncode = _run_killed(
        f"""
        import os, signal, sys
        sys.path.insert(0, "tests")
        import hf_lvf.write.append
        from _roots import make_frames
        from hf_lvf.write import write_frames

        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        def frames():  # killed while writing, after a few batches of frames went to disk
            for i, frame in enumerate(make_frames(200, 32, 48, seed=6)):
                if i == 150 and {moment!r} == "writing":
                    die()
                yield frame

        if {moment!r} == "after_commit":  # the Lance version exists, the metadata not yet
            hf_lvf.write.append.write_metadata_atomic = die
        if {moment!r} == "metadata_rename":  # the new metadata is written, not renamed
            os.replace = die
        write_frames({str(six)!r}, [("clip_6", frames(), None)], mode="append")
        """
    )
    assert returncode == -signal.SIGKILL
    assert _snapshot(six) == before  # readable, unchanged
    if moment != "writing":
        assert lance.dataset(str(six)).version == 2  # a version no metadata names
    if moment == "metadata_rename":
        assert len(list(six.glob("._metadata.json.*.tmp"))) == 1
    # The next append needs no clean-up and equals a fresh write.
    write_frames(six, _videos(NEW), mode="append")
    fresh = write_frames(tmp_path / "fresh", _videos(range(9)))
    assert _snapshot(six)["windows"] == _snapshot(fresh)["windows"]
    assert _snapshot(six)["bytes"] == _snapshot(fresh)["bytes"]
    assert _data_files_referenced(six)
    assert sorted(p.name for p in six.iterdir()) == sorted(p.name for p in fresh.iterdir())


def test_root_without_a_recorded_version_is_upgraded_first(six):
    meta = json.loads((six / "_metadata.json").read_text())
    del meta["lance_version"]  # as written by another tool
    (six / "_metadata.json").write_text(json.dumps(meta))
    before = _snapshot(six)
    with pytest.raises(ValueError, match=r"appears twice"):  # fails before the commit
        write_frames(six, _videos([6, 6]), mode="append")
    assert _snapshot(six) == before  # the file too: byte for byte
    write_frames(six, _videos(NEW), mode="append")
    assert json.loads((six / "_metadata.json").read_text())["lance_version"] == 2
    assert len(VideoWindows(six).videos) == 9


def test_append_errors(six, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"not a lance-video-frames root"):
        write_frames(tmp_path / "missing", _videos([0]), mode="append")
    with pytest.raises(ValueError, match=r"cannot be used with mode='append'"):
        write_frames(six, _videos([6]), mode="append", overwrite=True)
    with pytest.raises(ValueError, match=r"mode must be one of 'create', 'overwrite', 'append'"):
        write_frames(six, _videos([6]), mode="add")
    with pytest.raises(FileExistsError, match=r"mode='append' to add videos"):
        write_frames(six, _videos([6]))
    with pytest.raises(ValueError, match=r"quality=80 differs from the root's quality 90"):
        write_frames(six, _videos([6]), mode="append", quality=80)
    with pytest.raises(ValueError, match=r"video key 'clip_2' is already in the root"):
        write_frames(six, _videos([2]), mode="append")
    with write_lock(six):
        with pytest.raises(BlockingIOError, match=r"another process is writing"):
            write_frames(six, _videos([6]), mode="append")
        with pytest.raises(BlockingIOError, match=r"another process is writing"):
            write_frames(six, _videos([6]), mode="overwrite")
    assert lance.dataset(str(six)).version == 1
    assert _data_files_referenced(six)
    # overwrite=True still means mode="overwrite"
    write_frames(six, _videos([6]), overwrite=True)
    assert [v.key for v in VideoWindows(six).videos] == ["clip_6"]


def test_metadata_naming_a_missing_version_is_a_layout_error(six):
    from hf_lvf.errors import LayoutError

    meta = json.loads((six / "_metadata.json").read_text())
    (six / "_metadata.json").write_text(json.dumps({**meta, "lance_version": 7}))
    with pytest.raises(LayoutError, match=r"cannot open version 7 of the Lance table"):
        write_frames(six, _videos(NEW), mode="append")
    with pytest.raises(LayoutError, match=r"cannot open the Lance table of root"):
        VideoWindows(six)[0]
    (six / "_metadata.json").write_text(json.dumps({**meta, "lance_version": "2"}))
    with pytest.raises(LayoutError, match=r"field lance_version must be an integer >= 1"):
        VideoWindows(six)[0]
