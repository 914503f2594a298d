"""``VideoWindows.to_iterable_dataset``: order, per-epoch permutations, shards, resume."""

from __future__ import annotations

import datasets
import datasets.distributed
import pytest
from _loading import assert_rows_equal, long_videos_root
from _roots import hf_root

from hf_lvf import VideoWindows
from hf_lvf.hf.iterable import default_num_shards, shard_ranges


@pytest.fixture(scope="module")
def windows(tmp_path_factory) -> VideoWindows:
    root = hf_root(tmp_path_factory.mktemp("iterable") / "root", (12, 3, 20, 9, 15))
    return VideoWindows(root, window_length=3, hop_size=2)


def _ids(ds) -> list[int]:
    return [s["sample_idx"] for s in ds]


def test_unshuffled_equals_core(windows):
    ds = windows.to_iterable_dataset()
    assert isinstance(ds, datasets.IterableDataset)
    assert ds.features == windows.features
    assert_rows_equal(ds, list(windows))
    ds.set_epoch(3)  # the order of an unshuffled dataset never changes
    assert _ids(ds) == list(range(len(windows)))


def test_shuffle_is_a_full_permutation_per_epoch(windows):
    n = len(windows)
    ds = windows.to_iterable_dataset(shuffle=True, seed=7, num_shards=4)
    epoch0 = _ids(ds)
    ds.set_epoch(1)
    epoch1 = _ids(ds)
    ds.set_epoch(0)
    again0 = _ids(ds)
    assert sorted(epoch0) == sorted(epoch1) == list(range(n))
    assert epoch0 != epoch1 and epoch0 == again0
    # Not a buffer shuffle: the first windows come from anywhere in the dataset.
    assert max(epoch0[:4]) > n // 2 or max(epoch1[:4]) > n // 2
    # The same (seed, epoch) in a new dataset gives the same order; another seed another.
    other = windows.to_iterable_dataset(shuffle=True, seed=7, num_shards=4)
    other.set_epoch(1)
    assert _ids(other) == epoch1
    assert _ids(windows.to_iterable_dataset(shuffle=True, seed=8, num_shards=4)) != epoch0


def test_shuffled_samples_are_the_core_windows(windows):
    ds = windows.to_iterable_dataset(shuffle=True, seed=1)
    rows = list(ds)
    assert_rows_equal(rows, windows.take([r["sample_idx"] for r in rows]))


def test_nodes_see_every_window_once_per_epoch(windows):
    n = len(windows)
    ds = windows.to_iterable_dataset(shuffle=True, seed=5, num_shards=4)
    orders = []
    for epoch in (0, 1):
        seen = []
        for rank in range(2):
            node = datasets.distributed.split_dataset_by_node(ds, rank=rank, world_size=2)
            assert node.num_shards == 2
            node.set_epoch(epoch)
            seen += _ids(node)
        assert sorted(seen) == list(range(n))
        orders.append(seen)
    assert orders[0] != orders[1]


def test_shards_split_the_permutation(windows):
    # Shard s of k is the s-th contiguous slice of the epoch's order.
    ds = windows.to_iterable_dataset(shuffle=True, seed=2, num_shards=3)
    order = _ids(ds)
    parts = [_ids(ds.shard(num_shards=3, index=i, contiguous=True)) for i in range(3)]
    assert sum(parts, []) == order
    assert [len(p) for p in parts] == [hi - lo for lo, hi in shard_ranges(len(order), 3)]


@pytest.mark.parametrize("shuffle", [False, True])
def test_resume_at_the_exact_window(windows, shuffle):
    for epoch in (0, 2):
        ds = windows.to_iterable_dataset(shuffle=shuffle, seed=11, num_shards=3)
        ds.set_epoch(epoch)
        full = _ids(ds)
        for stop in (1, 5, 9, len(full) - 1):
            it = iter(ds)
            head = [next(it)["sample_idx"] for _ in range(stop)]
            state = ds.state_dict()
            resumed = windows.to_iterable_dataset(shuffle=shuffle, seed=11, num_shards=3)
            resumed.set_epoch(epoch)
            resumed.load_state_dict(state)
            assert head + _ids(resumed) == full


