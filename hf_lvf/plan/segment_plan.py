"""The segment plan: which frame windows a root yields, and in which order.

Pure numpy, no I/O. Windows are numbered video by video, then by start frame
(FORMAT.md, "Samples: the segment plan"). The plan stores one count per video,
not one entry per window, so a root with millions of windows costs a few
arrays of ``n_videos`` integers; window ``i`` is found by a binary search.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ParameterError, ParameterTypeError, WindowIndexError
from .timeline import ShortVideos, Timeline, check_fps, check_short_videos, make_timeline

Sampling = Literal["windows", "every_frame"]
SAMPLINGS = ("windows", "every_frame")


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def check_integer(name: str, value: object, minimum: int) -> int:
    """``value`` as an int, or a ``ValueError`` naming ``name``: an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class WindowParams:
    """How windows are cut from videos: the window options of :class:`hf_lvf.VideoWindows`,
    ``load_dataset("hf_lvf", ...)`` (:class:`hf_lvf.HfLvfConfig`) and :class:`hf_lvf.WindowVideo`,
    each documented here only.

    Args:
        window_length: frames per window (>= 1). The default, 1, is stated, not guessed:
            each frame is its own sample (a dataset of frames, like an image folder). A video
            model wants its clip length: ``window_length=16``.
        frame_skip: frames skipped between two frames of a window (>= 0);
            the stride is ``frame_skip + 1``.
        hop_size: frames between the starts of two windows of a video (>= 1).
        min_video_frames: videos shorter than this yield no window; ``None``
            keeps every video at least one window long.
        short_videos: ``"drop"`` (videos shorter than a window yield none) or ``"pad"``
            (they yield one window from frame 0, frames past the last clamped to it; samples
            gain ``frame_is_pad``).
        fps: count frames at this rate: each video read as if resampled from its own rate
            (see :mod:`hf_lvf.plan.timeline`); samples gain ``timestamps``. ``None`` counts
            the stored frames.
        windows_in: ``"videos"`` (windows of whole videos, the reference reader's numbering)
            or ``"spans"`` (windows inside the spans of ``_metadata.json``, each span cut as a
            video of its frames would be: :mod:`hf_lvf.plan.spans`; samples gain ``span_idx``
            and the span's fields, ``caption``...).
        sampling: ``"windows"`` (FORMAT.md's plan: windows start at ``0, hop_size, ...``) or
            ``"every_frame"`` (LeRobot's: one sample per frame, its window ending at that frame;
            frames before the video's first are clamped to it and marked in ``frame_is_pad``;
            ``hop_size`` must be 1; with ``load_dataset``, streaming only).
    """

    window_length: int = 1
    frame_skip: int = 0
    hop_size: int = 1
    min_video_frames: int | None = None
    short_videos: ShortVideos = "drop"
    fps: float | None = None
    windows_in: Literal["videos", "spans"] = "videos"
    sampling: Sampling = "windows"

    def __post_init__(self) -> None:
        minimums = {"window_length": 1, "frame_skip": 0, "hop_size": 1, "min_video_frames": 0}
        for name, minimum in minimums.items():
            value = getattr(self, name)
            if value is not None or name != "min_video_frames":
                object.__setattr__(self, name, _check_int(name, value, minimum))
        object.__setattr__(self, "short_videos", check_short_videos(self.short_videos))
        object.__setattr__(self, "fps", check_fps(self.fps))
        check_windows_in(self.windows_in, self.short_videos, self.fps)
        if self.sampling not in SAMPLINGS:
            raise ParameterError(
                f"sampling must be 'windows' or 'every_frame', got {self.sampling!r}"
            )
        if self.sampling == "every_frame" and self.windows_in != "videos":
            raise ParameterError("sampling='every_frame' plans whole videos: windows_in='videos'")
        if self.sampling == "every_frame" and self.hop_size != 1:
            raise ParameterError(
                f"sampling='every_frame' plans one sample per frame: hop_size must be 1, "
                f"got {self.hop_size!r}"
            )

    @property
    def every_frame(self) -> bool:
        return self.sampling == "every_frame"

    @property
    def pads(self) -> bool:
        """Whether samples carry ``frame_is_pad`` (short videos padded, or every frame)."""
        return self.short_videos == "pad" or self.every_frame

    @property
    def stride(self) -> int:
        return self.frame_skip + 1

    @property
    def span(self) -> int:
        """Frames of the video one window covers, first to last inclusive."""
        return (self.window_length - 1) * self.stride + 1

    @property
    def frame_offsets(self) -> np.ndarray:
        """Frame numbers of a window relative to its start frame."""
        return np.arange(self.window_length, dtype=np.int64) * self.stride


