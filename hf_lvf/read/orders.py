"""Reading ahead of a reader that asks batch by batch, in an order known beforehand.

A DataLoader asks its dataset for one batch of windows at a time (``__getitems__``), in
the order of its sampler, and hands the batches to its workers in turn (batch ``b`` to
worker ``b % num_workers``). Where that order is known (``safe_dataloader(...,
shuffle=True)``, a :class:`~hf_lvf.ClipSampler`, :meth:`VideoWindows.expect_order
<hf_lvf.VideoWindows.expect_order>`), the view holds a :class:`KnownOrder`: each epoch's
window indices, computed from a seed and the epoch, in any process. On a batch it was not
expecting, :class:`OrderedReads` looks for it in that order (this epoch, the next, the
first: a worker is never told the epoch) and, once found, fetches the encoded frames of
the batches that come next for this process (every ``num_workers``-th batch after it)
while the current one decodes, with the frame reader's :func:`~hf_lvf.frames.read_ahead`
and within its :class:`~hf_lvf.ReadAheadBudget` bounds.

What a read returns never depends on the guess: fetched frames are looked up by Lance row,
and a read takes from them only the rows it needs, reading the rest. A batch that is not
the one expected (another sampler, a resumed loader, a worker that died) drops what was
fetched ahead (its fetches end on their own) and the search starts again. The read-ahead
ends after the last batch of an epoch; one left open at exit is closed then.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..frames import Fetched, FrameReader, ReadAheadBudget
from ..plan import WindowPlan
from ..plan.elastic import (
    check_state,
    make_state,
    order_identity,
    position_after,
    rank_count,
    rank_positions,
)

# Epochs a batch is looked for in, after the last one found (and the order's own, and 0):
# a persistent DataLoader worker is not told the epoch, and epochs may be skipped.
_EPOCHS_AHEAD = 2
_KEPT_ORDERS = _EPOCHS_AHEAD + 3


class KnownOrder(Protocol):
    """Window indices of each epoch, the same in every process; ``epoch`` is the one in use
    where the order was made (a sampler's ``set_epoch``), the first guess of a worker."""

    epoch: int

    def epoch_order(self, plan: WindowPlan, epoch: int) -> np.ndarray: ...


@dataclass
class GivenOrder:
    """The same window indices every epoch."""

    indices: np.ndarray
    epoch: int = 0

    def epoch_order(self, plan: WindowPlan, epoch: int) -> np.ndarray:
        return self.indices


@dataclass
class ShuffledOrder:
    """Every window once an epoch, in the global order ``default_rng([seed, epoch])
    .permutation(n)``, this rank's part of it (:mod:`hf_lvf.plan.elastic`'s rule: positions
    ``start + rank + k * num_replicas``, ``start`` only in epoch ``start_epoch``)."""

    seed: int
    epoch: int = 0
    num_replicas: int = 1
    rank: int = 0
    start: int = 0
    start_epoch: int = 0

    def global_order(self, num_windows: int, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch]).permutation(num_windows)

    def first(self, epoch: int) -> int:
        return self.start if epoch == self.start_epoch else 0

    def epoch_order(self, plan: WindowPlan, epoch: int) -> np.ndarray:
        order = self.global_order(len(plan), epoch)
        return order[rank_positions(self.first(epoch), len(order), self.num_replicas, self.rank)]


def view_identity(windows: Any, *, selection: str, shuffle: bool, seed: int) -> dict[str, Any]:
    """:func:`hf_lvf.plan.elastic.order_identity` of a view: its root's identity is that of
    the metadata file it was read from (else its location)."""
    source = getattr(getattr(windows, "layout", None), "source", None)
    root = getattr(source, "identity", None) or getattr(windows, "uri", "?")
    return order_identity(
        root=root,
        window_params=windows.params,
        windows_per_video=windows.plan.windows_per_video,
        selection=selection,
        shuffle=shuffle,
        seed=seed,
    )


