"""Importing from the Hub against importing the same files from a local copy, at 50 ms an answer.

The Hub is the local stand-in ``tests/hub_server.py`` in a process of its own, adding a fixed
delay before every answer. Two sources, each converted by ``convert_videos`` (default pool,
WebP) from ``hf://datasets/...@sha`` with a cold Hugging Face cache and from the local folder,
alternating, in one process; the table shows the seconds and the ratio Hub / local (the median
of the rounds), and the Hub requests of one import:

- a LeRobot v3 dataset (layout written from its published format, tests/_lerobot.py):
  episodes packed in one AV1 (or H.264) MP4, per-frame parquet;
- webdataset shards (written with ``webdataset.TarWriter``): MP4 + txt per sample.

    python benchmarks/bench_import.py            # 8 episodes x 100 frames, 160x160, 3 rounds
    python benchmarks/bench_import.py --quick    # seconds: 2 episodes x 24 frames, 64x64, 1 round,
                                                 # converted in this process (workers=0)
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

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(HERE))  # bench_hub, when this file is imported rather than run

from bench_hub import start_hub_server  # noqa: E402  (the same stand-in, started alike)


def _requests(endpoint: str) -> int:
    with urllib.request.urlopen(f"{endpoint}/_stand-in/requests?clear=1", timeout=30) as r:
        return json.loads(r.read())["count"]


def child(args: argparse.Namespace) -> None:
    from huggingface_hub import constants

    from hf_lvf.convert import convert_videos

    out = Path(args.out)
    cases = {
        "LeRobot v3": (f"hf://datasets/{args.lerobot_repo}@{args.lerobot_sha}", args.lerobot),
        "webdataset": (
            f"hf://datasets/{args.shards_repo}@{args.shards_sha}/{{00000..00001}}.tar",
            f"{args.shards}/{{00000..00001}}.tar",
        ),
    }
    results = {}
    for name, (remote, local) in cases.items():
        hub_s, local_s, requests = [], [], 0
        for r in range(args.rounds):
            shutil.rmtree(constants.HF_HUB_CACHE, ignore_errors=True)  # a cold cache each round
            _requests(args.endpoint)
            started = time.perf_counter()
            convert_videos(remote, out / f"hub-{name}-{r}", progress=False, workers=args.workers)
            hub_s.append(time.perf_counter() - started)
            requests = _requests(args.endpoint)
            started = time.perf_counter()
            convert_videos(local, out / f"local-{name}-{r}", progress=False, workers=args.workers)
            local_s.append(time.perf_counter() - started)
        ratios = [h / loc for h, loc in zip(hub_s, local_s, strict=True)]
        results[name] = {
            "hub_s": statistics.median(hub_s),
            "local_s": statistics.median(local_s),
            "ratio": statistics.median(ratios),
            "requests": requests,
        }
    print(json.dumps(results), flush=True)


def _serve(tmp: Path, folder: Path, repo: str, latency: float) -> tuple[subprocess.Popen, str, str]:
    return start_hub_server(tmp / f"blobs-{repo.replace('/', '-')}", folder, repo, latency)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workers", type=int, help="(default: 0 with --quick, else 2)")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=None)
    for hidden in ("child", "endpoint", "out", "lerobot", "lerobot_repo", "lerobot_sha"):
        kind = {"action": "store_true"} if hidden == "child" else {}
        parser.add_argument(f"--{hidden}", help=argparse.SUPPRESS, **kind)
    for hidden in ("shards", "shards_repo", "shards_sha"):
        parser.add_argument(f"--{hidden}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    rounds = args.rounds or (1 if args.quick else 3)
    workers = (0 if args.quick else 2) if args.workers is None else args.workers
    episodes, frames, size = (2, 24, 64) if args.quick else (8, 100, 160)
    import webdataset as wds
    from _lerobot import write_lerobot
    from _videos import write_video
    from hub_server import CLIENT_ENV_DROPPED, client_environment

    with tempfile.TemporaryDirectory(prefix="bench_import-") as name:
        tmp = Path(name)
        write_lerobot(tmp / "lerobot", lengths=(frames,) * episodes, size=size)
        (tmp / "shards").mkdir()
        for s in range(2):
            with wds.TarWriter(str(tmp / "shards" / f"{s:05d}.tar")) as sink:
                for k in range(episodes // 2):
                    clip = write_video(tmp / "mp4" / f"{s}-{k}.mp4", frames, (size, size), seed=k)
                    sink.write({"__key__": f"{k:06d}", "mp4": clip.read_bytes(), "txt": "a clip"})
        latency = args.latency_ms / 1000
        robot, endpoint, robot_sha = _serve(tmp, tmp / "lerobot", "org/robot", latency)
        try:
            # The stand-in serves one folder as it starts: the shards' repo is uploaded to it.
            from hub_server import DEFAULT_TOKEN
            from huggingface_hub import HfApi

            api = HfApi(endpoint=endpoint, token=DEFAULT_TOKEN)
            api.create_repo("org/shards", repo_type="dataset", exist_ok=True)
            shards_sha = api.upload_folder(
                folder_path=tmp / "shards", repo_id="org/shards", repo_type="dataset"
            ).oid
            env = {**os.environ, **client_environment(endpoint, tmp / "hf-home")}
            env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
            for var in CLIENT_ENV_DROPPED:
                env.pop(var, None)
            command = [
                sys.executable, __file__, "--child", "--endpoint", endpoint, "--out",
                str(tmp / "out"), "--lerobot", str(tmp / "lerobot"), "--lerobot_repo",
                "org/robot", "--lerobot_sha", robot_sha, "--shards", str(tmp / "shards"),
                "--shards_repo", "org/shards", "--shards_sha", shards_sha, "--rounds", str(rounds),
                "--workers", str(workers),
            ]  # fmt: skip
            out = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
        finally:
            robot.terminate()
            robot.wait()
    results = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"\n{episodes} videos x {frames} frames, {size}x{size}, {workers} workers, WebP; "
        f"Hub stand-in at {args.latency_ms:g} ms an answer, cold cache; "
        f"median of {rounds} round(s)\n"
    )
    print("| source | Hub s | local s | Hub / local | Hub requests |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| {name} | {r['hub_s']:.2f} | {r['local_s']:.2f} | {r['ratio']:.2f}x | "
            f"{r['requests']} |"
        )


if __name__ == "__main__":
    main()
