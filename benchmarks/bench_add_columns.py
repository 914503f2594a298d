"""add_frame_columns on a root of 1M frames: a float32 column added without rewriting the frames.

The root is written as another tool would write it (``lance.write_dataset`` of 8x8 WebP
frames of random pixels, 4,096 distinct ones cycled through the rows; 1,000 frames a
video, in 10 data files)
and given a ``_metadata.json`` by hf_lvf's ``build_metadata`` naming its Lance version.
Then, in this order, in one process:

- a ``VideoWindows`` is opened on it (the reader "opened before");
- ``add_frame_columns(root, table)`` with a table of ``video_id``, ``frame_idx`` and a
  float32 ``score`` (rows shuffled: the keys place them), timed;
- the data files before and after are compared: every file before is still there with
  the same size, and the new ones (one per fragment, holding only ``score``) are counted;
- the reader opened before still reads the same pixels, and the version it opened has no
  ``score``;
- for scale, the same column added by rewriting the whole table (``lance.write_dataset``
  of the frames and the column into a new folder), timed: what it costs without Lance's
  column addition.

    python benchmarks/bench_add_columns.py            # 1M frames
    python benchmarks/bench_add_columns.py --quick    # 100k frames

2 shared cores: absolute times swing with the load of other processes; one run.
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FRAMES_PER_VIDEO = 1000
FILES = 10  # data files of the frames (lance fragments)
SIDE = 8
DISTINCT_FRAMES = 4096  # encoded once (Pillow takes ~0.5 ms a frame), cycled through the rows


def _webp_frames(count: int) -> list[bytes]:
    """``count`` distinct 8x8 WebP frames of random pixels (Pillow, quality 65)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    frames = []
    for pixels in rng.integers(0, 256, (count, SIDE, SIDE, 3), dtype=np.uint8):
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, "WEBP", quality=65)
        frames.append(buffer.getvalue())
    return frames


def _batches(num_frames: int, frames: list[bytes], rows_per_batch: int = 65_536):
    """Row ``r`` holds ``frames[r % len(frames)]``."""
    import pyarrow as pa

    for lo in range(0, num_frames, rows_per_batch):
        n = min(rows_per_batch, num_frames - lo)
        rows = np.arange(lo, lo + n, dtype=np.int64)
        blobs = pa.array([frames[r % len(frames)] for r in rows.tolist()], pa.large_binary())
        yield pa.record_batch(
            [
                pa.array((rows // FRAMES_PER_VIDEO).astype(np.int32)),
                pa.array((rows % FRAMES_PER_VIDEO).astype(np.int32)),
                blobs,
            ],
            names=["video_id", "frame_idx", "bytes"],
        )


def build_root(root: Path, num_frames: int) -> None:
    """A root of ``num_frames`` frames, written by lance directly, with hf_lvf's metadata."""
    import lance
    import pyarrow as pa

    from hf_lvf.frames import FRAME_SCHEMA, LANCE_VERSION_FIELD
    from hf_lvf.write.writer import build_metadata, write_metadata

    reader = pa.RecordBatchReader.from_batches(
        FRAME_SCHEMA, _batches(num_frames, _webp_frames(DISTINCT_FRAMES))
    )
    ds = lance.write_dataset(
        reader, str(root), schema=FRAME_SCHEMA, max_rows_per_file=num_frames // FILES
    )
    videos = [
        {
            "id": v,
            "key": f"clip_{v:05d}",
            "path": f"clip_{v:05d}",
            "checksum": None,
            "T": FRAMES_PER_VIDEO,
            "H": SIDE,
            "W": SIDE,
            "start_row": v * FRAMES_PER_VIDEO,
            "metadata": {},
        }
        for v in range(num_frames // FRAMES_PER_VIDEO)
    ]
    metadata = build_metadata(videos, quality=65)
    write_metadata(root, {**metadata, LANCE_VERSION_FIELD: ds.version})


def _files(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (root / "data").iterdir()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100k frames instead of 1M")
    parser.add_argument("--workdir", default=None, help="where to build (default: a temp dir)")
    args = parser.parse_args(argv)
    num_frames = 100_000 if args.quick else 1_000_000

    import lance
    import pyarrow as pa

    from hf_lvf import VideoWindows
    from hf_lvf.write import add_frame_columns

    work = Path(args.workdir or tempfile.mkdtemp(prefix="hf_lvf_bench_add_columns_"))
    root = work / "root"
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    build_root(root, num_frames)
    built_s = time.perf_counter() - started
    print(f"root of {num_frames:,} frames ({SIDE}x{SIDE}) built in {built_s:.1f} s")

    before = _files(root)
    opened = VideoWindows(str(root))
    last_pixels = opened[len(opened) - 1]["video"]
    old_version = lance.dataset(str(root)).version

    rng = np.random.default_rng(0)
    order = rng.permutation(num_frames)
    rows = np.arange(num_frames)
    score = (rows % 997).astype(np.float32) / 997
    table = pa.table(
        {
            "video_id": (rows // FRAMES_PER_VIDEO).astype(np.int32)[order],
            "frame_idx": (rows % FRAMES_PER_VIDEO).astype(np.int32)[order],
            "score": score[order],
        }
    )
    started = time.perf_counter()
    add_frame_columns(root, table)
    added_s = time.perf_counter() - started

    after = _files(root)
    kept = [name for name, size in before.items() if after.get(name) == size]
    new = {name: size for name, size in after.items() if name not in before}
    latest = lance.dataset(str(root))
    got = latest.to_table(columns=["score"]).column("score").to_numpy()
    old_schema = lance.dataset(str(root), version=old_version).schema.names
    same_pixels = bool(np.array_equal(opened[len(opened) - 1]["video"], last_pixels))

    rewrite = work / "rewritten"
    shutil.rmtree(rewrite, ignore_errors=True)
    started = time.perf_counter()
    full = lance.dataset(str(root), version=old_version).to_table()
    lance.write_dataset(
        full.append_column("score", pa.array(score)),
        str(rewrite),
        max_rows_per_file=num_frames // FILES,
    )
    rewrite_s = time.perf_counter() - started

    mb = 1 / 2**20
    print()
    print("| what | value |")
    print("| --- | --- |")
    print(f"| frames | {num_frames:,} ({num_frames // FRAMES_PER_VIDEO:,} videos) |")
    print(f"| data files before | {len(before)} ({sum(before.values()) * mb:.1f} MB) |")
    print(f"| of them unchanged after (same name, same size) | {len(kept)} of {len(before)} |")
    print(f"| new data files (the score column) | {len(new)} ({sum(new.values()) * mb:.1f} MB) |")
    print(f"| add_frame_columns (table of {num_frames:,} shuffled rows) | {added_s:.2f} s |")
    print(f"| rewriting the table with the column instead | {rewrite_s:.2f} s |")
    print(f"| ratio rewrite / add_frame_columns | {rewrite_s / added_s:.1f}x |")
    print(f"| values read back equal | {bool(np.array_equal(got, score))} |")
    print(f"| Lance version before / after | {old_version} / {latest.version} |")
    print(f"| columns of the version before | {', '.join(old_schema)} |")
    print(f"| reader opened before reads the same pixels | {same_pixels} |")
    ok = len(kept) == len(before) and np.array_equal(got, score) and same_pixels
    ok = ok and "score" not in old_schema
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
