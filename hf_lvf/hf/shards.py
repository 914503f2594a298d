"""What the shards of ``load_dataset("hf_lvf", ...)`` read: the clip options, clip shards, rows.

Without ``clips_per_video`` a shard is a range of window indices of one root
(:func:`hf_lvf.hf.iterable.shard_ranges`). With it, a shard is a range of *videos*,
and reads the clips of those videos that the epoch draws (:class:`hf_lvf.plan.clips.ClipSampling`),
video by video. A video always yields the same number of clips (``min(n, k)`` random,
``k`` uniform), so a shard's length is the same every epoch: ``state_dict()`` counts
per shard as it does for window ranges, and ``split_dataset_by_node`` and DataLoader
workers share shards as they do. The draw is seeded by ``clip_seed``, the root, and one
number per epoch that ``IterableDataset.set_epoch`` reaches every worker and node with
(:data:`hf_lvf.hf.internals.EPOCH_DRAWS`), so all of them draw the same clips without
talking to one another; each shard draws its own videos' clips where it is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..plan import ShortVideos, check_fps, check_short_videos
from ..plan.clips import ClipMode, ClipSampling, clip_shards
from ..read.windows import VideoWindows
from .internals import EPOCH_DRAWS
from .iterable import clip_options, default_num_shards


@dataclass(kw_only=True)
class ClipConfig:
    """The options of :class:`hf_lvf.HfLvfConfig` that pick windows per video and count frames
    in seconds; all take part in the cache key.

    Args:
        clips_per_video: read only ``k`` windows ("clips") of each video per epoch, chosen
            by ``clip_sampling``; ``None`` reads every window.
        clip_sampling: ``"random"``: ``min(n, k)`` distinct windows of each video, drawn
            afresh each epoch (``set_epoch``) from ``clip_seed`` and the epoch; streaming
            only. ``"uniform"``: the windows at ``floor(linspace(0, n - 1, k))``, a fixed set
            (map-style too). The rules of :class:`hf_lvf.ClipSampler`.
        clip_seed: seed of the random draws (>= 0).
        short_videos, fps: window options: see :class:`hf_lvf.WindowParams`.
    """

    clips_per_video: int | None = None
    clip_sampling: ClipMode = "random"
    clip_seed: int = 0
    short_videos: ShortVideos = "drop"
    fps: float | None = None

    def __post_init__(self) -> None:
        self.short_videos = check_short_videos(self.short_videos)
        self.fps = check_fps(self.fps)
        _ = self.clips  # validates the clip options
        after = getattr(super(), "__post_init__", None)  # datasets.BuilderConfig's
        if after is not None:
            after()

    @property
    def clips(self) -> ClipSampling | None:
        return clip_options(self.clips_per_video, self.clip_sampling, self.clip_seed)

    @property
    def timing(self) -> dict[str, Any]:
        """``short_videos`` and ``fps``, as keyword arguments."""
        return {"short_videos": self.short_videos, "fps": self.fps}

    def check_mode(self, *, streaming: bool) -> None:
        """Raise if random clips are asked of a map-style dataset (whose rows are fixed)."""
        clips = self.clips
        if not streaming and clips is not None and clips.redraws:
            raise ParameterError(
                f"clip_sampling='random' (clips_per_video={clips.clips_per_video}) draws new "
                "clips every epoch, which a map-style dataset's fixed rows cannot; pass "
                "streaming=True (set_epoch draws the epoch's clips), or sample a VideoWindows "
                "with hf_lvf.ClipSampler, or use clip_sampling='uniform' for a fixed set"
            )


def split_clip_shards(
    config: ClipConfig, views: Sequence[VideoWindows], roots: Sequence[int]
) -> tuple[list[tuple[int, int, int, int]], dict[str, Any]]:
    """``(shards, gen_kwargs)`` of one split's ``roots`` (indices into ``views``): shards
    ``(shard_id, root, first video, stop video)``, and the ``gen_kwargs`` that go with
    them: each shard's clip count (a list beside ``shards``) and the epoch draws."""
    clips = config.clips
    counts = [clips.counts(views[r].plan.windows_per_video) for r in roots]
    total = int(sum(c.sum() for c in counts))
    per_shard = getattr(config, "shard_windows", None) or -(-total // default_num_shards(total))
    shards, lengths = [], []
    for root, root_counts in zip(roots, counts, strict=True):
        for first, stop, length in clip_shards(root_counts, per_shard):
            shards.append((len(shards), root, first, stop))
            lengths.append(length)
    return shards, {"clip_counts": lengths, EPOCH_DRAWS: ()}


def shard_windows(
    config: ClipConfig,
    view: VideoWindows,
    root: int,
    group: Sequence[tuple[int, int, int]],
    clip_draws: tuple[int, ...] = (),
    **_: Any,
) -> list[np.ndarray]:
    """The window indices each shard ``(shard_id, lo, hi)`` of ``group`` reads, in order:
    ``lo..hi-1``, or with clips the clips of videos ``lo..hi-1`` this epoch."""
    clips = config.clips
    if clips is None:
        return [np.arange(lo, hi, dtype=np.int64) for _, lo, hi in group]
    return [
        clips.select(
            view.plan,
            rng=np.random.default_rng([config.clip_seed, root, *clip_draws]),
            videos=(lo, hi),
        )
        for _, lo, hi in group
    ]


__all__ = ["ClipConfig", "shard_windows", "split_clip_shards"]
