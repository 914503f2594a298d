"""PSNR of the stored frames against the decoded source frames, measured while converting.

Each video's frames are measured at evenly spaced frame numbers without knowing its
length in advance: every frame at first, then every 2nd, every 4th, ... (each time more
than ``2 * _MIN_FRAMES`` are kept, those off the doubled spacing are dropped). So a video
of at most 16 frames has every frame measured, and a longer one 9 to 16 evenly spaced
frames from its first to within one spacing of its last, for ~16 + 8 log2(T / 16) decodes
in all: a few percent of a conversion's time (docs/benchmarks.md).

A video's PSNR comes from the mean squared error over its measured frames (frames that
are nearly exact do not outweigh the rest), capped at :data:`PSNR_CAP`, the value of
identical frames (lossless roots): JSON has no infinity.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..decode import decode_frame

PSNR_CAP = 100.0
"""The PSNR recorded for identical frames (lossless roots): 100 dB. A single pixel one
level off in a 224x224 frame is 95 dB."""
_MIN_FRAMES = 8


def psnr_from_mse(mse: float) -> float:
    if mse <= 0:
        return PSNR_CAP
    return min(PSNR_CAP, 10 * math.log10(255.0**2 / mse))


class FidelityMeter:
    """Wraps a frame encoder: encodes every frame, and measures the chosen ones."""

    def __init__(self, encode: Callable[[np.ndarray], bytes]):
        self._encode = encode
        self._frame_idx = 0
        self._spacing = 1
        self._squared_errors: dict[int, float] = {}  # frame_idx -> mean squared error

    def encode(self, frame: np.ndarray) -> bytes:
        blob = self._encode(frame)
        frame_idx, self._frame_idx = self._frame_idx, self._frame_idx + 1
        if frame_idx % self._spacing == 0:
            stored = decode_frame(blob).astype(np.int32)
            self._squared_errors[frame_idx] = float(np.mean((stored - frame) ** 2))
            if len(self._squared_errors) > 2 * _MIN_FRAMES:
                self._spacing *= 2
                self._squared_errors = {
                    f: e for f, e in self._squared_errors.items() if f % self._spacing == 0
                }
        return blob

    @property
    def frames_measured(self) -> int:
        return len(self._squared_errors)

    @property
    def psnr(self) -> float | None:
        """The video's PSNR in dB, ``None`` before a frame is measured."""
        if not self._squared_errors:
            return None
        return round(psnr_from_mse(float(np.mean(list(self._squared_errors.values())))), 2)
