"""Image streams (issue 46): what a proxy saves a small read, what it costs in storage, and a
window of two cameras read in one Lance request against two reads of one camera each.

Frames are smooth synthetic 720p images (gradients and a moving square, as a camera sees),
stored as JPEG q90. Each read is what the reading core does for a window: one Lance ``take``
of the window's rows, then the frames decoded on the decode threads into one array
(``hf_lvf.decode.start_decoding``, JPEG DCT-scaled to 1/2, 1/4 or 1/8 where the size allows):

- **224 windows**: a window of 8 frames at 224 px (shorter side), from ``bytes`` (720p,
  decoded scaled and resized) against from the ``proxy_224`` stream ``add_proxy`` wrote
  (decoded at its size), in windows/s, and the bytes each read;
- **VideoWindows**: the same windows through the library, ``proxies=False`` (the full
  frames) against the default, which reads the proxy because it covers ``frame_size``;
- **storage**: the root's data files before and after ``add_proxy``;
- **2 cameras**: one take of both cameras' columns against two takes of one each.

    python benchmarks/bench_streams.py            # 720p, 4 videos x 48 frames
    python benchmarks/bench_streams.py --quick    # 360p, 2 videos x 16 frames: a smoke run
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

import hf_lvf.write
from hf_lvf.decode import default_decode_threads, start_decoding
from hf_lvf.write.proxies import proxy_size

WINDOW = 8


def smooth_frames(n: int, height: int, width: int, seed: int) -> list[np.ndarray]:
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // width, y * 255 // height, (x + y) * 255 // (width + height)], -1)
    frames = []
    for i in range(n):
        frame = base.astype(np.uint8)
        top, left = (7 * i + 31 * seed) % (height // 2), (13 * i) % (width // 2)
        frame[top : top + height // 4, left : left + width // 4] = (250, (40 + seed * 60) % 256, 40)
        frames.append(frame)
    return frames


def data_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "data").iterdir())


def read_windows(
    ds: lance.LanceDataset,
    column: str,
    starts: list[int],
    size: tuple[int, int],
    out: tuple[int, int],
) -> tuple[float, int]:
    """``(seconds, bytes read)`` of reading a window at each start: one take, one decode."""
    threads = default_decode_threads()
    total, began = 0, time.perf_counter()
    for start in starts:
        rows = pa.array(np.arange(start, start + WINDOW))
        blobs = ds.take(rows, columns=[column]).flatten().flatten().column(column).to_pylist()
        total += sum(len(b) for b in blobs)
        frames = np.empty((WINDOW, *out, 3), np.uint8)
        sizes = np.broadcast_to(size, (WINDOW, 2))
        start_decoding(
            blobs, frames, np.arange(WINDOW), expected_sizes=sizes, describe=str, threads=threads
        ).wait()
    return time.perf_counter() - began, total


def read_cameras(
    ds: lance.LanceDataset, columns: list[list[str]], starts: list[int], size: tuple[int, int]
) -> tuple[float, int]:
    """``(seconds, requests)`` of reading both cameras of a window at each start, as one take
    per entry of ``columns``, every image decoded at its size."""
    threads = default_decode_threads()
    requests, began = 0, time.perf_counter()
    for start in starts:
        rows = pa.array(np.arange(start, start + WINDOW))
        for names in columns:
            table = ds.take(rows, columns=[n.split(".")[0] for n in names])
            requests += 1
            flat = table.flatten().flatten()
            for name in names:
                blobs = flat.column(name).to_pylist()
                frames = np.empty((WINDOW, *size, 3), np.uint8)
                sizes = np.broadcast_to(size, (WINDOW, 2))
                start_decoding(
                    blobs,
                    frames,
                    np.arange(WINDOW),
                    expected_sizes=sizes,
                    describe=str,
                    threads=threads,
                ).wait()
    return time.perf_counter() - began, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    height, width, videos, frames = (360, 640, 2, 16) if args.quick else (720, 1280, 4, 48)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_streams-"))
    root = work / "root"
    items = [(f"v{v}", smooth_frames(frames, height, width, v), None) for v in range(videos)]
    hf_lvf.write.write_frames(root, items, codec="jpeg", quality=90, mode="overwrite")
    before = data_bytes(root)
    hf_lvf.write.add_proxy(root, 224)
    after = data_bytes(root)
    ds = lance.dataset(str(root))
    small = proxy_size(height, width, 224)
    starts = [v * frames + s for v in range(videos) for s in range(0, frames - WINDOW + 1, 4)]
    read_windows(ds, "bytes", starts[:1], (height, width), small)  # warm: imports, pools
    full_s, full_bytes = read_windows(ds, "bytes", starts, (height, width), small)
    proxy_s, proxy_bytes = read_windows(ds, "proxy_224", starts, small, small)
    n = len(starts)
    print(f"\n{n} windows of {WINDOW} frames at {small[0]}x{small[1]} from {height}p JPEG q90\n")
    print("| read | windows/s | MB decoded from | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(
        f"| bytes ({height}p, decoded scaled) | {n / full_s:.1f} | {full_bytes / 1e6:.2f} | 1.00x |"
    )
    print(f"| proxy_224 | {n / proxy_s:.1f} | {proxy_bytes / 1e6:.2f} | {full_s / proxy_s:.2f}x |")
    # The library's own read (VideoWindows): frame_size within the proxy reads the proxy.
    timed = {}
    for proxies in (False, True):
        view = hf_lvf.VideoWindows(
            root, window_length=WINDOW, hop_size=4, frame_size=small, proxies=proxies
        )
        view[0]  # warm
        began = time.perf_counter()
        count = sum(1 for _ in view.iter_samples())
        timed[proxies] = (view.images, count / (time.perf_counter() - began))
    print("\n| VideoWindows(frame_size=...) | reads from | windows/s | ratio |")
    print("| --- | --- | ---: | ---: |")
    for proxies, (images, rate) in timed.items():
        ratio = rate / timed[False][1]
        print(f"| proxies={proxies} | {images} | {rate:.1f} | {ratio:.2f}x |")
    print("\n| storage | MB | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| without proxy | {before / 1e6:.2f} | 1.00x |")
    print(f"| with proxy_224 | {after / 1e6:.2f} | {after / before:.3f}x |")

    # Two cameras: one root whose frames have a second image; both at the proxy's size.
    cams = work / "cameras"
    two = [
        (
            f"v{v}",
            [
                {"video": a, "wrist": b}
                for a, b in zip(
                    smooth_frames(frames, *small, v),
                    smooth_frames(frames, *small, v + 1),
                    strict=True,
                )
            ],
            None,
        )
        for v in range(videos)
    ]
    hf_lvf.write.write_frames(cams, two, codec="jpeg", quality=90, mode="overwrite")
    ds2 = lance.dataset(str(cams))
    one_s, one_requests = read_cameras(ds2, [["bytes", "wrist"]], starts, small)
    two_s, two_requests = read_cameras(ds2, [["bytes"], ["wrist"]], starts, small)
    print(f"\n{n} windows of 2 cameras at {small[0]}x{small[1]}\n")
    print("| read | windows/s | Lance requests | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| two takes, one camera each | {n / two_s:.1f} | {two_requests} | 1.00x |")
    print(f"| one take of both | {n / one_s:.1f} | {one_requests} | {two_s / one_s:.2f}x |")


if __name__ == "__main__":
    main()
