"""Decoding one video file with PyAV into RGB frames: resized, resampled to a frame rate,
checked for truncation.
"""

from __future__ import annotations

import functools
import hashlib
import math
import numbers
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..decode import DEFAULT_QUALITY, Codec, check_codec
from ..errors import MissingDependencyError, ParameterError
from ..plan import (
    DEFAULT_MAX_FRAME_PIXELS,
    WEBP_MAX_SIDE,
    Crop,
    center_offsets,
    check_crop,
    cover_size,
    frame_pixels_problem,
)
from .source_parts import Clip, MemberFile, _BadClip, at_times

if TYPE_CHECKING:
    import av


_INSTALL_HINT = "converting video files needs PyAV: pip install 'hf-lvf[video]'"


# A file whose decoded frames cover less than this share of the frame count or
# duration its header declares is treated as truncated.
_MIN_DECODED_SHARE = 0.9


# Decoder threads per task. Measured on 224x224 H.264 and VP9 (2 cores): one
# thread decodes 2000-2200 frames/s, FFmpeg's automatic threading 1700-2000, and
# WebP encoding (~330 frames/s) is the bottleneck anyway; more threads per
# process would only compete with the other workers.
_DECODE_THREADS = 1


# swscale threads for the YUV -> RGB conversion (and resize) of each frame. PyAV 18
# defaults to "automatic", which starts and joins a thread per core for every frame:
# measured on 224x224 H.264 (2 cores, PyAV 18.1), 0.62 ms CPU per frame against
# 0.21 ms with one thread and one context reused across the video, and the idle waits
# of those threads cost 2 workers a third of their wall time. Output is bit-exact
# either way (checked on unscaled, AREA-shrunk and BICUBIC-enlarged frames).
_SCALE_THREADS = 1


OnError = Literal["skip", "raise"]


@dataclass(frozen=True, kw_only=True)
class _FrameOptions:
    """How frames are produced from a source file; validated, picklable, sent to every task."""

    codec: Codec = "webp"
    quality: int | None = DEFAULT_QUALITY
    lossless: bool = False
    resize: int | tuple[int, int] | None = None
    fps: Fraction | None = None
    on_error: OnError = "skip"
    crop: Crop = "none"
    fidelity: bool = True

    def __post_init__(self) -> None:
        codec, quality, lossless = check_codec(self.codec, self.quality, self.lossless)
        object.__setattr__(self, "quality", quality)  # None where lossless
        object.__setattr__(self, "lossless", lossless)
        object.__setattr__(self, "resize", _check_resize(self.resize))
        check_crop(self.crop)
        if self.crop != "none" and self.resize is None:
            raise ParameterError(
                f"crop={self.crop!r} needs resize= (N for an N x N crop of frames whose shorter "
                "side is scaled to N, or (H, W)), e.g. resize=224, crop='center'"
            )
        object.__setattr__(self, "fps", _check_fps(self.fps))
        if not isinstance(self.fidelity, bool):
            raise ParameterError(f"fidelity must be True or False, got {self.fidelity!r}")
        if self.on_error not in ("skip", "raise"):
            raise ParameterError(f"on_error must be 'skip' or 'raise', got {self.on_error!r}")


def _check_resize(resize: object) -> int | tuple[int, int] | None:
    if resize is None:
        return None
    checked: int | tuple[int, int]
    if isinstance(resize, numbers.Integral) and not isinstance(resize, bool):
        if resize < 1:
            raise ParameterError(f"resize must be >= 1, got {resize!r}")
        checked = int(resize)
        sides = (checked, checked)  # at least: the shorter side is N
    elif (
        isinstance(resize, Sequence)
        and not isinstance(resize, str)
        and len(resize) == 2
        and all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in resize)
        and min(resize) >= 1
    ):
        checked = sides = (int(resize[0]), int(resize[1]))
    else:
        raise ParameterError(
            f"resize must be None, a positive int (the shorter side) or a pair of positive ints "
            f"(H, W), got {resize!r}"
        )
    if max(sides) > WEBP_MAX_SIDE:
        raise ParameterError(
            f"resize={resize!r} is larger than WebP's {WEBP_MAX_SIDE} pixels per side"
        )
    problem = frame_pixels_problem(*sides, DEFAULT_MAX_FRAME_PIXELS)
    if problem is not None:
        raise ParameterError(f"resize={resize!r} would store {problem}, the readers' default limit")
    return checked


