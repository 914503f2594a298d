"""``hf-lvf demo``: write a small synthetic root, read its windows back through the core and
the ``datasets`` front ends, and say how it went (rows of a table; the CLI prints them)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..hf import builder  # noqa: F401  (registers load_dataset("hf_lvf"))
from ..read.windows import VideoWindows
from ..write.synthetic import write_synthetic_root


def run_demo(
    root: str | Path | None,
    *,
    videos: int = 4,
    frames: int = 48,
    frame_size: tuple[int, int] = (64, 64),
    window_length: int = 16,
    hop_size: int = 4,
) -> list[tuple[str, str]]:
    """Write the root (in a temporary folder unless ``root`` is given), read it back, and
    return ``(what, value)`` rows: counts, write time, windows per second, and whether the
    ``datasets`` front ends give the core's windows."""
    with tempfile.TemporaryDirectory(prefix="hf_lvf_demo_") as tmp:
        root = Path(root) if root else Path(tmp) / "demo_root"
        started = time.perf_counter()
        write_synthetic_root(
            root, num_videos=videos, num_frames=frames, frame_size=frame_size, overwrite=True
        )
        write_s = time.perf_counter() - started
        windows = VideoWindows(root, window_length=window_length, hop_size=hop_size)
        started = time.perf_counter()
        count, sample = 0, None
        for count, sample in enumerate(windows, 1):  # noqa: B007 - the last one is shown
            pass
        read_s = time.perf_counter() - started
        rows = [
            ("root", str(root)),
            ("videos", str(len(windows.layout))),
            ("frames", str(int(windows.layout.num_frames.sum()))),
            ("window_length / hop_size", f"{window_length} / {hop_size}"),
            ("windows", str(len(windows))),
            ("write", f"{write_s:.2f} s"),
            ("windows/s (sequential)", f"{count / read_s:.1f}"),
            ("sample video shape", f"{tuple(sample['video'].shape)} {sample['video'].dtype}"),
        ]
        rows += _front_ends(root, {"window_length": window_length, "hop_size": hop_size})
    return rows


def _front_ends(root: Path, params: dict[str, int]) -> list[tuple[str, str]]:
    """More rows, from the front ends built on the core."""
    import datasets
    import numpy as np

    rows = []
    with tempfile.TemporaryDirectory(prefix="hf_lvf_demo_cache_") as cache_dir:
        for streaming in (True, False):
            started = time.perf_counter()
            ds = datasets.load_dataset(
                "hf_lvf",
                data_dir=str(root),
                split="train",
                streaming=streaming,
                cache_dir=cache_dir,
                **params,
            )
            if not streaming:
                ds = ds.with_format("numpy")
            load_s = time.perf_counter() - started
            core = VideoWindows(root, **params).iter_samples()
            same, count, read_s = True, 0, 0.0
            started = time.perf_counter()
            for row in ds if streaming else (ds[i] for i in range(len(ds))):
                read_s += time.perf_counter() - started
                want = next(core)
                same &= bool(np.array_equal(row["video"], want["video"]))
                same &= int(row["sample_idx"]) == want["sample_idx"]
                count += 1
                started = time.perf_counter()
            same &= next(core, None) is None
            mode = "streaming" if streaming else "map-style, numpy"
            rows.append(
                (
                    f"load_dataset ({mode}) windows/s",
                    f"{count / read_s:.1f} (load {load_s:.2f} s; windows equal the core's: "
                    f"{'yes' if same else 'NO'})",
                )
            )
    return rows
