"""Windows/s of hf_lvf's read paths against the reference reader and the decode limit.

Every row of the main table reads one generated root three ways, in the same run:

- **hf_lvf**: random order through ``VideoWindows.take`` in batches (32 windows at
  224x224, 4 at 720x1280), sequential order through ``VideoWindows.iter_samples``.
- **reference**: the reference reader's algorithm (``reference/seed_backend.py``):
  per window, one Lance ``take`` of its rows, then one decode per frame into the
  window's array, in one thread. It decodes with the same libwebp decoder as hf_lvf
  (imagecodecs), so the ratio shows what the read path gains, not the decoder.
- **decode limit**: only decoding the distinct frames the reads need (per batch of
  the random order; over the whole pass for the sequential one) with the same
  decoder on all cores, from bytes already in memory, into reused buffers: no Lance,
  no assembly. "of limit" is hf_lvf's rate as a fraction of it.

The three take turns chunk by chunk (a take() batch, or a stretch of the
sequential pass), so that a burst of load from another process on a shared
machine hits all of them alike; the reference reads every window of a chunk
at 224x224 and every 4th at 720x1280 (it spends the same time on each). Each
row reads at least 1024 windows at 224x224 and 96 at 720x1280: random batches
from as many permutations, sequential passes repeated, each pass decoding its
frames anew. Before the timing, each reader reads untimed once (hf_lvf a whole
sequential pass or one batch), as in every epoch of training after the first:
Lance opened, thread pools started, memory touched (fresh memory costs 2-5 ms
per MB on first touch on this VM, a one-off ~150 ms for a first batch of 32
windows at 224x224). At the end of each of its sequential turns hf_lvf waits
for the strip it decodes in the background, so none of its work runs in the
other readers' turns.
The 720x1280 root is a textured synthetic clip (8x8-pixel blocks of noise with
fine grain, panning 2-3 pixels per frame): ~115 KB per WebP frame and 10-13 ms per
libwebp decode, like real HD footage, where the smooth test clips decode 2x faster.

    python benchmarks/bench_windows.py            # everything (~12 min on 2 cores)
    python benchmarks/bench_windows.py --quick    # seconds: every 224x224 table, on 64x64
                                                  # frames of 2 short videos, one round each

Further tables: a 720x1280 H.264 clip converted to a root, read by hf_lvf against
the decode limit and against PyAV decoding the MP4; a sequential pass read by a
loop that works between windows (decoding hides behind the work); peak memory of
a sequential pass by windows read; map-style
``load_dataset`` batches of 8 (``ds.__getitems__``, what a ``DataLoader`` calls, and
a ``DataLoader(batch_size=8)``) against ``VideoWindows.take`` on the same indices;
and the ``datasets`` front ends in sequential order against the core view.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import imagecodecs
import lance
import numpy as np

from hf_lvf import VideoWindows
from hf_lvf.write import write_frames
from hf_lvf.write.synthetic import write_synthetic_root

WINDOW_LENGTH = 16
CORES = os.cpu_count() or 1


# --- roots ----------------------------------------------------------------------------


def textured_frames(num_frames: int, height: int, width: int, *, seed: int) -> Iterator[np.ndarray]:
    """Frames of a noise texture panning across the picture: compresses like real footage."""
    rng = np.random.default_rng(seed)
    pad = 3 * num_frames + 8
    coarse = rng.integers(0, 256, ((height + pad) // 8 + 1, (width + pad) // 8 + 1, 3), np.uint8)
    texture = np.repeat(np.repeat(coarse, 8, 0), 8, 1)[: height + pad, : width + pad]
    grain = rng.integers(-6, 7, texture.shape, dtype=np.int16)
    texture = np.clip(texture // 2 + 64 + grain, 0, 255).astype(np.uint8)
    for t in range(num_frames):
        yield np.ascontiguousarray(texture[2 * t : 2 * t + height, 3 * t : 3 * t + width])


def make_root(tmp: Path, height: int, width: int, *, videos: int = 4, frames: int = 300) -> Path:
    if height <= 256:
        return write_synthetic_root(
            tmp / f"root_{height}x{width}",
            num_videos=videos,
            num_frames=frames,
            frame_size=(height, width),
        )
    videos = (
        (f"pan_{i}", textured_frames(100, height, width, seed=i), {"label": i}) for i in range(3)
    )
    return write_frames(tmp / f"root_{height}x{width}", videos, quality=65)  # as measured so far


# --- the three readers --------------------------------------------------------------------


class ReferenceReader:
    """The reference reader's algorithm: one Lance take per window, one decode per frame."""

    def __init__(self, windows: VideoWindows):
        self._w = windows
        self._ds = lance.dataset(windows.uri)

    def read(self, index: int) -> np.ndarray:
        info = self._w.segment_info(index)
        video = self._w.videos[info["video_idx"]]
        rows = [video.start_row + f for f in info["frame_indices"].tolist()]
        blobs = self._ds.take(rows, columns=["bytes"]).column("bytes").to_pylist()
        out = np.empty((len(blobs), video.height, video.width, 3), np.uint8)
        for j, blob in enumerate(blobs):
            imagecodecs.webp_decode(blob, out=out[j])
        return out


