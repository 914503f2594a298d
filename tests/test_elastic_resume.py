"""Elastic resume (issue 47): one global order of an epoch's windows for any number of ranks
and DataLoader workers, and a resume state that is a position in it.

Ranks are simulated in one process (``rank=``, ``num_replicas=`` given). DataLoader workers of
a stream are simulated too: worker ``w`` of ``W`` is the stream iterated under a
``get_worker_info()`` that says so (what ``datasets`` splits on in a worker), and the rank's
batch ``j`` is taken from worker ``j % W``, as the DataLoader takes it; one test runs real
worker processes to show that the simulation is what a DataLoader does. A map-style loader's
order is its sampler's, in the main process, whatever its workers.

Windows are counted by ``sample_idx`` (the window index): every window of an epoch once, the
global batches (the union of the ranks' batches of one step) as those of a run that never
stopped."""

from __future__ import annotations

import random
import types
from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch.utils.data

from hf_lvf import ClipSampler, VideoWindows, safe_dataloader
from hf_lvf.errors import ParameterError
from hf_lvf.plan.elastic import combine_states
from hf_lvf.write.synthetic import write_synthetic_root

B = 2  # windows a batch on each rank


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    lengths = [3 + (i * 5) % 7 for i in range(24)]
    return write_synthetic_root(
        tmp_path_factory.mktemp("elastic") / "root",
        num_videos=len(lengths),
        num_frames=lengths,
        frame_size=(16, 16),
    )


@pytest.fixture(scope="module")
def windows(root):
    return VideoWindows(root, window_length=2, hop_size=1)


class Rank:
    """One rank's loader: its batches one step at a time, its state, and a resume."""

    def __init__(self, batches: Callable[[], Iterator[list[int]]], state, load):
        self._batches, self.state, self.load = batches, state, load
        self._it: Iterator[list[int]] | None = None

    def step(self) -> list[int] | None:
        if self._it is None:
            self._it = self._batches()
        return next(self._it, None)


def _loader_rank(loader) -> Rank:
    def batches():
        for batch in loader:
            yield batch["sample_idx"].tolist()

    return Rank(batches, loader.state_dict, loader.load_state_dict)


def shuffle_rank(windows, replicas, rank, workers):
    # Map-style: the sampler (in the main process) makes the order, whatever the workers.
    loader = safe_dataloader(
        windows, batch_size=B, shuffle=True, seed=7, num_replicas=replicas, rank=rank,
        num_workers=0,
    )  # fmt: skip
    return _loader_rank(loader)


def clips_rank(windows, replicas, rank, workers, seed=3):
    sampler = ClipSampler(windows, clips_per_video=2, seed=seed, num_replicas=replicas, rank=rank)
    return _loader_rank(safe_dataloader(windows, sampler=sampler, batch_size=B, num_workers=0))


def _as_worker(monkeypatch, worker: int, workers: int):
    info = types.SimpleNamespace(id=worker, num_workers=workers, seed=worker, dataset=None)
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: info)


