"""``datasets.IterableDataset`` front ends: window-range shards, per-epoch permutations, resume.

Two things live here:

- :func:`shard_ranges`, the shard plan the builder streams with: contiguous
  window ranges (plain ``(start, stop)`` pairs, never Lance objects), enough of
  them that 8 DataLoader workers, or 8 nodes, all get work even on a root of two
  long videos, and a power of two of them so that ``split_dataset_by_node``
  usually shards instead of skipping.
- :func:`to_iterable_dataset`, which wraps a random-access
  :class:`~hf_lvf.VideoWindows`. Because any window can be read directly, its
  shuffle is a full permutation of all windows per epoch (drawn from
  ``np.random.default_rng([seed, ...])`` with the epoch mixed in), not a
  shuffle buffer; shard ``s`` of ``k`` is the ``s``-th contiguous slice of that
  permutation (cut by :func:`shard_ranges`), so workers and nodes see every
  window exactly once per epoch.
  Its ``state_dict()`` is ``(shard, window within shard)``; resuming starts
  reading at that window without decoding the ones before it.

How the epoch reaches the permutation: ``IterableDataset`` calls
``shuffle_data_sources(np.random.default_rng(epoch))`` on its examples iterable
at the start of every epoch after the first (datasets >= 4.8; before, it calls
it every epoch with a generator made from its shuffling seed and the epoch, so
the wrapper marks the dataset as shuffled there). The wrapper's iterable mixes
one draw of that generator into its seed. That happens before the dataset is
split between nodes and DataLoader workers, so all of them agree on the
permutation.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import datasets
import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..plan import check_integer
from ..plan.clips import CLIP_MODES, ClipMode, ClipSampling
from ..plan.elastic import (
    check_state,
    check_world,
    make_state,
    position_after,
    rank_count,
    rank_positions,
)
from ..read.orders import view_identity
from ..read.windows import VideoWindows
from .formatters import mark_windows
from .internals import BaseExamplesIterable, make_key, shuffling_kwargs

# A shard is read in batches of this many windows (and across shards: see iter_samples).
READ_BATCH = 8
_MIN_SHARD_WINDOWS = READ_BATCH
_MAX_SHARD_WINDOWS = 256
_MAX_POW2_SHARDS = 64


def default_num_shards(num_windows: int) -> int:
    """Shards for ``num_windows`` windows.

    The largest power of two up to 64 that leaves at least 8 windows per shard;
    past 64 * 256 windows, a multiple of 64 that keeps shards at most 256
    windows (so resuming mid-shard never re-reads much).

    Examples:
        >>> [default_num_shards(n) for n in (5, 36, 288, 5000, 40000)]
        [1, 4, 32, 64, 192]
    """
    if num_windows >= _MAX_POW2_SHARDS * _MAX_SHARD_WINDOWS:
        per_block = _MAX_POW2_SHARDS * _MAX_SHARD_WINDOWS
        return _MAX_POW2_SHARDS * -(-num_windows // per_block)
    shards = 1
    while shards * 2 <= _MAX_POW2_SHARDS and shards * 2 * _MIN_SHARD_WINDOWS <= num_windows:
        shards *= 2
    return shards


def shard_ranges(num_windows: int, num_shards: int) -> list[tuple[int, int]]:
    """``num_shards`` contiguous ``(start, stop)`` ranges covering ``range(num_windows)``.

    The first ``num_windows % num_shards`` ranges hold one window more than the others.
    So whenever ``split_dataset_by_node`` deals the shards out to ``world_size`` ranks
    (shard ``s`` to rank ``s % world_size``, which it does when ``world_size`` divides the
    number of shards), every rank gets the same number of windows within one: the longer
    ranges are consecutive, so each rank holds as many of them as any other, within one.

    Examples:
        >>> shard_ranges(42, 4)
        [(0, 11), (11, 22), (22, 32), (32, 42)]
    """
    num_shards = max(1, min(num_shards, num_windows))
    per_shard, longer = divmod(num_windows, num_shards)
    shard = np.arange(num_shards + 1, dtype=np.int64)
    bounds = shard * per_shard + np.minimum(shard, longer)
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


class _PermutedWindows(BaseExamplesIterable):
    """Examples iterable over a :class:`VideoWindows`: shard ``s`` of ``k`` is a slice of one order.

    The order is ``arange(n)``, or with ``shuffle`` a permutation drawn from
    ``default_rng([seed, *draws])``, where ``draws`` collects one number per
    ``shuffle_data_sources`` call (one per epoch). Everything here is plain data,
    so it pickles to DataLoader workers; the view opens Lance lazily there.
    """

    def __init__(
        self,
        windows: VideoWindows,
        *,
        shuffle: bool,
        seed: int,
        total_shards: int,
        shard_ids: tuple[int, ...] | None = None,
        draws: tuple[int, ...] = (),
        clips: ClipSampling | None = None,
        clip_seed: int = 0,
        split: tuple[int, int, int] | None = None,
        identity: dict[str, Any] | None = None,
        epoch: int | None = None,
    ):
        super().__init__()
        # A leaf, no threads of its own: what datasets' interleaving asks of each source (a
        # subclass of _BaseExamplesIterable without it is taken for a wrapper of others).
        self._sleep_on_threads_shutdown = False
        self.windows = windows
        self.shuffle = shuffle
        self.seed = seed
        self.total_shards = total_shards
        self.shard_ids = tuple(range(total_shards)) if shard_ids is None else tuple(shard_ids)
        self.draws = tuple(draws)
        self.clips, self.clip_seed = clips, clip_seed  # clips of each video per epoch
        # (num_replicas, rank, batch size): the elastic split (hf_lvf.plan.elastic), shards then
        # this rank's batches; None: shards are contiguous slices of the order.
        self.split, self.identity = split, identity
        # The elastic stream's epoch (WindowStream.set_epoch): its shuffled order is then the
        # global order of ``[seed, epoch]``, safe_dataloader(shuffle=True)'s and Ray's.
        self.epoch = epoch
        self._features = windows.features

    def _replace(self, **changes: Any) -> _PermutedWindows:
        new = copy.copy(self)
        new.__dict__.update(changes)
        new._state_dict = None
        return new

    # --- what datasets asks of an examples iterable ----------------------------------

    @property
    def is_typed(self) -> bool:
        return True

    @property
    def features(self) -> datasets.Features:
        return self._features

    @property
    def num_shards(self) -> int:
        return len(self.shard_ids)

    def _init_state_dict(self) -> dict:
        if self.split is not None:
            assert self.identity is not None
            state = make_state(self.identity, kind="stream", epoch=0, position=0, total=self.total)
            self._state_dict = {**state, "type": type(self).__name__}
            return self._state_dict
        self._state_dict = {"shard_idx": 0, "shard_example_idx": 0, "type": type(self).__name__}
        return self._state_dict

    def load_state_dict(self, state_dict: dict) -> dict:
        if self.split is not None:
            assert self.identity is not None
            check_state(state_dict, self.identity, "the stream")
        return super().load_state_dict(state_dict)

    @property
    def total(self) -> int:
        """Windows of an epoch (the chosen clips with ``clips_per_video``)."""
        if self.clips is None:
            return len(self.windows)
        return int(self.clips.counts(self.windows.plan.windows_per_video).sum())

    def shuffle_data_sources(self, generator: np.random.Generator) -> _PermutedWindows:
        """A new permutation (``shuffle=True``) and a new draw of random clips; the order stays
        fixed without either."""
        if not self.shuffle and not (self.clips is not None and self.clips.redraws):
            return self._replace()
        draw = int(copy.deepcopy(generator).integers(0, 2**63))
        return self._replace(draws=(*self.draws, draw))

    def shard_data_sources(self, num_shards: int, index: int, contiguous: bool = True):
        positions = self.split_shard_indices_by_worker(num_shards, index, contiguous=contiguous)
        return self._replace(shard_ids=tuple(self.shard_ids[p] for p in positions))

    def reshard_data_sources(self) -> _PermutedWindows:
        return self._replace()

    # --- reading ------------------------------------------------------------------------

    def order(self) -> np.ndarray:
        """All window indices in this epoch's order."""
        if self.clips is not None:  # this epoch's clips: ClipSampler's rule, seeded by its draws
            rng = np.random.default_rng([self.clip_seed, *self.draws])
            chosen = self.clips.select(self.windows.plan, rng=rng)
            if not self.shuffle:
                return chosen
            return chosen[np.random.default_rng([self.seed, *self.draws]).permutation(len(chosen))]
        n = len(self.windows)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        if self.epoch is not None:  # ShuffledOrder.global_order's rule, exactly
            return np.random.default_rng([self.seed, self.epoch]).permutation(n)
        return np.random.default_rng([self.seed, *self.draws]).permutation(n)

    def __iter__(self) -> Iterator[tuple[Any, dict[str, Any]]]:
        if self.split is not None:
            yield from self._iter_elastic()
            return
        order = self.order()
        ranges = shard_ranges(len(order), self.total_shards)
        state = self._state_dict
        first = state["shard_idx"] if state else 0
        skip = state["shard_example_idx"] if state else 0
        # The remaining windows of all this worker's shards are read as one sequence, so the
        # read-ahead runs across shard boundaries; keys and state still count per shard.
        parts: list[tuple[int, int, int]] = []  # (shard, first example, stop example)
        chunks = [np.empty(0, np.int64)]
        for position in range(first, len(self.shard_ids)):
            shard = self.shard_ids[position]
            lo, hi = ranges[shard]
            start = skip if position == first else 0
            parts.append((shard, start, hi - lo))
            chunks.append(order[lo + start : hi])
        samples = self.windows.iter_samples(np.concatenate(chunks), batch_size=READ_BATCH)
        try:
            for shard, start, stop in parts:
                for example_idx in range(start, stop):
                    sample = next(samples)
                    mark_windows((sample["video"],))
                    if state:
                        state["shard_example_idx"] += 1
                    yield make_key(shard, example_idx), sample
                if state:
                    state["shard_idx"] += 1
                    state["shard_example_idx"] = 0
        finally:
            samples.close()

    def _iter_elastic(self) -> Iterator[tuple[Any, dict[str, Any]]]:
        """This rank's windows of the global order from the state's position, its batch ``j``
        (shard ``j``) read by the worker that holds shard ``j``: the DataLoader's worker of
        batch ``j``."""
        assert self.split is not None
        replicas, rank, size = self.split
        order = self.order()
        state = self._state_dict
        start = state["position"] if state else 0
        mine = order[rank_positions(start, len(order), replicas, rank)]
        batches = [j for j in sorted(self.shard_ids) if j * size < len(mine)]
        indices = [mine[j * size : (j + 1) * size] for j in batches]
        samples = self.windows.iter_samples(
            np.concatenate([np.empty(0, np.int64), *indices]), batch_size=READ_BATCH
        )
        consumed = 0
        try:
            for j, batch in zip(batches, indices, strict=True):
                for k in range(len(batch)):
                    sample = next(samples)
                    mark_windows((sample["video"],))
                    consumed += 1
                    if state:
                        state["position"] = position_after(start, len(order), replicas, consumed)
                    yield make_key(j, k), sample
            if state:
                state["position"] = len(order)  # this pass is over
        finally:
            samples.close()


