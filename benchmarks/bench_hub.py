"""Reading a Hub-hosted root against reading the same root locally, at 0, 20 and 50 ms per answer.

The Hub is the local stand-in ``tests/hub_server.py`` in a process of its own, adding a
fixed delay before every answer (a round trip to a far-away Hub). The real clients
(huggingface_hub, datasets, pylance) read from it through ``HF_ENDPOINT``. Every row is a
ratio: windows/s reading ``hf://`` over windows/s reading the local folder, measured in
the same process, each pass alternating between the two; the median of the rounds. A
pass's rate runs from its first window to its last (480 windows, ``--windows``): the
round trip a pass in a new order starts with is the same whatever follows, and is shown
apart (the first streaming window).

    python benchmarks/bench_hub.py            # 12 videos x 200 frames, 224x224 (~6 min)
    python benchmarks/bench_hub.py --quick    # 4 videos x 100 frames of 64x64, 0 ms, one round,
                                              # DataLoaders of 1 worker, one of them reused
    python benchmarks/bench_hub.py --latencies 50 --cases "shuffled,DataLoader"

Columns (window_length 16, hop 4):

- ``iter_samples``: a sequential pass of ``VideoWindows.iter_samples`` (read-ahead on);
- ``iter random``: ``iter_samples`` over a random permutation (a known order: read ahead);
- ``take x16``: random batches of 16 windows through ``take`` (no known order: no read-ahead);
- ``shuffled``: ``to_iterable_dataset(shuffle=True)``;
- ``streaming``: iterating ``load_dataset("hf_lvf", data_files="hf://...", streaming=True)``
  (made once; its setup is in the last column);
- ``streaming .shuffle``: that dataset's ``.shuffle(seed=pass, buffer_size=64)``, a new
  shard order each pass;
- ``DataLoader``: ``safe_dataloader(windows, batch_size=16, shuffle=True, num_workers=2)``
  (its shuffle is a known order: each worker reads its next batches ahead);

then the Hub requests per window of the sequential pass, of the random orders and of the
DataLoader (read from the stand-in's log), the requests that opening a root costs, and the
seconds to the first window of a streaming ``load_dataset`` from a cold cache. Last, the
bound of each ratio: a pass in a new order starts with a fetch that nothing was read ahead
of, so at best it takes the local pass's time plus one round trip (``take x16``, in no
known order, one round trip a batch).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
WINDOW = {"window_length": 16, "hop_size": 4}
BATCH = 16
REPO = "org/clips"
SHUFFLE_BUFFER = 64
CASES = (
    "iter_samples",
    "iter random",
    "take x16",
    "shuffled",
    "streaming",
    "streaming .shuffle",
    "DataLoader",
)


# --- the measuring child: one latency, local and Hub in the same process ---------------------


def _log(endpoint: str, clear: bool = True, path_contains: str | None = None) -> dict:
    query = f"?clear={int(clear)}" + (f"&path_contains={path_contains}" if path_contains else "")
    with urllib.request.urlopen(f"{endpoint}/_stand-in/requests{query}", timeout=30) as r:
        return json.loads(r.read())


# When the first item of the pass being timed came, and how many windows it held.
_first: list[float] = []


def _rate(run, limit: int) -> float:
    """Windows/s of ``run(limit)`` (which returns how many windows it read) after its first
    item: a pass in a new order starts with a fetch that nothing could be read ahead of, a
    round trip that is the same whatever follows (the "1st window" columns show it)."""
    _first.clear()
    count = run(limit)
    first_at, first_windows = _first[0]
    return (count - first_windows) / (time.perf_counter() - first_at)


def _seen(windows: int = 1) -> None:
    if not _first:
        _first.append((time.perf_counter(), windows))


def _count(iterable, limit: int) -> int:
    n = 0
    for _ in iterable:
        _seen()
        n += 1
        if n >= limit:
            break
    return n


def _batch_len(batch: list) -> int:
    return len(batch)


def child(args: argparse.Namespace) -> None:
    import datasets
    import torch

    import hf_lvf
    from hf_lvf import VideoWindows

    endpoint, sha, local = args.endpoint, args.sha, args.local
    uri = f"hf://datasets/{REPO}"
    files = f"hf://datasets/{REPO}@{sha}/**"
    results: dict[str, object] = {}

    # Opening a root: requests and seconds (the metadata is not cached yet).
    _log(endpoint)
    started = time.perf_counter()
    remote = VideoWindows(uri, revision=sha, **WINDOW)
    remote.take([0])
    results["open_s"] = time.perf_counter() - started
    results["open_requests"] = _log(endpoint)["count"]
    local_view = VideoWindows(local, **WINDOW)
    local_view.take([0])

    # First window of a streaming load_dataset, cold: nothing cached in this process.
    started = time.perf_counter()
    ds = datasets.load_dataset("hf_lvf", data_files=files, split="train", streaming=True, **WINDOW)
    next(iter(ds))
    results["first_window_s"] = time.perf_counter() - started
    _log(endpoint)

    limit = args.windows
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(local_view))

    def sequential(view):
        return lambda n: _count(view.iter_samples(np.arange(min(n, len(view)))), n)

    def random_order(view):
        return lambda n: _count(view.iter_samples(perm[: min(n, len(perm))]), n)

    def random_take(view):
        def run(n):
            done = 0
            for lo in range(0, min(n, len(perm)), BATCH):
                done += len(view.take(perm[lo : lo + BATCH]))
                _seen(done)
            return done

        return run

    def shuffled(view):
        return lambda n: _count(view.to_iterable_dataset(shuffle=True, seed=1), n)

    def streaming(source):
        # Made once (its setup is the first-window column): a pass is one epoch's iteration.
        kwargs = {"data_files": source} if source.startswith("hf://") else {"data_dir": source}
        ds = datasets.load_dataset("hf_lvf", split="train", streaming=True, **kwargs, **WINDOW)
        return lambda n: _count(ds, n)

    def streaming_shuffled(source):
        # The shards in a new order each pass (seed), their windows through a buffer of 64.
        kwargs = {"data_files": source} if source.startswith("hf://") else {"data_dir": source}
        ds = datasets.load_dataset("hf_lvf", split="train", streaming=True, **kwargs, **WINDOW)
        passes = iter(range(1_000_000))

        def run(n):
            return _count(ds.shuffle(seed=next(passes), buffer_size=SHUFFLE_BUFFER), n)

        return run

    loaders = {}

    def dataloader(view):
        # Made once: its persistent workers open the root once, then every pass reuses them.
        # --quick: one worker each, and the requests counted on the Hub's loader of the table
        # (not a third one: each worker is a process that imports torch and hf_lvf).
        if args.quick and id(view) in loaders:
            loader = loaders[id(view)]
        else:
            loader = hf_lvf.safe_dataloader(
                view,
                batch_size=BATCH,
                shuffle=True,
                num_workers=1 if args.quick else 2,
                collate_fn=_batch_len,
            )
            loaders[id(view)] = loader

        def run(n):
            done = 0
            for size in loader:
                _seen(size)
                done += size
                if done >= n:
                    break
            return done

        return run

    cases = {
        "iter_samples": (sequential(remote), sequential(local_view)),
        "iter random": (random_order(remote), random_order(local_view)),
        "take x16": (random_take(remote), random_take(local_view)),
        "shuffled": (shuffled(remote), shuffled(local_view)),
        "streaming": (streaming(files), streaming(str(local))),
        "streaming .shuffle": (streaming_shuffled(files), streaming_shuffled(str(local))),
        "DataLoader": (dataloader(remote), dataloader(local_view)),
    }
    cases = {name: runs for name, runs in cases.items() if name in args.cases}
    for name, (hub_run, local_run) in cases.items():
        hub_run(2 * BATCH)  # warm up: worker processes, pools, connections
        local_run(2 * BATCH)
        ratios = []
        for _ in range(args.rounds):
            hub_rate = _rate(hub_run, limit)
            local_rate = _rate(local_run, limit)
            ratios.append(hub_rate / local_rate)
        results[name] = statistics.median(ratios)
        results[f"{name} local/s"] = local_rate

    # Requests per window of one sequential pass and of random batches.
    per_window = {
        "iter_samples": sequential(remote),
        "iter random": random_order(remote),
        "take x16": random_take(remote),
        "DataLoader": dataloader(remote),
    }
    for name, run in per_window.items():
        if name not in args.cases:
            continue
        run(2 * BATCH)  # a DataLoader's workers read ahead past the last pass's end
        _log(endpoint)
        n = run(limit)
        results[f"{name} requests/window"] = _log(endpoint, path_contains="/data/")["count"] / n
    del torch
    print(json.dumps(results), flush=True)


# --- the parent: data, servers, table ----------------------------------------------------------


def start_hub_server(
    blobs: Path, folder: Path, repo: str, latency: float
) -> tuple[subprocess.Popen, str, str]:
    """The Hub stand-in (tests/hub_server.py) serving ``folder`` as ``repo``, ``latency`` s a
    request: ``(process, endpoint, commit sha)``."""
    server = subprocess.Popen(
        [
            sys.executable,
            str(REPO_ROOT / "tests" / "hub_server.py"),
            "--root",
            str(blobs),
            "--folder",
            str(folder),
            "--repo",
            repo,
            "--latency",
            str(latency),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    endpoint, sha = server.stdout.readline().split()
    return server, endpoint, sha


def _run_child(args, tmp: Path, root: Path, latency: float) -> dict:
    server, endpoint, sha = start_hub_server(tmp / f"blobs-{latency}", root, REPO, latency)
    home = tmp / f"hf-home-{latency}"
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from hub_server import CLIENT_ENV_DROPPED, client_environment

    env = {**os.environ, **client_environment(endpoint, home)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    for name in CLIENT_ENV_DROPPED:
        env.pop(name, None)
    command = [
        sys.executable,
        __file__,
        "--child",
        "--endpoint",
        endpoint,
        "--sha",
        sha,
        "--local",
        str(root),
        "--windows",
        str(args.windows),
        "--rounds",
        str(args.rounds),
        "--cases",
        ",".join(args.cases),
        *(["--quick"] if args.quick else []),
    ]
    try:
        out = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(home, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--latencies", default=None, help="ms added per answer (0,20,50; --quick: 0)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--sha", help=argparse.SUPPRESS)
    parser.add_argument("--local", help=argparse.SUPPRESS)
    parser.add_argument("--windows", type=int, default=None, help="windows per measurement")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}"
    )
    args = parser.parse_args()
    args.cases = [c for c in args.cases.split(",") if c]
    if unknown := sorted(set(args.cases) - set(CASES)):
        parser.error(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    if args.child:
        child(args)
        return
    # --quick: no latency (the stand-in would sleep before every answer; the rates mean nothing).
    args.latencies = args.latencies or ("0" if args.quick else "0,20,50")
    args.windows = args.windows or (32 if args.quick else 480)
    args.rounds = args.rounds or (1 if args.quick else 3)
    from hf_lvf.write.synthetic import write_synthetic_root

    with tempfile.TemporaryDirectory(prefix="bench_hub-") as name:
        tmp = Path(name)
        videos, frames = (4, 100) if args.quick else (12, 200)
        side = 64 if args.quick else 224  # quick: that it runs, not what it measures
        root = write_synthetic_root(
            tmp / "root", num_videos=videos, num_frames=frames, frame_size=(side, side)
        )
        latencies = [float(ms) / 1000 for ms in args.latencies.split(",")]
        rows = [(ms, _run_child(args, tmp, root, ms)) for ms in latencies]

    cases = list(args.cases)
    print(
        f"\n{videos} videos x {frames} frames, {side}x{side}, window 16, hop 4; "
        f"{args.windows} windows per pass, median of {args.rounds} rounds; ratio Hub / local\n"
    )
    per_window = [
        c for c in ("iter_samples", "iter random", "take x16", "DataLoader") if c in cases
    ]
    header = ["latency", *cases, *(f"req/window {c}" for c in per_window)]
    header += ["open req", "1st window s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for latency, r in rows:
        cells = [f"{latency * 1000:.0f} ms", *(f"{r[c]:.2f}x" for c in cases)]
        cells += [f"{r[f'{c} requests/window']:.3f}" for c in per_window]
        cells += [
            f"{r['open_requests']}",
            f"{r['first_window_s']:.2f}",
        ]
        print("| " + " | ".join(cells) + " |")
    local = rows[0][1]
    print("\nlocal windows/s: " + ", ".join(f"{c} {local[f'{c} local/s']:.0f}" for c in cases))
    # The first window of a pass (the fetch nothing could be read ahead of) is left out of
    # the rates: reading ahead, a pass can match the local one; take x16 (no known order)
    # waits one round trip a batch.
    print("\nbound: after the first window, no wait (take x16: a round trip a batch):\n")
    print("| latency | " + " | ".join(cases) + " |")
    print("|" + "---|" * (len(cases) + 1))
    for latency, r in rows:
        bounds = [
            1 / (1 + latency * r[f"{c} local/s"] / BATCH) if c == "take x16" else 1.0 for c in cases
        ]
        print(f"| {latency * 1000:.0f} ms | " + " | ".join(f"{b:.2f}x" for b in bounds) + " |")


if __name__ == "__main__":
    main()
