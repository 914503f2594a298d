"""Roots and comparisons for the tests of the datasets front ends (builder, iterable, loaders).

The expected windows always come from the core view (:class:`hf_lvf.VideoWindows`),
which the core tests check against the reference oracle; a few windows are also
checked against the oracle here, so the chain holds end to end.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _roots import assert_same_value, hf_root, make_frames

from hf_lvf import VideoWindows
from hf_lvf.write import write_frames

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120  # seconds; only there so that nothing can hang

# Window parameters the split tests use: a stride, a hop and a minimum length all in play.
PARAMS = {"window_length": 3, "frame_skip": 1, "hop_size": 2, "min_video_frames": 6}

# (lengths per video) of each split; video 1 of train is shorter than min_video_frames.
SPLITS = {"train": (12, 3, 20, 9), "validation": (7, 16), "test": (11, 6, 8)}


def split_dir(parent: Path) -> Path:
    """``parent/{train,validation,test}``: three roots, labels per video, 32x48 frames."""
    for offset, (split, lengths) in enumerate(SPLITS.items()):
        hf_root(
            parent / split,
            lengths,
            metadata=lambda i, o=offset: {"label": (i + o) % 3, "source": f"cam{i}"},
        )
    return parent


def mixed_size_root(path: Path) -> Path:
    """Videos of three sizes (so a dataset over it needs ``frame_size``), labels as floats."""
    sizes = [(32, 48), (24, 24), (40, 30)]
    videos = (
        (f"clip_{i}", iter(make_frames(10 + i, h, w, seed=i)), {"score": i / 2})
        for i, (h, w) in enumerate(sizes)
    )
    return write_frames(path, videos)


def long_videos_root(path: Path, *, num_frames: int = 220) -> Path:
    """Two long, tiny videos: many windows from few videos."""
    videos = (
        (f"long_{i}", iter(make_frames(num_frames, 8, 8, seed=i)), {"label": i}) for i in range(2)
    )
    return write_frames(path, videos)


def core_samples(root: Path, **params: Any) -> list[dict[str, Any]]:
    return list(VideoWindows(root, **params))


def assert_rows_equal(
    rows: Iterable[dict[str, Any]], want: Sequence[dict[str, Any]], *, extra: dict | None = None
) -> None:
    """``rows`` equal the core's samples window by window: its keys in its order, same values.

    ``extra`` maps keys a row may have beyond the core's (fields of other roots) to the
    value they must hold.
    """
    rows = list(rows)
    assert len(rows) == len(want)
    for got, sample in zip(rows, want, strict=True):
        assert [k for k in got if k in sample] == list(sample)
        for name, value in sample.items():
            if name == "video":
                video = np.asarray(got[name])
                assert video.dtype == np.uint8
                assert video.shape == value.shape
                np.testing.assert_array_equal(video, value)
            else:
                assert_same_value(got[name], value, name)
        for name in set(got) - set(sample):
            expected = (extra or {})[name]
            if isinstance(expected, float) and math.isnan(expected):
                assert math.isnan(got[name]), name
            else:
                assert got[name] == expected, name


def crc(video: Any) -> int:
    return zlib.crc32(np.ascontiguousarray(np.asarray(video, dtype=np.uint8)).tobytes())


def core_crcs(root: Path, **params: Any) -> dict[int, int]:
    """``sample_idx -> crc32 of its pixels`` for every window of the core view."""
    return {s["sample_idx"]: crc(s["video"]) for s in VideoWindows(root, **params)}


def run_script(code: str, **env: str) -> Any:
    """Run ``code`` in a fresh interpreter (never a fork of this process) and parse its JSON.

    The script prints one JSON document as its last line.
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=PROJECT_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
