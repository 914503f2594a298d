"""Contiguous ranges of windows for parallel readers, cut at video boundaries where possible.

A reader of one range fetches its frames in few Lance requests and decodes a frame shared by
overlapping windows once, so ranges follow the plan's order; a cut inside a video splits only
the windows of a video longer than a range.
"""

from __future__ import annotations

import numpy as np

from .segment_plan import check_integer


def window_ranges(first_window: np.ndarray, num_ranges: int) -> np.ndarray:
    """Bounds of at most ``num_ranges`` contiguous, non-empty ranges of windows.

    ``first_window`` is a plan's ``(n_videos + 1,)`` index of each video's first window (the
    last entry is the total). The ranges are about equal: each even cut moves to the nearest
    video boundary when one is within a quarter of a range, else it stays inside the video.

    Returns:
        ``(k + 1,)`` int64 bounds: range ``r`` is windows ``bounds[r]:bounds[r + 1]``.

    Raises:
        ValueError: ``num_ranges`` is not an integer >= 1.

    Examples:
        >>> window_ranges(np.array([0, 5, 10, 12, 20]), 2).tolist()
        [0, 10, 20]
        >>> window_ranges(np.array([0, 20]), 4).tolist()
        [0, 5, 10, 15, 20]
    """
    num_ranges = check_integer("num_ranges", num_ranges, 1)
    boundaries = np.unique(np.asarray(first_window, np.int64))
    total = int(boundaries[-1]) if boundaries.size else 0
    if total == 0:
        return np.zeros(1, np.int64)
    num_ranges = min(num_ranges, total)
    even = np.round(np.arange(1, num_ranges) * (total / num_ranges)).astype(np.int64)
    # The nearest boundary of each even cut: the one at or after it, or the one before.
    after = np.clip(np.searchsorted(boundaries, even), 0, boundaries.size - 1)
    before = np.maximum(after - 1, 0)
    nearest = np.where(
        np.abs(boundaries[after] - even) <= np.abs(even - boundaries[before]),
        boundaries[after],
        boundaries[before],
    )
    cuts = np.where(np.abs(nearest - even) <= total / num_ranges / 4, nearest, even)
    return np.unique(np.concatenate([[0], cuts, [total]]))


__all__ = ["window_ranges"]