def _webp_into(blob: bytes, out: np.ndarray) -> None:
    imagecodecs.webp_decode(blob, out=out)


class DecodeLimit:
    """Only decoding frames, from bytes already in memory, on all cores, into reused buffers
    of the view's frame size; ``decode_frame(blob, out)`` decodes one (default: WebP)."""

    def __init__(
        self,
        windows: VideoWindows,
        decode_frame: Callable[[bytes, np.ndarray], None] = _webp_into,
    ):
        self._w = windows
        self._decode_frame = decode_frame
        self._ds = lance.dataset(windows.uri)
        self._pool = ThreadPoolExecutor(CORES)
        # A frame's worth of memory per thread, touched once here.
        self._out = [np.zeros((*windows.frame_size, 3), np.uint8) for _ in range(CORES)]

    def blobs(self, indices: np.ndarray, *, skip: set[int] | None = None) -> list[bytes]:
        """The encoded distinct frames of windows ``indices``, less the rows in ``skip``
        (which then gets these rows)."""
        rows: set[int] = set()
        for i in indices.tolist():
            info = self._w.segment_info(i)
            start_row = self._w.videos[info["video_idx"]].start_row
            rows.update(start_row + f for f in info["frame_indices"].tolist())
        if skip is not None:
            rows -= skip
            skip |= rows
        return self._ds.take(sorted(rows), columns=["bytes"]).column("bytes").to_pylist()

    def decode(self, blobs: list[bytes]) -> None:
        # One thread per core, each taking the next frame as it is free: no thread waits
        # while frames are left, even when another process takes a core for a while.
        frames = iter(blobs)

        def decode(out: np.ndarray) -> None:
            for blob in frames:  # next() of a list iterator is atomic under the GIL
                self._decode_frame(blob, out)

        for future in [self._pool.submit(decode, out) for out in self._out]:
            future.result()