def test_resume_does_not_decode_skipped_windows(windows):
    ds = windows.to_iterable_dataset(num_shards=1)
    it = iter(ds)
    for _ in range(6):
        next(it)
    state = ds.state_dict()
    assert state["examples_iterable"]["shard_example_idx"] == 6
    resumed = windows.to_iterable_dataset(num_shards=1)
    resumed.load_state_dict(state)
    seen = []
    original = windows._take_shared  # what iter_samples reads with

    class Counting(VideoWindows):
        def _take_shared(self, indices):
            seen.extend(int(i) for i in indices)
            return original(indices)

    resumed._ex_iterable.windows.__class__ = Counting
    try:
        assert _ids(resumed) == list(range(6, len(windows)))
    finally:
        resumed._ex_iterable.windows.__class__ = VideoWindows
    assert min(seen) == 6


def test_many_shards_from_two_long_videos(tmp_path):
    w = VideoWindows(long_videos_root(tmp_path / "long"), window_length=8, hop_size=2)
    ds = w.to_iterable_dataset()
    assert ds.num_shards >= 8
    assert _ids(ds) == list(range(len(w)))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"num_shards": 0}, ValueError, r"num_shards must be an integer >= 1, got 0"),
        ({"num_shards": 10_000}, ValueError, r"num_shards must be <= the number of windows"),
        ({"seed": -1}, ValueError, r"seed must be an integer >= 0, got -1"),
        ({"shuffle": "yes"}, TypeError, r"shuffle must be True or False, got 'yes'"),
    ],
)
def test_bad_arguments(windows, kwargs, error, match):
    with pytest.raises(error, match=match):
        windows.to_iterable_dataset(**kwargs)


def test_default_num_shards():
    assert [default_num_shards(n) for n in (1, 15, 16, 36, 288, 5000, 16384, 40000)] == [
        1, 1, 2, 4, 32, 64, 64, 192,
    ]  # fmt: skip


@pytest.mark.parametrize(("n", "k"), [(36, 4), (100, 7), (5, 3), (9, 9), (3, 8)])
def test_shard_ranges_cover_in_order(n, k):
    ranges = shard_ranges(n, k)
    assert [i for lo, hi in ranges for i in range(lo, hi)] == list(range(n))
    assert all(hi > lo for lo, hi in ranges)
    assert len(ranges) == min(n, k)
    sizes = [hi - lo for lo, hi in ranges]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] - sizes[-1] <= 1  # longer first


def test_shard_ranges_of_the_issue():
    # 42 windows in 4 shards: 11, 11, 10, 10 (it was 8, 8, 8, 18).
    assert shard_ranges(42, 4) == [(0, 11), (11, 22), (22, 32), (32, 42)]


@pytest.fixture(scope="module")
def windows_42(tmp_path_factory) -> VideoWindows:
    root = long_videos_root(tmp_path_factory.mktemp("nodes") / "long", num_frames=22)
    return VideoWindows(root, window_length=2, hop_size=1)  # 2 videos of 21 windows


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("front_end", ["to_iterable_dataset", "load_dataset"])
def test_nodes_get_the_same_number_of_windows_within_one(windows_42, world, front_end):
    assert len(windows_42) == 42
    if front_end == "to_iterable_dataset":
        ds = windows_42.to_iterable_dataset(shuffle=True, seed=3)
    else:
        ds = datasets.load_dataset(
            "hf_lvf", data_dir=str(windows_42.uri), split="train", streaming=True,
            window_length=2, hop_size=1,
        )  # fmt: skip
    per_rank = [
        _ids(datasets.distributed.split_dataset_by_node(ds, rank=rank, world_size=world))
        for rank in range(world)
    ]
    counts = [len(ids) for ids in per_rank]
    assert sum(counts) == 42 and max(counts) - min(counts) <= 1, counts
    assert sorted(sum(per_rank, [])) == list(range(42))  # every window once
