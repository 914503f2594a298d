"""Reading ahead of batches taken in a known order (hf_lvf.read.orders): ``expect_order`` and
``take``, ``safe_dataloader(..., shuffle=True)`` with 0 and 2 workers, ``ClipSampler``. The
samples are exactly those of the order the sampler alone gives; the read-ahead is only
where the frames come from."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _roots import assert_same_values, hf_root
from _threads import fetch_threads_end

import hf_lvf
from hf_lvf import ClipSampler, ReadAheadBudget, VideoWindows
from hf_lvf.read.orders import EpochShuffle

pytestmark = pytest.mark.usefixtures("small_reads")

PARAMS = {"window_length": 4, "hop_size": 2}
LOADER_TIMEOUT = 120


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return hf_root(tmp_path_factory.mktemp("known-order") / "root", lengths=(30, 3, 41, 25))


def _assert_same(got: list[dict], want: list[dict]) -> None:
    assert [s["sample_idx"] for s in got] == [s["sample_idx"] for s in want]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a["video"], b["video"])
        assert_same_values(a, b)


def _fetching_threads(w: VideoWindows) -> list[str]:
    """Names of the threads each read of ``w``'s Lance table runs on, from now on."""
    reader, names = w._frames.reader, []
    read_now = reader._read_now

    def counted(rows):
        names.append(threading.current_thread().name)
        return read_now(rows)

    reader._read_now = counted
    return names


@pytest.mark.parametrize("batch", [1, 5])
def test_takes_in_the_expected_order_are_fetched_ahead(root, batch):
    w, plain = VideoWindows(root, **PARAMS), VideoWindows(root, **PARAMS)
    order = np.random.default_rng(1).permutation(len(w))
    w.expect_order(order)
    threads = _fetching_threads(w)
    batches = [order[lo : lo + batch] for lo in range(0, len(order), batch)]
    for idx in batches:
        _assert_same(w.take(idx), plain.take(idx))
    # The first batch is read by the caller, every later one ahead of its take (several
    # batches a fetch, when small).
    assert threads[0] == "MainThread"
    assert set(threads[1:]) == {"hf_lvf-fetch"} and 1 < len(threads) <= len(batches)
    assert w._ordered.served == len(batches)
    assert w._ordered._pass is None  # the order's end ends the read-ahead
    assert fetch_threads_end()


def test_takes_out_of_order_read_as_ever_and_find_the_order_again(root):
    w, plain = VideoWindows(root, **PARAMS), VideoWindows(root, **PARAMS)
    order = np.random.default_rng(2).permutation(len(w))
    w.expect_order(order)
    asked = [order[0:4], order[4:8], np.array([3, 1]), order[12:16], order[16:20], order[9:13]]
    for idx in asked:
        _assert_same(w.take(idx), plain.take(idx))
    # [3, 1] is not in the order; order[12:16] is found again and order[16:20] comes ahead;
    # order[9:13] is no batch of the order (batches of 4 start at multiples of 4).
    assert w._ordered.served == 4
    w.expect_order(None)
    _assert_same(w.take(order[:4]), plain.take(order[:4]))
    assert w._ordered.served == 4 and fetch_threads_end()


def test_no_read_ahead_when_fetch_ahead_is_off_or_no_order_is_known(root):
    w = VideoWindows(root, read_ahead=ReadAheadBudget(depth=0), **PARAMS)
    w.expect_order(np.arange(len(w)))
    threads = _fetching_threads(w)
    for lo in range(0, 12, 4):
        w.take(np.arange(lo, lo + 4))
    plain = VideoWindows(root, **PARAMS)
    plain_threads = _fetching_threads(plain)
    for lo in range(0, 12, 4):
        plain.take(np.arange(lo, lo + 4))
    assert threads == plain_threads == ["MainThread"] * 3


def test_a_fetch_that_fails_raises_in_the_take_that_needs_it(root):
    # A byte budget this small fetches one batch a fetch (a fetch of several batches that
    # fails raises in the take of its first).
    w = VideoWindows(root, read_ahead=ReadAheadBudget(max_bytes=1), **PARAMS)
    order = np.arange(len(w))[::-1].copy()
    w.expect_order(order)
    reader = w._frames.reader
    read_now = reader._read_now
    failing = set(w._rows(order[8:12])[3].ravel().tolist()) - set(w._rows(order[:8])[3].ravel())

    def fetch(rows):
        if failing & set(rows.tolist()):
            raise OSError(f"the store is gone (rows {rows.min()}..{rows.max()})")
        return read_now(rows)

    reader._read_now = fetch
    assert [s["sample_idx"] for s in w.take(order[0:4])] == order[0:4].tolist()
    assert [s["sample_idx"] for s in w.take(order[4:8])] == order[4:8].tolist()
    with pytest.raises(OSError, match=r"the store is gone \(rows"):
        w.take(order[8:12])
    assert fetch_threads_end()


def _ids(batch: list[dict]) -> tuple[list[int], int]:
    """A batch's windows and the batches its process served from a read-ahead so far."""
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    view = info.dataset if info is not None else None
    served = view._ordered.served if view is not None else -1
    return [s["sample_idx"] for s in batch], served


