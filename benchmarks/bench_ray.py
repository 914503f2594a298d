"""Windows/s of a root read as a Ray Dataset against ``VideoWindows.iter_samples`` on the same
cores, against the least work each Ray reading must do, and against the reference reader's
algorithm, in one run.

- **Ray, map_batches**: ``hf_lvf.ray.read_windows`` on a local Ray of ``--cpus`` CPUs (default
  2), a function over every window in ``map_batches`` (Ray Data's batch inference: a model's
  stand-in that reads the windows and returns a number each), its results handed to this
  process. Ray runs the function in the read task, on the blocks as they are read (the two
  operators fused), so the windows never leave the task.
- **Ray, map_batches of 16**: the same with ``batch_size=16``. Ray does not fuse a read with
  a ``map_batches`` that sets a batch size: the windows go through Ray's object store to
  the tasks of the function.
- **Ray, its blocks** / **batches of 16**: every window handed to this process as numpy
  batches (``iter_batches``): the read tasks' blocks as they come (``batch_size=None``), or
  re-cut into batches of 16 (a batch across two blocks is a copy).
- **Ray, iter_torch_batches of 16**: the same as torch tensors (``iter_torch_batches``), what
  a Ray Train loop reads.
- **iter_samples**: the core view's sequential pass in this process, its decode threads on
  the same cores (``min(4, cores)``). It hands out each window as a read-only view into the
  frames it decoded: with hop 4, each decoded frame is in 4 windows and no window is copied.
- **limit, in the task**: the least a read task does for a block (an Arrow tensor column
  holds each window in memory of its own): the same windows in this process, 56 at a time,
  by ``VideoWindows.take`` (each frame decoded once, straight into its first window, then
  copied into the other windows that hold it). The limit of the fused ``map_batches``.
- **limit, to another process**: that, and each window copied once more into memory already
  paged in (what a block costs to pass through Ray's object store). The limit of the others.
- **reference**: the reference reader's algorithm (``reference/seed_backend.py``): per window,
  one Lance ``take`` of its rows, then one decode per frame, in one thread; it reads every
  4th window of a pass (it spends the same time on each).

Beside the time, each reader's CPU seconds (user + system, from ``/proc``) of this process
(the driver), Ray's workers and Ray's services (raylet, GCS), per window: what the machine
spends, not only what the driver waits; ``windows/s its CPU allows on 2 cores`` is the rate
that CPU would give with both cores busy all the time, a reader's limit on 2 cores.

Each Ray pass includes Ray Data's start of the read. The readers take turns pass by pass,
so that load from other processes on a shared machine hits all of them alike. Before the
timing each reads once untimed (Ray's workers started and their Lance handles opened, as
in every epoch after the first).

    python benchmarks/bench_ray.py            # 12 videos of 600 frames, 3 rounds
    python benchmarks/bench_ray.py --quick    # 2 videos of 64 frames of 64x64, 1 round, Ray on
                                              # 1 CPU (one worker), no untimed first reads
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import imagecodecs
import lance
import numpy as np

from hf_lvf import VideoWindows
from hf_lvf.ray import read_windows
from hf_lvf.write.synthetic import write_synthetic_root

WINDOW_LENGTH, HOP = 16, 4


def reference_read(windows: VideoWindows, dataset: lance.LanceDataset, index: int) -> np.ndarray:
    """The reference reader's algorithm: one Lance take per window, one decode per frame."""
    info = windows.segment_info(index)
    start_row = int(windows.layout.start_rows[info["video_idx"]])
    rows = [start_row + f for f in info["frame_indices"].tolist()]
    blobs = dataset.take(rows, columns=["bytes"]).column("bytes").to_pylist()
    out = np.empty((len(blobs), *windows.frame_size, 3), np.uint8)
    for j, blob in enumerate(blobs):
        imagecodecs.webp_decode(blob, out=out[j])
    return out


