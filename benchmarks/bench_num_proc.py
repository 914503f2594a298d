"""``Dataset.map(f, num_proc=2)`` over a map-style hf_lvf dataset, by how its pool starts.

pylance is not fork-safe, and ``load_dataset`` has used Lance in the parent, so ``datasets``'
forked pool cannot read. hf_lvf starts that pool with ``forkserver`` instead (the default,
measured here) rather than letting each forked child re-open Lance (measured here with
hf_lvf's fork check switched off: works on this machine, but neither tokio nor pylance
supports it). Also timed: ``num_proc=None`` (one process) and ``spawn`` (what a user gets
with ``multiprocess.set_start_method("spawn", force=True)``).

Each way runs in a fresh process: one ``load_dataset`` of 42 windows of 16x224x224
(2 videos of 96 frames, hop 4), then ``--rounds`` maps of a function that reads every
window (its mean) and adds a field, not from the cache. The first map of a process pays
for starting the forkserver (or the spawned interpreters' imports); the table shows it
and the median of the later ones.

    python benchmarks/bench_num_proc.py              # ~1 min on 2 cores
    python benchmarks/bench_num_proc.py --quick      # seconds: 2 windows of 16x32x32, 1 map,
                                                     # no spawn (its pool's imports: ~5 s), the
                                                     # ways one after another in one process

A way that fails is a row of the table, with its error; the exit status is 1 when a way
other than the unsupported fork fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WAYS = {
    "num_proc=None (one process)": "none",
    "forkserver (hf_lvf's default after a read)": "forkserver",
    "fork, each child re-opens Lance (unsupported)": "fork-reopen",
    "spawn (multiprocess.set_start_method)": "spawn",
}


def _mean(row: dict) -> dict:
    return {"mean": float(row["video"].mean()), "y": row["label"] + 1}


def run_way(way: str, root: str, rounds: int) -> dict:
    import datasets  # here, not at the top: the parent, which only writes the root, skips it
    import multiprocess

    import hf_lvf  # noqa: F401  (registers the builder)
    from hf_lvf import processes

    if way == "spawn":
        multiprocess.set_start_method("spawn", force=True)
    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory() as cache:
        ds = datasets.load_dataset(
            "hf_lvf", data_dir=root, split="train", cache_dir=cache, window_length=16, hop_size=4
        )
        ds[0]  # the parent has read
        times, means = [], None
        for _ in range(rounds):
            if way == "fork-reopen":
                processes._lance_opened_by_pid = None  # switch off the check: children re-open
            started = time.perf_counter()
            out = ds.map(
                _mean,
                num_proc=None if way == "none" else 2,
                load_from_cache_file=False,
            )
            times.append(time.perf_counter() - started)
            means = list(out["mean"])
    return {"times": times, "means": means}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="maps (default: 1 with --quick, else 3)")
    parser.add_argument("--quick", action="store_true", help="a tiny root, 1 map")
    parser.add_argument("--way", help=argparse.SUPPRESS)  # ways, comma-separated
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 3)
    if args.way:  # these ways, one after another in this fresh process
        results = {}
        for way in args.way.split(","):
            try:
                results[way] = run_way(way, args.root, args.rounds)
            except Exception as error:  # reported in the table, as a failed process is
                print(f"{way} failed: {error!r}", file=sys.stderr)
                results[way] = {"failed": f"{type(error).__name__}: {error}"}
        print(json.dumps(results))
        return
    from hf_lvf.write.synthetic import write_synthetic_root

    results = {}
    frames, side = (16, 32) if args.quick else (96, 224)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_synthetic_root(
            Path(tmp) / "clips", num_videos=2, num_frames=frames, frame_size=(side, side)
        )
        # Each way in a fresh process; --quick: no spawn, and the others one after another in
        # one process (one interpreter's imports, not three: a pool is chosen per map, and the
        # fork way, last, is the only one that switches off the fork check).
        ways = [way for way in WAYS.values() if not (args.quick and way == "spawn")]
        for group in [ways] if args.quick else [[way] for way in ways]:
            command = [sys.executable, __file__, "--way", ",".join(group), "--root", str(root)]
            command += ["--rounds", str(args.rounds)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if done.returncode:  # reported in the table, with the error's last line
                print(f"{', '.join(group)} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
                for way in group:
                    results[way] = {"failed": done.stderr.strip().splitlines()[-1]}
                continue
            results.update(json.loads(done.stdout.strip().splitlines()[-1]))
        results = {name: results[way] for name, way in WAYS.items() if way in results}
    same = len({json.dumps(r.get("means")) for r in results.values() if "means" in r}) == 1
    one_process = results["num_proc=None (one process)"]["times"]
    base = _later(one_process) or one_process[0]  # with one map: first maps against it
    windows = 2 * ((frames - 16) // 4 + 1)  # window_length 16, hop 4, 2 videos
    print(
        f"load average {os.getloadavg()[0]:.2f}; {windows} windows of 16x{side}x{side}; "
        f"{args.rounds} maps"
    )
    print("| pool | first map (s) | later maps, median (s) | x num_proc=None |")
    print("|---|---|---|---|")
    for name, result in results.items():
        if "failed" in result:
            print(f"| {name} | failed: {result['failed'][:80]} | | |")
            continue
        first, later = result["times"][0], _later(result["times"])
        cell = "-" if later is None else f"{later:.2f}"
        print(f"| {name} | {first:.2f} | {cell} | {(later or first) / base:.2f}x |")
    print(f"every way that ran computed the same means: {same}")
    failed = [name for name, result in results.items() if "failed" in result]
    if set(failed) - {"fork, each child re-opens Lance (unsupported)"}:
        sys.exit(f"failed: {', '.join(failed)}")


def _later(times: list[float]) -> float | None:
    """The median of the maps after the first (which starts the pool), if there are any."""
    return statistics.median(times[1:]) if len(times) > 1 else None


if __name__ == "__main__":
    main()