@dataclass(frozen=True)
class SegmentPlan:
    """Windows of a video table under some :class:`WindowParams`.

    Attributes:
        params: the window parameters.
        windows_per_video: ``(n_videos,)`` number of windows of each video.
        first_window: ``(n_videos + 1,)`` index of each video's first window;
            the last entry is the total.
        timeline: with ``short_videos="pad"`` or ``fps``, the virtual frames windows count
            (start frames are virtual frames); ``None`` otherwise.
    """

    params: WindowParams
    windows_per_video: np.ndarray
    first_window: np.ndarray
    timeline: Timeline | None = None

    def __len__(self) -> int:
        return int(self.first_window[-1])

    def normalize(self, indices: np.ndarray | list[int] | int) -> np.ndarray:
        """Validate window indices (negative ones count from the end) as an int64 array.

        Raises:
            IndexError: an index is outside ``[-len, len)``.
        """
        idx = np.asarray(indices)
        if idx.dtype.kind not in "iu":
            if idx.size == 0:
                return idx.astype(np.int64)
            raise ParameterTypeError(f"window indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64, copy=True)
        n = len(self)
        idx[idx < 0] += n
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            first = np.asarray(indices).reshape(-1)[np.flatnonzero(bad.reshape(-1))[0]]
            raise WindowIndexError(f"window index {int(first)} is out of range for {n} windows")
        return idx

    def locate(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(video_idx, start_frame)`` of already normalized window indices."""
        video_idx = np.searchsorted(self.first_window, indices, side="right") - 1
        start_frame = (indices - self.first_window[video_idx]) * self.params.hop_size
        if self.params.every_frame:  # the window ends at frame (indices - first): may start < 0
            start_frame -= self.params.span - 1
        return video_idx, start_frame

    def frame_indices(
        self, start_frame: np.ndarray, video_idx: np.ndarray | None = None
    ) -> np.ndarray:
        """``(n, window_length)`` frame numbers of windows starting at ``start_frame`` (of
        videos ``video_idx``, which a plan with a :attr:`timeline` needs)."""
        frames = start_frame[:, None] + self.params.frame_offsets[None, :]
        if self.params.every_frame:
            frames = np.maximum(frames, 0)
        if self.timeline is None:
            return frames
        return self.timeline.frames(video_idx, frames)[0]

    def sample_columns(self, video_idx: np.ndarray, start_frame: np.ndarray) -> dict:
        """The keys ``short_videos="pad"`` and ``fps`` add to samples (``frame_is_pad``,
        ``timestamps``), each ``(n, window_length)``; empty without them. With
        ``sampling="every_frame"``, frames before a video's first are pads."""
        frames = start_frame[:, None] + self.params.frame_offsets[None, :]
        before = frames < 0
        if self.timeline is None:
            return {"frame_is_pad": before} if self.params.every_frame else {}
        columns = self.timeline.columns(video_idx, np.maximum(frames, 0))
        if self.params.every_frame:
            pads = {"frame_is_pad": before | columns.pop("frame_is_pad", False)}
            columns = pads | columns
        return columns

    def rows_to_fetch(
        self, start_rows: np.ndarray, batches: Iterable[np.ndarray]
    ) -> Iterator[np.ndarray]:
        """For each batch of normalized window indices, the sorted Lance rows (frame ``f`` of
        video ``v`` is row ``start_rows[v] + f``) its windows need, less those of the previous
        batch's last window, whose frames a sequential reader still holds."""
        previous = np.empty(0, np.int64)
        for idx in batches:
            video_idx, start_frame = self.locate(idx)
            rows = start_rows[video_idx][:, None] + self.frame_indices(start_frame, video_idx)
            yield np.setdiff1d(rows, previous)
            previous = rows[-1]

    def video_windows(self, video_idx: int) -> range:
        """Indices of the windows of one video."""
        return range(int(self.first_window[video_idx]), int(self.first_window[video_idx + 1]))


def plan_windows(
    num_frames: np.ndarray,
    params: WindowParams,
    *,
    video_fps: np.ndarray | None = None,
    describe_video: Callable[[int], str] | None = None,
) -> SegmentPlan:
    """Plan the windows of videos with ``num_frames[v]`` frames each.

    A video takes part when it has at least ``max(span, min_video_frames)``
    frames; its windows start at ``0, hop_size, ...`` up to ``T - span``. With
    ``short_videos="pad"``, a video of ``1 <= T < span`` frames (not below
    ``min_video_frames``) has one window, from frame 0. With ``fps``, ``T`` counts
    virtual frames (:mod:`hf_lvf.plan.timeline`): each video's rate is ``video_fps[v]``
    (NaN: unknown, a ``LayoutError`` naming ``describe_video(v)``).

    Examples:
        >>> plan = plan_windows(np.array([10, 3]), WindowParams(window_length=4, hop_size=3))
        >>> plan.windows_per_video.tolist(), len(plan)
        ([3, 0], 3)
    """
    frames = np.asarray(num_frames, dtype=np.int64)
    timeline = None
    if params.short_videos == "pad" or params.fps is not None:
        pad = params.short_videos == "pad"
        timeline = make_timeline(
            frames, fps=params.fps, pad=pad, video_fps=video_fps, describe_video=describe_video
        )
        frames = timeline.virtual_frames
    if params.every_frame:  # one sample per (virtual) frame of each long enough video
        counts = np.where(frames >= max(1, params.min_video_frames or 0), frames, 0)
        first = np.zeros(len(frames) + 1, dtype=np.int64)
        np.cumsum(counts, out=first[1:])
        return SegmentPlan(params, windows_per_video=counts, first_window=first, timeline=timeline)
    span = params.span
    min_frames = max(span, params.min_video_frames or 0)
    counts = np.where(frames >= min_frames, (frames - span) // params.hop_size + 1, 0)
    if params.short_videos == "pad":
        short = (frames < span) & (frames >= max(1, params.min_video_frames or 0))
        counts = np.where(short, 1, counts)
    first = np.zeros(len(frames) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    return SegmentPlan(
        params=params, windows_per_video=counts, first_window=first, timeline=timeline
    )


def check_windows_in(windows_in: object, short_videos: str = "drop", fps: object = None) -> str:
    """``windows_in`` as given, or a ``ValueError``: ``"videos"`` or ``"spans"``, the latter
    without ``short_videos="pad"`` or ``fps`` (a span is cut in its stored frames)."""
    if windows_in not in ("videos", "spans"):
        raise ParameterError(f"windows_in must be 'videos' or 'spans', got {windows_in!r}")
    if windows_in == "spans" and (short_videos != "drop" or fps is not None):
        option = "short_videos='pad'" if short_videos != "drop" else f"fps={fps!r}"
        raise ParameterError(
            f"windows_in='spans' cuts spans in their stored frames and takes no {option}; "
            "leave it unset"
        )
    return windows_in


def check_frame_size(frame_size: object) -> tuple[int, int] | None:
    """Validate a ``frame_size=(H, W)`` argument."""
    if frame_size is None:
        return None
    if (
        not isinstance(frame_size, Sequence)
        or len(frame_size) != 2
        or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in frame_size)
        or min(frame_size) < 1
    ):
        raise ParameterError(
            f"frame_size must be a pair of positive integers (H, W), got {frame_size!r}"
        )
    return int(frame_size[0]), int(frame_size[1])
