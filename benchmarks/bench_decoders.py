"""ms per WebP frame of the Python WebP decoders, on the frames hf_lvf reads.

Decoders: Pillow (what hf_lvf used before), imagecodecs (what it uses: libwebp's
``WebPDecodeRGBInto`` straight into the caller's array, GIL released), and, when
they are installed, OpenCV (``cv2.imdecode``) and pywebp (``webp``). Each decodes
the same frames into a preallocated ``(H, W, 3)`` slot (the decoders that cannot
write into a given array pay the copy, as hf_lvf would), with 1 thread and with
one thread per core; rounds alternate between decoders and the median is kept.
Every decoder's pixels are compared with Pillow's.

    python benchmarks/bench_decoders.py
    python benchmarks/bench_decoders.py --quick    # seconds: a few frames, 1 round
    PYTHONPATH=/path/to/extra/site-packages python benchmarks/bench_decoders.py  # + cv2, webp
"""

from __future__ import annotations

import argparse
import io
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import imagecodecs
import numpy as np
from bench_windows import textured_frames
from PIL import Image

from hf_lvf.decode import encode_webp
from hf_lvf.write.synthetic import synthetic_frames

CORES = os.cpu_count() or 1


def decoders() -> dict[str, Callable[[bytes, np.ndarray], None]]:
    def pillow(blob: bytes, out: np.ndarray) -> None:
        out[...] = np.asarray(Image.open(io.BytesIO(blob), formats=["WEBP"]).convert("RGB"))

    def libwebp(blob: bytes, out: np.ndarray) -> None:
        imagecodecs.webp_decode(blob, out=out, hasalpha=False)

    found = {"Pillow": pillow, "imagecodecs": libwebp}
    try:
        import cv2

        cv2.setNumThreads(1)

        def opencv(blob: bytes, out: np.ndarray) -> None:
            bgr = cv2.imdecode(np.frombuffer(blob, np.uint8), cv2.IMREAD_COLOR)
            cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB, dst=out)

        found["OpenCV"] = opencv
    except ImportError:
        pass
    try:
        import webp

        def pywebp(blob: bytes, out: np.ndarray) -> None:
            data = webp.WebPData.from_buffer(blob)
            out[...] = data.decode(color_mode=webp.WebPColorMode.RGB)

        found["pywebp"] = pywebp
    except ImportError:
        pass
    return found


def measure(blobs: list[bytes], shape: tuple[int, int], rounds: int) -> list[tuple]:
    found = decoders()
    height, width = shape
    want = np.empty((len(blobs), height, width, 3), np.uint8)
    for k, blob in enumerate(blobs):
        found["Pillow"](blob, want[k])
    times: dict[tuple[str, int], list[float]] = {}
    same = {}
    out = np.empty_like(want)
    with ThreadPoolExecutor(CORES) as pool:
        for _ in range(rounds):
            for name, decode in found.items():
                for threads in (1, CORES):
                    bounds = np.linspace(0, len(blobs), threads + 1).astype(int)

                    def run(lo: int, hi: int, decode=decode) -> None:
                        for k in range(lo, hi):
                            decode(blobs[k], out[k])

                    started = time.perf_counter()
                    list(pool.map(run, bounds[:-1], bounds[1:]))
                    elapsed = time.perf_counter() - started
                    times.setdefault((name, threads), []).append(elapsed / len(blobs) * 1e3)
                    same[name] = bool(np.array_equal(out, want))
    return [
        (name, threads, float(np.median(t)), same[name]) for (name, threads), t in times.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 + 2 frames, 1 round")
    args = parser.parse_args()
    small, big = (16, 2) if args.quick else (96, 24)
    cases = {
        "224x224 synthetic": [
            encode_webp(f, quality=65) for f in synthetic_frames(small, 224, 224)
        ],
        "720x1280 textured": [
            encode_webp(f, quality=65) for f in textured_frames(big, 720, 1280, seed=0)
        ],
    }
    print(f"{CORES} cores; median ms per frame over the rounds; pixels compared with Pillow's\n")
    threads = f"ms/frame, {CORES} threads"
    print(f"| frames | decoder | ms/frame, 1 thread | {threads} | same pixels as Pillow |")
    print("|---|---|---|---|---|")
    for label, blobs in cases.items():
        shape = (224, 224) if label.startswith("224") else (720, 1280)
        rounds = 1 if args.quick else 5 if shape[0] == 224 else 3
        rows = measure(blobs, shape, rounds=rounds)
        by_name: dict[str, dict] = {}
        for name, threads, ms, same in rows:
            by_name.setdefault(name, {"same": same})[threads] = ms
        for name, r in by_name.items():
            print(f"| {label} | {name} | {r[1]:.2f} | {r[CORES]:.2f} | {r['same']} |")


if __name__ == "__main__":
    main()
