"""Windows inside spans (``windows_in="spans"``): each span cut as a video of its frames.

Pure numpy. A span ``[start_frame, end_frame)`` of video ``v`` yields exactly the windows
a video of ``end_frame - start_frame`` frames would (``window_length``, ``frame_skip``,
``hop_size`` and ``min_video_frames`` all apply), shifted to start at ``start_frame``.
Windows are numbered span by span, in the order of the span table (video by video, then
each video's list order), so the windows of one video stay contiguous and the per-video
counts of :class:`~hf_lvf.plan.SegmentPlan` keep their meaning (clip sampling, shards).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .segment_plan import SegmentPlan, WindowParams, plan_windows


@dataclass(frozen=True)
class SpanPlan(SegmentPlan):
    """A :class:`SegmentPlan` whose windows lie inside spans.

    Attributes:
        span_first_window: ``(n_spans + 1,)`` index of each span's first window; the last
            entry is the total.
        span_video: ``(n_spans,)`` the video of each span.
        span_start: ``(n_spans,)`` each span's first frame.
    """

    span_first_window: np.ndarray = None  # type: ignore[assignment]
    span_video: np.ndarray = None  # type: ignore[assignment]
    span_start: np.ndarray = None  # type: ignore[assignment]

    def span_of(self, indices: np.ndarray) -> np.ndarray:
        """The span of each of the normalized window ``indices``."""
        return np.searchsorted(self.span_first_window, indices, side="right") - 1

    def locate(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(video_idx, start_frame)`` of windows ``indices``, in the video's frames."""
        span = self.span_of(indices)
        offset = (indices - self.span_first_window[span]) * self.params.hop_size
        return self.span_video[span], self.span_start[span] + offset

    @property
    def windows_per_span(self) -> np.ndarray:
        return np.diff(self.span_first_window)


def plan_spans(
    span_video: np.ndarray,
    span_start: np.ndarray,
    span_end: np.ndarray,
    num_videos: int,
    params: WindowParams,
    offsets: np.ndarray | None = None,
) -> SpanPlan:
    """Plan the windows inside spans ``[span_start, span_end)`` of videos ``span_video``
    (sorted by video), as :func:`plan_windows` plans a video of ``span_end - span_start``
    frames. ``offsets`` (``(num_videos + 1,)``: video ``v``'s spans are ``offsets[v]`` to
    ``offsets[v + 1]``) saves counting them.

    Examples:
        >>> params = WindowParams(window_length=2, hop_size=2, windows_in="spans")
        >>> plan = plan_spans(np.array([0, 0, 1]), np.array([0, 3, 1]), np.array([5, 4, 4]),
        ...                   2, params)
        >>> plan.windows_per_span.tolist(), plan.windows_per_video.tolist()
        ([2, 0, 1], [2, 1])
        >>> [tuple(map(int, x)) for x in zip(*plan.locate(np.arange(3)))]
        [(0, 0), (0, 2), (1, 1)]
    """
    video = np.asarray(span_video, np.int64)
    start = np.asarray(span_start, np.int64)
    inner = plan_windows(np.asarray(span_end, np.int64) - start, params)
    if offsets is None:
        offsets = np.zeros(num_videos + 1, np.int64)
        np.cumsum(np.bincount(video, minlength=num_videos), out=offsets[1:])
    first = inner.first_window[offsets]  # a video's windows: those of its spans, in order
    per_video = np.diff(first)
    return SpanPlan(
        params=params,
        windows_per_video=per_video,
        first_window=first,
        span_first_window=inner.first_window,
        span_video=video,
        span_start=start,
    )


__all__ = ["SpanPlan", "plan_spans"]
