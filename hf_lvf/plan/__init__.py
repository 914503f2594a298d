"""The plan: pure numpy from window parameters to which frames make which sample.

One module, in the order a window is planned: virtual frames (``fps=``, padded short
videos), :class:`WindowParams` and the :class:`WindowPlan` (windows numbered video by
video, then by start frame; FORMAT.md, "Samples"), windows inside spans, action chunks
(per-frame fields at offsets), frame sizes, crops and memory bounds, and ranges of windows
for parallel readers. Clips per video per epoch (the order a sampler draws) are
:mod:`.clips`. Knows nothing of files: it may import only :mod:`hf_lvf.errors`.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from ..errors import LayoutError, ParameterError, ParameterTypeError, WindowIndexError

# ================================================================================================
# Virtual frames: windows counted at a target frame rate, and short videos padded.
#
# Pure numpy, no I/O. Two options of :class:`hf_lvf.WindowParams` change which frames
# a window's numbers stand for:
#
# - ``fps=F``: each video is read as if resampled from its own rate ``fps_v`` to ``F``
#   frames per second. It has ``ceil(T * F / fps_v)`` virtual frames, and virtual frame
#   ``m`` is source frame ``floor(m * fps_v / F)``. Each rate is taken as the exact
#   fraction of its decimal value (``29.97`` is ``2997/100``, never the binary float), so
#   the mapping is exact at every ``m``: integer arithmetic, once per distinct rate, in
#   int64 where that cannot overflow and in Python integers where it could (a rate such as
#   ``29.97002997002997`` is a fraction of 16-digit integers).
# - ``short_videos="pad"``: frame numbers past a video's last (virtual) frame are clamped
#   to it (LeRobot's rule), and ``frame_is_pad`` says which.
#
# Window parameters (``window_length``, ``frame_skip``, ``hop_size``, ``min_video_frames``)
# count virtual frames; ``frame_indices`` are source frames; ``timestamps`` are seconds of
# the (clamped) virtual frames, ``m / F``.
# ================================================================================================


ShortVideos = Literal["drop", "pad"]


SHORT_VIDEOS = ("drop", "pad")


_INT64_LIMIT = 2**63


def check_fps(fps: object) -> float | None:
    """Validate an ``fps=`` argument: ``None`` or a finite number > 0, returned as a float."""
    if fps is None:
        return None
    if (
        isinstance(fps, bool)
        or not isinstance(fps, numbers.Real)
        or not math.isfinite(float(fps))
        or fps <= 0
    ):
        raise ParameterError(
            f"fps must be a finite number > 0 (frames per second) or None, got {fps!r}"
        )
    return float(fps)


def check_short_videos(short_videos: object) -> str:
    """Validate a ``short_videos=`` argument."""
    if short_videos not in SHORT_VIDEOS:
        raise ParameterError(f"short_videos must be 'drop' or 'pad', got {short_videos!r}")
    return str(short_videos)


def exact_fraction(value: float) -> Fraction:
    """The exact fraction of a rate's shortest decimal form: ``29.97 -> 2997/100``."""
    return Fraction(repr(float(value)))


