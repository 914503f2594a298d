"""Seconds to the first window of a 720x1280 root, by front end, against ``VideoWindows[0]``.

Each reading runs in a fresh Python process that has already imported hf_lvf, torch and
datasets (``datasets`` imports torch inside ``IterableDataset.__init__``: not a cost of
the first window), so every time includes opening the root, Lance and the decode threads,
as a script's first window does:

- ``VideoWindows[0]``: open the view, take window 0 (the yardstick);
- ``for sample in view``: open the view, the first sample of a pass (``iter_samples``);
- ``view.to_iterable_dataset()``: the first example of the stream;
- ``load_dataset(streaming=True)``: the call itself (its fixed cost: the builder, the data
  files, the features; printed on its own row), then the first example;
- ``DataLoader(stream, batch_size=4)``: the first batch of the streaming dataset, torch
  format, against ``VideoWindows.take(range(4))``.

The bar (issue 38): the first streamed window within 1.3x ``VideoWindows[0]`` plus the
fixed cost of ``load_dataset``. Each time is the median of ``--rounds`` processes, the
readers interleaved round by round. Compare with the code before the change by running
the same script with another checkout first on ``PYTHONPATH`` and the same ``--roots``::

    python benchmarks/bench_first_window.py --roots /tmp/first_roots          # ~3 min
    python benchmarks/bench_first_window.py --quick    # seconds, and not first-window times

``--quick`` reads a small WebP root (2 videos x 20 frames of 64x64), every reading in one
process, once: each reading but the first finds the root open, so its time is not a first
window's; what it shows is that every reading runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

PARAMS = {"window_length": 16, "hop_size": 4}
CODECS = {"WebP q90": ("webp", 90), "JPEG q90": ("jpeg", 90)}
READERS = ("take0", "for", "iterable", "load_dataset", "dataloader", "take4")

# Runs in the child: imports first (not timed), then each reader (one, but for --quick),
# timed, printed as JSON.
_CHILD = """
import json, sys, time
import datasets, torch
import hf_lvf

root, readers, params = sys.argv[1], sys.argv[2].split(","), json.loads(sys.argv[3])


def first(reader):
    times = {}
    started = time.perf_counter()
    if reader == "take0":
        hf_lvf.VideoWindows(root, **params)[0]
    elif reader == "take4":
        hf_lvf.VideoWindows(root, **params).take(range(4))
    elif reader == "for":
        next(iter(hf_lvf.VideoWindows(root, **params)))
    elif reader == "iterable":
        next(iter(hf_lvf.VideoWindows(root, **params).to_iterable_dataset()))
    else:
        ds = datasets.load_dataset("hf_lvf", data_dir=root, split="train", streaming=True, **params)
        times["call"] = time.perf_counter() - started
        started = time.perf_counter()
        if reader == "load_dataset":
            next(iter(ds))
        else:
            next(iter(torch.utils.data.DataLoader(ds.with_format("torch"), batch_size=4)))
    times["first"] = time.perf_counter() - started
    return times


if __name__ == "__main__":
    print(json.dumps({reader: first(reader) for reader in readers}))
"""


def make_roots(
    folder: Path, frames: int, size=(720, 1280), codecs=tuple(CODECS)
) -> dict[str, Path]:
    """One root per codec of ``codecs``: two textured videos of ``size`` (bench_windows' HD
    clip)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_windows import textured_frames

    from hf_lvf.write import write_frames

    roots = {}
    height, width = size
    for name in codecs:
        codec, quality = CODECS[name]
        root = folder / f"root_{codec}_{height}x{width}_{frames}"
        if not (root / "_metadata.json").exists():
            videos = (
                (f"pan_{i}", textured_frames(frames, height, width, seed=i), {"label": i})
                for i in range(2)
            )
            write_frames(root, videos, codec=codec, quality=quality, overwrite=True)
        roots[name] = root
    return roots