def _check_fps(fps: object) -> Fraction | None:
    if fps is None:
        return None
    if (
        isinstance(fps, bool)
        or not isinstance(fps, numbers.Real)
        or not math.isfinite(fps)
        or fps <= 0
    ):
        raise ParameterError(f"fps must be a positive finite number or None, got {fps!r}")
    return Fraction(fps).limit_denominator(1_000_000)


# The file cannot be converted (raised inside a task, turned into a skip or an error).
_BadVideo = _BadClip


def _import_av() -> Any:
    try:
        import av
    except ImportError as err:
        raise MissingDependencyError(_INSTALL_HINT) from err
    return av


@functools.cache
def _scale_threads() -> dict[str, int]:
    """``threads=`` for ``VideoReformatter.reformat`` if this PyAV takes it, else nothing
    (versions without the argument scale in the calling thread anyway)."""
    av = _import_av()
    try:
        av.VideoFrame(2, 2, "yuv420p").reformat(format="rgb24", threads=_SCALE_THREADS)
    except TypeError:
        return {}
    return {"threads": _SCALE_THREADS}


def _sha256(file: str) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _output_size(
    height: int, width: int, resize: int | tuple[int, int] | None, crop: Crop = "none"
) -> tuple[int, int]:
    """``(H, W)`` a ``height x width`` source is scaled to (before any crop).

    ``None`` keeps the size; an int ``n`` scales the shorter side to ``n`` and the
    longer one by the same factor, rounded to the nearest integer; ``(H, W)`` is
    taken as is, or with ``crop="center"`` is the size the frame is scaled to cover.
    """
    if resize is None:
        return height, width
    if crop != "none":
        out = resize if isinstance(resize, tuple) else (resize, resize)
        return cover_size(height, width, *out)
    if isinstance(resize, tuple):
        return resize
    if height <= width:
        return resize, max(1, round(width * resize / height))
    return max(1, round(height * resize / width)), resize


def _float_rate(rate: Any) -> float | None:
    return float(rate) if rate else None


