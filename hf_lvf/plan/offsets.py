"""Action chunks: per-frame fields read at offsets from a window's last frame.

Pure numpy, no I/O. LeRobot's ``delta_timestamps`` give, per key, seconds relative to the
current frame; ``_get_query_indices`` turns them into frames ``round(delta * fps)`` from it,
clamps each to the episode's ``[first, last]`` frame and marks what was clamped in
``<key>_is_pad``. Here a video is an episode and the current frame is a window's last frame:

- ``frame_offsets={"action": range(16)}``: offsets in frames;
- ``delta_timestamps={"action": [0, 1 / fps, ...]}``: offsets in seconds, each a multiple of
  ``1 / fps_v`` (the video's own rate) within ``tolerance_s`` as LeRobot checks it
  (``|d * fps - round(d * fps)| / fps <= tolerance_s``), else a ``ValueError`` naming the key
  and the offset.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from ..errors import LayoutError, ParameterError

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


__all__ = [
    "IS_PAD",
    "TOLERANCE_S",
    "check_offsets",
    "offset_frames",
    "seconds_to_frames",
    "video_offsets",
]
