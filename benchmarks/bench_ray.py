"""Windows/s of a root read as a Ray Dataset against ``VideoWindows.iter_samples`` on the same
cores, and against the reference reader's algorithm, in one run.

- **Ray**: ``hf_lvf.read_windows`` on a local Ray of ``--cpus`` CPUs (default 2), every
  window handed to this process as numpy batches (``iter_batches``): the read tasks' blocks
  as they come (``batch_size=None``), or re-cut into batches of 16 (a batch across two blocks
  is a copy), with the read tasks' default split (ranges of windows cut at video boundaries).
  A pass includes Ray Data's start of the read, about a second before its second task runs.
- **iter_samples**: the core view's sequential pass in this process, its decode threads on
  the same cores (``min(4, cores)``).
- **limit**: the least any engine that hands windows to another process through shared
  memory does, in this process: the ``iter_samples`` pass, each window then copied into a
  block and once more (Ray's object store), both into memory already paged in.
- **reference**: the reference reader's algorithm (``reference/seed_backend.py``): per window,
  one Lance ``take`` of its rows, then one decode per frame, in one thread; it reads every
  4th window of a pass (it spends the same time on each).

The readers take turns pass by pass, so that load from other processes on a shared machine
hits all of them alike. Before the timing each reads once untimed (Ray's workers started and
their Lance handles opened, as in every epoch after the first).

    python benchmarks/bench_ray.py            # 12 videos of 600 frames, 3 rounds
    python benchmarks/bench_ray.py --quick    # 6 videos of 400 frames, 2 rounds
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import imagecodecs
import lance
import numpy as np

from hf_lvf import VideoWindows, read_windows
from hf_lvf.write.synthetic import write_synthetic_root

WINDOW_LENGTH, HOP, SIZE = 16, 4, (224, 224)


def reference_read(windows: VideoWindows, dataset: lance.LanceDataset, index: int) -> np.ndarray:
    """The reference reader's algorithm: one Lance take per window, one decode per frame."""
    info = windows.segment_info(index)
    start_row = int(windows.layout.start_rows[info["video_idx"]])
    rows = [start_row + f for f in info["frame_indices"].tolist()]
    blobs = dataset.take(rows, columns=["bytes"]).column("bytes").to_pylist()
    out = np.empty((len(blobs), *SIZE, 3), np.uint8)
    for j, blob in enumerate(blobs):
        imagecodecs.webp_decode(blob, out=out[j])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller root, fewer rounds")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray")
    args = parser.parse_args()
    import ray

    videos, frames, rounds = (6, 400, 2) if args.quick else (12, 600, 3)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as tmp:
        root = write_synthetic_root(
            Path(tmp) / "root", num_videos=videos, num_frames=frames, frame_size=SIZE
        )
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        try:
            windows = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=HOP)
            dataset = lance.dataset(str(root))
            total = len(windows)

            def by_ray(batch_size: int | None) -> int:
                ds = read_windows(root, window_length=WINDOW_LENGTH, hop_size=HOP)
                batches = ds.iter_batches(batch_size=batch_size)
                return sum(len(b["sample_idx"]) for b in batches)

            def by_iter_samples() -> int:
                return sum(1 for _ in windows.iter_samples())

            rows = 56
            blocks = np.empty((2, rows, WINDOW_LENGTH, *SIZE, 3), np.uint8)

            def by_limit() -> int:
                n = 0
                for n, sample in enumerate(windows.iter_samples(), 1):
                    row = n % rows
                    blocks[0, row] = sample["video"]
                    blocks[1, row] = blocks[0, row]
                return n

            def by_reference() -> int:
                for i in range(0, total, 4):
                    reference_read(windows, dataset, i)
                return len(range(0, total, 4))

            readers = {
                "Ray, its blocks": lambda: by_ray(None),
                "Ray, batches of 16": lambda: by_ray(16),
                "iter_samples": by_iter_samples,
                "limit": by_limit,
                "reference": by_reference,
            }
            for read in readers.values():
                read()  # untimed: workers up, Lance open, memory touched
            spent = dict.fromkeys(readers, 0.0)
            read_windows_count = dict.fromkeys(readers, 0)
            for _ in range(rounds):
                for name, read in readers.items():
                    started = time.perf_counter()
                    read_windows_count[name] += read()
                    spent[name] += time.perf_counter() - started
        finally:
            ray.shutdown()
    rates = {name: read_windows_count[name] / spent[name] for name in readers}
    base = rates["iter_samples"]
    print(
        f"\n{videos} videos x {frames} frames of {SIZE[0]}x{SIZE[1]}, window {WINDOW_LENGTH}, "
        f"hop {HOP}: {total} windows; Ray on {args.cpus} CPUs, {rounds} rounds\n"
    )
    print(
        "| reader | windows read | seconds | windows/s | vs iter_samples | vs limit "
        "| vs reference |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in readers:
        print(
            f"| {name} | {read_windows_count[name]} | {spent[name]:.2f} | {rates[name]:.1f} | "
            f"{rates[name] / base:.2f}x | {rates[name] / rates['limit']:.2f}x | "
            f"{rates[name] / rates['reference']:.2f}x |"
        )


if __name__ == "__main__":
    main()