class EpochShuffle:
    """The sampler of ``safe_dataloader(windows, shuffle=True)``: a new permutation of all
    windows each epoch (:class:`ShuffledOrder`), the epoch counted up by each pass (or set
    with :meth:`set_epoch`), the seed drawn from torch's generator as ``shuffle=True``'s is
    (or given), split across ``num_replicas`` ranks by :mod:`hf_lvf.plan.elastic`'s rule.

    ``state_dict(consumed)`` is the position in the global order once this rank consumed
    ``consumed`` windows of its pass (default: what the pass yielded); ``load_state_dict``
    goes on from a state of any number of ranks."""

    def __init__(self, order: ShuffledOrder, num_windows: int, identity: dict[str, Any]):
        self.order, self._num_windows = order, num_windows
        self._identity = identity
        self._started, self._consumed, self._ended = False, 0, False

    def set_epoch(self, epoch: int) -> None:
        self.order.epoch, self._started = epoch, False

    def __iter__(self) -> Iterator[int]:
        if self._started:
            self.order.epoch += 1
        if self._ended:
            self.order.start = 0  # the resumed pass is over: another pass reads all
        self._started, self._consumed, self._ended = True, 0, False
        indices = self.order.epoch_order(_Count(self._num_windows), self.order.epoch).tolist()
        for index in indices:
            self._consumed += 1
            yield index
        self._ended = True

    def __len__(self) -> int:
        o = self.order
        return rank_count(o.first(o.epoch), self._num_windows, o.num_replicas, o.rank, False)

    def state_dict(self, consumed: int | None = None) -> dict[str, Any]:
        o = self.order
        ended = consumed is None and self._ended
        consumed = self._consumed if consumed is None else consumed
        position = position_after(o.first(o.epoch), self._num_windows, o.num_replicas, consumed)
        if ended:
            position = self._num_windows
        return make_state(
            self._identity,
            kind="shuffle",
            epoch=o.epoch,
            position=position,
            total=self._num_windows,
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        epoch, position = check_state(state, self._identity, "safe_dataloader(shuffle=True)")
        o = self.order
        o.epoch, o.start_epoch, o.start = epoch, epoch, position
        self._started, self._consumed, self._ended = False, 0, False


@dataclass
class _Count:
    """What :meth:`ShuffledOrder.epoch_order` asks of a plan: its length."""

    n: int

    def __len__(self) -> int:
        return self.n


@dataclass
class _Pass:
    """Batches ``first, first + stride, ...`` of size ``size`` of one epoch's ``order``."""

    epoch: int
    order: np.ndarray
    size: int
    stride: int
    next: int  # batch number expected next
    fetched: Any = field(repr=False, default=None)  # the read_ahead generator

    def batch(self, number: int) -> np.ndarray:
        return self.order[number * self.size : (number + 1) * self.size]

    def numbers(self) -> Iterator[int]:
        return iter(range(self.next, -(-len(self.order) // self.size), self.stride))


class OrderedReads:
    """The read-ahead of one view for batches asked for in a :class:`KnownOrder`."""

    def __init__(
        self,
        reader: FrameReader,
        plan: WindowPlan,
        start_rows: np.ndarray,
        rows_to_fetch: Callable[[Iterable[np.ndarray]], Iterator[np.ndarray]] | None = None,
    ):
        """``rows_to_fetch``: batches -> the rows to fetch for each (default: the plan's, the
        windows' own rows; a view with fields read at offsets adds those they reach)."""
        self.reader, self._plan, self._start_rows = reader, plan, start_rows
        self._rows_to_fetch = rows_to_fetch
        self.order: KnownOrder | None = None
        self._orders: dict[int, np.ndarray] = {}
        self._pass: _Pass | None = None
        self._epoch: int | None = None  # of the last batch found in the order
        self.served = 0  # batches served from a read-ahead (benchmarks and tests look)
        self._lock = threading.Lock()  # datasets may read on threads of its own

    def fresh(self) -> OrderedReads:
        """One of its own for a copy of the view (same reader, no order)."""
        return OrderedReads(self.reader, self._plan, self._start_rows, self._rows_to_fetch)

    def expect(self, order: KnownOrder | None) -> None:
        with self._lock:
            self._stop()
            self.order, self._orders, self._epoch = order, {}, None

    @contextlib.contextmanager
    def serving(self, idx: np.ndarray, options: ReadAheadBudget) -> Iterator[None]:
        """Reads of the block are served from what was fetched ahead for batch ``idx``."""
        if self.order is None or options.depth == 0:
            yield
            return
        with self._lock, self.reader.serving(self._fetched(idx, options)):
            yield

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._pass is not None:
            if self._pass.fetched is not None:
                self._pass.fetched.close()  # what is under way ends on its own
            self._pass = None

    def _fetched(self, idx: np.ndarray, options: ReadAheadBudget) -> Fetched | None:
        run = self._pass
        if run is None or not np.array_equal(run.batch(run.next), idx):
            self._stop()
            run = self._pass = self._locate(idx, options)
            if run is None:
                return None
        got = next(run.fetched, None)
        self.served += got is not None
        run.next += run.stride
        if run.next * run.size >= len(run.order):  # the epoch's last batch of this process
            self._stop()
        return got

    def _locate(self, idx: np.ndarray, options: ReadAheadBudget) -> _Pass | None:
        """The pass of the epoch whose batch ``idx`` is, its read-ahead started there."""
        assert self.order is not None
        last = self.order.epoch if self._epoch is None else self._epoch
        size = len(idx)
        near = range(last, last + _EPOCHS_AHEAD + 1)
        for epoch in dict.fromkeys((self.order.epoch, *near, 0)):
            order = self._epoch_order(epoch)
            for p in np.flatnonzero(order == idx[0]).tolist():
                if p % size == 0 and np.array_equal(order[p : p + size], idx):
                    run = _Pass(epoch, order, size, _worker_stride(), p // size)
                    self._epoch = epoch
                    run.fetched = self._read_ahead(run, options)
                    return run
        return None

    def _read_ahead(self, run: _Pass, options: ReadAheadBudget) -> Iterator[Fetched]:
        batches = (run.batch(number) for number in run.numbers())
        if self._rows_to_fetch is not None:
            rows = self._rows_to_fetch(batches)
        else:
            rows = self._plan.rows_to_fetch(self._start_rows, batches)
        return self.reader.fetch_ahead(rows, options)

    def _epoch_order(self, epoch: int) -> np.ndarray:
        order = self._orders.get(epoch)
        if order is None:
            assert self.order is not None
            order = np.asarray(self.order.epoch_order(self._plan, epoch), np.int64)
            while len(self._orders) >= _KEPT_ORDERS:
                del self._orders[next(iter(self._orders))]
            self._orders[epoch] = order
        return order


def shuffled_in_known_order(
    dataset: Any,
    loader_kwargs: dict[str, Any],
    *,
    seed: int | None = None,
    num_replicas: int = 1,
    rank: int = 0,
) -> Any:
    """For ``DataLoader(dataset, shuffle=True, **loader_kwargs)`` over a view (it has
    ``expect_order``) with no sampler of the caller's: a copy of the view that expects the
    order of the :class:`EpochShuffle` put in ``loader_kwargs`` instead of ``shuffle``
    (its seed ``seed``, else drawn from ``generator=`` or torch's default one, as
    ``shuffle=True``'s is), this rank's part of the global order. Anything else comes back
    as it is."""
    kwargs = loader_kwargs
    taken = kwargs.get("sampler") is not None or kwargs.get("batch_sampler") is not None
    if kwargs.get("shuffle") is not True or taken or not hasattr(dataset, "expect_order"):
        return dataset
    if seed is None:
        import torch

        generator = kwargs.pop("generator", None)
        seed = int(torch.empty((), dtype=torch.int64).random_(generator=generator)) % 2**63
    order = ShuffledOrder(seed=seed, num_replicas=num_replicas, rank=rank)
    identity = view_identity(dataset, selection="all", shuffle=True, seed=seed)
    kwargs["shuffle"], kwargs["sampler"] = False, EpochShuffle(order, len(dataset), identity)
    view = copy.copy(dataset)
    view._ordered = dataset._ordered.fresh()
    view.expect_order(order)
    return view


def _worker_stride() -> int:
    """Batches between two of this process's: the DataLoader workers, or 1."""
    data = sys.modules.get("torch.utils.data")
    info = data.get_worker_info() if data is not None else None
    return info.num_workers if info is not None else 1


__all__ = [
    "EpochShuffle",
    "GivenOrder",
    "KnownOrder",
    "OrderedReads",
    "ShuffledOrder",
    "shuffled_in_known_order",
    "view_identity",
]
