"""``ClipSampler``: k clips of each video per epoch, as a PyTorch sampler over a ``VideoWindows``.

Video models are trained on a few clips of every video per epoch (a 10-minute video
then weighs what a 6-second one does), and evaluated on clips spread evenly over each
video. :class:`ClipSampler` yields those window indices for
``DataLoader(windows, sampler=..., batch_size=...)``: the ``DataLoader`` hands each
batch of them to ``VideoWindows.__getitems__``, one Lance read a batch. The rules are
:class:`hf_lvf.plan.clips.ClipSampling`'s; the split across ranks is
:mod:`hf_lvf.plan.elastic`'s: one global order of the epoch, rank ``r`` of ``R`` taking
every ``R``-th window of it from position ``r``, so that the windows of global batch ``b``
are the same for any number of ranks; ``state_dict()`` is the position in that order, which
loads into a sampler of any number of ranks.

It needs no torch to exist; it reads the world size and rank from
``torch.distributed`` only when torch is already imported and a process group is
initialised.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..plan import WindowPlan, check_integer
from ..plan.clips import ClipMode, ClipSampling
from ..plan.elastic import (
    check_state,
    check_world,
    make_state,
    position_after,
    rank_count,
    rank_positions,
)
from ..read.orders import view_identity


def _distributed_world() -> tuple[int, int] | None:
    """``(world size, rank)`` of an initialised ``torch.distributed``, else ``None``."""
    if "torch" not in sys.modules:  # never import torch here: it takes seconds
        return None
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return None


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be True or False, got {value!r}")
    return value


@dataclass
class _ClipOrder:
    """A sampler's windows of each epoch, from its options alone: the order a view is told
    (``VideoWindows.expect_order``), so that its DataLoader workers read ahead of it. This
    rank's part of the global order (:mod:`hf_lvf.plan.elastic`), from position ``start`` in
    epoch ``start_epoch`` (a resumed one), from 0 in any other."""

    sampling: ClipSampling
    seed: int
    shuffle: bool
    num_replicas: int
    rank: int
    drop_last: bool
    epoch: int = 0
    start: int = 0
    start_epoch: int = 0

    def chosen(self, plan: WindowPlan, epoch: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, epoch])  # the draw first, then the order
        chosen = self.sampling.select(plan, rng=rng)
        return chosen[rng.permutation(len(chosen))] if self.shuffle else chosen

    def first(self, epoch: int) -> int:
        return self.start if epoch == self.start_epoch else 0

    def stop(self, first: int, total: int) -> int:
        """End of the positions read: the epoch's, or with ``drop_last`` the last one every
        rank has a window of."""
        return (
            first + (total - first) // self.num_replicas * self.num_replicas
            if self.drop_last
            else total
        )

    def epoch_order(self, plan: WindowPlan, epoch: int) -> np.ndarray:
        chosen = self.chosen(plan, epoch)
        first = self.first(epoch)
        stop = self.stop(first, len(chosen))
        return chosen[rank_positions(first, stop, self.num_replicas, self.rank)]


class ClipSampler:
    """Window indices of ``clips_per_video`` clips of each video per epoch, for a ``DataLoader``.

    Args:
        windows: a :class:`~hf_lvf.VideoWindows` (any ``short_videos=``/``fps=``).
        clips_per_video: ``k``, clips of each video per epoch (>= 1).
        mode: ``"random"``: for each video with ``n >= 1`` windows, ``min(n, k)`` distinct
            windows drawn afresh each epoch from ``(seed, epoch)`` (torchvision's
            ``RandomClipSampler``); ``"uniform"``: the windows at
            ``floor(linspace(0, n - 1, k))``, repeats when ``n < k``, the same every epoch
            (torchvision's ``UniformClipSampler``).
        seed: seed of the draws and of the shuffle (>= 0).
        shuffle: permute the epoch's windows (from ``(seed, epoch)``); otherwise they come
            video by video, ascending within a video.
        num_replicas: ranks the epoch is split across: every rank draws the same selection
            in the same order (the global order) and takes every ``num_replicas``-th window
            of it from position ``rank`` (from the resumed position after
            :meth:`load_state_dict`). Nothing is padded or repeated: every window once an
            epoch, the last global batch may leave ranks one window short. Default: the
            world size of an initialised ``torch.distributed``, else 1.
        rank: this process's rank (default: ``torch.distributed``'s, else 0).
        drop_last: drop the tail that would leave ranks one window short, so that all read
            as many.

    The sampler tells ``windows`` its order (``VideoWindows.expect_order``): a DataLoader
    over them fetches the frames of the coming batches while one decodes, in every worker.

    Raises:
        ValueError: an argument is out of range (the message names it).
        TypeError: ``windows`` is not a ``VideoWindows``.

    Examples:
        >>> sampler = hf_lvf.ClipSampler(windows, clips_per_video=1, seed=0)  # doctest: +SKIP
        >>> loader = DataLoader(windows, sampler=sampler, batch_size=8)      # doctest: +SKIP
        >>> for epoch in range(epochs):                                       # doctest: +SKIP
        ...     sampler.set_epoch(epoch)
        ...     for batch in loader: ...
    """

    def __init__(
        self,
        windows: object,
        *,
        clips_per_video: int = 1,
        mode: ClipMode = "random",
        seed: int = 0,
        shuffle: bool = True,
        num_replicas: int | None = None,
        rank: int | None = None,
        drop_last: bool = False,
    ):
        plan = getattr(windows, "plan", None)
        if not isinstance(plan, WindowPlan):
            raise ParameterTypeError(
                f"ClipSampler samples the windows of a hf_lvf.VideoWindows, got "
                f"{type(windows).__name__}"
            )
        if mode not in ("random", "uniform"):
            raise ParameterError(f"mode must be 'random' or 'uniform', got {mode!r}")
        self._sampling = ClipSampling(clips_per_video=clips_per_video, mode=mode)
        self._plan = plan
        self.seed = check_integer("seed", seed, 0)
        self.shuffle = _check_bool("shuffle", shuffle)
        self.drop_last = _check_bool("drop_last", drop_last)
        if num_replicas is None or rank is None:
            world = _distributed_world()
            if world is None and (num_replicas or 1) > 1:
                raise ParameterError(
                    f"rank= is needed with num_replicas={num_replicas!r} when torch.distributed "
                    "is not initialised"
                )
            if world is None and rank not in (None, 0):
                raise ParameterError(
                    f"num_replicas= is needed with rank={rank!r} when torch.distributed is not "
                    "initialised"
                )
            world = world or (1, 0)
            num_replicas = world[0] if num_replicas is None else num_replicas
            rank = world[1] if rank is None else rank
        self.num_replicas, self.rank = check_world(num_replicas, rank)
        rank = self.rank
        self.epoch = 0
        self._total = int(self._sampling.counts(plan.windows_per_video).sum())
        self._consumed, self._ended = 0, False  # windows the current pass yielded; over
        selection = f"clips_per_video={self.clips_per_video} mode={mode}"
        self._identity = view_identity(windows, selection=selection, shuffle=shuffle, seed=seed)
        self._order = _ClipOrder(
            self._sampling, self.seed, self.shuffle, self.num_replicas, rank, self.drop_last
        )
        if hasattr(windows, "expect_order"):
            windows.expect_order(self._order)

    @property
    def clips_per_video(self) -> int:
        return self._sampling.clips_per_video

    @property
    def mode(self) -> ClipMode:
        return self._sampling.mode

    def set_epoch(self, epoch: int) -> None:
        """Draw (``"random"``) and order (``shuffle``) the windows of epoch ``epoch`` next."""
        self.epoch = self._order.epoch = check_integer("epoch", epoch, 0)

    def epoch_indices(self) -> np.ndarray:
        """All ranks' windows of this epoch, in order, before the split across ranks."""
        return self._order.chosen(self._plan, self.epoch)

    def __iter__(self) -> Iterator[int]:
        order = self._order
        if self._ended:
            order.start = 0  # the resumed pass is over: another pass of its epoch reads all
        self._consumed, self._ended = 0, False
        for index in order.epoch_order(self._plan, self.epoch).tolist():
            self._consumed += 1
            yield index
        self._ended = True

    def __len__(self) -> int:
        """Windows this rank reads this epoch (from the resumed position in a resumed one)."""
        first = self._order.first(self.epoch)
        stop = self._order.stop(first, self._total)
        return rank_count(first, stop, self.num_replicas, self.rank, False)

    def state_dict(self, consumed: int | None = None) -> dict:
        """The position in this epoch's global order once this rank consumed ``consumed``
        windows of its pass, a short last batch counted as full (default: what the pass
        yielded, exact for a DataLoader without workers; ``safe_dataloader``'s
        ``state_dict()`` counts the batches the loop took instead),
        with the epoch and what fixes the order. Every rank of one step returns the same."""
        first = self._order.first(self.epoch)
        stop = self._order.stop(first, self._total)
        ended = consumed is None and self._ended
        consumed = self._consumed if consumed is None else check_integer("consumed", consumed, 0)
        position = position_after(first, stop, self.num_replicas, consumed)
        if position >= stop or ended:
            position = self._total
        return make_state(
            self._identity, kind="clips", epoch=self.epoch, position=position, total=self._total
        )

    def load_state_dict(self, state: dict) -> None:
        """Go on from ``state`` (of a sampler of any ``num_replicas``): its epoch, from the
        next window of the global order no rank has read.

        Raises:
            ValueError: the state was saved over another root, other window parameters,
                another clip selection, shuffle or seed (the message names which).
        """
        epoch, position = check_state(state, self._identity, "ClipSampler")
        self.epoch = self._order.epoch = self._order.start_epoch = epoch
        self._order.start, self._consumed, self._ended = position, 0, False

    def __repr__(self) -> str:
        return (
            f"ClipSampler(windows={len(self._plan)}, clips_per_video={self.clips_per_video}, "
            f"mode={self.mode!r}, seed={self.seed}, shuffle={self.shuffle}, "
            f"num_replicas={self.num_replicas}, rank={self.rank}, drop_last={self.drop_last}, "
            f"epoch={self.epoch}, len={len(self)})"
        )


__all__ = ["ClipSampler"]