class BlockLimit:
    """The least work of reading a root's windows as blocks of ``rows`` windows, each window in
    memory of its own (what an Arrow tensor column holds): from the frames' bytes already in
    memory, each frame decoded once, straight into the first place of the block that needs
    it, then copied into every other place (a frame the block before has decoded is copied
    from there), on one thread per core, into memory already paged in. ``to_another_process``:
    each block is copied once more, while the next one decodes (a block's pass through Ray's
    object store)."""

    def __init__(self, windows: VideoWindows, dataset: lance.LanceDataset, *, rows: int):
        starts = windows.layout.start_rows
        # Per block: the bytes of the frames it decodes, each one's places in the block, the
        # frames it copies from the block before ((place there, places here)), its frames.
        self._blocks = []
        previous: dict[int, int] = {}  # Lance row -> its first place in the block before
        for start in range(0, len(windows), rows):
            stop = min(len(windows), start + rows)
            places: dict[int, list[int]] = {}
            for w in range(start, stop):
                info = windows.segment_info(w)
                for j, f in enumerate(info["frame_indices"].tolist()):
                    row = int(starts[info["video_idx"]]) + f
                    places.setdefault(row, []).append((w - start) * WINDOW_LENGTH + j)
            decoded = [row for row in places if row not in previous]
            blobs = dataset.take(decoded, columns=["bytes"]).column("bytes").to_pylist()
            copied = [(previous[row], places[row]) for row in places if row in previous]
            self._blocks.append(
                (blobs, [places[row] for row in decoded], copied, (stop - start) * WINDOW_LENGTH)
            )
            previous = {row: where[0] for row, where in places.items()}
        size = windows.frame_size
        self._out = np.ones((2, rows * WINDOW_LENGTH, *size, 3), np.uint8)
        self._handed = np.ones((rows * WINDOW_LENGTH, *size, 3), np.uint8)
        self._threads = os.cpu_count() or 1
        self._pool = ThreadPoolExecutor(self._threads)  # decodes
        self._ahead = ThreadPoolExecutor(1)  # reads the next block while one is handed on

    def _decode(self, k: int) -> None:
        blobs, places, copied, _ = self._blocks[k]
        out, before = self._out[k % 2], self._out[(k - 1) % 2]
        for source, where in copied:
            for place in where:
                out[place] = before[source]
        frames = iter(range(len(blobs)))

        def work() -> None:
            for i in frames:  # next() of a range iterator is atomic under the GIL
                first, *others = places[i]
                imagecodecs.webp_decode(blobs[i], out=out[first])
                for place in others:
                    out[place] = out[first]

        for future in [self._pool.submit(work) for _ in range(self._threads)]:
            future.result()

    def read(self, *, to_another_process: bool) -> int:
        pending = self._ahead.submit(self._decode, 0)
        windows = 0
        for k in range(len(self._blocks)):
            pending.result()
            if k + 1 < len(self._blocks):
                pending = self._ahead.submit(self._decode, k + 1)
            size = self._blocks[k][3]
            if to_another_process:
                self._handed[:size] = self._out[k % 2][:size]
            windows += size // WINDOW_LENGTH
        return windows