class StreamRank(Rank):
    """A rank over ``to_iterable_dataset(...).shuffle(seed=...)`` with ``workers`` simulated
    DataLoader workers: batch ``j`` from worker ``j % workers``."""

    def __init__(self, windows, replicas, rank, workers, seed=5, monkeypatch=None):
        self.stream = windows.to_iterable_dataset(
            num_replicas=replicas, rank=rank, batch_size=B
        ).shuffle(seed=seed)
        self.workers, self.monkeypatch, self.taken = workers, monkeypatch, 0
        super().__init__(self._run, lambda: self.stream.elastic_state(self.taken * B), None)
        self.load = self.stream.load_state_dict

    def _worker_batches(self, worker: int) -> list[list[int]]:
        with self.monkeypatch.context() as patch:
            if self.workers:
                _as_worker(patch, worker, self.workers)
            got = [s["sample_idx"] for s in self.stream]
        return [got[i : i + B] for i in range(0, len(got), B)]

    def _run(self) -> Iterator[list[int]]:
        per_worker = [self._worker_batches(w) for w in range(max(1, self.workers))]
        for j in range(sum(map(len, per_worker))):
            self.taken += 1
            yield per_worker[j % len(per_worker)][j // len(per_worker)]
        self.taken = 2**62  # the pass is over, as the loader says it


FRONT_ENDS = ["shuffle", "clips", "stream"]


def _make(kind, windows, monkeypatch) -> Callable[[int, int, int], Rank]:
    if kind == "stream":
        return lambda n, r, w: StreamRank(windows, n, r, w, monkeypatch=monkeypatch)
    make = {"shuffle": shuffle_rank, "clips": clips_rank}[kind]
    return lambda n, r, w: make(windows, n, r, w)


def _steps(ranks: list[Rank], limit: int | None = None) -> list[list[int]]:
    """Global batches (the ranks' batches of one step, in rank order) until all are done."""
    out = []
    while limit is None or len(out) < limit:
        parts = [rank.step() for rank in ranks]
        if all(p is None for p in parts):
            break
        out.append([i for p in parts if p for i in p])
    return out


def _resume(make, replicas, workers, state) -> list[Rank]:
    ranks = [make(replicas, r, workers) for r in range(replicas)]
    for rank in ranks:
        rank.load(state)
    return ranks


@pytest.mark.parametrize("kind", FRONT_ENDS)
def test_8x2_stop_resume_on_4x1_sees_every_window_once_in_the_same_global_batches(
    kind, windows, monkeypatch
):
    make = _make(kind, windows, monkeypatch)
    full4 = _steps([make(4, r, 1) for r in range(4)])  # a 4-rank run that never stops
    epoch = [i for batch in full4 for i in batch]
    assert len(epoch) == len(set(epoch)) >= 48
    eight = [make(8, r, 2) for r in range(8)]
    k = 2  # an arbitrary step of epoch 0
    before = _steps(eight, k)
    state = combine_states([rank.state() for rank in eight])
    assert state["position"] == k * 8 * B
    after = _steps(_resume(make, 4, 1, state))
    seen = Counter(i for batch in before + after for i in batch)
    assert sorted(seen) == sorted(epoch) and set(seen.values()) == {1}
    # Global batch b of 8 ranks is global batches 2b, 2b + 1 of 4 ranks (same windows), and
    # after the resume the 4 ranks' batches are those of the run that never stopped.
    for b, batch in enumerate(before):
        assert sorted(batch) == sorted(full4[2 * b] + full4[2 * b + 1])
    assert [sorted(x) for x in after] == [sorted(x) for x in full4[2 * k :]]


@pytest.mark.parametrize("kind", FRONT_ENDS)
def test_ten_resumes_at_random_steps_on_random_world_sizes(kind, windows, monkeypatch):
    make = _make(kind, windows, monkeypatch)
    rng = random.Random(47)
    seen: Counter[int] = Counter()
    state = None
    for _ in range(10):
        replicas = rng.choice([1, 2, 3, 4, 8])
        ranks = [make(replicas, r, 1) for r in range(replicas)]
        if state is not None:
            for rank in ranks:
                rank.load(state)
        for batch in _steps(ranks, rng.randint(0, 3)):
            seen.update(batch)
        state = combine_states([rank.state() for rank in ranks])
    seen.update(i for batch in _steps(_resume(make, 3, 1, state)) for i in batch)
    whole = [i for batch in _steps([make(1, 0, 1)]) for i in batch]
    assert set(seen.values()) == {1}, "duplicates"
    assert sorted(seen) == sorted(whole), "missing"


@pytest.mark.parametrize("kind", FRONT_ENDS)
def test_epoch_1_differs_from_epoch_0_and_is_the_same_on_any_world(kind, windows, monkeypatch):
    make = _make(kind, windows, monkeypatch)

    def epoch_order(replicas, epoch):
        ranks = [make(replicas, r, 1) for r in range(replicas)]
        for rank in ranks:
            _set_epoch(rank, epoch)
        return [sorted(batch) for batch in _steps(ranks)]

    one = epoch_order(4, 1)
    assert one != epoch_order(4, 0)
    # 2 ranks' batches of B make global batches of 2B: pairs of the 4-rank run's halves.
    two = epoch_order(2, 1)
    pairs = [sorted(a + b) for a, b in zip(two[::2], two[1::2], strict=False)]
    assert pairs == one[: len(two) // 2]


def _set_epoch(rank: Rank, epoch: int) -> None:
    if isinstance(rank, StreamRank):
        rank.stream.set_epoch(epoch)
        return
    loader = rank.state.__self__
    loader.sampler.set_epoch(epoch)


def test_a_state_of_another_root_seed_or_window_parameters_is_refused(root, windows, tmp_path):
    state = ClipSampler(windows, clips_per_video=2, seed=3).state_dict()
    other_root = write_synthetic_root(tmp_path / "other", num_videos=2, num_frames=9)
    longer = VideoWindows(root, window_length=3)
    other = VideoWindows(other_root, window_length=2, hop_size=1)
    cases = [
        (ClipSampler(windows, clips_per_video=2, seed=4), "seed"),
        (ClipSampler(windows, clips_per_video=1, seed=3), "selection"),
        (ClipSampler(longer, clips_per_video=2, seed=3), "window_params"),
        (ClipSampler(other, clips_per_video=2, seed=3), "root"),
    ]
    for sampler, differs in cases:
        with pytest.raises(ParameterError, match=rf"\b{differs}\b.*differ"):
            sampler.load_state_dict(state)
    stream = windows.to_iterable_dataset(num_replicas=2, rank=0).shuffle(seed=5)
    saved = stream.elastic_state(0)
    with pytest.raises(ParameterError, match=r"seed differs"):
        windows.to_iterable_dataset(num_replicas=4, rank=1).shuffle(seed=6).load_state_dict(saved)
    with pytest.raises(ParameterError, match=r"not a hf_lvf resume state"):
        ClipSampler(windows).load_state_dict({"epoch": 0})


def test_states_of_different_steps_do_not_combine(windows):
    samplers = [ClipSampler(windows, seed=1, num_replicas=2, rank=r) for r in range(2)]
    states = [s.state_dict(consumed=c) for s, c in zip(samplers, (2, 4), strict=True)]
    with pytest.raises(ParameterError, match=r"not of one step: position 4 != 8"):
        combine_states(states)


def test_a_resumed_sampler_reads_the_rest_and_the_next_epoch_whole(windows):
    sampler = ClipSampler(windows, clips_per_video=2, seed=3, num_replicas=3, rank=1)
    total = len(sampler.epoch_indices())
    state = ClipSampler(windows, clips_per_video=2, seed=3).state_dict(consumed=10)
    sampler.load_state_dict(state)
    assert len(sampler) == len(range(10 + 1, total, 3))
    rest = list(sampler)
    assert len(rest) == len(range(10 + 1, total, 3))
    assert rest == sampler.epoch_indices()[10 + 1 :: 3].tolist()
    assert len(list(sampler)) == len(range(1, total, 3))  # a second pass of the epoch: all
    sampler.set_epoch(1)
    assert len(list(sampler)) == len(range(1, total, 3))


def test_real_workers_take_the_batches_the_simulation_takes(windows, monkeypatch):
    stream = windows.to_iterable_dataset(num_replicas=2, rank=1).shuffle(seed=5)
    loader = safe_dataloader(stream, batch_size=B, num_workers=2)
    assert loader.dataset is stream  # told its batch size in place: set_epoch reaches it
    got = [batch["sample_idx"].tolist() for _, batch in zip(range(5), loader, strict=False)]
    state = loader.state_dict()
    simulated = StreamRank(windows, 2, 1, 2, monkeypatch=monkeypatch)
    assert got == _steps([simulated], 5)
    assert state == simulated.state()
    resumed = safe_dataloader(
        windows.to_iterable_dataset(num_replicas=3, rank=0).shuffle(seed=5),
        batch_size=B,
        num_workers=2,
    )
    resumed.load_state_dict(state)
    want = StreamRank(windows, 3, 0, 2, monkeypatch=monkeypatch)
    want.load(state)
    assert [b["sample_idx"].tolist() for b in resumed] == _steps([want])
    assert np.all(np.asarray(got) >= 0)


def test_the_shuffled_stream_is_safe_dataloaders_order_and_takes_its_state(windows):
    """For one seed, the elastic stream's shuffled order is safe_dataloader(shuffle=True)'s
    (and read_windows(seed=)'s: ShuffledOrder's ``[seed, epoch]``), epoch by epoch; so a
    map-style run's state loads into a streaming one, which reads exactly the rest."""
    from hf_lvf.read.orders import ShuffledOrder

    stream = windows.to_iterable_dataset(num_replicas=1, rank=0, batch_size=B).shuffle(seed=7)
    loader = safe_dataloader(windows, batch_size=B, shuffle=True, seed=7, num_workers=0)
    for epoch in (0, 1):
        stream.set_epoch(epoch)
        loader.sampler.set_epoch(epoch)
        streamed = [s["sample_idx"] for s in stream]
        mapped = [i for batch in loader for i in batch["sample_idx"].tolist()]
        assert (
            streamed == mapped == ShuffledOrder(seed=7).global_order(len(windows), epoch).tolist()
        )
    loader.sampler.set_epoch(0)
    batches = iter(loader)
    seen = [i for _ in range(5) for i in next(batches)["sample_idx"].tolist()]
    resumed = windows.to_iterable_dataset(num_replicas=2, rank=1, batch_size=B).shuffle(seed=7)
    other = windows.to_iterable_dataset(num_replicas=2, rank=0, batch_size=B).shuffle(seed=7)
    state = loader.state_dict()
    for rank in (resumed, other):
        rank.load_state_dict(state)
    rest = [s["sample_idx"] for rank in (other, resumed) for s in rank]
    assert sorted(seen + rest) == list(range(len(windows)))  # every window once in all