class WindowStream(datasets.IterableDataset):
    """The ``datasets.IterableDataset`` of ``to_iterable_dataset(num_replicas=..., rank=...)``:
    this rank's part of the epoch's global order (:mod:`hf_lvf.plan.elastic`), resumable
    from a state of any number of ranks and workers.

    Beside ``datasets``' own: ``shuffle(seed=...)`` is a full permutation of all windows per
    epoch, the global order of that seed, not a shuffle buffer (a buffer would lose what it
    holds at a resume); ``state_dict()`` is ``datasets``' form, its ``examples_iterable``
    the position in the global order; ``load_state_dict`` takes that or the position alone
    (``safe_dataloader``'s ``state_dict()``), refusing one of another order; and
    :meth:`elastic_state` is the position after ``consumed`` windows the loop took.
    """

    def _windows_iterable(self) -> _PermutedWindows:
        iterable = self._ex_iterable
        assert isinstance(iterable, _PermutedWindows) and iterable.split is not None
        return iterable

    def _with(self, iterable: _PermutedWindows) -> WindowStream:
        extra = shuffling_kwargs(iterable.seed) if _redraws(iterable) else {}
        stream = WindowStream(
            iterable,
            info=self._info.copy(),
            split=self._split,
            formatting=self._formatting,
            distributed=copy.deepcopy(self._distributed),
            token_per_repo_id=self._token_per_repo_id,
            **extra,
        )
        stream._starting_state_dict = self._starting_state_dict
        stream.set_epoch(self.epoch)
        return stream

    def set_epoch(self, epoch: int) -> None:
        """``datasets``' ``set_epoch``, the epoch also given to the order: shuffled, the
        epoch's global order of ``[seed, epoch]``, the same as ``safe_dataloader(shuffle=True,
        seed=seed)``'s and ``read_windows(seed=seed)``'s."""
        super().set_epoch(epoch)
        iterable = self._ex_iterable
        if isinstance(iterable, _PermutedWindows) and iterable.epoch != epoch:
            self._ex_iterable = iterable._replace(epoch=epoch)

    def shuffle(
        self,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
        buffer_size: int = 1000,
    ) -> WindowStream:
        """A full permutation of the windows each epoch, the global order of ``seed`` (or of one
        number drawn from ``generator``): the same on every rank, and for a ``seed`` that of
        ``safe_dataloader(shuffle=True, seed=seed)``; ``buffer_size`` is not used."""
        if generator is None and seed is not None:
            drawn = check_integer("seed", seed, 0)
        else:
            generator = np.random.default_rng(seed) if generator is None else generator
            drawn = int(copy.deepcopy(generator).integers(0, 2**63))
        iterable = self._windows_iterable()
        identity = {**(iterable.identity or {}), "shuffle": True, "seed": drawn}
        return self._with(iterable._replace(shuffle=True, seed=drawn, identity=identity))

    def with_loader_batch_size(self, batch_size: int) -> WindowStream:
        """Tell the stream the DataLoader's batch size, so that its workers read the batches
        the DataLoader takes from each (``safe_dataloader`` calls it). In place: the caller's
        ``set_epoch`` still reaches the stream the loader holds."""
        iterable = self._windows_iterable()
        replicas, rank, size = iterable.split  # type: ignore[misc]
        if batch_size != size:
            self._ex_iterable = _elastic_iterable(iterable, replicas, rank, batch_size)
        return self

    def _start(self) -> int:
        """Where this epoch's pass starts: the loaded position in its epoch, else 0."""
        start = self._starting_state_dict
        if start and start.get("epoch") == self.epoch:
            return int(start["examples_iterable"]["position"])
        return 0

    def elastic_state(self, consumed: int) -> dict[str, Any]:
        """The position in the global order once this rank took ``consumed`` windows of this
        epoch's pass (every rank of one step returns the same)."""
        iterable = self._windows_iterable()
        replicas, rank, _ = iterable.split  # type: ignore[misc]
        total = iterable.total
        position = position_after(self._start(), total, replicas, consumed)
        assert iterable.identity is not None
        return make_state(
            iterable.identity, kind="stream", epoch=self.epoch, position=position, total=total
        )

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["examples_iterable"]["epoch"] = state["epoch"]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Go on from ``state_dict`` (``state_dict()``'s form or the position alone, saved by
        any number of ranks and workers): its epoch, from the next window of the global order
        no rank has read.

        Raises:
            ValueError: the state was saved over another root, other window parameters,
                clip selection, shuffle or seed (the message names which).
        """
        inner = state_dict.get("examples_iterable", state_dict)
        iterable = self._windows_iterable()
        assert iterable.identity is not None
        epoch, _ = check_state(inner, iterable.identity, "the stream")
        self.set_epoch(epoch)
        self._starting_state_dict = {"examples_iterable": dict(inner), "epoch": epoch}


def _redraws(iterable: _PermutedWindows) -> bool:
    return iterable.shuffle or bool(iterable.clips and iterable.clips.redraws)


def _elastic_iterable(
    iterable: _PermutedWindows, num_replicas: int, rank: int, batch_size: int
) -> _PermutedWindows:
    """``iterable`` split by :mod:`hf_lvf.plan.elastic`'s rule: its shards are rank
    ``rank``'s batches of ``batch_size`` (as many as the epoch's first pass has)."""
    count = rank_count(0, iterable.total, num_replicas, rank, False)
    shards = max(1, -(-count // batch_size))
    selection = "all"
    if iterable.clips is not None:
        clips = iterable.clips
        selection = f"clips_per_video={clips.clips_per_video} mode={clips.mode}"
        selection += f" clip_seed={iterable.clip_seed}"
    identity = view_identity(
        iterable.windows, selection=selection, shuffle=iterable.shuffle, seed=iterable.seed
    )
    return iterable._replace(
        split=(num_replicas, rank, batch_size),
        total_shards=shards,
        shard_ids=tuple(range(shards)),
        identity=identity,
        epoch=0 if iterable.epoch is None else iterable.epoch,
    )


def to_iterable_dataset(
    windows: VideoWindows,
    *,
    shuffle: bool = False,
    seed: int | None = None,
    num_shards: int | None = None,
    clips_per_video: int | None = None,
    clip_sampling: ClipMode = "random",
    clip_seed: int = 0,
    num_replicas: int | None = None,
    rank: int | None = None,
    batch_size: int | None = None,
) -> datasets.IterableDataset:
    """A ``datasets.IterableDataset`` over ``windows``, with the same features.

    See :meth:`hf_lvf.VideoWindows.to_iterable_dataset`. With ``clips_per_video=k`` each
    epoch reads only ``k`` clips of each video, chosen by :class:`hf_lvf.ClipSampler`'s
    rule (``clip_sampling``: ``"random"``, drawn from ``clip_seed`` and the epoch, or
    ``"uniform"``); shards are slices of that epoch's list (shuffled with ``shuffle``),
    of the same length every epoch, so workers, nodes and ``state_dict()`` resume see each
    chosen window once.

    With ``num_replicas=`` and ``rank=`` (or ``batch_size=``), the stream is rank ``rank``'s
    part of the epoch's global order (:mod:`hf_lvf.plan.elastic`): every ``num_replicas``-th
    window from position ``rank``, its batches of ``batch_size`` (the DataLoader's; set by
    ``safe_dataloader``, default 1) dealt to DataLoader workers as the DataLoader takes them,
    and a :class:`WindowStream` whose state is the position in that order, which loads into
    a stream of any number of ranks and workers. Do not split it again with
    ``split_dataset_by_node`` (``num_shards`` is then not taken).
    """
    if not isinstance(shuffle, bool):
        raise ParameterTypeError(f"shuffle must be True or False, got {shuffle!r}")
    if seed is not None:
        seed = check_integer("seed", seed, 0)
    elif shuffle:
        # Fixed now, so that every worker and node draws the same permutation.
        seed = int(np.random.SeedSequence().entropy % 2**63)
    else:
        seed = 0
    clips = clip_options(clips_per_video, clip_sampling, clip_seed)
    total = (
        len(windows) if clips is None else int(clips.counts(windows.plan.windows_per_video).sum())
    )
    if num_shards is None:
        num_shards = default_num_shards(total)
    num_shards = check_integer("num_shards", num_shards, 1)
    if num_shards > total:
        raise ParameterError(
            f"num_shards must be <= the number of windows ({total}), got {num_shards!r}"
        )
    iterable = _PermutedWindows(
        windows,
        shuffle=shuffle,
        seed=seed,
        total_shards=num_shards,
        clips=clips,
        clip_seed=clip_seed,
    )
    # datasets < 4.8 tells a dataset the epoch only if it is marked as shuffled.
    extra = shuffling_kwargs(seed) if shuffle or (clips and clips.redraws) else {}
    info = datasets.DatasetInfo(features=windows.features)
    if num_replicas is None and rank is None and batch_size is None:
        return datasets.IterableDataset(iterable, info=info, **extra)
    num_replicas, rank = check_world(num_replicas, rank)
    batch_size = 1 if batch_size is None else check_integer("batch_size", batch_size, 1)
    iterable = _elastic_iterable(iterable, num_replicas, rank, batch_size)
    return WindowStream(iterable, info=info, **extra)


def clip_options(
    clips_per_video: int | None, clip_sampling: str, clip_seed: int
) -> ClipSampling | None:
    """The clip options of a front end, validated: ``None`` without ``clips_per_video``.

    Raises:
        ValueError: a value is out of range, or ``clip_sampling``/``clip_seed`` is set
            without ``clips_per_video``.
    """
    check_integer("clip_seed", clip_seed, 0)
    if clip_sampling not in CLIP_MODES:
        raise ParameterError(f"clip_sampling must be 'random' or 'uniform', got {clip_sampling!r}")
    if clips_per_video is None:
        if clip_sampling != "random" or clip_seed != 0:
            raise ParameterError(
                f"clip_sampling={clip_sampling!r} and clip_seed={clip_seed!r} apply only with "
                "clips_per_video= (clips of each video per epoch); pass it, or leave them unset"
            )
        return None
    return ClipSampling(clips_per_video=clips_per_video, mode=clip_sampling)


__all__ = [
    "WindowStream",
    "clip_options",
    "default_num_shards",
    "to_iterable_dataset",
    "shard_ranges",
]
