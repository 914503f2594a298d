"""What checking each row's ``video_id`` and ``frame_idx`` costs a read.

Every read of hf_lvf takes ``video_id`` and ``frame_idx`` with the frames' ``bytes``
in the same Lance ``take`` and checks them against the video table. This measures,
on one generated 224x224 root, a DataLoader-style batch (16 random windows of 16
frames, ~256 rows): the ``take`` of ``bytes`` alone (what an unchecked reader does),
the checked read (``FrameReader.read``: three columns and the comparison), and the
decode of the same frames, which the read precedes. The two reads alternate, batch
by batch, so the ratio holds on a noisy machine.

    python benchmarks/bench_row_check.py            # ~40 s on 2 cores
    python benchmarks/bench_row_check.py --quick    # seconds: 3 videos x 40 frames, 64x64, 20 reads
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from hf_lvf import VideoWindows
from hf_lvf.decode import default_decode_threads, start_decoding
from hf_lvf.write.synthetic import write_synthetic_root

WINDOW_LENGTH = 16
BATCH = 16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="reads (default: 20 with --quick, else 200)")
    parser.add_argument("--quick", action="store_true", help="a tiny root, 20 reads")
    args = parser.parse_args()
    args.rounds = args.rounds or (20 if args.quick else 200)
    videos, frames, side = (3, 40, 64) if args.quick else (12, 150, 224)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_synthetic_root(
            Path(tmp) / "root", num_videos=videos, num_frames=frames, frame_size=(side, side)
        )
        windows = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=4)
        reader = windows._frames.reader  # the FrameReader: a checked read
        dataset = reader.dataset
        rng = np.random.default_rng(0)
        unchecked, checked, decoded = [], [], []
        for _ in range(args.rounds):
            idx = rng.choice(len(windows), BATCH, replace=False)
            video_idx, start_frame = windows.plan.locate(idx)
            starts = windows.layout.start_rows[video_idx][:, None]
            rows = np.unique(starts + windows.plan.frame_indices(start_frame))
            # Alternate which read goes first: the second finds the rows in the OS cache.
            for which in (("unchecked", "checked"), ("checked", "unchecked"))[len(checked) % 2]:
                started = time.perf_counter()
                if which == "unchecked":
                    table = dataset.take(pa.array(rows), columns=["bytes"])
                    table.column("bytes").to_pylist()
                    unchecked.append(time.perf_counter() - started)
                else:
                    blobs = reader.read(rows)
                    checked.append(time.perf_counter() - started)
            out = np.empty((len(rows), side, side, 3), np.uint8)
            started = time.perf_counter()
            start_decoding(
                blobs,
                out,
                np.arange(len(rows)),
                expected_sizes=np.full((len(rows), 2), side),
                describe=str,
                threads=default_decode_threads(),
            ).wait()
            decoded.append(time.perf_counter() - started)
    ms = {
        name: 1000 * statistics.median(t)
        for name, t in (("unchecked", unchecked), ("checked", checked), ("decode", decoded))
    }
    extra = ms["checked"] - ms["unchecked"]
    print(
        f"{side}x{side}, {BATCH} random windows of {WINDOW_LENGTH} frames per read "
        f"(~{len(rows)} rows), median of {args.rounds} reads"
    )
    print("| step | ms per read |")
    print("|---|---|")
    print(f"| take bytes only (unchecked) | {ms['unchecked']:.2f} |")
    print(f"| take bytes + video_id + frame_idx, checked | {ms['checked']:.2f} |")
    print(f"| decode of the same frames (all cores) | {ms['decode']:.2f} |")
    print(
        f"check costs {extra:.2f} ms per read: {extra / ms['unchecked']:.1%} of the take, "
        f"{extra / (ms['checked'] + ms['decode']):.1%} of read + decode"
    )


if __name__ == "__main__":
    main()