def run_child(root: Path, readers: list[str]) -> dict[str, dict[str, float]]:
    """Each of ``readers`` in turn, in one fresh process: ``{reader: {part: seconds}}``."""
    command = [sys.executable, "-c", textwrap.dedent(_CHILD), str(root), ",".join(readers)]
    out = subprocess.run(
        [*command, json.dumps(PARAMS)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"},
    )
    if out.returncode != 0:
        raise RuntimeError(f"reading {readers} of {root} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roots", help="folder for the roots, kept across runs (default: temp)")
    parser.add_argument("--frames", type=int, default=40, help="frames per video")
    parser.add_argument("--rounds", type=int, default=3, help="processes per reading (median)")
    parser.add_argument(
        "--quick", action="store_true", help="a small WebP root, every reading in one process"
    )
    args = parser.parse_args()
    size = (720, 1280)
    if args.quick:
        # 2 windows a video: take(range(4)) has its 4 windows.
        args.frames, args.rounds, size = 20, 1, (64, 64)
    with tempfile.TemporaryDirectory(prefix="hf_lvf_bench_first_") as tmp:
        folder = Path(args.roots or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        roots = make_roots(folder, args.frames, size, ["WebP q90"] if args.quick else CODECS)
        load_before = f"{os.getloadavg()[0]:.2f}"
        times: dict[tuple[str, str, str], list[float]] = {}
        # A fresh process per reading; --quick: one for all.
        batches = [list(READERS)] if args.quick else [[reader] for reader in READERS]
        for _ in range(args.rounds):
            for name, root in roots.items():
                for readers in batches:
                    for reader, parts in run_child(root, readers).items():
                        for part, seconds in parts.items():
                            times.setdefault((name, reader, part), []).append(seconds)
    import hf_lvf

    median = {key: statistics.median(values) for key, values in times.items()}
    processes = (
        "--quick: every reading once, in one process"
        if args.quick
        else f"median of {args.rounds} fresh processes"
    )
    print(
        f"\nfirst window of a {size[0]}x{size[1]} root (2 videos x {args.frames} frames), "
        f"window_length={PARAMS['window_length']}, hop_size={PARAMS['hop_size']}; "
        f"{processes}; hf_lvf from {Path(hf_lvf.__file__).parent}"
    )
    print(f"load average before: {load_before}, after: {os.getloadavg()[0]:.2f}")
    print("\n| root | reading | seconds | ratio |")
    print("|---|---|---|---|")
    for name in roots:
        take0 = median[name, "take0", "first"]
        call = median[name, "load_dataset", "call"]
        rows = [
            ("VideoWindows[0]", take0, "1.00x VideoWindows[0]"),
            ("first sample of `for sample in view`", median[name, "for", "first"], None),
            ("first example of to_iterable_dataset()", median[name, "iterable", "first"], None),
            ("load_dataset(streaming=True) call: its fixed cost", call, ""),
            ("first example after the call", median[name, "load_dataset", "first"], None),
        ]
        for label, seconds, ratio in rows:
            ratio = f"{seconds / take0:.2f}x VideoWindows[0]" if ratio is None else ratio
            print(f"| {name} | {label} | {seconds:.3f} | {ratio} |")
        streamed = call + median[name, "load_dataset", "first"]
        bound = 1.3 * take0 + call
        print(
            f"| {name} | load_dataset call + first example (bar: <= 1.3 x VideoWindows[0] "
            f"+ call = {bound:.3f}) | {streamed:.3f} | {streamed / bound:.2f}x the bar |"
        )
        take4 = median[name, "take4", "first"]
        print(f"| {name} | VideoWindows.take(range(4)) | {take4:.3f} | 1.00x take(range(4)) |")
        first_batch = median[name, "dataloader", "first"]
        print(
            f"| {name} | first batch of DataLoader(stream, batch_size=4), after the call | "
            f"{first_batch:.3f} | {first_batch / take4:.2f}x take(range(4)) |"
        )


if __name__ == "__main__":
    main()