def bench_row(
    root: Path,
    params: dict,
    order: str,
    passes: list[np.ndarray],
    *,
    chunk: int,
    reference_every: int,
) -> dict:
    """hf_lvf, the reference reader and the decode limit on the windows of ``passes`` (each
    a sequential pass, or a run of random take() batches), interleaved chunk by chunk
    (``chunk`` windows: a take() batch in random order, a stretch of the pass in sequential
    order), so that load from other processes hits all three alike. The reference reads
    every ``reference_every``-th window of each chunk (it spends the same time on each)."""
    w = VideoWindows(root, **params)
    reference, limit = ReferenceReader(w), DecodeLimit(w)
    # Untimed first, as in the epochs of a training run after the first: hf_lvf reads a
    # whole pass (sequential) or a batch (random), the others a window or a batch. That
    # opens Lance, starts thread pools and touches memory: fresh memory costs 2-5 ms per MB
    # on first touch here (page faults), ~150 ms for a first 77 MB batch, once per view. A
    # timed pass starts at the front, where nothing of the warm-up's last read is a cache hit.
    warm = passes[0][-chunk:]
    if order == "sequential":
        for _ in w.iter_samples(passes[0]):
            pass
    else:
        w.take(warm)
    reference.read(int(warm[0]))
    limit.decode(limit.blobs(warm))
    spent = {"hf_lvf": 0.0, "reference": 0.0, "limit": 0.0}
    read_by_reference = 0
    for idx in passes:
        stream = w.iter_samples(idx) if order == "sequential" else None
        decoded: set[int] = set()  # sequential: the limit decodes each frame of a pass once
        for lo in range(0, len(idx), chunk):
            windows = idx[lo : lo + chunk]
            started = time.perf_counter()
            if stream is None:
                w.take(windows)
            else:
                for _ in windows:
                    next(stream)
                # The next strip decodes while the windows of one are handed out: wait for it
                # here, so that no work of hf_lvf's runs in the other readers' turns.
                w._frames.settle()
            spent["hf_lvf"] += time.perf_counter() - started
            started = time.perf_counter()
            for i in windows[::reference_every].tolist():
                reference.read(i)
                read_by_reference += 1
            spent["reference"] += time.perf_counter() - started
            blobs = limit.blobs(windows, skip=decoded if stream is not None else None)
            started = time.perf_counter()
            limit.decode(blobs)
            spent["limit"] += time.perf_counter() - started
    height, width = w.frame_size
    total = sum(len(idx) for idx in passes)
    return dict(
        size=f"{height}x{width}",
        hop=params["hop_size"],
        order=order,
        windows=total,
        passes=len(passes),
        hf_lvf=total / spent["hf_lvf"],
        reference=read_by_reference / spent["reference"],
        limit=total / spent["limit"],
    )


