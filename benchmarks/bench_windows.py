"""Windows/s and peak memory of hf_lvf's read path against a naive baseline.

The baseline does what the reference reader does: for every window, one Lance
``take`` and one decode per frame, nothing shared between windows. Both read
the same generated roots in the same run, so the ratios hold on a noisy
machine even where the absolute numbers do not.

    python benchmarks/bench_windows.py            # full table (~3 min on 2 cores)
    python benchmarks/bench_windows.py --quick    # 224x224 only, shorter runs

A second table reads the same 224x224 root (window_length=16, hop 4) through the
``datasets`` front ends, as ratios to the core view's sequential pass: each
front end reads every window once per round, rounds alternate between them, and
the ratio is the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import lance
import numpy as np
from PIL import Image

from hf_lvf import VideoWindows
from hf_lvf.synthetic import write_synthetic_root

WINDOW_LENGTH = 16
BATCH = 16  # windows per DataLoader-style batch in random order


class NaiveReader:
    """One Lance take and one Pillow decode per frame of every window."""

    def __init__(self, windows: VideoWindows):
        self._w = windows
        self._ds = lance.dataset(windows.uri)

    def read(self, index: int) -> np.ndarray:
        info = self._w.segment_info(index)
        start_row = self._w.videos[info["video_idx"]].start_row
        frames = []
        for frame_idx in info["frame_indices"]:
            blob = self._ds.take([start_row + frame_idx], columns=["bytes"])["bytes"][0].as_py()
            frames.append(np.asarray(Image.open(io.BytesIO(blob)).convert("RGB")))
        return np.stack(frames)


def _measure(read_all: Callable[[], Iterator[int]], budget_s: float) -> tuple[float, float, int]:
    """(windows/s, peak traced MB, windows) of reading until done or out of time."""
    tracemalloc.start()
    started = time.perf_counter()
    count = 0
    for n in read_all():
        count += n
        if time.perf_counter() - started > budget_s:
            break
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return count / elapsed, peak, count


def _orders(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    return {"random": np.random.default_rng(seed).permutation(n), "sequential": np.arange(n)}


def bench_size(tmp: Path, height: int, width: int, num_frames: int, budget_s: float) -> list[dict]:
    root = write_synthetic_root(
        tmp / f"root_{height}x{width}",
        num_videos=4,
        num_frames=num_frames,
        frame_size=(height, width),
        overwrite=True,
    )
    rows = []
    for hop in (1, 4, 16):
        w = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=hop)
        naive = NaiveReader(w)
        for order, idx in _orders(len(w)).items():

            def fast(idx=idx, order=order, hop=hop) -> Iterator[int]:
                fresh = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=hop)
                if order == "sequential":
                    for _ in fresh.iter_samples(idx):
                        yield 1
                else:
                    for lo in range(0, len(idx), BATCH):
                        yield len(fresh.take(idx[lo : lo + BATCH]))

            def slow(idx=idx, naive=naive) -> Iterator[int]:
                for i in idx:
                    naive.read(int(i))
                    yield 1

            fast_rate, fast_mb, fast_n = _measure(fast, budget_s)
            slow_rate, slow_mb, _ = _measure(slow, budget_s)
            rows.append(
                dict(
                    size=f"{height}x{width}",
                    hop=hop,
                    order=order,
                    windows=fast_n,
                    hf_lvf=fast_rate,
                    naive=slow_rate,
                    ratio=fast_rate / slow_rate,
                    peak_mb=fast_mb,
                    naive_peak_mb=slow_mb,
                )
            )
    return rows


def memory_flatness(tmp: Path) -> list[tuple[int, float]]:
    """Peak traced memory of a sequential pass over the first N windows, for growing N."""
    root = tmp / "root_224x224"
    out = []
    for n in (50, 200, 800):
        w = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=1)
        n = min(n, len(w))
        tracemalloc.start()
        for _ in w.iter_samples(np.arange(n)):
            pass
        out.append((n, tracemalloc.get_traced_memory()[1] / 2**20))
        tracemalloc.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="224x224 only, 1 s per cell")
    args = parser.parse_args()
    budget = 1.0 if args.quick else 2.5
    sizes = [(224, 224, 300)] if args.quick else [(224, 224, 300), (480, 640, 120)]
    with tempfile.TemporaryDirectory(prefix="hf_lvf_bench_") as tmp:
        rows = []
        for height, width, frames in sizes:
            rows += bench_size(Path(tmp), height, width, frames, budget)
        print(f"window_length={WINDOW_LENGTH}, random order read in batches of {BATCH}\n")
        header = (
            "size",
            "hop",
            "order",
            "hf_lvf win/s",
            "naive win/s",
            "ratio",
            "peak MB",
            "naive peak MB",
        )
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print(
                f"| {r['size']} | {r['hop']} | {r['order']} | {r['hf_lvf']:.1f} | "
                f"{r['naive']:.1f} | {r['ratio']:.1f}x | {r['peak_mb']:.1f} | "
                f"{r['naive_peak_mb']:.1f} |"
            )
        print("\npeak traced memory of a sequential pass (224x224, hop 1) by windows read:")
        for n, mb in memory_flatness(Path(tmp)):
            print(f"  {n:5d} windows: {mb:.1f} MB")
        print_front_ends(bench_front_ends(Path(tmp), rounds=3 if args.quick else 5))


# --- the datasets front ends (load_dataset both modes, to_iterable_dataset) ---------


def bench_front_ends(tmp: Path, *, rounds: int, hop: int = 4) -> list[dict]:
    """Windows/s of each front end over the 224x224 root, interleaved round by round."""
    import datasets

    root = tmp / "root_224x224"
    params = {"window_length": WINDOW_LENGTH, "hop_size": hop}
    mapped = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", cache_dir=str(tmp / "hf_cache"), **params
    ).with_format("numpy")

    def core() -> Iterator[object]:
        return VideoWindows(root, **params).iter_samples()

    def streaming() -> Iterator[object]:
        return iter(
            datasets.load_dataset(
                "hf_lvf", data_dir=str(root), split="train", streaming=True, **params
            )
        )

    def map_style() -> Iterator[object]:
        return (mapped[i] for i in range(len(mapped)))

    def wrapper() -> Iterator[object]:
        return iter(VideoWindows(root, **params).to_iterable_dataset())

    front_ends = {
        "core VideoWindows.iter_samples": core,
        "load_dataset(streaming=True)": streaming,
        'load_dataset() + with_format("numpy"), rows in order': map_style,
        "VideoWindows.to_iterable_dataset()": wrapper,
    }
    rates: dict[str, list[float]] = {name: [] for name in front_ends}
    for _ in range(rounds):
        for name, make in front_ends.items():
            iterator = make()  # set up outside the timing; the read is what is measured
            started = time.perf_counter()
            count = sum(1 for _ in iterator)
            rates[name].append(count / (time.perf_counter() - started))
    base = rates["core VideoWindows.iter_samples"]
    return [
        dict(
            name=name,
            windows=len(mapped),
            rate=float(np.median(r)),
            ratio=float(np.median([x / b for x, b in zip(r, base, strict=True)])),
            spread=(
                min(x / b for x, b in zip(r, base, strict=True)),
                max(x / b for x, b in zip(r, base, strict=True)),
            ),
        )
        for name, r in rates.items()
    ]


def print_front_ends(rows: list[dict]) -> None:
    print(
        f"\ndatasets front ends, 224x224, window_length={WINDOW_LENGTH}, hop 4, "
        f"{rows[0]['windows']} windows per round, sequential order:\n"
    )
    print("| front end | win/s (median) | ratio to core (median, min-max) |")
    print("|---|---|---|")
    for r in rows:
        low, high = r["spread"]
        print(f"| {r['name']} | {r['rate']:.1f} | {r['ratio']:.2f}x ({low:.2f}-{high:.2f}) |")


if __name__ == "__main__":
    main()