@pytest.mark.parametrize("workers", [0, 2])
def test_safe_dataloader_shuffle_reads_the_samplers_order_ahead(root, workers):
    import torch

    w = VideoWindows(root, **PARAMS)
    torch.manual_seed(0)
    loader = hf_lvf.safe_dataloader(
        w, batch_size=5, shuffle=True, num_workers=workers, collate_fn=_ids, timeout=0
    )
    sampler = loader.sampler
    assert isinstance(sampler, EpochShuffle)
    epochs = []
    for _ in range(2):
        batches = list(loader)
        epochs.append([i for ids, _ in batches for i in ids])
        if workers:  # each worker serves its batches after its first from the read-ahead
            assert max(served for _, served in batches) >= len(batches) // workers - 2
    seed = sampler.order.seed
    want = [np.random.default_rng([seed, e]).permutation(len(w)).tolist() for e in range(2)]
    assert epochs == want and epochs[0] != epochs[1]
    if not workers:
        assert loader.dataset._ordered.served >= 2 * (-(-len(w) // 5)) - 2
    # A resume at epoch 1, in a new loader with the same seed: epoch 1's order.
    torch.manual_seed(0)
    again = hf_lvf.safe_dataloader(
        w, batch_size=5, shuffle=True, num_workers=workers, collate_fn=_ids
    )
    again.sampler.set_epoch(1)
    assert [i for ids, _ in again for i in ids] == want[1]
    assert w._ordered.order is None  # the caller's view is left as it was
    # The pixels are those of take over the same order.
    torch.manual_seed(0)
    pixels = hf_lvf.safe_dataloader(w, batch_size=5, shuffle=True, num_workers=workers)
    first = next(iter(pixels))
    np.testing.assert_array_equal(
        first["video"].numpy(), np.stack([s["video"] for s in w.take(want[0][:5])])
    )


def test_a_callers_own_sampler_keeps_todays_reads(root):
    import torch

    w = VideoWindows(root, **PARAMS)
    sampler = torch.utils.data.RandomSampler(w)
    loader = hf_lvf.safe_dataloader(w, batch_size=5, sampler=sampler, num_workers=0)
    assert loader.dataset is w and loader.sampler is sampler and w._ordered.order is None
    loader = hf_lvf.safe_dataloader(w, batch_size=5, num_workers=0)
    assert loader.dataset is w and w._ordered.order is None


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataloader_over_a_clip_sampler_reads_its_order_ahead(root, workers):
    w = VideoWindows(root, **PARAMS)
    sampler = ClipSampler(w, clips_per_video=6, seed=3)
    loader = hf_lvf.safe_dataloader(
        w,
        batch_size=4,
        sampler=sampler,
        num_workers=workers,
        collate_fn=_ids,
        persistent_workers=bool(workers),
    )
    for epoch in (0, 1, 3):  # epoch 2 skipped
        sampler.set_epoch(epoch)
        want = list(sampler)
        batches = list(loader)
        assert [i for ids, _ in batches for i in ids] == want
        if workers:
            assert max(served for _, served in batches) >= 1
    if not workers:
        assert w._ordered.served >= 3 * (-(-len(want) // 4) - 1)
    # A resume at epoch 7 in new workers: set_epoch before the first pass.
    sampler.set_epoch(7)
    loader = hf_lvf.safe_dataloader(
        w, batch_size=4, sampler=sampler, num_workers=workers, collate_fn=_ids
    )
    batches = list(loader)
    assert [i for ids, _ in batches for i in ids] == list(sampler)
    if workers:
        assert max(served for _, served in batches) >= len(batches) // workers - 2


@pytest.mark.hub
def test_hub_faults_during_read_ahead_are_retried_or_named_in_the_take(hub, root, monkeypatch):
    from hf_lvf.errors import HubError
    from hf_lvf.frames import remote as frames_module

    monkeypatch.setattr(frames_module, "_READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(frames_module, "_BACKOFF_S", (0.05,))
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    hub.create_repo("org/ordered")
    sha = hub.commit("org/ordered", files)
    plain = VideoWindows(root, **PARAMS)
    # One batch a fetch (a byte budget this small), so that each batch is a request or more.
    one = ReadAheadBudget(max_bytes=1)
    remote = VideoWindows("hf://datasets/org/ordered", revision=sha, read_ahead=one, **PARAMS)
    remote.take([0])
    order = np.random.default_rng(4).permutation(len(plain))
    remote.expect_order(order)
    data = {"path_contains": "/data/", "method": "GET"}
    faults = [
        hub.inject(503, times=6, skip=2, **data),  # more than lance retries on its own
        hub.inject(drop_mid_body=True, times=2, **data),
        hub.inject(stall=2.0, times=1, **data),  # longer than a try may take
    ]
    batches = [order[lo : lo + 6] for lo in range(0, len(order), 6)]
    for idx in batches:
        _assert_same(remote.take(idx), plain.take(idx))
    assert [f.hits for f in faults] == [6, 2, 1]
    assert remote._ordered.served == len(batches)

    # A read-ahead that fails for good raises in the take of its batch, naming root and rows.
    monkeypatch.setattr(frames_module, "_RETRY_BUDGET_S", 1.0)
    # Every try is answered at once now (no stall): a short read timeout would only let a
    # loaded machine end on a timeout instead of the 503 the message must name.
    monkeypatch.setattr(frames_module, "_READ_TIMEOUT_S", 30.0)
    # (Which take fails, exactly: test_a_fetch_that_fails_raises_in_the_take_that_needs_it.)
    hub.inject(503, times=10_000, **data)
    remote._frames._cache = (np.empty(0, np.int64), None)  # nothing decoded to reuse
    with pytest.raises(HubError) as info:
        for idx in batches:
            remote.take(idx)
    message = str(info.value)
    assert "hf://datasets/org/ordered" in message and sha in message
    assert "Lance rows" in message and "503" in message
    assert fetch_threads_end()
