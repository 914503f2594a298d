"""Synthetic videos for the demo, the tests and the benchmarks.

The frames are smooth gradients with a moving square, so they compress like
real footage rather than like noise, and every frame differs from the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np


def synthetic_frames(
    num_frames: int, height: int, width: int, *, seed: int = 0
) -> Iterator[np.ndarray]:
    """Yield ``num_frames`` deterministic ``(height, width, 3)`` uint8 RGB frames."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=3)
    ys = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    xs = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    side = max(2, min(height, width) // 4)
    for t in range(num_frames):
        frame = np.empty((height, width, 3), np.uint8)
        frame[..., 0] = (ys + base[0] + 3 * t) % 256
        frame[..., 1] = (xs + base[1] + 5 * t) % 256
        frame[..., 2] = ((ys + xs) / 2 + base[2]) % 256
        y0 = (7 * t) % max(1, height - side)
        x0 = (11 * t) % max(1, width - side)
        frame[y0 : y0 + side, x0 : x0 + side] = (255 - base).astype(np.uint8)
        yield frame


def write_synthetic_root(
    root: str | Path,
    *,
    num_videos: int = 4,
    num_frames: int | list[int] = 48,
    frame_size: tuple[int, int] = (64, 64),
    num_labels: int = 3,
    quality: int = 65,
    overwrite: bool = False,
) -> Path:
    """Write a root of ``num_videos`` synthetic clips labelled ``i % num_labels``."""
    from .writer import write_frames

    lengths = [num_frames] * num_videos if isinstance(num_frames, int) else list(num_frames)
    height, width = frame_size
    videos = (
        (
            f"clip_{i:03d}",
            synthetic_frames(lengths[i], height, width, seed=i),
            {"label": i % num_labels},
        )
        for i in range(len(lengths))
    )
    return write_frames(root, videos, quality=quality, overwrite=overwrite)