def bench_size(
    root: Path,
    *,
    random_batch: int,
    min_windows: int,
    reference_every: int,
    hops=(1, 4, 16),
) -> list[dict]:
    """One row per hop and order, each over at least ``min_windows`` windows: in random
    order, take() batches of ``random_batch`` from permutations of all windows; in sequential
    order, whole passes, as many as it takes."""
    rows = []
    rng = np.random.default_rng(0)
    for hop in hops:
        params = {"window_length": WINDOW_LENGTH, "hop_size": hop}
        n = len(VideoWindows(root, **params))
        rounds = -(-min_windows // n)
        order = np.concatenate([rng.permutation(n) for _ in range(rounds)])[:min_windows]
        # Batches that stay whole: the last may not be short.
        order = order[: max(random_batch, len(order) // random_batch * random_batch)]
        for name, passes, chunk in (
            ("random", [order], random_batch),
            ("sequential", [np.arange(n)] * rounds, 4 * random_batch),
        ):
            rows.append(
                bench_row(root, params, name, passes, chunk=chunk, reference_every=reference_every)
            )
    return rows


def print_core(rows: list[dict]) -> None:
    print(
        f"\nwindow_length={WINDOW_LENGTH}; random order in batches through take(), sequential "
        f"through iter_samples(); {CORES} cores\n"
    )
    print(
        "| size | hop | order | windows | hf_lvf win/s | reference win/s | vs reference | "
        "decode limit win/s | of limit |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['size']} | {r['hop']} | {r['order']} | {r['windows']}"
            + (f" ({r['passes']} passes)" if r["passes"] > 1 else "")
            + f" | {r['hf_lvf']:.1f} | "
            f"{r['reference']:.1f} | {r['hf_lvf'] / r['reference']:.1f}x | {r['limit']:.1f} | "
            f"{r['hf_lvf'] / r['limit']:.0%} |"
        )


# --- HD against plain MP4 ---------------------------------------------------------------------


def bench_mp4(tmp: Path, *, frames: int, rounds: int, hop: int = 4) -> dict:
    """A 720x1280 H.264 clip (the textured pan, encoded by PyAV with libx264), converted to a
    root by ``convert_videos``: a sequential pass of hf_lvf against the decode limit of the
    same pass and against PyAV decoding the MP4 to RGB on 2 threads (what a user of plain
    MP4 files would do), in windows/s of the same windows; the three take turns by round.

    The clip is encoded at 8 Mbit/s with a grain that changes every frame (~30 KB a frame),
    like camera or web footage at 720p30 (5-12 Mbit/s): at x264's default quality the smooth
    synthetic pan would take 2 KB a frame and decode several times faster than real video."""
    import av

    from hf_lvf.convert import convert_videos

    height, width = 720, 1280
    clip = tmp / "pan_720p.mp4"
    rng = np.random.default_rng(7)
    with av.open(str(clip), "w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options, stream.bit_rate = {"preset": "veryfast"}, 8_000_000
        for array in textured_frames(frames, height, width, seed=7):
            grain = rng.integers(-3, 4, array.shape, dtype=np.int16)
            array = np.clip(array + grain, 0, 255).astype(np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    root = convert_videos([clip], tmp / "root_mp4", workers=CORES, quality=65).root
    w = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=hop)
    limit = DecodeLimit(w)
    all_windows = np.arange(len(w))

    def mp4() -> int:
        with av.open(str(clip)) as container:
            stream = container.streams.video[0]
            stream.thread_type, stream.thread_count = "AUTO", CORES
            return sum(
                1 for f in container.decode(stream) if f.to_ndarray(format="rgb24") is not None
            )

    blobs = limit.blobs(all_windows)  # bytes in memory: for the limit only decoding is timed
    readers = {
        "hf_lvf": lambda: sum(1 for _ in w.iter_samples()),
        "decode limit": lambda: limit.decode(blobs),
        "PyAV, MP4": mp4,
    }
    spent = dict.fromkeys(readers, 0.0)
    for round_ in range(rounds + 1):  # the first, untimed
        for name, read in readers.items():
            started = time.perf_counter()
            read()
            if round_:
                spent[name] += time.perf_counter() - started
    mp4_kb = clip.stat().st_size / frames / 1024
    return {name: rounds * len(w) / t for name, t in spent.items()} | {
        "windows": len(w),
        "mp4_kb": mp4_kb,
    }


def print_mp4(rates: dict, *, hop: int = 4) -> None:
    print(
        f"\n720x1280 H.264 clip converted with convert_videos, window_length={WINDOW_LENGTH}, "
        f"hop {hop}, sequential ({rates['windows']} windows a pass), {CORES} cores:\n"
    )
    print(f"MP4: {rates['mp4_kb']:.0f} KB a frame\n")
    print("| reader | win/s | hf_lvf is |")
    print("|---|---|---|")
    for name in ("hf_lvf", "decode limit", "PyAV, MP4"):
        print(f"| {name} | {rates[name]:.1f} | {rates['hf_lvf'] / rates[name]:.0%} |")


# --- decoding behind the consumer's work -------------------------------------------------------


def bench_overlap(root: Path, *, passes: int) -> list[dict]:
    """A sequential pass read by a loop that works after every 8 windows (a training step:
    time.sleep, which releases the GIL as a step waiting for the GPU does), against the step
    alone and the read alone. Reads and steps can overlap: the best rate is the slower of
    the two alone; a loop that did one after the other would get the harmonic sum."""
    rows = []
    for hop, step in ((1, 0.002), (4, 0.006)):
        w = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=hop)
        n = len(w)
        for _ in w.iter_samples():  # untimed first pass
            pass
        spent = {"read alone": 0.0, "step alone": 0.0, "read + step": 0.0}
        for _ in range(passes):
            started = time.perf_counter()
            for _ in w.iter_samples():
                pass
            spent["read alone"] += time.perf_counter() - started
            started = time.perf_counter()
            for _ in range(n // 8):
                time.sleep(step)
            spent["step alone"] += time.perf_counter() - started
            started = time.perf_counter()
            for k, _ in enumerate(w.iter_samples()):
                if k % 8 == 7:
                    time.sleep(step)
            spent["read + step"] += time.perf_counter() - started
        rate = {name: passes * n / t for name, t in spent.items()}
        best = min(rate["read alone"], rate["step alone"])
        serial = 1 / (1 / rate["read alone"] + 1 / rate["step alone"])
        rows.append(dict(hop=hop, step=step, **rate, best=best, serial=serial))
    return rows


def print_overlap(rows: list[dict], size: str = "224x224") -> None:
    print(
        f"\nsequential pass, {size}, window_length={WINDOW_LENGTH}, with a step of work after "
        "every 8 windows (GIL released):\n"
    )
    print(
        "| hop | step per 8 windows | read alone win/s | step alone win/s | read + step win/s "
        "| of the best (slower alone) | one after the other would be |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['hop']} | {r['step'] * 1000:.0f} ms | {r['read alone']:.0f} | "
            f"{r['step alone']:.0f} | {r['read + step']:.0f} | "
            f"{r['read + step'] / r['best']:.0%} | {r['serial'] / r['best']:.0%} |"
        )


# --- memory ---------------------------------------------------------------------------------


def memory_flatness(root: Path, hop: int) -> list[tuple[int, float]]:
    """Peak traced memory of a sequential pass over the first N windows, for growing N."""
    out = []
    for n in (50, 200, 800, 1140):
        w = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=hop)
        n = min(n, len(w))
        tracemalloc.start()
        for _ in w.iter_samples(np.arange(n)):
            pass
        out.append((n, tracemalloc.get_traced_memory()[1] / 2**20))
        tracemalloc.stop()
    return out


# --- map-style load_dataset through DataLoader-sized batches ------------------------------


def bench_map_style(root: Path, tmp: Path, *, batches: int) -> list[dict]:
    """Windows/s of map-style batches of 8 against ``VideoWindows.take`` on the same indices,
    interleaved batch by batch: every reader reads batch k before any reads batch k + 1."""
    import datasets
    import torch
    from torch.utils.data import DataLoader

    params = {"window_length": WINDOW_LENGTH, "hop_size": 4}
    plain = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", cache_dir=str(tmp / "hf_cache"), **params
    )
    torch_ds = plain.with_format("torch")
    w = VideoWindows(root, **params)
    batches = min(batches, len(w) // 8)
    order = np.random.default_rng(1).permutation(len(w))[: 8 * batches].reshape(batches, 8)
    assert torch_ds.__getitems__([0])[0]["video"].dtype == torch.uint8
    assert np.asarray(plain.__getitems__([0])[0]["video"]).dtype == np.uint8

    def loader(dataset) -> Callable[[np.ndarray], object]:
        batches_out = iter(DataLoader(dataset, batch_size=8, sampler=order.reshape(-1).tolist()))

        def read(_: np.ndarray) -> None:
            assert next(batches_out)["video"].dtype == torch.uint8

        return read

    readers: dict[str, Callable[[np.ndarray], object]] = {
        "VideoWindows.take": w.take,
        "ds.__getitems__": lambda b: plain.__getitems__(b.tolist()),
        'ds.with_format("torch").__getitems__': lambda b: torch_ds.__getitems__(b.tolist()),
        "DataLoader(VideoWindows, batch_size=8)": loader(w),
        "DataLoader(ds, batch_size=8)": loader(plain),
        'DataLoader(ds.with_format("torch"), batch_size=8)': loader(torch_ds),
    }
    spent = dict.fromkeys(readers, 0.0)
    for batch in order:
        for name, read in readers.items():
            started = time.perf_counter()
            read(batch)
            spent[name] += time.perf_counter() - started
    rate = {name: order.size / t for name, t in spent.items()}
    rows = []
    for name in readers:
        base = (
            "DataLoader(VideoWindows, batch_size=8)"
            if "DataLoader" in name
            else "VideoWindows.take"
        )
        rows.append(dict(name=name, rate=rate[name], base=base, ratio=rate[name] / rate[base]))
    return rows


def print_map_style(rows: list[dict], size: str) -> None:
    print(
        f"\nmap-style load_dataset, {size}, window_length={WINDOW_LENGTH}, hop 4, random "
        "batches of 8 (the same indices for every reader), uint8 throughout:\n"
    )
    print("| reader | win/s | ratio |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['rate']:.1f} | {r['ratio']:.2f}x {r['base']} |")


# --- the datasets front ends (load_dataset both modes, to_iterable_dataset) ---------


def bench_front_ends(root: Path, tmp: Path, *, rounds: int, hop: int = 4) -> list[dict]:
    """Windows/s of each front end over the root, in order, interleaved round by round."""
    import datasets

    params = {"window_length": WINDOW_LENGTH, "hop_size": hop}
    mapped = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", cache_dir=str(tmp / "hf_cache"), **params
    ).with_format("numpy")

    # Each made once and read every round, as the epochs of training read them (a view's
    # memory is touched once: streaming keeps one view per process, the others their own).
    view = VideoWindows(root, **params)
    streamed = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **params
    )
    wrapped = VideoWindows(root, **params).to_iterable_dataset()

    def core() -> Iterator[object]:
        return view.iter_samples()

    def streaming() -> Iterator[object]:
        return iter(streamed)

    def map_style() -> Iterator[object]:
        return iter(mapped)

    def wrapper() -> Iterator[object]:
        return iter(wrapped)

    front_ends = {
        "core VideoWindows.iter_samples": core,
        "load_dataset(streaming=True)": streaming,
        'load_dataset() + with_format("numpy"), iterated': map_style,
        "VideoWindows.to_iterable_dataset()": wrapper,
    }
    rates: dict[str, list[float]] = {name: [] for name in front_ends}
    for round_ in range(rounds + 1):  # the first, untimed, as a first epoch
        for name, make in front_ends.items():
            iterator = make()  # set up outside the timing; the read is what is measured
            started = time.perf_counter()
            count = sum(1 for _ in iterator)
            if round_:
                rates[name].append(count / (time.perf_counter() - started))
    base = rates["core VideoWindows.iter_samples"]
    return [
        dict(
            name=name,
            windows=len(mapped),
            rate=float(np.median(r)),
            ratio=float(np.median([x / b for x, b in zip(r, base, strict=True)])),
            spread=(
                min(x / b for x, b in zip(r, base, strict=True)),
                max(x / b for x, b in zip(r, base, strict=True)),
            ),
        )
        for name, r in rates.items()
    ]


def print_front_ends(rows: list[dict], size: str = "224x224") -> None:
    print(
        f"\ndatasets front ends, {size}, window_length={WINDOW_LENGTH}, hop 4, "
        f"{rows[0]['windows']} windows per round, sequential order:\n"
    )
    print("| front end | win/s (median) | ratio to core (median, min-max) |")
    print("|---|---|---|")
    for r in rows:
        low, high = r["spread"]
        print(f"| {r['name']} | {r['rate']:.1f} | {r['ratio']:.2f}x ({low:.2f}-{high:.2f}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="the 224x224 tables on a tiny 64x64 root, 1 round"
    )
    parser.add_argument(
        "--only",
        choices=["core", "mp4", "overlap", "memory", "map", "front"],
        help="run one table only",
    )
    args = parser.parse_args()
    # --quick: the small root's tables, on 2 videos of 64 frames of 64x64, one round each.
    side, root_size = (64, {"videos": 2, "frames": 64}) if args.quick else (224, {})
    size = f"{side}x{side}"
    with tempfile.TemporaryDirectory(prefix="hf_lvf_bench_") as tmp_name:
        tmp = Path(tmp_name)
        small = make_root(tmp, side, side, **root_size)
        if args.only in (None, "core"):
            windows = 64 if args.quick else 1024
            rows = bench_size(small, random_batch=32, min_windows=windows, reference_every=1)
            if not args.quick:
                big = make_root(tmp, 720, 1280)
                rows += bench_size(big, random_batch=4, min_windows=96, reference_every=4)
            print_core(rows)
        if args.only in (None, "mp4") and not args.quick:
            print_mp4(bench_mp4(tmp, frames=120, rounds=3))
        if args.only in (None, "overlap"):
            print_overlap(bench_overlap(small, passes=1 if args.quick else 5), size)
        if args.only in (None, "memory"):
            print(f"\npeak traced memory of a sequential pass ({size}, hop 1) by windows read:")
            for n, mb in memory_flatness(small, hop=1):
                print(f"  {n:5d} windows: {mb:.1f} MB")
        if args.only in (None, "map"):
            rows = bench_map_style(small, tmp, batches=4 if args.quick else 60)
            print_map_style(rows, size)
        if args.only in (None, "front"):
            print_front_ends(bench_front_ends(small, tmp, rounds=1 if args.quick else 5), size)


if __name__ == "__main__":
    main()
