"""Reading a root on S3 against reading the same root locally, with 0 and 50 ms per request.

The object store is moto's S3 server behind the test proxy (``tests/_s3.py``), in a process
of its own; the proxy adds a fixed delay before every answer (a round trip to a far-away
bucket). The real clients (lance for the Lance table, pyarrow for ``_metadata.json``) read
it with lance's storage options. Every cell is a ratio: windows/s reading ``s3://`` over
windows/s reading the local folder, measured in the same process, passes alternating
between the two; the median of the rounds.

    python benchmarks/bench_s3.py            # 12 videos x 200 frames, 224x224 (~4 min)
    python benchmarks/bench_s3.py --quick    # seconds: 2 videos x 48 frames, 64x64, at 50 ms

Columns (window_length 16, hop 4):

- ``sequential``: a pass of ``VideoWindows.iter_samples`` (read-ahead on);
- ``shuffled``: ``to_iterable_dataset(shuffle=True)``;
- ``iter random``: ``iter_samples`` over a random permutation (a known order: read ahead);
- ``take x16``: random batches of 16 windows through ``take`` (no known order to read ahead);
- ``streaming``: ``load_dataset("hf_lvf", data_dir="s3://...", streaming=True)``;
- ``DataLoader``: ``safe_dataloader(windows, batch_size=16, shuffle=True, num_workers=2)``
  (its shuffle is a known order: each worker reads its next batches ahead);

then the data requests per window of the sequential pass, the random orders and the
DataLoader (from the proxy's log), the requests that opening a root and its first read
cost, the seconds to the first window of a streaming ``load_dataset``, and each column at
50 ms as a ratio to the same column at 0 ms (moto's own CPU bounds the 0 ms column).
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
import urllib.request
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
WINDOW = {"window_length": 16, "hop_size": 4}
BATCH = 16


def _log(endpoint: str, path_contains: str = "") -> int:
    """Requests through the proxy since the last call (matching ``path_contains``)."""
    url = f"{endpoint}/_proxy/requests?clear=1&path_contains={path_contains}"
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())["count"]


def _rate(run, limit: int) -> float:
    started = time.perf_counter()
    count = run(limit)
    return count / (time.perf_counter() - started)


def _count(iterable, limit: int) -> int:
    n = 0
    for _ in iterable:
        n += 1
        if n >= limit:
            break
    return n


def _batch_len(batch: list) -> int:
    return len(batch)


def child(args: argparse.Namespace) -> None:
    """Measure one latency; the server's URI and options come in the environment."""
    import datasets

    import hf_lvf
    from hf_lvf import VideoWindows

    served = json.loads(os.environ["HF_LVF_BENCH_S3"])
    uri, options = served["uri"], served["options"]
    endpoint = options["aws_endpoint"]
    results: dict[str, object] = {}

    _log(endpoint)
    started = time.perf_counter()
    remote = VideoWindows(uri, storage_options=options, **WINDOW)
    results["open_requests"] = _log(endpoint)
    remote.take([0])
    results["first_read_requests"] = _log(endpoint)
    results["open_s"] = time.perf_counter() - started
    local_view = VideoWindows(args.local, **WINDOW)
    local_view.take([0])

    started = time.perf_counter()
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=uri, storage_options=options, split="train", streaming=True, **WINDOW
    )
    next(iter(ds))
    results["first_window_s"] = time.perf_counter() - started

    limit = args.windows
    perm = np.random.default_rng(0).permutation(len(local_view))

    def sequential(view):
        return lambda n: _count(view.iter_samples(np.arange(min(n, len(view)))), n)

    def random_order(view):
        return lambda n: _count(view.iter_samples(perm[: min(n, len(perm))]), n)

    def random_take(view):
        def run(n):
            done = 0
            for lo in range(0, min(n, len(perm)), BATCH):
                done += len(view.take(perm[lo : lo + BATCH]))
            return done

        return run

    def shuffled(view):
        return lambda n: _count(view.to_iterable_dataset(shuffle=True, seed=1), n)

    def streaming(source, **kwargs):
        ds = datasets.load_dataset(
            "hf_lvf", data_dir=source, split="train", streaming=True, **kwargs, **WINDOW
        )
        return lambda n: _count(ds, n)

    def dataloader(view):
        loader = hf_lvf.safe_dataloader(
            view, batch_size=BATCH, shuffle=True, num_workers=2, collate_fn=_batch_len
        )

        def run(n):
            done = 0
            for size in loader:
                done += size
                if done >= n:
                    break
            return done

        return run

    remote_loader = dataloader(remote)  # its workers started once, for both measurements
    cases = {
        "sequential": (sequential(remote), sequential(local_view)),
        "shuffled": (shuffled(remote), shuffled(local_view)),
        "iter random": (random_order(remote), random_order(local_view)),
        "take x16": (random_take(remote), random_take(local_view)),
        "streaming": (streaming(uri, storage_options=options), streaming(str(args.local))),
        "DataLoader": (remote_loader, dataloader(local_view)),
    }
    for name, (s3_run, local_run) in cases.items():
        s3_run(2 * BATCH)  # warm up: worker processes, pools, connections
        local_run(2 * BATCH)
        ratios = []
        for _ in range(args.rounds):
            s3_rate = _rate(s3_run, limit)
            local_rate = _rate(local_run, limit)
            ratios.append(s3_rate / local_rate)
        results[name] = statistics.median(ratios)
        results[f"{name} local/s"] = local_rate

    per_window = {
        "sequential": sequential(remote),
        "iter random": random_order(remote),
        "take x16": random_take(remote),
        "DataLoader": remote_loader,
    }
    for name, run in per_window.items():
        run(2 * BATCH)  # a DataLoader's workers read ahead past the last pass's end
        _log(endpoint)
        n = run(limit)
        results[f"{name} requests/window"] = _log(endpoint, "/data/") / n
    print(json.dumps(results), flush=True)


