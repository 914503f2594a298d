"""A Kinetics-style epoch: one random 16-frame clip per video, three ways, in one run.

A folder of H.264 MP4 clips of several lengths (encoded here with PyAV, 224x224,
30 fps, a keyframe every 2 s, a noise texture with grain that changes every frame,
~6 KB a frame, like web footage), converted with ``convert_videos``. Each epoch reads
one random clip of 16 frames (``frame_skip=1``: a clip spans 31 frames, 1 s) of every
video, the same clips for every reader:

- **hf_lvf**: ``ClipSampler(windows, clips_per_video=1)`` feeding a 2-worker
  ``safe_dataloader(windows, sampler=..., batch_size=8)`` (each batch one Lance read,
  persistent workers), the batches as a training loop receives them (uint8 tensors);
- **PyAV, MP4**: what a user of the plain MP4 files does: per clip, open the file, seek
  to the keyframe before the clip, decode to its last frame and convert its 16 frames to
  RGB arrays; two clips at a time on 2 threads (PyAV releases the GIL while decoding);
- **decode limit**: only decoding the 16 WebP frames of each clip with libwebp on all
  cores, from bytes already in memory into buffers that stay in the CPU cache (as in
  ``bench_windows.py``): no Lance, no assembly, no DataLoader.

The readers take turns epoch by epoch (after an untimed epoch each: workers started,
files in the page cache), so that a burst of load from another process hits all of them
alike; clips/s are over all timed epochs.

    python benchmarks/bench_clips.py                 # 64 videos: ~2 minutes on 2 cores
    python benchmarks/bench_clips.py --videos 96     # the README's table (~3 minutes)
    python benchmarks/bench_clips.py --videos 16 --epochs 2   # a quick look
    python benchmarks/bench_clips.py --quick         # seconds: 4 short 64x64 clips, 1 epoch,
                                                     # 1 DataLoader worker
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import av
import numpy as np

from hf_lvf import ClipSampler, VideoWindows, safe_dataloader
from hf_lvf.convert import convert_videos

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_windows import DecodeLimit, textured_frames  # noqa: E402

CORES = os.cpu_count() or 1
SIZE = 224
RATE = 30
GOP = 2 * RATE  # a keyframe every 2 s, like web video
LENGTHS = (75, 150, 240, 300)  # 2.5 to 10 s
QUICK_LENGTHS, QUICK_SIZE = (32, 40, 48, 64), 64  # --quick: each longer than a clip (31 frames)
PARAMS = {"window_length": 16, "frame_skip": 1}
BATCH = 8


def write_clips(folder: Path, num_videos: int, lengths=LENGTHS, size=SIZE) -> list[Path]:
    """``num_videos`` H.264 MP4 files of ``size`` x ``size``, their lengths cycling through
    ``lengths``."""
    folder.mkdir(parents=True)
    paths = []
    rng = np.random.default_rng(0)
    for i in range(num_videos):
        path = folder / f"clip_{i:03d}.mp4"
        with av.open(str(path), "w") as container:
            stream = container.add_stream("libx264", rate=RATE)
            stream.width = stream.height = size
            stream.pix_fmt, stream.bit_rate = "yuv420p", 1_500_000
            stream.codec_context.gop_size = GOP
            stream.options = {"preset": "veryfast"}
            for array in textured_frames(lengths[i % len(lengths)], size, size, seed=i):
                grain = rng.integers(-3, 4, array.shape, dtype=np.int16)
                array = np.clip(array + grain, 0, 255).astype(np.uint8)
                for packet in stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        paths.append(path)
    return paths


def frame_times(path: Path) -> list[int]:
    """The ``pts`` of every frame of ``path``, in decoding order (frame ``f`` is the f-th)."""
    with av.open(str(path)) as container:
        return [frame.pts for frame in container.decode(video=0)]


class PyAVClips:
    """Clips read from the MP4 files: seek to the keyframe before, decode to the last frame."""

    def __init__(self, paths: list[str], size: int = SIZE):
        self._pts = {p: frame_times(Path(p)) for p in paths}
        self._pool = ThreadPoolExecutor(2)
        self._size = size

    def clip(self, path: str, frames: list[int]) -> np.ndarray:
        pts = self._pts[path]
        wanted = {pts[f]: j for j, f in enumerate(frames)}
        out = np.empty((len(frames), self._size, self._size, 3), np.uint8)
        with av.open(path) as container:
            stream = container.streams.video[0]
            container.seek(pts[frames[0]], stream=stream, backward=True, any_frame=False)
            last = pts[frames[-1]]
            for frame in container.decode(stream):
                if frame.pts in wanted:
                    out[wanted[frame.pts]] = frame.to_ndarray(format="rgb24")
                if frame.pts >= last:
                    break
        return out

    def read(self, clips: list[tuple[str, list[int]]]) -> int:
        return sum(1 for _ in self._pool.map(lambda c: self.clip(*c), clips))


def bench(
    tmp: Path,
    *,
    num_videos: int,
    epochs: int,
    lengths=LENGTHS,
    size=SIZE,
    workers=CORES,
    loader_workers=2,
) -> dict:
    started = time.perf_counter()
    paths = write_clips(tmp / "mp4", num_videos, lengths, size)
    encoded = time.perf_counter() - started
    summary = convert_videos(paths, tmp / "root", workers=workers, progress=False)
    windows = VideoWindows(summary.root, **PARAMS)
    sampler = ClipSampler(windows, clips_per_video=1, seed=0)
    loader = safe_dataloader(windows, sampler=sampler, batch_size=BATCH, num_workers=loader_workers)
    pyav = PyAVClips([windows.layout.path(v) for v in range(len(windows.layout))], size)
    limit = DecodeLimit(windows)

    def hf_lvf(epoch: int) -> int:
        return sum(len(batch["video"]) for batch in loader)

    def clips_of(epoch: int) -> np.ndarray:
        sampler.set_epoch(epoch)
        return sampler.epoch_indices()

    def mp4(epoch: int) -> int:
        clips = []
        for i in clips_of(epoch).tolist():
            info = windows.segment_info(i)
            clips.append((info["filename"], info["frame_indices"].tolist()))
        return pyav.read(clips)

    def decode_limit(epoch: int) -> float:
        chosen = clips_of(epoch)
        seconds = 0.0
        for lo in range(0, len(chosen), BATCH):
            blobs = limit.blobs(chosen[lo : lo + BATCH])  # in memory: only decoding is timed
            started = time.perf_counter()
            limit.decode(blobs)
            seconds += time.perf_counter() - started
        return seconds

    spent = {"hf_lvf": 0.0, "PyAV, MP4": 0.0, "decode limit": 0.0}
    for epoch in range(epochs + 1):  # the first, untimed
        sampler.set_epoch(epoch)
        started = time.perf_counter()
        assert hf_lvf(epoch) == num_videos
        took = time.perf_counter() - started
        spent["hf_lvf"] += took if epoch else 0.0
        started = time.perf_counter()
        assert mp4(epoch) == num_videos
        took = time.perf_counter() - started
        spent["PyAV, MP4"] += took if epoch else 0.0
        took = decode_limit(epoch)  # times its decoding only
        spent["decode limit"] += took if epoch else 0.0
    mp4_bytes = sum(p.stat().st_size for p in paths) / summary.num_frames
    return {
        "rates": {name: epochs * num_videos / t for name, t in spent.items()},
        "videos": num_videos,
        "frames": summary.num_frames,
        "epochs": epochs,
        "lengths": lengths,
        "size": size,
        "mp4_kb": mp4_bytes / 1024,
        "encode_s": encoded,
        "convert_s": summary.seconds,
        "loader_workers": loader_workers,
    }


def print_table(result: dict) -> None:
    rates = result["rates"]
    print(
        f"\n{result['videos']} H.264 clips of {'/'.join(map(str, result['lengths']))} frames "
        f"({result['frames']} frames, {result['size']}x{result['size']}, {RATE} fps, "
        f"keyframe every {GOP} frames, "
        f"{result['mp4_kb']:.1f} KB a frame), converted in {result['convert_s']:.0f} s; "
        f"{result['epochs']} epochs of 1 random clip per video (window_length=16, "
        f"frame_skip=1), batches of {BATCH}, {CORES} cores:\n"
    )
    print("| reader | clips/s | hf_lvf is |")
    print("|---|---|---|")
    workers = result["loader_workers"]
    labels = {
        "hf_lvf": f"hf_lvf: ClipSampler + safe_dataloader, {workers} worker{'s' * (workers != 1)}",
        "PyAV, MP4": "PyAV: seek + decode the MP4, 2 threads",
        "decode limit": "decode limit: the clips' WebP frames, all cores",
    }
    for name, label in labels.items():
        print(f"| {label} | {rates[name]:.1f} | {rates['hf_lvf'] / rates[name]:.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=64, help="videos (clips per epoch)")
    parser.add_argument("--epochs", type=int, default=4, help="timed epochs")
    parser.add_argument("--quick", action="store_true", help="4 short 64x64 clips, 1 epoch")
    args = parser.parse_args()
    # --quick converts in this process (workers=0) and reads with one DataLoader worker:
    # starting processes would be most of its time.
    sizing = {"lengths": QUICK_LENGTHS, "size": QUICK_SIZE, "workers": 0, "loader_workers": 1}
    sizing = sizing if args.quick else {}
    if args.quick:
        args.videos, args.epochs = len(QUICK_LENGTHS), 1
    with tempfile.TemporaryDirectory(prefix="hf_lvf_bench_clips_") as tmp_name:
        result = bench(Path(tmp_name), num_videos=args.videos, epochs=args.epochs, **sizing)
        print_table(result)


if __name__ == "__main__":
    main()
