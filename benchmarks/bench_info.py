"""``hf_lvf.describe`` / ``hf-lvf info`` on a root of many videos, against opening the root.

The root is built directly (a Lance table of one 8x8 WebP frame repeated, and a
``_metadata.json`` of N entries with an int ``label``, a string ``split`` and an ``fps``),
since what is measured reads only the metadata and the Lance manifest. Each row is the best
of ``--rounds`` (the machine is shared; take the ratios):

- open: ``read_layout(root)``, what every reader does first;
- view: ``VideoWindows(root, window_length=2)`` (open + plan + checks);
- describe: ``describe(root, window_length=2)``;
- hf-lvf info: ``hf-lvf info ROOT --json`` as a command, and ``python -c "import hf_lvf"``
  (what any command pays to start) for comparison.

    python benchmarks/bench_info.py                  # 1,000,000 videos (about 2 minutes)
    python benchmarks/bench_info.py --videos 100000  # quicker
    python benchmarks/bench_info.py --quick          # seconds: 100 videos, 1 round, no warm-up
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
from PIL import Image


def build_root(folder: Path, num_videos: int) -> int:
    """A root of ``num_videos`` videos of 1-3 frames; returns its frames."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 4, num_videos)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    frames = int(lengths.sum())
    buf = io.BytesIO()
    Image.fromarray(np.full((8, 8, 3), 90, np.uint8)).save(buf, format="WEBP", quality=65)
    video_id = np.repeat(np.arange(num_videos, dtype=np.int32), lengths)
    frame_idx = (np.arange(frames) - np.repeat(starts, lengths)).astype(np.int32)
    table = pa.table(
        {
            "video_id": video_id,
            "frame_idx": frame_idx,
            "bytes": pa.array([buf.getvalue()] * frames, pa.large_binary()),
        }
    )
    lance.write_dataset(table, str(folder), max_rows_per_file=1 << 20)
    splits = ("train", "val", "test")
    videos = [
        {
            "id": i,
            "key": f"v{i:07d}",
            "path": f"/data/v{i:07d}.mp4",
            "T": int(t),
            "H": 8,
            "W": 8,
            "start_row": int(s),
            "metadata": {"label": i % 10, "split": splits[i % 3], "fps": 8.0 if i % 4 else 25.0},
        }
        for i, (t, s) in enumerate(zip(lengths.tolist(), starts.tolist(), strict=True))
    ]
    meta = {
        "layout": "lance-video-frames",
        "format": "lance",
        "num_rows": frames,
        "n_videos": num_videos,
        "encoding": "webp",
        "quality": 65,
        "label_names": [f"class_{k}" for k in range(10)],
        "videos": videos,
    }
    (folder / "_metadata.json").write_text(json.dumps(meta))
    return frames


_TIMED = """
import sys, time
started = time.perf_counter()
import hf_lvf
imported = time.perf_counter()
{call}
print(time.perf_counter() - imported)
"""


def timed_in_child(call: str, root: Path, cache: Path) -> float:
    """Seconds ``call`` takes in a fresh process (after ``import hf_lvf``), whose table cache
    is ``cache``."""
    env = {**os.environ, "HF_LVF_CACHE": str(cache)}
    code = _TIMED.format(call=call.format(root=str(root)))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return float(out.stdout.split()[-1])


def best_of(rounds: int, fn) -> float:
    times = []
    for _ in range(rounds):
        times.append(fn())
    return min(times)


def _wall(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100 videos, 1 round")
    args = parser.parse_args()
    if args.quick:
        args.videos, args.rounds = 100, 1
    with tempfile.TemporaryDirectory(prefix="bench_info_") as tmp:
        root = Path(tmp) / "root"
        started = time.perf_counter()
        frames = build_root(root, args.videos)
        built_s = time.perf_counter() - started
        print(f"built {args.videos:,} videos, {frames:,} frames in {built_s:.1f} s")
        warm = Path(tmp) / "warm-cache"
        # Fills the warm cache, untimed; --quick: not a process of its own (the first "again"
        # row fills it, and the rows after it read it).
        if not args.quick:
            timed_in_child("hf_lvf.describe({root!r}, window_length=2)", root, warm)
        count = 0

        def cold() -> Path:  # an empty table cache: the first open of the root
            nonlocal count
            count += 1
            return Path(tmp) / f"cold-cache-{count}"

        command = [sys.executable, "-m", "hf_lvf.cli", "info", str(root), "--json"]

        def info(cache: Path) -> float:
            env = {**os.environ, "HF_LVF_CACHE": str(cache)}
            return _wall(lambda: subprocess.run(command, check=True, capture_output=True, env=env))

        open_call = "hf_lvf.read_layout({root!r})"
        describe_call = "hf_lvf.describe({root!r}, window_length=2)"
        rows = [
            (
                "open, first: read_layout",
                best_of(args.rounds, lambda: timed_in_child(open_call, root, cold())),
            ),
            (
                "open, again (cache)",
                best_of(args.rounds, lambda: timed_in_child(open_call, root, warm)),
            ),
            (
                "describe(window_length=2), first",
                best_of(args.rounds, lambda: timed_in_child(describe_call, root, cold())),
            ),
            (
                "describe(window_length=2), again",
                best_of(args.rounds, lambda: timed_in_child(describe_call, root, warm)),
            ),
            ("hf-lvf info --json (a process), first", best_of(args.rounds, lambda: info(cold()))),
            ("hf-lvf info --json (a process), again", best_of(args.rounds, lambda: info(warm))),
            (
                "python -c 'import hf_lvf' (a process)",
                best_of(
                    args.rounds,
                    lambda: _wall(
                        lambda: subprocess.run([sys.executable, "-c", "import hf_lvf"], check=True)
                    ),
                ),
            ),
        ]
    opened = rows[0][1]
    print(f"\n{args.videos:,} videos, {frames:,} frames, best of {args.rounds}\n")
    print("| what | seconds | x first open |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / opened:.2f} |")


if __name__ == "__main__":
    main()
