"""What each ``datasets`` format costs a streamed window, against plain rows.

On one generated root of 224x224 frames, a streaming ``load_dataset("hf_lvf", ...)`` of
16-frame windows (hop 4, 52 windows) is iterated in each format ``datasets`` offers (plain rows,
``numpy``, ``torch``, ``arrow``, ``pandas``, ``polars`` where installed); each row of the
table is the time per window of a whole pass (reading and decoding included), the dtype
the video arrives in, and the ratio to plain rows; the last row is ``arrow`` through
``datasets``' own conversion of examples to Arrow (nested lists), which hf_lvf replaces.
The bound for the table formats is the larger of 5x the plain row time and 10 ms a window.
Formats are measured in turns, ``--rounds`` times each, and the median is printed, so
that the ratios hold on a noisy machine.

A second table times a map-style ``.map`` over every window that returns the video
(default format, and ``with_format("numpy")``), against maps that return only new fields
(one that reads the video, one that does not), and one that drops it (``remove_columns``).

    python benchmarks/bench_formats.py              # ~1 min on 2 cores
    python benchmarks/bench_formats.py --quick      # seconds: 8 windows of 16x64x64, 1 round
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import tempfile
import time
from pathlib import Path

import datasets
import torch  # noqa: F401  (datasets imports it in IterableDataset.__init__: time it warm)

import hf_lvf  # registers the builder
from hf_lvf.write.synthetic import write_synthetic_root

PARAMS = {"window_length": 16, "hop_size": 4}
FORMATS = [None, "numpy", "torch", "arrow", "pandas"] + (
    ["polars"] if importlib.util.find_spec("polars") else []
)
TABLE_FORMATS = {"arrow", "pandas", "polars"}


def _video_dtype(row: object) -> str:
    if isinstance(row, dict):
        return str(getattr(row["video"], "dtype", type(row["video"]).__name__))
    column = row["video"]  # a one-row table (arrow), series (pandas, polars)
    kind = getattr(column, "type", None)
    if kind is not None:  # arrow: the Array4D extension type
        return f"{type(kind).__name__.removesuffix('ExtensionType')} {kind.value_type}"
    if hasattr(column, "iloc"):  # pandas: an object column of numpy arrays
        return f"ndarray {column.iloc[0].dtype}"
    leaf = str(column.dtype).rsplit("List(", 1)[-1].split(")")[0]  # polars: nested lists
    return f"extension of lists, {leaf}"


def bench_stream(root: Path, *, rounds: int) -> list[dict]:
    stream = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **PARAMS
    )
    next(iter(stream))  # opens the root and plans once, for all formats
    times: dict[str | None, list[float]] = {fmt: [] for fmt in FORMATS}
    dtypes: dict[str | None, str] = {}
    for _ in range(rounds):
        for fmt in FORMATS:
            ds = stream.with_format(fmt) if fmt else stream
            started = time.perf_counter()
            n = 0
            for (
                row
            ) in ds:  # a whole pass: reading and decoding included, as a training loop sees it
                dtypes[fmt] = dtypes.get(fmt) or _video_dtype(row)
                n += 1
            times[fmt].append((time.perf_counter() - started) / n)
    plain = statistics.median(times[None])
    rows = [_datasets_own(stream, plain)]
    for fmt in FORMATS:
        per_window = statistics.median(times[fmt])
        bound = max(5 * plain, 0.010) if fmt in TABLE_FORMATS else None
        rows.append(
            {"format": fmt or "(plain rows)", "ms": per_window * 1e3, "ratio": per_window / plain,
             "dtype": dtypes[fmt], "bound_ms": bound and bound * 1e3}
        )  # fmt: skip
    return rows


def _datasets_own(stream: datasets.IterableDataset, plain: float, n: int = 3) -> dict:
    """The arrow format through datasets' own conversion (nested lists), on ``n`` windows."""
    from datasets import iterable_dataset

    wrapped = iterable_dataset._convert_to_arrow
    iterable_dataset._convert_to_arrow = wrapped.__wrapped__
    try:
        started = time.perf_counter()
        rows = list(stream.take(n).with_format("arrow"))
        per_window = (time.perf_counter() - started) / n
    finally:
        iterable_dataset._convert_to_arrow = wrapped
    name, dtype = "arrow, datasets' own conversion", _video_dtype(rows[0])
    return {"format": name, "ms": per_window * 1e3, "ratio": per_window / plain, "dtype": dtype,
            "bound_ms": None}  # fmt: skip


def bench_map(root: Path, tmp: Path, *, rounds: int) -> list[dict]:
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", cache_dir=str(tmp / "cache"), **PARAMS
    )

    def returns_video(row: dict) -> dict:
        return {"video": row["video"], "y": row["label"] + 1}

    def new_field(row: dict) -> dict:  # the video is not returned: datasets keeps it as it is
        return {"y": row["label"] + 1}

    def reads_video(row: dict) -> dict:
        return {"mean": float(row["video"].mean())}

    fresh = {"load_from_cache_file": False}
    cases = {
        "map(returns video)": lambda: ds.map(returns_video, **fresh),
        "with_format('numpy').map(returns video)": lambda: ds.with_format("numpy").map(
            returns_video, **fresh
        ),
        "map(returns only new fields: reads video)": lambda: ds.map(reads_video, **fresh),
        "map(returns only new fields)": lambda: ds.map(new_field, **fresh),
        "map(remove_columns=['video'])": lambda: ds.map(
            new_field, remove_columns=["video"], **fresh
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, run in cases.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    base = statistics.median(times["with_format('numpy').map(returns video)"])
    return [
        {"case": name, "s": statistics.median(t), "ratio": statistics.median(t) / base}
        for name, t in times.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="rounds (default: 1 with --quick, else 3)")
    parser.add_argument("--quick", action="store_true", help="a tiny root, one round")
    args = parser.parse_args()
    videos, frames, side = (2, 28, 64) if args.quick else (4, 64, 224)
    args.rounds = args.rounds or (1 if args.quick else 3)
    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory() as tmp:
        root = write_synthetic_root(
            Path(tmp) / "clips", num_videos=videos, num_frames=frames, frame_size=(side, side)
        )
        windows = len(hf_lvf.VideoWindows(root, **PARAMS))
        rows = bench_stream(root, rounds=args.rounds)
        maps = bench_map(root, Path(tmp), rounds=args.rounds)
    print(f"load average {os.getloadavg()[0]:.2f}; datasets {datasets.__version__}")
    shape = f"{PARAMS['window_length']}x{side}x{side}"
    print(f"streaming, {windows} windows of {shape}, whole passes x {args.rounds} rounds (median)")
    print("| format | ms / window | x plain rows | video arrives as | bound (ms) |")
    print("|---|---|---|---|---|")
    for r in rows[1:] + rows[:1]:
        bound = f"{r['bound_ms']:.1f}" if r["bound_ms"] else "-"
        print(f"| {r['format']} | {r['ms']:.2f} | {r['ratio']:.2f}x | {r['dtype']} | {bound} |")
    print()
    print("map-style .map over every window (default format unless named)")
    print("| case | s | x with_format('numpy') |")
    print("|---|---|---|")
    for m in maps:
        print(f"| {m['case']} | {m['s']:.3f} | {m['ratio']:.2f}x |")


if __name__ == "__main__":
    main()