def first_pixels(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A stand-in for a model run in ``map_batches``: one number per window, from its frames'
    first pixels (it reads the windows, as a model does, and hardly adds work)."""
    return {"sample_idx": batch["sample_idx"], "value": batch["video"][:, :, 0, 0, 0].sum(1)}


class CpuClock:
    """CPU seconds (user + system) spent by this process and every process under it (Ray's
    raylet, GCS and workers, which ``ray.init`` starts as its descendants), by role: this
    process (``driver``), Ray's worker processes (``ray::...``, where the read tasks run)
    and Ray's services (raylet, GCS, agents). Read from ``/proc`` (Linux)."""

    ROLES = ("driver", "workers", "services")
    TICK = os.sysconf("SC_CLK_TCK")

    def read(self) -> dict[int, tuple[str, float]]:
        parent, stats = {}, {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue  # it ended
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            parent[int(entry)] = int(fields[1])
            stats[int(entry)] = (name, (int(fields[11]) + int(fields[12])) / self.TICK)
        me, out = os.getpid(), {}
        for pid, (name, seconds) in stats.items():
            ancestor = pid
            while ancestor not in (me, 0, 1) and ancestor in parent:
                ancestor = parent[ancestor]
            if ancestor != me:
                continue
            role = "driver" if pid == me else "workers" if name.startswith("ray::") else "services"
            out[pid] = (role, seconds)
        return out

    @staticmethod
    def spent(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]):
        """CPU seconds by role between two readings (a process started between them counts
        from zero; one that ended between them is lost: Ray keeps its workers)."""
        roles = dict.fromkeys(CpuClock.ROLES, 0.0)
        for pid, (role, seconds) in after.items():
            roles[role] += seconds - before.get(pid, (role, 0.0))[1]
        return roles


# Ray gives its raylet a fixed 30 s to register with the GCS (ray/_private/node.py) and then
# raises: on a loaded machine (the suite's other workers, another local Ray) the first start
# missed it once in CI. A start that timed out is shut down and tried again, twice at most.
RAY_STARTS = 3


def start_ray(ray, **options) -> None:
    for attempt in range(1, RAY_STARTS + 1):
        try:
            ray.init(**options)
            return
        except Exception as error:
            if "timed out during startup" not in str(error) or attempt == RAY_STARTS:
                raise
            print(
                f"Ray's start timed out (try {attempt} of {RAY_STARTS}); trying again",
                file=sys.stderr,
            )
            ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny root, one round")
    parser.add_argument("--cpus", type=int, help="CPUs of the local Ray (2; 1 with --quick)")
    args = parser.parse_args()
    # --quick: one CPU, so that Ray starts one worker (each one imports Ray Data and Lance).
    args.cpus = args.cpus or (1 if args.quick else 2)
    import ray

    # --quick: that everything runs (2 videos x 64 frames of 64x64, one round), its numbers
    # meaning nothing either way.
    videos, frames, size, rounds = (2, 64, (64, 64), 1) if args.quick else (12, 600, (224, 224), 3)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    clock = CpuClock()
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as tmp:
        root = write_synthetic_root(
            Path(tmp) / "root", num_videos=videos, num_frames=frames, frame_size=size
        )
        start_ray(
            ray,
            num_cpus=args.cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            # --quick: a small store (its 26 windows need 10 MB); else Ray's default.
            object_store_memory=256 * 2**20 if args.quick else None,
        )
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.print_on_execution_start = False
        try:
            windows = VideoWindows(root, window_length=WINDOW_LENGTH, hop_size=HOP)
            dataset = lance.dataset(str(root))
            total = len(windows)

            def by_ray(batch_size: int | None) -> int:
                ds = read_windows(root, window_length=WINDOW_LENGTH, hop_size=HOP)
                batches = ds.iter_batches(batch_size=batch_size)
                return sum(len(b["sample_idx"]) for b in batches)

            def by_torch(batch_size: int) -> int:
                ds = read_windows(root, window_length=WINDOW_LENGTH, hop_size=HOP)
                batches = ds.iter_torch_batches(batch_size=batch_size)
                return sum(len(b["sample_idx"]) for b in batches)

            def by_ray_map(batch_size: int | None) -> int:
                ds = read_windows(root, window_length=WINDOW_LENGTH, hop_size=HOP)
                ds = ds.map_batches(first_pixels, batch_size=batch_size, zero_copy_batch=True)
                return sum(len(b["sample_idx"]) for b in ds.iter_batches(batch_size=None))

            def by_iter_samples() -> int:
                return sum(1 for _ in windows.iter_samples())

            # A block of Ray's target size, as the read tasks cut them (56 windows at 224x224).
            window_bytes = WINDOW_LENGTH * size[0] * size[1] * 3
            rows = min(total, context.target_max_block_size // window_bytes + 1)
            limit = BlockLimit(windows, dataset, rows=rows)

            def by_reference() -> int:
                for i in range(0, total, 4):
                    reference_read(windows, dataset, i)
                return len(range(0, total, 4))

            readers = {
                "Ray, map_batches": lambda: by_ray_map(None),
                "Ray, map_batches of 16": lambda: by_ray_map(16),
                "Ray, its blocks": lambda: by_ray(None),
                "Ray, batches of 16": lambda: by_ray(16),
                "Ray, iter_torch_batches of 16": lambda: by_torch(16),
                "iter_samples": by_iter_samples,
                "limit, in the task": lambda: limit.read(to_another_process=False),
                "limit, to another process": lambda: limit.read(to_another_process=True),
                "reference": by_reference,
            }
            # The limit each Ray reading is compared with.
            limits = dict.fromkeys(readers, "limit, to another process")
            limits["Ray, map_batches"] = "limit, in the task"
            # --quick: no untimed pass (the one round runs every reader; its numbers mean nothing).
            for read in [] if args.quick else readers.values():
                read()  # untimed: workers up, Lance open, memory touched
            spent = dict.fromkeys(readers, 0.0)
            cpu = {name: dict.fromkeys(CpuClock.ROLES, 0.0) for name in readers}
            count = dict.fromkeys(readers, 0)
            for _ in range(rounds):
                for name, read in readers.items():
                    before = clock.read()
                    started = time.perf_counter()
                    count[name] += read()
                    spent[name] += time.perf_counter() - started
                    for role, seconds in CpuClock.spent(before, clock.read()).items():
                        cpu[name][role] += seconds
        finally:
            ray.shutdown()
    rates = {name: count[name] / spent[name] for name in readers}
    base = rates["iter_samples"]
    print(
        f"\n{videos} videos x {frames} frames of {size[0]}x{size[1]}, window {WINDOW_LENGTH}, "
        f"hop {HOP}: {total} windows; Ray on {args.cpus} CPUs ({os.cpu_count()} cores), "
        f"{rounds} rounds\n"
    )
    print(
        "| reader | windows read | seconds | windows/s | vs iter_samples | vs its limit "
        "| vs reference | CPU ms a window (driver + workers + services) | cores busy "
        "| windows/s its CPU allows on 2 cores |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in readers:
        of_limit = f"{rates[name] / rates[limits[name]]:.2f}x" if name.startswith("Ray") else "-"
        parts = cpu[name]
        total_cpu = sum(parts.values())
        per = {role: 1000 * seconds / count[name] for role, seconds in parts.items()}
        split = " + ".join(f"{per[role]:.2f}" for role in CpuClock.ROLES)
        print(
            f"| {name} | {count[name]} | {spent[name]:.2f} | {rates[name]:.1f} | "
            f"{rates[name] / base:.2f}x | {of_limit} | {rates[name] / rates['reference']:.2f}x | "
            f"{1000 * total_cpu / count[name]:.2f} ({split}) | {total_cpu / spent[name]:.2f} | "
            f"{2 * count[name] / total_cpu:.0f} |"
        )


if __name__ == "__main__":
    main()
