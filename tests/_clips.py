"""Roots and slow, literal oracles for the tests of clips per video, short videos and fps=.

The oracles loop over videos and frames in Python and use :mod:`fractions` and
``np.linspace`` directly: they share no code with hf_lvf's vectorised plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from _roots import make_frames

from hf_lvf.write import write_frames

# Videos of several lengths (frames), some shorter than a window of 8, at 30, 25 and 29.97 fps.
LENGTHS = (40, 5, 23, 12, 7, 61, 1, 30)
RATES = (30, 25, 29.97, 30, 25, 29.97, 30, 25)


def clips_root(path: Path, lengths: Sequence[int] = LENGTHS, rates: Sequence[Any] = RATES) -> Path:
    """A root written by ``write_frames``: video ``i`` has ``lengths[i]`` frames of 16x24 and
    ``metadata = {"label": i % 3, "fps": rates[i]}`` (no ``fps`` where the rate is ``None``)."""
    videos = []
    for i, (n, rate) in enumerate(zip(lengths, rates, strict=True)):
        metadata = {"label": i % 3} | ({"fps": rate} if rate is not None else {})
        videos.append((f"clip_{i}", iter(make_frames(n, 16, 24, seed=i)), metadata))
    return write_frames(path, iter(videos))


def oracle_virtual_windows(
    lengths: Sequence[int],
    rates: Sequence[float] | None,
    *,
    fps: float | None,
    window_length: int,
    frame_skip: int = 0,
    hop_size: int = 1,
    pad: bool = False,
) -> list[dict[str, Any]]:
    """Every window, by the issue's words: ``{"video_idx", "frame_indices", "frame_is_pad",
    "timestamps"}`` (the last two lists; ``timestamps`` ``None`` without ``fps``)."""
    stride = frame_skip + 1
    span = (window_length - 1) * stride + 1
    out = []
    for v, t in enumerate(lengths):
        if fps is None:
            virtual = t
        else:
            ratio = Fraction(repr(float(fps))) / Fraction(repr(float(rates[v])))  # F / fps_v
            virtual = math.ceil(t * ratio)
        if virtual >= span:
            starts = range(0, virtual - span + 1, hop_size)
        elif pad and virtual >= 1:
            starts = [0]
        else:
            starts = []
        for start in starts:
            frames = [start + j * stride for j in range(window_length)]
            is_pad = [m > virtual - 1 for m in frames]
            frames = [min(m, virtual - 1) for m in frames]
            if fps is None:
                source = frames
                stamps = None
            else:
                rate = Fraction(repr(float(rates[v])))
                target = Fraction(repr(float(fps)))
                source = [math.floor(m * rate / target) for m in frames]
                stamps = [m / fps for m in frames]
            out.append(
                {
                    "video_idx": v,
                    "frame_indices": source,
                    "frame_is_pad": is_pad,
                    "timestamps": stamps,
                }
            )
    return out


def oracle_uniform(windows_per_video: Sequence[int], k: int) -> list[int]:
    """torchvision's ``UniformClipSampler`` rule, with ``np.linspace``: window indices."""
    out, first = [], 0
    for n in windows_per_video:
        if n > 0:
            out += [first + int(j) for j in np.floor(np.linspace(0, n - 1, k))]
        first += n
    return out


def per_video_counts(indices: Sequence[int], first_window: np.ndarray) -> list[int]:
    """How many of ``indices`` fall in each video (``first_window``: the plan's array)."""
    videos = np.searchsorted(first_window, np.asarray(indices, np.int64), side="right") - 1
    return np.bincount(videos, minlength=len(first_window) - 1).tolist()
