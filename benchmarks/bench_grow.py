"""Growing a root: appending K videos to a root of N, and merging two roots, against
rewriting everything (what growing a root cost before ``mode="append"``/``merge_roots``).

All timings come from one run on the same synthetic frames:

- append: ``write_frames(..., mode="append")`` of K videos to a root of N;
- rewrite: ``write_frames`` of all N + K videos to a new root (encodes every frame again);
- merge: ``merge_roots`` of the N-video root and the K-video root (copies WebP bytes);
- floor: Pillow WebP encodes of just the K new videos' frames, in this process: an append
  cannot be faster than encoding what it adds.

    python benchmarks/bench_grow.py                       # 40 + 4 videos x 32 frames, 128x128
    python benchmarks/bench_grow.py --videos 200 --added 10 --frames 48 --size 224x224
    python benchmarks/bench_grow.py --quick               # seconds: 8 + 2 videos x 8 frames, 32x32
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hf_lvf.decode import encode_webp
from hf_lvf.write import merge_roots, write_frames
from hf_lvf.write.synthetic import synthetic_frames


def videos(ids: range, num_frames: int, size: tuple[int, int]):
    return [
        (f"clip_{i:05d}", synthetic_frames(num_frames, *size, seed=i), {"label": i % 7})
        for i in ids
    ]


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=40, help="videos in the root (N)")
    parser.add_argument("--added", type=int, default=4, help="videos appended (K)")
    parser.add_argument("--frames", type=int, default=32, help="frames per video")
    parser.add_argument("--size", default="128x128", help="HxW")
    parser.add_argument("--quick", action="store_true", help="8 + 2 videos x 8 frames, 32x32")
    args = parser.parse_args()
    if args.quick:
        args.videos, args.added, args.frames, args.size = 8, 2, 8, "32x32"
    size = tuple(int(x) for x in args.size.split("x"))
    n, k = args.videos, args.added
    old, new, everything = range(n), range(n, n + k), range(n + k)
    with tempfile.TemporaryDirectory(prefix="bench_grow_") as tmp:
        tmp = Path(tmp)
        write_frames(tmp / "root", videos(old, args.frames, size))
        write_frames(tmp / "added", videos(new, args.frames, size))
        frames = [f for _, fs, _ in videos(new, args.frames, size) for f in fs]
        floor = timed(lambda: [encode_webp(f, quality=65) for f in frames])
        append = timed(
            lambda: write_frames(tmp / "root", videos(new, args.frames, size), mode="append")
        )
        rewrite = timed(lambda: write_frames(tmp / "all", videos(everything, args.frames, size)))
        # The N-video root as it was before the append, merged with the K-video root.
        write_frames(tmp / "base", videos(old, args.frames, size))
        merge = timed(lambda: merge_roots([tmp / "base", tmp / "added"], tmp / "merged"))
    frames_total = (n + k) * args.frames
    rows = [
        ("root", f"{n} videos + {k} appended, {args.frames} frames of {args.size}"),
        ("append K (s)", f"{append:.2f}"),
        ("rewrite N+K (s)", f"{rewrite:.2f}"),
        ("merge N and K (s)", f"{merge:.2f} ({frames_total / merge:.0f} frames/s copied)"),
        ("floor: encode K only (s)", f"{floor:.2f}"),
        ("rewrite / append", f"{rewrite / append:.1f}x"),
        ("append / floor", f"{append / floor:.2f}x"),
        ("rewrite / merge", f"{rewrite / merge:.1f}x"),
    ]
    print("| what | value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
