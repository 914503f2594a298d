"""Frame sizes: how frames are brought to one size, and how big a read may get.

Pure arithmetic, no I/O, shared by the reader (resize on decode) and the
converter (resize on write), so both mean the same by ``crop="center"``.

Memory is bounded before it is allocated: a root's ``_metadata.json`` declares
each video's ``H`` and ``W``, and a batch's pixels are allocated from those
numbers, so a lying or mistaken root (or a mistyped ``frame_size``) must be
refused from the numbers, never found out by a ``MemoryError`` or an OOM kill.
Two limits do that, in the role ``PIL.Image.MAX_IMAGE_PIXELS`` plays for
Pillow: pixels per frame, and bytes per batch of decoded windows.
"""

from __future__ import annotations

import functools
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ParameterError
from .segment_plan import check_frame_size

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

    Raises:
        ValueError: a value is out of range, ``crop="center"`` without ``frame_size``, or
            ``frame_size`` above ``max_frame_pixels``.
    """

    frame_size: tuple[int, int] | None = None
    crop: Crop = "none"
    max_frame_pixels: int = DEFAULT_MAX_FRAME_PIXELS
    max_batch_bytes: int | None = None
    decode_scaled: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.decode_scaled, bool):
            raise ParameterError(f"decode_scaled must be True or False, got {self.decode_scaled!r}")
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


__all__ = [
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
]