def _run_child(args: argparse.Namespace, root: Path, latency: float) -> dict:
    server = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "tests" / "_s3.py"), "--folder", str(root)]
        + ["--latency", str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        served = server.stdout.readline()
        env = {**os.environ, "HF_LVF_BENCH_S3": served}  # credentials: not on a command line
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
        for name in [n for n in env if n.startswith("AWS_")]:
            env.pop(name)
        command = [sys.executable, __file__, "--child", "--local", str(root)]
        command += ["--windows", str(args.windows), "--rounds", str(args.rounds)]
        out = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
    finally:
        server.stdin.close()
        server.wait()
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--latencies", help="ms added per request (default: 50 with --quick, else 0,50)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--local", help=argparse.SUPPRESS)
    parser.add_argument("--windows", type=int, default=None, help="windows per measurement")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    args.windows = args.windows or (32 if args.quick else 320)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.latencies = args.latencies or ("50" if args.quick else "0,50")
    from hf_lvf.write.synthetic import write_synthetic_root

    with tempfile.TemporaryDirectory(prefix="bench_s3-") as name:
        videos, frames, side = (2, 48, 64) if args.quick else (12, 200, 224)
        root = write_synthetic_root(
            Path(name) / "root", num_videos=videos, num_frames=frames, frame_size=(side, side)
        )
        latencies = [float(ms) / 1000 for ms in args.latencies.split(",")]
        rows = [(ms, _run_child(args, root, ms)) for ms in latencies]

    cases = ["sequential", "shuffled", "iter random", "take x16", "streaming", "DataLoader"]
    print(
        f"\n{videos} videos x {frames} frames, {side}x{side}, window 16, hop 4; {args.windows} "
        f"windows per pass, median of {args.rounds} rounds; ratio s3:// / local\n"
    )
    per_window = ["sequential", "iter random", "take x16", "DataLoader"]
    header = ["latency", *cases, *(f"req/window {c}" for c in per_window), "open + 1st read req"]
    header.append("1st streaming window s")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for latency, r in rows:
        cells = [f"{latency * 1000:.0f} ms", *(f"{r[c]:.2f}x" for c in cases)]
        cells += [f"{r[f'{c} requests/window']:.3f}" for c in per_window]
        cells += [
            f"{r['open_requests']} + {r['first_read_requests']}",
            f"{r['first_window_s']:.2f}",
        ]
        print("| " + " | ".join(cells) + " |")
    if len(rows) > 1:  # moto's own CPU bounds the 0 ms column: the slowest against it
        slow, fast = rows[-1][1], rows[0][1]
        print("\n" + ", ".join(f"{c} {slow[c] / fast[c]:.2f}x" for c in cases), end="")
        print(f" ({rows[-1][0] * 1000:.0f} ms against {rows[0][0] * 1000:.0f} ms)")
    local = rows[0][1]
    print("\nlocal windows/s: " + ", ".join(f"{c} {local[f'{c} local/s']:.0f}" for c in cases))


if __name__ == "__main__":
    main()
