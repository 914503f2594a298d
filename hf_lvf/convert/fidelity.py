"""PSNR of the stored frames against the decoded source frames, measured while converting.

Each video's frames are measured at evenly spaced frame numbers ``0, s, 2s, ...``: every
frame of a video of at most 16 frames, else ``s = T // 8`` for the ``T`` frames its header
announces, so 8 to 15 frames from its first to within ``s`` of its last. Where the header
announces no length (or a wrong one), the spacing starts at 1 and doubles each time more
than 16 frames are kept, dropping those off it: 9 to 16 frames in the end, for
~16 + 8 log2(T / 16) decodes. Each costs a decode of the stored frame and its squared
error: within the noise of a conversion's time (docs/benchmarks.md).

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
    """Wraps a frame encoder: encodes every frame, and measures the chosen ones
    (:meth:`encode`; or :meth:`measure` each frame with a blob encoded elsewhere)."""

    def __init__(
        self, encode: Callable[[np.ndarray], bytes], expected_frames: Callable[[], int] = int
    ):
        self._encode = encode
        self._expected_frames = expected_frames  # asked at the first frame: 0 is unknown
        self._frame_idx = 0
        self._spacing = 1
        self._squared_errors: dict[int, float] = {}  # frame_idx -> mean squared error

    def encode(self, frame: np.ndarray) -> bytes:
        blob = self._encode(frame)
        self.measure(frame, blob)
        return blob

    def measure(self, frame: np.ndarray, blob: bytes) -> None:
        """Take the next frame of the video and its encoding ``blob``, in frame order (the
        encodes themselves may run on other threads; this keeps the count)."""
        frame_idx, self._frame_idx = self._frame_idx, self._frame_idx + 1
        if frame_idx == 0:
            expected = self._expected_frames()
            self._spacing = expected // _MIN_FRAMES if expected > 2 * _MIN_FRAMES else 1
        if frame_idx % self._spacing == 0:
            difference = (decode_frame(blob).astype(np.int16) - frame).astype(np.float32).ravel()
            self._squared_errors[frame_idx] = float(difference @ difference) / difference.size
            if len(self._squared_errors) > 2 * _MIN_FRAMES:
                self._spacing *= 2
                self._squared_errors = {
                    f: e for f, e in self._squared_errors.items() if f % self._spacing == 0
                }

    @property
    def frames_measured(self) -> int:
        return len(self._squared_errors)

    @property
    def psnr(self) -> float | None:
        """The video's PSNR in dB, ``None`` before a frame is measured."""
        if not self._squared_errors:
            return None
        return round(psnr_from_mse(float(np.mean(list(self._squared_errors.values())))), 2)