class _Decoder:
    """Streams the RGB frames of one file, resized and resampled; records what it saw."""

    def __init__(self, file: str, options: _FrameOptions, clip: Clip | None = None):
        self.file = file
        self.options = options
        self.clip = clip or Clip()
        self.codec: str | None = None
        self.source_fps: float | None = None
        self.num_decoded = 0
        self.expected_frames = 0  # the frames it will yield, as its header tells; 0: unknown
        self._first_time: float | None = None
        self._last_time: float | None = None

    def frames(self) -> Iterator[np.ndarray]:
        av = _import_av()
        from av.video.reformatter import VideoReformatter

        member = self.clip.member
        if (member[1] if member else os.path.getsize(self.file)) == 0:
            raise _BadVideo("the file is empty (0 bytes)")
        with av.open(MemberFile(self.file, *member) if member else self.file) as container:
            if not container.streams.video:
                kinds = ", ".join(s.type for s in container.streams) or "none"
                raise _BadVideo(f"the file has no video stream (streams: {kinds})")
            stream = container.streams.video[0]
            stream.thread_type = "SLICE"
            stream.codec_context.thread_count = _DECODE_THREADS
            self.codec = stream.codec_context.name
            self.source_fps = _float_rate(stream.average_rate or stream.guessed_rate)
            self.expected_frames = self._expected_frames(stream)
            reformatter = VideoReformatter()  # one swscale context for the whole video
            times = self.clip.times
            if times:  # frames at times (a LeRobot episode): from the keyframe before the first
                first = int((times[0] - 1.0) / stream.time_base) if stream.time_base else 0
                container.seek(max(first, 0), stream=stream, backward=True)
            decoded = self._count(container.decode(stream))
            if times is not None:
                chosen = at_times(decoded, times)
            elif self.options.fps is None:
                chosen = decoded
            else:
                chosen = self._resample(decoded, stream)
            size: tuple[int, int] | None = None
            last: tuple[Any, np.ndarray] | None = None
            for frame in chosen:
                if last is not None and last[0] is frame:  # upsampling repeats a frame
                    yield last[1]
                    continue
                if size is None:
                    size = _output_size(
                        frame.height, frame.width, self.options.resize, self.options.crop
                    )
                array = self._crop(self._to_rgb(reformatter, frame, size))
                last = (frame, array)
                yield array
            if times is None:
                self._check_complete(container, stream)

    def _expected_frames(self, stream: Any) -> int:
        if self.clip.times is not None:
            return len(self.clip.times)
        if self.options.fps is None:
            return int(stream.frames or 0)
        if not stream.duration or stream.time_base is None:
            return 0
        return int(stream.duration * stream.time_base * self.options.fps)

    def _count(self, decoded: Iterator[av.VideoFrame]) -> Iterator[av.VideoFrame]:
        for frame in decoded:
            if self.num_decoded == 0:
                self._first_time = frame.time
            self.num_decoded += 1
            self._last_time = frame.time
            yield frame

    def _to_rgb(self, reformatter: Any, frame: av.VideoFrame, size: tuple[int, int]) -> np.ndarray:
        height, width = size
        options: dict[str, Any] = {"format": "rgb24", **_scale_threads()}
        if (frame.height, frame.width) != size:
            # Area averaging when shrinking avoids aliasing; bicubic when enlarging.
            shrink = height <= frame.height and width <= frame.width
            options.update(
                width=width, height=height, interpolation="AREA" if shrink else "BICUBIC"
            )
        return reformatter.reformat(frame, **options).to_ndarray()

    def _crop(self, array: np.ndarray) -> np.ndarray:
        """The centered ``resize`` crop of a scaled frame (``crop="center"``), else the frame."""
        if self.options.crop == "none":
            return array
        resize = self.options.resize
        out_h, out_w = resize if isinstance(resize, tuple) else (resize, resize)
        top, left = center_offsets(*array.shape[:2], out_h, out_w)
        return np.ascontiguousarray(array[top : top + out_h, left : left + out_w])

    def _resample(self, decoded: Iterator[av.VideoFrame], stream: Any) -> Iterator[av.VideoFrame]:
        """At each output tick ``t_k = t_0 + k / fps`` (``t_0`` the first frame's timestamp,
        the tick rounded to the stream's time base), the last frame presented at or
        before ``t_k``; ticks run up to the last frame's timestamp."""
        step = 1 / (self.options.fps * Fraction(stream.time_base))  # ticks in pts units
        current = None
        first_pts = tick = k = 0
        for frame in decoded:
            if frame.pts is None:
                raise _BadVideo(
                    f"frame {self.num_decoded - 1} has no timestamp, so it cannot be resampled "
                    f"to fps={float(self.options.fps)}"
                )
            if current is None:
                current, first_pts, tick = frame, frame.pts, frame.pts
                continue
            if frame.pts < current.pts:  # out of presentation order: keep the later one
                continue
            while tick < frame.pts:
                yield current
                k += 1
                tick = first_pts + round(k * step)
            current = frame
        if current is None:
            return
        while tick <= current.pts:
            yield current
            k += 1
            tick = first_pts + round(k * step)

    def _check_complete(self, container: Any, stream: Any) -> None:
        if self.num_decoded == 0:
            raise _BadVideo("no video frame could be decoded")
        declared_frames = stream.frames or 0
        if declared_frames and self.num_decoded < _MIN_DECODED_SHARE * declared_frames:
            raise _BadVideo(
                f"the file looks truncated: its header declares {declared_frames} frames but "
                f"only {self.num_decoded} could be decoded"
            )
        if stream.duration:
            declared = float(stream.duration * stream.time_base)
        elif container.duration and len(container.streams) == 1:
            declared = container.duration / 1_000_000  # AV_TIME_BASE
        else:
            return
        interval = 1 / self.source_fps if self.source_fps else 0.0
        covered = (self._last_time or 0.0) - (self._first_time or 0.0) + interval
        if covered < _MIN_DECODED_SHARE * declared:
            raise _BadVideo(
                f"the file looks truncated: its header declares {declared:.2f} s but the "
                f"{self.num_decoded} decodable frames cover {covered:.2f} s"
            )
