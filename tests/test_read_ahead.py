"""Fetching ahead (hf_lvf.frames) on local roots: same samples, bounded,
and nothing left running when a reader stops early."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from _roots import assert_same_values, foreign_videos, hf_root, write_foreign_root
from _threads import fetch_threads_end

from hf_lvf import FrameDecodeError, ReadAheadBudget, VideoWindows
from hf_lvf.frames import FrameReader, read_ahead

pytestmark = pytest.mark.usefixtures("small_reads")

PARAMS = {"window_length": 4, "hop_size": 2}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return hf_root(tmp_path_factory.mktemp("read-ahead") / "root", lengths=(30, 3, 41, 25))


def _hf_lvf_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("hf_lvf"))


def _assert_same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a.pop("video"), b.pop("video"))
        assert_same_values(a, b)


@pytest.mark.parametrize(
    "read_ahead",
    [
        ReadAheadBudget(depth=0),
        ReadAheadBudget(depth=1),
        ReadAheadBudget(),
        ReadAheadBudget(depth=3, max_bytes=1),
    ],
    ids=["off", "depth1", "default", "tiny-budget"],
)
@pytest.mark.parametrize("order", ["sequential", "random"])
def test_read_ahead_yields_the_samples_of_take(root, read_ahead, order):
    w = VideoWindows(root, read_ahead=read_ahead, **PARAMS)
    indices = np.arange(len(w))
    if order == "random":
        indices = np.random.default_rng(3).permutation(len(w))
    got = list(w.iter_samples(indices, batch_size=5))
    _assert_same(got, VideoWindows(root, **PARAMS).take(indices))
    assert fetch_threads_end()


def test_read_ahead_is_bounded_by_depth_and_bytes(root):
    reader = VideoWindows(root, **PARAMS)._frames.reader
    batches = [np.arange(k * 10, k * 10 + 10) for k in range(9)]

    def lazy(limit: list[int]):
        for k, rows in enumerate(batches):
            limit.append(k)
            yield rows

    for options, most_ahead in (
        (ReadAheadBudget(depth=2), 3),
        (ReadAheadBudget(depth=4, max_bytes=1), 2),
    ):
        asked: list[int] = []
        for k, got in enumerate(read_ahead(reader.read, lazy(asked), options)):
            # Batches asked for but not yet handed out: the one being read and those ahead.
            assert len(asked) - k <= most_ahead
            assert got.blobs == reader.read(batches[k])
        assert asked == list(range(9))

    # Until row sizes are known, the first batch is fetched alone, by the caller (which opens
    # the table); once they are (a later pass of the same reader), it goes out with the rest.
    for seen, first_by in ((None, "MainThread"), ([10, 10 * 5000], "hf_lvf-fetch")):
        threads: list[str] = []

        def fetch(rows, threads=threads):
            threads.append(threading.current_thread().name)
            return reader.read(rows)

        fetched = read_ahead(fetch, iter(batches), ReadAheadBudget(depth=3), seen=seen)
        next(fetched)
        fetched.close()
        assert threads[0].startswith(first_by)


def test_a_read_takes_what_was_fetched_ahead_and_reads_the_rest(root):
    reader = VideoWindows(root, **PARAMS)._frames.reader
    rows = np.array([3, 4, 1, 0, 5, 5])
    want = reader.read(rows)
    with reader.reading_ahead([np.array([5, 1, 3])], ReadAheadBudget()) as next_batch:
        next_batch()
        assert reader._current is not None and reader._current.rows.tolist() == [1, 3, 5]
        assert reader.read(rows) == want
    assert reader._current is None


def test_break_and_close_leave_no_thread(root, monkeypatch):
    w = VideoWindows(root, read_ahead=ReadAheadBudget(depth=3), **PARAMS)
    list(w.iter_samples(batch_size=2))  # the decode pool and lance exist from here on
    assert fetch_threads_end()
    before = _hf_lvf_threads()  # (other tests' servers may end threads of their own meanwhile)
    # Fetches of a local root end in a blink and each has a thread of its own: slowed down
    # (as a remote store is), some are likely still under way when the loop breaks.
    reader = w._frames.reader
    read_now = reader._read_now
    started_ahead = []

    def slow_fetch(rows):
        if threading.current_thread().name.startswith("hf_lvf-fetch"):
            started_ahead.append(len(rows))
            time.sleep(0.3)
        return read_now(rows)

    monkeypatch.setattr(reader, "_read_now", slow_fetch)

    for k, _ in enumerate(w.iter_samples(batch_size=2)):
        if k == 3:
            assert started_ahead  # reading ahead while this batch is used
            break
    assert fetch_threads_end()

    samples = w.iter_samples(batch_size=2)
    next(samples)
    samples.close()
    assert fetch_threads_end()
    assert _hf_lvf_threads() == before


def test_an_error_mid_pass_stops_the_read_ahead(tmp_path):
    videos = foreign_videos((12, 12, 12))
    root = write_foreign_root(tmp_path / "bad", videos, blobs={(2, 5): b"not a webp image"})
    w = VideoWindows(root, read_ahead=ReadAheadBudget(depth=4), **PARAMS)
    seen = []
    with pytest.raises(FrameDecodeError, match=r"frame 5 of video 2"):
        for sample in w.iter_samples(batch_size=2):
            seen.append(sample["sample_idx"])
    assert seen == list(range(len(seen)))  # the windows before the bad frame's read, in order
    assert fetch_threads_end()


def test_read_ahead_options_are_checked(root):
    with pytest.raises(ValueError, match=r"ReadAheadBudget depth must be an integer >= 0, got -1"):
        ReadAheadBudget(depth=-1)
    with pytest.raises(
        ValueError, match=r"ReadAheadBudget max_bytes must be an integer >= 1, got 0"
    ):
        ReadAheadBudget(max_bytes=0)
    with pytest.raises(
        ValueError, match=r"ReadAheadBudget depth must be an integer >= 0, got True"
    ):
        ReadAheadBudget(depth=True)
    with pytest.raises(
        TypeError, match=r"read_ahead must be a ReadAheadBudget, e.g. ReadAheadBudget"
    ):
        VideoWindows(root, read_ahead=4, **PARAMS)


def test_read_ahead_travels_with_the_view(root):
    import pickle

    w = VideoWindows(root, read_ahead=ReadAheadBudget(depth=2, max_bytes=1000), **PARAMS)
    clone = pickle.loads(pickle.dumps(w))
    assert clone._fetch_ahead == ReadAheadBudget(depth=2, max_bytes=1000)
    assert isinstance(clone._frames.reader, FrameReader)
    assert (
        pickle.loads(pickle.dumps(VideoWindows(root, **PARAMS)))._fetch_ahead == ReadAheadBudget()
    )


def test_breaking_out_of_a_streaming_load_leaves_no_thread(root):
    import datasets

    ds = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, shard_windows=4, **PARAMS
    )
    want = [s["sample_idx"] for s in VideoWindows(root, **PARAMS).iter_samples()]
    assert [row["sample_idx"] for row in ds] == want  # across many shards, in order
    for k, _ in enumerate(ds):
        if k == 9:
            break
    assert fetch_threads_end()


def test_fetches_take_several_small_batches_but_never_the_one_needed_next(root):
    reader = VideoWindows(root, **PARAMS)._frames.reader
    batches = [np.arange(k * 10, k * 10 + 10) for k in range(9)]
    fetched_rows: list[list[int]] = []

    def fetch(rows):
        fetched_rows.append(rows.tolist())
        return reader.read(rows)

    got = list(
        read_ahead(fetch, iter(batches), ReadAheadBudget(depth=2), [10, 1000], group_rows=30)
    )
    assert len(got) == len(batches)
    for rows, fetched in zip(batches, got, strict=True):
        assert fetched.lookup(rows)[0] == reader.read(rows)  # each batch's frames, all held
    # The first fetch holds the batch needed next alone; the others 3 batches (30 rows), in
    # order, the last what is left.
    assert [len(r) for r in fetched_rows] == [10, 30, 30, 20]
    assert sorted(sum(fetched_rows, [])) == list(range(90))