def _mul_div(values: np.ndarray, num: np.ndarray, den: np.ndarray, *, ceil: bool) -> np.ndarray:
    """Exact ``floor`` (or ``ceil``) of ``values * num / den``, elementwise, as int64.

    ``values`` are int64 >= 0; ``num`` and ``den`` are object arrays of Python integers > 0.
    int64 when every product fits, Python integers otherwise (no overflow, no float).
    """
    if values.size == 0:
        return np.zeros(values.shape, np.int64)
    top = int(values.max()) * int(num.max()) + int(den.max())
    if top < _INT64_LIMIT:
        num64, den64 = num.astype(np.int64), den.astype(np.int64)
        product = values * num64
        return -((-product) // den64) if ceil else product // den64
    product = values.astype(object) * num
    out = -((-product) // den) if ceil else product // den
    return out.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Timeline:
    """The virtual frames of every video of a root.

    Attributes:
        num_frames: ``(n_videos,)`` frames ``T`` of each video.
        virtual_frames: ``(n_videos,)`` virtual frames of each video: ``ceil(T * F / fps_v)``
            with ``fps``, else ``T``.
        fps: the target rate ``F``, or ``None``.
        pad: frame numbers past the last virtual frame are clamped (``short_videos="pad"``).
        rate_num, rate_den: with ``fps``, ``(n_videos,)`` object arrays of Python integers:
            virtual frame ``m`` of video ``v`` is source frame
            ``floor(m * rate_num[v] / rate_den[v])`` (``fps_v / F`` in lowest terms).
    """

    num_frames: np.ndarray
    virtual_frames: np.ndarray
    fps: float | None
    pad: bool
    rate_num: np.ndarray | None = None
    rate_den: np.ndarray | None = None

    def frames(
        self, video_idx: np.ndarray, virtual: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(source frames, clamped virtual frames, is_pad)`` of virtual frame numbers
        ``virtual`` (``(n, L)``) of videos ``video_idx`` (``(n,)``)."""
        video_idx = np.asarray(video_idx, np.int64)
        last = (self.virtual_frames[video_idx] - 1)[:, None]
        is_pad = virtual > last
        clamped = np.minimum(virtual, last) if self.pad else virtual
        if self.fps is None:
            return clamped, clamped, is_pad
        rows = np.broadcast_to(video_idx[:, None], clamped.shape)
        source = _mul_div(clamped, self.rate_num[rows], self.rate_den[rows], ceil=False)
        return source, clamped, is_pad

    def columns(self, video_idx: np.ndarray, virtual: np.ndarray) -> dict[str, np.ndarray]:
        """The keys these options add to samples, each ``(n, L)``: ``frame_is_pad`` (bool,
        with ``pad``) and ``timestamps`` (float64 seconds ``m / F``, with ``fps``)."""
        _, clamped, is_pad = self.frames(video_idx, virtual)
        out = {}
        if self.pad:
            out["frame_is_pad"] = is_pad
        if self.fps is not None:
            out["timestamps"] = clamped.astype(np.float64) / self.fps
        return out


def make_timeline(
    num_frames: np.ndarray,
    *,
    fps: float | None,
    pad: bool,
    video_fps: np.ndarray | None = None,
    describe_video: Callable[[int], str] | None = None,
) -> Timeline:
    """The :class:`Timeline` of videos of ``num_frames`` frames.

    Args:
        num_frames: ``(n_videos,)`` frames of each video.
        fps: the target rate, or ``None`` (virtual frames are source frames).
        pad: clamp frame numbers past a video's end (``short_videos="pad"``).
        video_fps: ``(n_videos,)`` each video's own rate, NaN where unknown; needed with ``fps``.
        describe_video: ``video_idx -> text`` naming a video in errors (its index and path).

    Raises:
        LayoutError: with ``fps``, a video has no rate (or one that is not > 0 and finite).

    Examples:
        >>> t = make_timeline(np.array([30]), fps=10.0, pad=False, video_fps=np.array([29.97]))
        >>> int(t.virtual_frames[0]), t.frames(np.array([0]), np.array([[0, 5, 10]]))[0].tolist()
        (11, [[0, 14, 29]])
    """
    frames = np.asarray(num_frames, np.int64)
    if fps is None:
        return Timeline(num_frames=frames, virtual_frames=frames, fps=None, pad=pad)
    rates = np.full(len(frames), np.nan) if video_fps is None else np.asarray(video_fps, float)
    bad = np.flatnonzero(~(np.isfinite(rates) & (rates > 0)))
    if bad.size:
        v = int(bad[0])
        name = describe_video(v) if describe_video is not None else f"video {v}"
        found = "" if np.isnan(rates[v]) else f" (it records {float(rates[v])!r})"
        raise LayoutError(
            f"{name} has no frame rate{found}: fps={fps!r} reads each video at its own rate, "
            "from its entry's 'fps' field or its metadata['fps'] (convert_videos writes it); "
            "record it for every video, or leave fps= unset"
        )
    target = exact_fraction(fps)
    distinct, inverse = np.unique(rates, return_inverse=True)
    nums, dens = [], []
    for rate in distinct.tolist():  # once per distinct rate, not per video
        ratio = exact_fraction(rate) / target  # fps_v / F
        nums.append(ratio.numerator)
        dens.append(ratio.denominator)
    rate_num = np.array(nums, object)[inverse.reshape(-1)]
    rate_den = np.array(dens, object)[inverse.reshape(-1)]
    # ceil(T * F / fps_v) = ceil(T * den / num)
    virtual = _mul_div(frames, rate_den, rate_num, ceil=True)
    return Timeline(
        num_frames=frames,
        virtual_frames=virtual,
        fps=float(fps),
        pad=pad,
        rate_num=rate_num,
        rate_den=rate_den,
    )


# ================================================================================================
# The segment plan: which frame windows a root yields, and in which order.
#
# Pure numpy, no I/O. Windows are numbered video by video, then by start frame
# (FORMAT.md, "Samples: the segment plan"). The plan stores one count per video,
# not one entry per window, so a root with millions of windows costs a few
# arrays of ``n_videos`` integers; window ``i`` is found by a binary search.
# ================================================================================================


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
            (see :mod:`hf_lvf.plan`); samples gain ``timestamps``. ``None`` counts
            the stored frames.
        windows_in: ``"videos"`` (windows of whole videos, the reference reader's numbering)
            or ``"spans"`` (windows inside the spans of ``_metadata.json``, each span cut as a
            video of its frames would be: :mod:`hf_lvf.plan`; samples gain ``span_idx``
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
class WindowPlan:
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
) -> WindowPlan:
    """Plan the windows of videos with ``num_frames[v]`` frames each.

    A video takes part when it has at least ``max(span, min_video_frames)``
    frames; its windows start at ``0, hop_size, ...`` up to ``T - span``. With
    ``short_videos="pad"``, a video of ``1 <= T < span`` frames (not below
    ``min_video_frames``) has one window, from frame 0. With ``fps``, ``T`` counts
    virtual frames (:mod:`hf_lvf.plan`): each video's rate is ``video_fps[v]``
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
        return WindowPlan(params, windows_per_video=counts, first_window=first, timeline=timeline)
    span = params.span
    min_frames = max(span, params.min_video_frames or 0)
    counts = np.where(frames >= min_frames, (frames - span) // params.hop_size + 1, 0)
    if params.short_videos == "pad":
        short = (frames < span) & (frames >= max(1, params.min_video_frames or 0))
        counts = np.where(short, 1, counts)
    first = np.zeros(len(frames) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    return WindowPlan(
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


# ================================================================================================
# Windows inside spans (``windows_in="spans"``): each span cut as a video of its frames.
#
# Pure numpy. A span ``[start_frame, end_frame)`` of video ``v`` yields exactly the windows
# a video of ``end_frame - start_frame`` frames would (``window_length``, ``frame_skip``,
# ``hop_size`` and ``min_video_frames`` all apply), shifted to start at ``start_frame``.
# Windows are numbered span by span, in the order of the span table (video by video, then
# each video's list order), so the windows of one video stay contiguous and the per-video
# counts of :class:`~hf_lvf.plan.WindowPlan` keep their meaning (clip sampling, shards).
# ================================================================================================


@dataclass(frozen=True)
class SpanPlan(WindowPlan):
    """A :class:`WindowPlan` whose windows lie inside spans.

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


# ================================================================================================
# Action chunks: per-frame fields read at offsets from a window's last frame.
#
# Pure numpy, no I/O. LeRobot's ``delta_timestamps`` give, per key, seconds relative to the
# current frame; ``_get_query_indices`` turns them into frames ``round(delta * fps)`` from it,
# clamps each to the episode's ``[first, last]`` frame and marks what was clamped in
# ``<key>_is_pad``. Here a video is an episode and the current frame is a window's last frame:
#
# - ``frame_offsets={"action": range(16)}``: offsets in frames;
# - ``delta_timestamps={"action": [0, 1 / fps, ...]}``: offsets in seconds, each a multiple of
#   ``1 / fps_v`` (the video's own rate) within ``tolerance_s`` as LeRobot checks it
#   (``|d * fps - round(d * fps)| / fps <= tolerance_s``), else a ``ValueError`` naming the key
#   and the offset.
# ================================================================================================


#: LeRobot's default tolerance of ``delta_timestamps`` (seconds).
TOLERANCE_S = 1e-4


#: The key suffix of a field read at offsets: which of its offsets fell outside the video.
IS_PAD = "_is_pad"


def _offsets(option: str, key: object, values: object, kind: type) -> tuple:
    if not isinstance(key, str) or not key:
        raise ParameterError(f"{option} keys must be field names (str), got {key!r}")
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ParameterError(f"{option}[{key!r}] must be a list of offsets, got {values!r}")
    values = tuple(values)
    if not values:
        raise ParameterError(f"{option}[{key!r}] is empty: give at least one offset")
    for value in values:
        ok = isinstance(value, kind) and not isinstance(value, bool)
        if not ok or (kind is numbers.Real and not math.isfinite(float(value))):
            what = "integers (frames)" if kind is numbers.Integral else "finite seconds"
            raise ParameterError(f"{option}[{key!r}] holds {value!r}: offsets are {what}")
    return values


def check_offsets(
    frame_offsets: Mapping[str, Iterable[int]] | None,
    delta_timestamps: Mapping[str, Iterable[float]] | None,
) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[float, ...]]]:
    """Validate ``frame_offsets=`` and ``delta_timestamps=``: ``({key: frames}, {key: seconds})``.

    Raises:
        ValueError: not a mapping of field name to a non-empty list of integers (frames) or
            finite numbers (seconds); a key given in both.
    """
    out = []
    for option, given, kind in (
        ("frame_offsets", frame_offsets, numbers.Integral),
        ("delta_timestamps", delta_timestamps, numbers.Real),
    ):
        if given is None:
            out.append({})
            continue
        if not isinstance(given, Mapping):
            raise ParameterError(f"{option} must be a dict of field name to offsets, got {given!r}")
        out.append({key: _offsets(option, key, values, kind) for key, values in given.items()})
    both = sorted(set(out[0]) & set(out[1]))
    if both:
        raise ParameterError(f"{both[0]!r} is in both frame_offsets and delta_timestamps: give one")
    frames = {key: tuple(int(v) for v in values) for key, values in out[0].items()}
    return frames, {key: tuple(float(v) for v in values) for key, values in out[1].items()}


def seconds_to_frames(
    key: str, seconds: tuple[float, ...], fps: float, tolerance_s: float = TOLERANCE_S
) -> np.ndarray:
    """Offsets in seconds as frames at ``fps``: ``round(d * fps)``, LeRobot's rule.

    Raises:
        ValueError: an offset off the ``1 / fps`` grid by more than ``tolerance_s`` seconds,
            naming the key, the offset and the rate.
    """
    ticks = np.asarray(seconds, np.float64) * fps
    frames = np.round(ticks)
    off = np.flatnonzero(np.abs(ticks - frames) / fps > tolerance_s)
    if off.size:
        value = seconds[int(off[0])]
        raise ParameterError(
            f"delta_timestamps[{key!r}] holds {value!r} s, which is not a multiple of 1/{fps!r} s "
            f"(the video's frame rate) within tolerance_s={tolerance_s!r}: the nearest are "
            f"{math.floor(value * fps) / fps!r} and {math.ceil(value * fps) / fps!r}"
        )
    return frames.astype(np.int64)


def video_offsets(
    frames: Mapping[str, tuple[int, ...]],
    seconds: Mapping[str, tuple[float, ...]],
    video_fps: np.ndarray,
    *,
    tolerance_s: float = TOLERANCE_S,
    describe_video: Callable[[int], str] | None = None,
) -> dict[str, np.ndarray]:
    """Each key's offsets in frames, per video: ``{key: (n_videos, K) int64}``.

    Seconds are converted at each video's rate ``video_fps[v]`` (once per distinct rate).

    Raises:
        ValueError: an offset in seconds off a video's frame grid (:func:`seconds_to_frames`).
        LayoutError: offsets in seconds for a video without a frame rate, naming it.
    """
    n = len(video_fps)
    out = {key: np.broadcast_to(np.asarray(v, np.int64), (n, len(v))) for key, v in frames.items()}
    if not seconds:
        return out
    rates = np.asarray(video_fps, np.float64)
    bad = np.flatnonzero(~(np.isfinite(rates) & (rates > 0)))
    if bad.size:
        name = describe_video(int(bad[0])) if describe_video else f"video {int(bad[0])}"
        raise LayoutError(
            f"{name} has no frame rate: delta_timestamps needs each video's 'fps' to turn seconds "
            "into frames; record it, or give frame_offsets= in frames"
        )
    distinct, inverse = np.unique(rates, return_inverse=True)
    for key, values in seconds.items():
        per_rate = np.stack(
            [seconds_to_frames(key, values, float(r), tolerance_s) for r in distinct]
        )
        out[key] = per_rate[inverse.reshape(-1)]
    return out


def offset_frames(
    last_frame: np.ndarray, video_idx: np.ndarray, offsets: np.ndarray, num_frames: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(frames, is_pad)``, each ``(n, K)``: ``last_frame + offsets`` of videos ``video_idx``
    clamped to ``[0, T - 1]``, and which were clamped (LeRobot's ``_get_query_indices``).

    Args:
        last_frame: ``(n,)`` each window's last frame.
        video_idx: ``(n,)`` their videos.
        offsets: ``(n_videos, K)`` a key's offsets per video (:func:`video_offsets`).
        num_frames: ``(n_videos,)`` frames of each video.

    Examples:
        >>> f, pad = offset_frames(np.array([8]), np.array([0]), np.array([[-1, 0, 1, 2]]),
        ...                        np.array([10]))
        >>> f.tolist(), pad.tolist()
        ([[7, 8, 9, 9]], [[False, False, False, True]])
    """
    wanted = last_frame[:, None] + offsets[video_idx]
    last = (num_frames[video_idx] - 1)[:, None]
    return np.clip(wanted, 0, last), (wanted < 0) | (wanted > last)


# ================================================================================================
# Frame sizes: how frames are brought to one size, and how big a read may get.
#
# Pure arithmetic, no I/O, shared by the reader (resize on decode) and the
# converter (resize on write), so both mean the same by ``crop="center"``.
#
# Memory is bounded before it is allocated: a root's ``_metadata.json`` declares
# each video's ``H`` and ``W``, and a batch's pixels are allocated from those
# numbers, so a lying or mistaken root (or a mistyped ``frame_size``) must be
# refused from the numbers, never found out by a ``MemoryError`` or an OOM kill.
# Two limits do that, in the role ``PIL.Image.MAX_IMAGE_PIXELS`` plays for
# Pillow: pixels per frame, and bytes per batch of decoded windows.
# ================================================================================================


DEFAULT_MAX_FRAME_PIXELS = 2**25


"""Default of ``max_frame_pixels``: 2**25 = 33,554,432 pixels, enough for 8K UHD
(7680 x 4320) frames and far below what a lying root could declare."""


#: WebP cannot hold a side longer than this; a root that declares one lies.
WEBP_MAX_SIDE = 16383


#: Used for the default ``max_batch_bytes`` where the physical memory is unknown.
_FALLBACK_BATCH_BYTES = 4 * 2**30


Crop = Literal["none", "center"]


CROPS: tuple[str, ...] = ("none", "center")


@dataclass(frozen=True, kw_only=True)
class FrameSizing:
    """How a reader sizes decoded frames and bounds its memory; validated, picklable.

    Args:
        frame_size: ``(H, W)`` every frame is resized to on decode; ``None`` keeps the
            videos' own size (which must then be the same for all).
        crop: ``"none"`` stretches each frame to ``frame_size``; ``"center"`` scales it,
            keeping its aspect ratio, to cover ``frame_size`` and cuts out the middle
            (the usual "shorter side to N, then center crop" when ``H == W == N``).
        max_frame_pixels: a video whose declared ``H * W`` is larger is refused when the
            root is opened, and so is a larger ``frame_size``.
        max_batch_bytes: a read whose decoded frames would take more bytes is refused
            before anything is allocated; ``None``: half the physical memory of the
            reading machine.
        decode_scaled: JPEG frames read at a ``frame_size`` of at most 1/2, 1/4 or 1/8 of
            their stored size decode straight to the smallest of those scales that still
            covers it (libjpeg's DCT scaling, several times faster), then are resized and
            cut as the others; ``False`` decodes every frame at full size first.
        proxies: a read at a ``frame_size`` that a proxy stream of the frames covers (every
            video's proxy at least as high and as wide) decodes the smallest such proxy,
            and reads only its bytes, instead of the full frames (``add_proxy``);
            ``False`` always reads the full frames; a proxy's name (``"proxy_224"``) always
            reads that one, at ``frame_size`` or, without it, at the proxy's own size.

    Raises:
        ValueError: a value is out of range, ``crop="center"`` without ``frame_size``, or
            ``frame_size`` above ``max_frame_pixels``.
    """

    frame_size: tuple[int, int] | None = None
    crop: Crop = "none"
    max_frame_pixels: int = DEFAULT_MAX_FRAME_PIXELS
    max_batch_bytes: int | None = None
    decode_scaled: bool = True
    proxies: bool | str = True

    def __post_init__(self) -> None:
        if not isinstance(self.decode_scaled, bool):
            raise ParameterError(f"decode_scaled must be True or False, got {self.decode_scaled!r}")
        if not isinstance(self.proxies, bool) and not (
            isinstance(self.proxies, str) and self.proxies
        ):
            raise ParameterError(
                f"proxies must be True, False or a proxy stream's name, got {self.proxies!r}"
            )
        object.__setattr__(self, "frame_size", check_frame_size(self.frame_size))
        check_crop(self.crop)
        object.__setattr__(
            self, "max_frame_pixels", check_limit("max_frame_pixels", self.max_frame_pixels)
        )
        if self.max_batch_bytes is not None:
            object.__setattr__(
                self, "max_batch_bytes", check_limit("max_batch_bytes", self.max_batch_bytes)
            )
        if self.crop != "none" and self.frame_size is None:
            raise ParameterError(
                f"crop={self.crop!r} needs frame_size=(H, W), the size to crop to; e.g. "
                "frame_size=(224, 224), crop='center'"
            )
        if self.frame_size is not None:
            problem = frame_pixels_problem(*self.frame_size, self.max_frame_pixels)
            if problem is not None:
                raise ParameterError(f"frame_size={self.frame_size!r} is {problem}")

    @property
    def batch_bytes(self) -> int:
        """The byte bound of a read, with the default resolved on this machine."""
        return self.max_batch_bytes or default_max_batch_bytes()


@functools.cache  # the machine's memory does not change while we run
def default_max_batch_bytes() -> int:
    """Default of ``max_batch_bytes``: half this machine's physical memory (4 GiB if unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return _FALLBACK_BATCH_BYTES
    return total // 2 if total > 0 else _FALLBACK_BATCH_BYTES


def check_limit(name: str, value: object) -> int:
    """Validate a ``max_frame_pixels`` / ``max_batch_bytes`` argument (a positive integer)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_crop(crop: object) -> Crop:
    """Validate a ``crop=`` argument."""
    if crop not in CROPS:
        raise ParameterError(f"crop must be one of {CROPS!r}, got {crop!r}")
    return crop  # type: ignore[return-value]


def frame_pixels_problem(height: int, width: int, max_frame_pixels: int) -> str | None:
    """Why a ``height x width`` frame may not be allocated, or ``None`` if it may."""
    if height * width > max_frame_pixels:
        return (
            f"{height}x{width} (HxW) = {height * width:,} pixels per frame, above "
            f"max_frame_pixels={max_frame_pixels:,}"
        )
    return None


def batch_bytes_problem(
    num_frames: int, height: int, width: int, max_batch_bytes: int
) -> str | None:
    """Why ``num_frames`` decoded ``height x width`` RGB frames may not be allocated (or None)."""
    needed = num_frames * height * width * 3
    if needed > max_batch_bytes:
        return (
            f"{num_frames} frames of {height}x{width} (HxW) RGB need {_gib(needed)}, above "
            f"max_batch_bytes={max_batch_bytes:,} ({_gib(max_batch_bytes)})"
        )
    return None


#: What to do about frames of several sizes; every "differ in size" error ends with it.
MIXED_SIZES_HINT = (
    "pass frame_size=(H, W) to resize on decode, with crop='center' to keep the aspect ratio "
    "(scale to cover, cut out the middle) or crop='none' to stretch; or convert the videos with "
    "resize=N, crop='center' to store one size"
)


def common_frame_size(
    sizes: np.ndarray | Sequence[tuple[int, int]], what: str, where: np.ndarray | None = None
) -> tuple[int, int]:
    """The one ``(H, W)`` of ``sizes`` (rows of ``(H, W)``; those ``where`` is true, if
    given); ``what`` names them in the error.

    Raises:
        ValueError: the sizes differ; the message says what to pass instead.
    """
    sizes = np.asarray(sizes, np.int64).reshape(-1, 2)
    if where is not None and not (len(sizes) and (sizes == sizes[0]).all()):
        sizes = sizes[where]
    if len(sizes) and (sizes == sizes[0]).all():  # the usual case, without sorting a million
        return int(sizes[0, 0]), int(sizes[0, 1])
    distinct = np.unique(sizes, axis=0)
    if len(distinct) > 1:
        shown = ", ".join(f"{h}x{w}" for h, w in distinct[:5].tolist())
        raise ParameterError(
            f"{what} differ in size ({shown}, HxW), so windows cannot share one Array4D shape; "
            f"{MIXED_SIZES_HINT}"
        )
    return int(distinct[0][0]), int(distinct[0][1])


def _gib(num_bytes: int) -> str:
    return f"{num_bytes / 2**30:.2f} GiB"


def cover_size(height: int, width: int, out_height: int, out_width: int) -> tuple[int, int]:
    """``(H, W)`` a ``height x width`` frame scales to so it just covers ``out_height x out_width``.

    The aspect ratio is kept (each side rounded); the result is at least the output
    size in both sides, and equal to it in one. With a square output of side ``N``
    this is "the shorter side to N".

    Examples:
        >>> cover_size(480, 640, 224, 224), cover_size(640, 480, 224, 224)
        ((224, 299), (299, 224))
    """
    scale = max(out_height / height, out_width / width)
    return max(out_height, round(height * scale)), max(out_width, round(width * scale))


def center_offsets(height: int, width: int, out_height: int, out_width: int) -> tuple[int, int]:
    """``(top, left)`` of a centered ``out_height x out_width`` crop of a ``height x width`` frame
    (torchvision's ``CenterCrop`` rounding)."""
    return int(round((height - out_height) / 2.0)), int(round((width - out_width) / 2.0))


def crop_box(
    height: int, width: int, out_height: int, out_width: int, crop: Crop
) -> tuple[float, float, float, float] | None:
    """The source region ``(left, top, right, bottom)`` that is scaled to the output size.

    ``None`` for ``crop="none"`` (the whole frame, stretched to the output size);
    for ``crop="center"``, the largest centered region of the output's aspect ratio,
    so scaling it is the same as scaling the frame to cover the output and cutting
    the middle out (what Pillow's ``Image.resize(size, box=...)`` takes).

    Examples:
        >>> crop_box(100, 200, 50, 50, "center")
        (50.0, 0.0, 150.0, 100.0)
    """
    if crop == "none":
        return None
    scale = max(out_height / height, out_width / width)
    region_w, region_h = out_width / scale, out_height / scale
    left, top = (width - region_w) / 2, (height - region_h) / 2
    return (left, top, left + region_w, top + region_h)


# ================================================================================================
# Contiguous ranges of windows for parallel readers, cut at video boundaries where possible.
#
# A reader of one range fetches its frames in few Lance requests and decodes a frame shared by
# overlapping windows once, so ranges follow the plan's order; a cut inside a video splits only
# the windows of a video longer than a range.
# ================================================================================================


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


__all__ = [
    "WindowPlan",
    "WindowParams",
    "check_frame_size",
    "check_integer",
    "plan_windows",
    "SHORT_VIDEOS",
    "ShortVideos",
    "Timeline",
    "check_fps",
    "check_short_videos",
    "make_timeline",
    "SpanPlan",
    "plan_spans",
    "IS_PAD",
    "TOLERANCE_S",
    "check_offsets",
    "offset_frames",
    "seconds_to_frames",
    "video_offsets",
    "CROPS",
    "DEFAULT_MAX_FRAME_PIXELS",
    "WEBP_MAX_SIDE",
    "Crop",
    "MIXED_SIZES_HINT",
    "FrameSizing",
    "batch_bytes_problem",
    "center_offsets",
    "check_crop",
    "check_limit",
    "common_frame_size",
    "cover_size",
    "crop_box",
    "default_max_batch_bytes",
    "frame_pixels_problem",
    "window_ranges",
]
