"""The cluster paths, for real: a dask.distributed LocalCluster of 2 worker processes converts
and appends, and 2 torch.distributed (gloo) ranks with 2 DataLoader workers each read every
window once per epoch, in a new order each epoch. Each cluster runs in a fresh interpreter."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import lance
import pytest
from _loading import PROJECT_ROOT, TIMEOUT, core_crcs
from _roots import hf_root
from _videos import write_video

from hf_lvf.convert import convert_videos

pytestmark = pytest.mark.slow


def _script(tmp_path: Path, name: str, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` as a script file (spawned workers re-import ``__main__``)."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, str(path)],
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _table(root: Path):
    meta = json.loads((root / "_metadata.json").read_text())
    return lance.dataset(str(root), version=meta["lance_version"]).to_table(), meta


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("cluster_clips")
    return [write_video(folder / f"v_{i}.mp4", 6 + i % 3, (32, 48), seed=i) for i in range(9)]


_DASK_PRELUDE = """
    import json, os, signal, sys
    from distributed import Client, LocalCluster
    import hf_lvf.write.append
    from hf_lvf.convert import convert_videos

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_dask_localcluster_converts_and_appends(tmp_path, clips):
    pytest.importorskip("distributed")
    out = _script(
        tmp_path,
        "dask_convert.py",
        _DASK_PRELUDE
        + f"""
    if __name__ == "__main__":
        files = {[str(f) for f in clips]!r}
        root = {str(tmp_path / "root")!r}
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            executor = client.get_executor()
            first = convert_videos(files[:6], root, executor=executor, progress=False)
            pids = set(client.run(os.getpid).values())
            added = convert_videos(files[6:], root, mode="append", executor=executor,
                                   progress=False)
        print(json.dumps({{"videos": [first.num_videos, added.num_videos],
                          "worker_pids": len(pids - {{os.getpid()}})}}))
    """,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"videos": [6, 3], "worker_pids": 2}  # two worker processes, not this one
    convert_videos(clips, tmp_path / "local", workers=0, progress=False)
    got, meta = _table(tmp_path / "root")
    want, want_meta = _table(tmp_path / "local")
    assert got.equals(want)
    assert meta["videos"] == want_meta["videos"]


def test_dask_append_killed_mid_write_leaves_the_old_root(tmp_path, clips):
    pytest.importorskip("distributed")
    root = tmp_path / "root"
    convert_videos(clips[:6], root, workers=0, progress=False)
    before = ((root / "_metadata.json").read_bytes(), _table(root)[0])
    files_before = set((root / "data").iterdir())
    out = _script(
        tmp_path,
        "dask_killed.py",
        _DASK_PRELUDE
        + f"""
    from concurrent.futures import Executor

    class DieOnFirstResult(Executor):  # the cluster's executor; this process dies as soon
        def __init__(self, inner):     # as the first new video is written
            self.inner = inner

        def submit(self, fn, *args, **kwargs):
            future = self.inner.submit(fn, *args, **kwargs)
            future.add_done_callback(die)
            return future

    if __name__ == "__main__":
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
        pids = list(client.run(os.getpid).values())
        pids += [w.process.pid for w in cluster.workers.values()]
        print(json.dumps(pids), flush=True)  # so the test can end them after the kill
        # Killed when the first new video is written, while the workers write the others.
        convert_videos({[str(f) for f in clips[6:]]!r}, {str(root)!r}, mode="append",
                       executor=DieOnFirstResult(client.get_executor()), progress=False)
    """,
    )
    for pid in json.loads(out.stdout.strip().splitlines()[0]):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert out.returncode == -signal.SIGKILL, out.stderr[-4000:]
    assert (root / "_metadata.json").read_bytes() == before[0]
    assert _table(root)[0].equals(before[1])
    assert set((root / "data").iterdir()) > files_before  # the killed append left files behind
    convert_videos(clips[6:], root, mode="append", workers=0, progress=False)  # no clean-up
    convert_videos(clips, tmp_path / "local", workers=0, progress=False)
    assert _table(root)[0].equals(_table(tmp_path / "local")[0])
    ds = lance.dataset(str(root))
    referenced = {f.path for frag in ds.get_fragments() for f in frag.metadata.files}
    assert referenced == {p.name for p in (root / "data").iterdir()}


def test_torch_distributed_two_ranks_two_workers_each(tmp_path):
    pytest.importorskip("torch")
    root = hf_root(tmp_path / "root", (12, 20, 9, 9))
    params = {"window_length": 3, "hop_size": 2}
    want = core_crcs(root, **params)
    assert len(want) % 2 == 0  # so DistributedSampler pads with no repeated window
    out = tmp_path / "gathered.json"
    proc = _script(
        tmp_path,
        "ranks.py",
        f"""
    import json, zlib
    import numpy as np
    import datasets
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from datasets.distributed import split_dataset_by_node
    from torch.utils.data import DistributedSampler
    import hf_lvf

    ROOT, PARAMS = {str(root)!r}, {params!r}

    def pairs(loader):
        out = []
        for batch in loader:
            for i, video in zip(batch["sample_idx"], batch["video"]):
                out.append([int(i), zlib.crc32(np.ascontiguousarray(video.numpy()).tobytes())])
        return out

    def run(rank, world):
        dist.init_process_group("gloo", init_method={"file://" + str(tmp_path / "rdv")!r},
                                rank=rank, world_size=world)
        result = {{"streaming": [], "sampler": []}}
        # The streaming builder, split between the ranks.
        stream = datasets.load_dataset("hf_lvf", data_dir=ROOT, split="train", streaming=True,
                                       shard_windows=2, **PARAMS).shuffle(seed=0, buffer_size=4)
        node = split_dataset_by_node(stream, rank=rank, world_size=world)
        loader = hf_lvf.safe_dataloader(node, batch_size=2, num_workers=2, timeout=60)
        for epoch in (0, 1):
            node.set_epoch(epoch)
            result["streaming"].append(pairs(loader))
        # The random-access view with torch's DistributedSampler.
        windows = hf_lvf.VideoWindows(ROOT, **PARAMS)
        sampler = DistributedSampler(windows, num_replicas=world, rank=rank, shuffle=True, seed=0)
        loader = hf_lvf.safe_dataloader(windows, batch_size=2, sampler=sampler, num_workers=2,
                                        timeout=60)
        for epoch in (0, 1):
            sampler.set_epoch(epoch)
            result["sampler"].append(pairs(loader))
        gathered = [None] * world
        dist.all_gather_object(gathered, result)
        if rank == 0:
            with open({str(out)!r}, "w") as f:
                json.dump(gathered, f)
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(2,), nprocs=2, join=True)
    """,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    ranks = json.loads(out.read_text())
    assert len(ranks) == 2
    for front_end in ("streaming", "sampler"):
        orders = []
        for epoch in (0, 1):
            per_rank = [rank[front_end][epoch] for rank in ranks]
            assert all(per_rank), front_end  # both ranks read
            seen = [tuple(pair) for pairs in per_rank for pair in pairs]
            assert len(seen) == len(want), front_end  # every window exactly once
            assert dict(seen) == want, front_end  # with its own pixels
            orders.append([i for i, _ in seen])
        assert orders[0] != orders[1], front_end  # a new order per epoch
