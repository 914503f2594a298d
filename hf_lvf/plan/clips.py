"""Clips per video: which windows an epoch reads when it samples by video, and the replica split.

Pure numpy, no I/O, no loop over videos or windows in Python: a root of a million videos
and 34 million windows draws an epoch of one or two clips per video in a few tenths of a
second.

- ``mode="random"`` (torchvision's ``RandomClipSampler``): for each video with ``n >= 1``
  windows, ``min(n, k)`` distinct windows, drawn afresh for each seed and epoch: all ``n``
  where ``n <= k``, else a uniform ``k``-subset by Floyd's algorithm, run for all videos at
  once (``k`` vectorised steps, ``O(videos * k**2)``, never a sort of all windows). Its
  random numbers are a counter-based hash (SplitMix64) of ``(video, step)`` seeded by one
  draw of ``np.random.default_rng([seed, epoch])``, so the draw of any range of videos is
  the same computed alone or with the whole root (streaming shards compute theirs where
  they read).
- ``mode="uniform"`` (torchvision's ``UniformClipSampler``): for each video with ``n >= 1``
  windows, the windows at ``floor(linspace(0, n - 1, k))``, computed with the very float
  operations of ``np.linspace`` (so equal to it bit for bit; repeats when ``n < k``), the
  same every epoch.

Windows come video by video, ascending within a video. :func:`replica_indices` splits an
epoch's list across ``num_replicas`` exactly as ``torch.utils.data.DistributedSampler``
does: padded by repeating from the start up to a multiple of ``num_replicas`` (or cut to
one with ``drop_last``), replica ``r`` taking positions ``r, r + num_replicas, ...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from . import WindowPlan, check_integer

ClipMode = Literal["random", "uniform"]
CLIP_MODES = ("random", "uniform")
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True, kw_only=True)
class ClipSampling:
    """How many windows of each video an epoch reads, and which.

    Args:
        clips_per_video: ``k``, windows per video (>= 1).
        mode: ``"random"`` (``min(n, k)`` distinct windows, new ones each epoch) or
            ``"uniform"`` (``floor(linspace(0, n - 1, k))``, the same each epoch).
    """

    clips_per_video: int = 1
    mode: ClipMode = "random"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "clips_per_video", check_integer("clips_per_video", self.clips_per_video, 1)
        )
        if self.mode not in CLIP_MODES:
            raise ParameterError(f"clip_sampling must be 'random' or 'uniform', got {self.mode!r}")

    @property
    def redraws(self) -> bool:
        """Whether the selection changes with the epoch."""
        return self.mode == "random"

    def counts(self, windows_per_video: np.ndarray) -> np.ndarray:
        """``(n_videos,)`` clips of each video: ``min(n, k)``, or ``k`` (uniform, ``n >= 1``)."""
        n = np.asarray(windows_per_video, np.int64)
        k = self.clips_per_video
        return np.minimum(n, k) if self.mode == "random" else np.where(n > 0, k, 0)

    def select(
        self,
        plan: WindowPlan,
        *,
        rng: np.random.Generator | None = None,
        videos: tuple[int, int] | None = None,
    ) -> np.ndarray:
        """The window indices one epoch reads, video by video, ascending within a video.

        Args:
            plan: the windows.
            rng: ``"random"`` takes one number of it, the seed of all its random numbers
                (``np.random.default_rng([seed, epoch])``: the same seed and epoch, the same
                windows, for any ``videos``). Unused by ``"uniform"``.
            videos: ``(first, stop)``: only the clips of these videos (default: all).

        Examples:
            >>> from hf_lvf.plan import WindowParams, plan_windows
            >>> plan = plan_windows(np.array([7, 0, 2]), WindowParams(window_length=1))
            >>> ClipSampling(clips_per_video=3, mode="uniform").select(plan).tolist()
            [0, 3, 6, 7, 7, 8]
        """
        n_videos = len(plan.windows_per_video)
        first, stop = (0, n_videos) if videos is None else (int(videos[0]), int(videos[1]))
        if not 0 <= first <= stop <= n_videos:
            raise ParameterError(f"videos must be a range within [0, {n_videos}], got {videos!r}")
        counts = np.asarray(plan.windows_per_video[first:stop], np.int64)
        starts = np.asarray(plan.first_window[first:stop], np.int64)
        if self.mode == "uniform":
            return _uniform(counts, starts, self.clips_per_video)
        if rng is None:
            raise ParameterTypeError("clip_sampling='random' needs rng= (seeded with the epoch)")
        base = rng.integers(0, 2**64, dtype=np.uint64)
        return _random(counts, starts, self.clips_per_video, base, first)


def hashed_keys(base: np.uint64, counters: np.ndarray) -> np.ndarray:
    """Random 64-bit numbers, one per counter: SplitMix64 outputs ``counters`` of ``base``."""
    with np.errstate(over="ignore"):
        z = np.uint64(base) + (np.asarray(counters, np.uint64) + np.uint64(1)) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def _random(
    counts: np.ndarray, starts: np.ndarray, k: int, base: np.uint64, first_video: int
) -> np.ndarray:
    clips = np.minimum(counts, k)
    ends = np.cumsum(clips)
    begins = ends - clips
    # To begin with, the first min(n, k) windows of each video: all of them where n <= k.
    video_of = np.repeat(np.arange(len(counts)), clips)
    out = starts[video_of] + (np.arange(int(ends[-1]) if len(ends) else 0) - begins[video_of])
    big = np.flatnonzero(counts > k)
    if not big.size:
        return out
    # Floyd's algorithm, one step for all videos at once: a uniform k-subset of range(n), from
    # k numbers per video keyed by (video, step), so any range of videos draws alone what it
    # draws with the others.
    n = counts[big]
    chosen = np.empty((len(big), k), np.int64)
    for step in range(k):
        top = n - k + step  # draw t in [0, top]; if taken, take top
        keys = hashed_keys(base, (big + first_video) * k + step)
        unit = (keys >> np.uint64(11)).astype(np.float64) * 2.0**-53
        t = np.minimum((unit * (top + 1)).astype(np.int64), top)
        taken = (chosen[:, :step] == t[:, None]).any(axis=1)
        chosen[:, step] = np.where(taken, top, t)
    chosen.sort(axis=1)
    out[begins[big][:, None] + np.arange(k)] = starts[big][:, None] + chosen
    return out


def _uniform(counts: np.ndarray, starts: np.ndarray, k: int) -> np.ndarray:
    has = counts > 0
    n, first = counts[has], starts[has]
    if k == 1:
        return first.copy()
    # np.linspace(0, n - 1, k) for each n at once, with its own operations: step = delta / div,
    # y = arange(k) * step, the last point set to the stop (so floor() equals it bit for bit).
    step = (n - 1).astype(np.float64) / (k - 1)
    y = np.arange(k, dtype=np.float64)[None, :] * step[:, None]
    y[:, -1] = n - 1
    return (first[:, None] + np.floor(y).astype(np.int64)).reshape(-1)


def clip_shards(counts: np.ndarray, per_shard: int) -> list[tuple[int, int, int]]:
    """Consecutive video ranges ``(first, stop, clips)`` of about ``per_shard`` clips each,
    cut at video boundaries, every one holding a clip at least.

    Examples:
        >>> clip_shards(np.array([2, 2, 0, 2, 1]), 3)
        [(0, 2, 4), (2, 4, 2), (4, 5, 1)]
    """
    counts = np.asarray(counts, np.int64)
    total = int(counts.sum())
    if total == 0:
        return []
    cumulative = np.cumsum(counts)
    bounds = np.arange(1, -(-total // per_shard), dtype=np.int64) * per_shard
    # Cut after the video where the running count reaches each bound.
    cuts = np.unique(np.searchsorted(cumulative, bounds, side="left") + 1)
    cuts = cuts[(cuts > 0) & (cuts < len(counts)) & (cumulative[np.maximum(cuts, 1) - 1] < total)]
    edges = [0, *cuts.tolist(), len(counts)]
    before = np.concatenate([[0], cumulative])
    return [
        (lo, hi, int(before[hi] - before[lo])) for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    ]


def replica_length(total: int, num_replicas: int, drop_last: bool) -> int:
    """Windows each replica reads of ``total``, as ``DistributedSampler`` counts them."""
    if drop_last and total % num_replicas:
        return -(-(total - num_replicas) // num_replicas)
    return -(-total // num_replicas)


def replica_indices(
    indices: np.ndarray, num_replicas: int, rank: int, drop_last: bool
) -> np.ndarray:
    """Replica ``rank``'s part of ``indices``, exactly as ``DistributedSampler`` splits them.

    Examples:
        >>> replica_indices(np.arange(5), 2, 1, False).tolist(), replica_indices(
        ...     np.arange(5), 2, 1, True).tolist()
        ([1, 3, 0], [1, 3])
    """
    indices = np.asarray(indices, np.int64)
    total_size = replica_length(len(indices), num_replicas, drop_last) * num_replicas
    if not drop_last and total_size > len(indices):
        padding = total_size - len(indices)
        repeats = -(-padding // len(indices))
        indices = np.concatenate([indices, np.tile(indices, repeats)[:padding]])
    return indices[rank:total_size:num_replicas]


__all__ = [
    "CLIP_MODES",
    "ClipMode",
    "ClipSampling",
    "clip_shards",
    "replica_indices",
    "replica_length",
    "hashed_keys",
]
