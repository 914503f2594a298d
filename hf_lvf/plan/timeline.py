"""Virtual frames: windows counted at a target frame rate, and short videos padded.

Pure numpy, no I/O. Two options of :class:`hf_lvf.WindowParams` change which frames
a window's numbers stand for:

- ``fps=F``: each video is read as if resampled from its own rate ``fps_v`` to ``F``
  frames per second. It has ``ceil(T * F / fps_v)`` virtual frames, and virtual frame
  ``m`` is source frame ``floor(m * fps_v / F)``. Each rate is taken as the exact
  fraction of its decimal value (``29.97`` is ``2997/100``, never the binary float), so
  the mapping is exact at every ``m``: integer arithmetic, once per distinct rate, in
  int64 where that cannot overflow and in Python integers where it could (a rate such as
  ``29.97002997002997`` is a fraction of 16-digit integers).
- ``short_videos="pad"``: frame numbers past a video's last (virtual) frame are clamped
  to it (LeRobot's rule), and ``frame_is_pad`` says which.

Window parameters (``window_length``, ``frame_skip``, ``hop_size``, ``min_video_frames``)
count virtual frames; ``frame_indices`` are source frames; ``timestamps`` are seconds of
the (clamped) virtual frames, ``m / F``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from ..errors import LayoutError, ParameterError

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


__all__ = [
    "SHORT_VIDEOS",
    "ShortVideos",
    "Timeline",
    "check_fps",
    "check_short_videos",
    "make_timeline",
]
