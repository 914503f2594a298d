"""The shuffled streams read ahead in the order they know: ``to_iterable_dataset(shuffle=True)``
(its order from its seed and epoch) and ``load_dataset(..., streaming=True).shuffle(...)``
(the shard order ``datasets`` draws, each shard read through). The samples are exactly those
of the order alone; the read-ahead is only where the frames come from, bounded by the view's
``ReadAheadBudget`` and stopped at a ``break``, at the epoch's end and at exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import datasets
import numpy as np
import pytest
from _roots import hf_root
from _threads import fetch_threads, fetch_threads_end

from hf_lvf import ReadAheadBudget, VideoWindows, frames
from hf_lvf.frames import FrameReader

pytestmark = pytest.mark.usefixtures("small_reads")

PARAMS = {"window_length": 4, "hop_size": 2}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return hf_root(tmp_path_factory.mktemp("shuffled-stream") / "root", lengths=(30, 3, 41, 25))


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The thread of each read of a Lance table, from now on (any view, any root)."""
    names: list[str] = []
    read_now = FrameReader._read_now

    def counted(self, rows):
        names.append(threading.current_thread().name)
        return read_now(self, rows)

    monkeypatch.setattr(FrameReader, "_read_now", counted)
    return names


def _ahead(names: list[str]) -> int:
    return sum(name.startswith("hf_lvf-fetch") for name in names)


def _assert_same(got: list[dict], want: list[dict]) -> None:
    assert [s["sample_idx"] for s in got] == [s["sample_idx"] for s in want]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(a["video"]), np.asarray(b["video"]))


def test_a_shuffled_stream_reads_its_order_ahead_and_yields_that_order(root, reads):
    w = VideoWindows(root, **PARAMS)
    off = VideoWindows(root, read_ahead=ReadAheadBudget(depth=0), **PARAMS)
    stream = w.to_iterable_dataset(shuffle=True, seed=5)
    without = off.to_iterable_dataset(shuffle=True, seed=5)
    for epoch in range(2):
        stream.set_epoch(epoch)
        without.set_epoch(epoch)
        del reads[:]
        got = list(stream)
        assert _ahead(reads) >= len(reads) // 2 > 0  # most reads were fetched ahead
        del reads[:]
        want = list(without)
        assert _ahead(reads) == 0
        _assert_same(got, want)
        order = [s["sample_idx"] for s in got]
        assert sorted(order) == list(range(len(w))) and order != sorted(order)
        _assert_same(got, w.take(order))
    assert fetch_threads_end()  # the epoch's end stops the read-ahead


def test_the_stream_reads_ahead_within_the_views_fetch_ahead(root, monkeypatch):
    budget = ReadAheadBudget(depth=3, max_bytes=1)
    seen: list[ReadAheadBudget] = []
    read_ahead = frames.read_ahead

    def spy(fetch, batches, options, *args, **kwargs):
        seen.append(options)
        return read_ahead(fetch, batches, options, *args, **kwargs)

    monkeypatch.setattr(frames, "read_ahead", spy)
    w = VideoWindows(root, read_ahead=budget, **PARAMS)
    got = list(w.to_iterable_dataset(shuffle=True, seed=2))
    assert seen and set(seen) == {budget}  # the same cap as safe_dataloader's read-ahead
    _assert_same(got, w.take([s["sample_idx"] for s in got]))


def test_breaking_out_of_a_shuffled_stream_stops_its_read_ahead(root, monkeypatch):
    w = VideoWindows(root, read_ahead=ReadAheadBudget(depth=3), **PARAMS)
    reader = w._frames.reader
    read_now = reader._read_now

    def slow(rows):  # fetches still under way when the loop breaks
        if threading.current_thread().name.startswith("hf_lvf-fetch"):
            time.sleep(0.2)
        return read_now(rows)

    monkeypatch.setattr(reader, "_read_now", slow)
    for k, _ in enumerate(w.to_iterable_dataset(shuffle=True, seed=1)):
        if k == 3:
            assert fetch_threads()
            break
    assert fetch_threads_end()


def test_a_script_that_reads_a_few_shuffled_windows_exits_cleanly(root, tmp_path):
    script = tmp_path / "few.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import signal
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            import hf_lvf
            w = hf_lvf.VideoWindows({str(root)!r}, window_length=4, hop_size=2,
                                    read_ahead=hf_lvf.ReadAheadBudget(depth=4))
            stream = iter(w.to_iterable_dataset(shuffle=True, seed=3))
            print(next(stream)["sample_idx"], next(stream)["sample_idx"])
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    first_two = VideoWindows(root, **PARAMS).to_iterable_dataset(shuffle=True, seed=3)
    want = [s["sample_idx"] for s, _ in zip(first_two, range(2), strict=False)]
    assert done.stdout.split() == [str(i) for i in want]


def _commit(hub, root: Path, repo: str) -> str:
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    hub.create_repo(repo, exist_ok=True)
    return hub.commit(repo, files)


@pytest.mark.hub
def test_a_streaming_shuffle_over_the_hub_reads_its_shard_order_ahead(hub, root, reads):
    sha = _commit(hub, root, "org/shuffled")
    hub.latency = 0.01
    options = dict(split="train", streaming=True, shard_windows=8, **PARAMS)
    remote = datasets.load_dataset(
        "hf_lvf", data_files=f"hf://datasets/org/shuffled@{sha}/_metadata.json", **options
    )
    local = datasets.load_dataset("hf_lvf", data_dir=str(root), **options)
    assert remote.num_shards == local.num_shards > 4
    for seed in (0, 1):
        del reads[:]
        got = list(remote.shuffle(seed=seed, buffer_size=6))
        assert _ahead(reads) > 0  # the shards' windows were fetched ahead, in their new order
        want = list(local.shuffle(seed=seed, buffer_size=6))
        _assert_same(got, want)  # the order datasets draws; only where the frames came from
        assert sorted(s["sample_idx"] for s in got) == list(range(len(got)))
    assert fetch_threads_end()


def test_passes_side_by_side_share_one_read_ahead_budget(monkeypatch):
    # datasets' .shuffle() reads up to 10 slices of the shard order side by side: each is a
    # pass of the same reader, and together they hold at most max_bytes ahead.
    started: list[int] = []
    start_fetch = frames._start_fetch

    def counted(fetch, rows, daemon):
        started.append(int(rows[0]) // 1000)  # which pass
        return start_fetch(fetch, rows, daemon)

    monkeypatch.setattr(frames, "_start_fetch", counted)

    def fetch(rows):
        return [b"x" * 100] * len(rows)

    def batches(base: int):
        return (base + np.arange(k * 5, k * 5 + 5) for k in range(40))

    seen = [10, 1000]  # 100 bytes a row so far: a batch of 5 rows is 500 bytes
    budget = ReadAheadBudget(depth=8, max_bytes=1000)
    alone = frames.read_ahead(fetch, batches(0), budget, [10, 1000])
    next(alone)
    on_its_own = started.count(0)
    assert on_its_own == 3  # the batch needed next and 1000 bytes ahead: the cap
    alone.close()
    del started[:]
    a = frames.read_ahead(fetch, batches(0), budget, seen)
    b = frames.read_ahead(fetch, batches(1000), budget, seen)
    next(a)
    next(b)
    # b: its next batch, and one more (each pass always has one batch under way beyond it)
    assert (started.count(0), started.count(1)) == (on_its_own, 2)
    a.close()
    next(b)
    assert started.count(1) > 2  # a's share is free again
    b.close()
    assert seen[2] == 0
