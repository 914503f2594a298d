"""Roots on an object store: a real S3 server (moto) on 127.0.0.1, the real lance and pyarrow
clients, lance's option names only, no s3fs.

Every front end reads from ``s3://`` what it reads from the same root on disk; writing,
converting, appending and merging straight into a bucket give what they give locally; a
writer killed mid-append leaves the old root readable and the next append succeeds; wrong
credentials and missing buckets are one named error; faults injected by the proxy in front
of the server are retried; credentials reach no disk, message or repr.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import datasets
import numpy as np
import pytest
from _roots import hf_root, make_frames
from _s3 import S3StandIn

import hf_lvf
from hf_lvf import VideoWindows
from hf_lvf.convert import convert_videos
from hf_lvf.errors import StoreError
from hf_lvf.frames import remote as remote_reads
from hf_lvf.location import store
from hf_lvf.location.store import store_file_identity
from hf_lvf.write import merge_roots, write_frames
from hf_lvf.write.store_roots import LOCK_NAME, store_write_lock

pytestmark = [pytest.mark.s3, pytest.mark.filterwarnings("ignore:lance is not fork-safe")]

PARAMS = {"window_length": 4, "hop_size": 2}
PROJECT_ROOT = Path(__file__).resolve().parents[1]
SPLITS = {"train": (12, 3, 20, 9), "test": (10, 7)}


@pytest.fixture(scope="module")
def uploaded(s3_server: S3StandIn, tmp_path_factory) -> dict:
    """Roots written locally by hf_lvf (two splits), and the same uploaded to a bucket."""
    local = tmp_path_factory.mktemp("s3-roots") / "clips"
    for offset, (split, lengths) in enumerate(SPLITS.items()):
        hf_root(local / split, lengths, metadata=lambda i, o=offset: {"label": (i + o) % 3})
    bucket = s3_server.new_bucket()
    return {"local": local, "bucket": bucket, "uri": s3_server.upload(local, bucket, "clips")}


def _ids_pixels(samples) -> tuple[list[int], np.ndarray]:
    samples = list(samples)
    ids = [int(s["sample_idx"]) for s in samples]
    return ids, np.stack([np.asarray(s["video"]) for s in samples])


def _assert_same(got, want) -> None:
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def _videos(keys, *, num_frames: int = 9) -> list:
    return [(k, make_frames(num_frames, 32, 48, seed=i), {"label": i}) for i, k in enumerate(keys)]


def _all_windows(root, options=None, **more) -> tuple[list[int], np.ndarray]:
    view = VideoWindows(str(root), storage_options=options, **PARAMS, **more)
    return _ids_pixels(view.iter_samples())


# --- reading ------------------------------------------------------------------------------


def test_every_front_end_reads_from_s3_what_it_reads_from_disk(s3, uploaded, tmp_path):
    pytest.importorskip("torch")
    import multiprocessing

    from torch.utils.data import DistributedSampler

    # Workers fork from a server that imported these once (the README's recipe): they start
    # in a fraction of a second instead of importing torch each.
    multiprocessing.set_forkserver_preload(["hf_lvf", "datasets", "torch"])

    options, uri = s3.options(), uploaded["uri"]
    local = VideoWindows(uploaded["local"] / "train", **PARAMS)
    remote = VideoWindows(f"{uri}/train", storage_options=options, **PARAMS)
    want = _ids_pixels(local.iter_samples())
    _assert_same(_ids_pixels(remote.iter_samples()), want)
    picked = np.random.default_rng(0).permutation(len(local))[:7]
    np.testing.assert_array_equal(remote.read_video(picked), local.read_video(picked))

    # load_dataset(data_dir="s3://..."), both modes, splits from the bucket's folders.
    for streaming in (True, False):
        ds = datasets.load_dataset(
            "hf_lvf",
            data_dir=uri,
            storage_options=options,
            streaming=streaming,
            cache_dir=str(tmp_path / "cache"),
            **PARAMS,
        )
        assert list(ds) == list(SPLITS)
        for split in SPLITS:
            want_split = _all_windows(uploaded["local"] / split)
            rows = ds[split] if streaming else ds[split].with_format("numpy")
            _assert_same(_ids_pixels(rows), want_split)

    # to_iterable_dataset, shuffled: the same permutation.
    shuffled = _ids_pixels(remote.to_iterable_dataset(shuffle=True, seed=3))
    _assert_same(shuffled, _ids_pixels(local.to_iterable_dataset(shuffle=True, seed=3)))
    assert shuffled[0] != want[0] and sorted(shuffled[0]) == want[0]

    # 2-worker DataLoaders: the streaming dataset, and the view under a DistributedSampler
    # of 2 ranks; every window exactly once, with its pixels.
    stream = datasets.load_dataset(
        "hf_lvf", data_dir=uri, storage_options=options, streaming=True, split="train", **PARAMS
    )

    def read(loader) -> tuple[list[int], np.ndarray]:
        batches = [(b["sample_idx"].tolist(), b["video"].numpy()) for b in loader]
        return [i for ids, _ in batches for i in ids], np.concatenate([v for _, v in batches])

    ids, pixels = read(hf_lvf.safe_dataloader(stream, batch_size=3, num_workers=2, timeout=60))
    assert sorted(ids) == want[0]  # each window once
    np.testing.assert_array_equal(pixels, want[1][ids])
    ranks = []
    for rank in (0, 1):
        sampler = DistributedSampler(remote, num_replicas=2, rank=rank, shuffle=True, seed=0)
        loader = hf_lvf.safe_dataloader(
            remote, batch_size=3, sampler=sampler, num_workers=2, timeout=60
        )
        ids, pixels = read(loader)
        assert ids == list(sampler)
        np.testing.assert_array_equal(pixels, want[1][ids])
        ranks.append(ids)
    # Together the ranks read every window (DistributedSampler repeats one to even them out).
    assert sorted(set(ranks[0]) | set(ranks[1])) == want[0]
    assert len(ranks[0]) == len(ranks[1]) == -(-len(want[0]) // 2)


@pytest.mark.usefixtures("small_reads")  # many reads of a small root, as of a big one
def test_faults_are_retried_and_every_window_comes_once(s3, tmp_path, monkeypatch):
    from hf_lvf.write.synthetic import write_synthetic_root

    monkeypatch.setattr(remote_reads, "_READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(remote_reads, "_BACKOFF_S", (0.05,))
    monkeypatch.setattr(store, "_CALL_TIMEOUT_S", 0.5)
    monkeypatch.setattr(store, "_BACKOFF_S", (0.05,))
    local = write_synthetic_root(tmp_path / "root", num_videos=3, num_frames=20)
    uri, options = s3.upload(local, s3.new_bucket(), "root"), s3.options()
    proxy = s3.proxy
    meta = {"path_contains": "/root/_metadata.json"}
    faults = [
        proxy.inject(503, times=5, **meta),  # more than pyarrow tries on its own
        proxy.inject(drop_mid_body=True, times=1, method="GET", **meta),
        proxy.inject(stall=1.5, times=1, method="GET", **meta),  # longer than a try may take
    ]
    remote = VideoWindows(uri, storage_options=options, **PARAMS)
    assert [f.hits for f in faults] == [5, 1, 1]
    remote.take([0])
    data = {"path_contains": "/data/", "method": "GET"}
    faults = [
        proxy.inject(503, times=12, skip=2, **data),  # more than lance tries on its own
        proxy.inject(drop_mid_body=True, times=2, **data),
        proxy.inject(stall=1.5, times=1, **data),
    ]
    _assert_same(_ids_pixels(remote.iter_samples(batch_size=3)), _all_windows(local))
    assert [f.hits for f in faults] == [12, 2, 1]


@pytest.mark.usefixtures("small_reads")
def test_a_slow_store_is_read_ahead_and_streams_resume(s3, tmp_path):
    from hf_lvf.write.synthetic import write_synthetic_root

    local = write_synthetic_root(tmp_path / "root", num_videos=3, num_frames=20)
    uri, options = s3.upload(local, s3.new_bucket(), "root"), s3.options()
    remote = VideoWindows(uri, storage_options=options, **PARAMS)
    remote.take([0])  # open: metadata, manifest, the data file's footer
    s3.proxy.latency = 0.08  # well above a busy machine's scheduling delays, so reads overlap
    s3.proxy.requests.clear()
    want = _all_windows(local)
    _assert_same(_ids_pixels(remote.iter_samples(batch_size=4)), want)
    # Consecutive rows of a read come in one range request; nothing else is asked.
    data = s3.proxy.count("/data/", "GET")
    assert 0 < data <= -(-len(want[0]) // 4) and s3.proxy.count() == data
    # Reads overlapped in flight: one started before the one before it ended.
    log = sorted(s3.proxy.requests, key=lambda r: r.started)
    assert any(b.started < a.ended for a, b in zip(log, log[1:], strict=False))

    def stream():
        return datasets.load_dataset(
            "hf_lvf",
            data_dir=uri,
            storage_options=options,
            streaming=True,
            split="train",
            shard_windows=4,
            **PARAMS,
        )

    first = stream()
    rows = iter(first)
    head = [next(rows)["sample_idx"] for _ in range(7)]
    resumed = stream()
    resumed.load_state_dict(first.state_dict())
    assert head + [r["sample_idx"] for r in resumed] == want[0]


def test_a_store_that_stays_down_is_a_named_error_not_a_hang(s3, uploaded, monkeypatch):
    for module in (remote_reads, store):
        monkeypatch.setattr(module, "_RETRY_BUDGET_S", 1.0)
        monkeypatch.setattr(module, "_BACKOFF_S", (0.1,))
    monkeypatch.setattr(remote_reads, "_READ_TIMEOUT_S", 0.5)
    uri, options = f"{uploaded['uri']}/train", s3.options()
    remote = VideoWindows(uri, storage_options=options, **PARAMS)
    s3.proxy.inject(503, times=10**6)
    with pytest.raises(StoreError) as info:  # the Lance table
        remote.take([len(remote) - 1])
    message = str(info.value)
    assert uri in message and "Lance" in message and "\n" not in message
    with pytest.raises(StoreError) as info:  # _metadata.json
        VideoWindows(uri, storage_options=options, **PARAMS)
    message = str(info.value)
    assert f"key 'clips/train/_metadata.json' of bucket {uploaded['bucket']!r}" in message
    assert "503" in message and "\n" not in message


# --- errors and credentials ---------------------------------------------------------------


def _entry_points(uri: str, options: dict, videos_dir: Path, tmp_path: Path) -> dict:
    return {
        "VideoWindows": lambda: VideoWindows(uri, storage_options=options, **PARAMS),
        "load_dataset": lambda: datasets.load_dataset(
            "hf_lvf", data_dir=uri, storage_options=options, streaming=True, **PARAMS
        ),
        "write_frames": lambda: write_frames(uri, _videos(["a"]), storage_options=options),
        "append": lambda: write_frames(uri, _videos(["a"]), mode="append", storage_options=options),
        "convert_videos": lambda: convert_videos(
            videos_dir, uri, workers=0, progress=False, storage_options=options
        ),
        "merge_roots": lambda: merge_roots(
            [hf_root(tmp_path / "small", (5,), overwrite=True)], uri, storage_options=options
        ),
    }


@pytest.mark.parametrize("fault", ["wrong secret", "unknown key id", "missing bucket"])
def test_wrong_credentials_or_a_missing_bucket_is_one_named_error(s3, uploaded, tmp_path, fault):
    from _videos import write_video

    write_video(tmp_path / "videos" / "v0.mp4", num_frames=4)
    bucket = "no-such-bucket" if fault == "missing bucket" else uploaded["bucket"]
    options = s3.options(
        **{
            "wrong secret": {"aws_secret_access_key": "wrong-secret-0123456789"},
            "unknown key id": {"aws_access_key_id": "AKIAUNKNOWNKEY000000"},
            "missing bucket": {},
        }[fault]
    )
    uri = f"s3://{bucket}/clips/train"
    secrets = [v for k, v in options.items() if "key" in k]
    for name, call in _entry_points(uri, options, tmp_path / "videos", tmp_path).items():
        s3.proxy.clear()
        with pytest.raises(StoreError) as info:
            call()
        message = str(info.value)
        assert f"bucket {bucket!r}" in message, (name, message)
        assert "key 'clips/train" in message, (name, message)
        assert "\n" not in message and not any(s in message for s in secrets), (name, message)
        assert s3.proxy.count() <= 5, (name, s3.proxy.requests)  # at once: no retries
        if fault == "missing bucket":
            assert "does not exist" in message
        else:
            assert "refused" in message and "credentials" in message


def test_credentials_never_reach_disk_messages_or_reprs(s3, uploaded, tmp_path, caplog):
    from hf_lvf.cli import main as cli_main

    options, bucket = s3.options(), uploaded["bucket"]
    secrets = [s3.access_key_id.encode(), s3.secret_access_key.encode()]
    uri = f"{uploaded['uri']}/train"
    seen: list[str] = []
    # hf_lvf's own logs (the S3 server in this process logs the requests it gets, signed).
    with caplog.at_level(logging.DEBUG, logger="hf_lvf"):
        windows = VideoWindows(uri, storage_options=options, **PARAMS)
        pickled = pickle.dumps(windows)
        assert all(s in pickled for s in secrets)  # in clear: as README says, pickles carry them
        np.testing.assert_array_equal(pickle.loads(pickled)[0]["video"], windows[0]["video"])
        seen += [repr(windows), str(windows.features)]
        for streaming in (False, True):
            ds = datasets.load_dataset(
                "hf_lvf",
                data_dir=uploaded["uri"],
                storage_options=options,
                streaming=streaming,
                cache_dir=str(tmp_path / "cache"),
                split="train",
                **PARAMS,
            )
            assert len(list(ds)) == len(windows)
            seen += [repr(ds), str(ds.features), repr(pickle.loads(pickle.dumps(ds)))]
        written = f"s3://{bucket}/written-{tmp_path.name}"
        write_frames(written, _videos(["a", "b"]), storage_options=options)
        write_frames(written, _videos(["c"]), mode="append", storage_options=options)
        flags = [f"--storage-option={k}={v}" for k, v in options.items()]
        card = tmp_path / "card" / "README.md"
        assert cli_main(["card", written, "-o", str(card), *flags]) == 0
        for wrong in ("aws_secret_access_key", "aws_access_key_id"):
            with pytest.raises(StoreError) as info:
                VideoWindows(uri, storage_options={**options, wrong: "x" * 20}, **PARAMS)
            seen.append(str(info.value))
    seen += [r.getMessage() for r in caplog.records if r.name.startswith("hf_lvf")]
    for text in seen:
        assert not any(s.decode() in text for s in secrets), text
    on_disk = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]
    assert on_disk and not [p for p in on_disk if any(s in p.read_bytes() for s in secrets)]
    client = s3.client()
    for key in s3.keys(bucket, f"written-{tmp_path.name}"):
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert not any(s in body for s in secrets), key


# --- writing ------------------------------------------------------------------------------


def _same_roots(remote: str, local: Path, options: dict, **more) -> None:
    _assert_same(_all_windows(remote, options, **more), _all_windows(local, **more))
    got = hf_lvf.read_layout(remote, storage_options=options)
    want = hf_lvf.read_layout(str(local))
    drop = {"lineage", "lance_version"}
    assert {k: v for k, v in got.header.items() if k not in drop} == {
        k: v for k, v in want.header.items() if k not in drop
    }
    assert got.paths_of(np.arange(len(got))) == want.paths_of(np.arange(len(want)))
    assert got.num_rows == want.num_rows


def test_writing_converting_and_appending_straight_to_s3_reads_like_local(s3, tmp_path):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from _videos import write_video

    bucket, options = s3.new_bucket(), s3.options()
    write_frames(f"s3://{bucket}/frames", _videos(["a", "b"]), storage_options=options)
    write_frames(tmp_path / "frames", _videos(["a", "b"]))
    more = _videos(["c", "d"], num_frames=6)
    write_frames(f"s3://{bucket}/frames", more, mode="append", storage_options=options)
    write_frames(tmp_path / "frames", more, mode="append")
    _same_roots(f"s3://{bucket}/frames", tmp_path / "frames", options)

    for i in range(3):
        write_video(tmp_path / "first" / f"cat/v{i}.mp4", num_frames=8, seed=i)
        write_video(tmp_path / "second" / f"cat/w{i}.mp4", num_frames=6, seed=10 + i)
    conv = f"s3://{bucket}/converted"
    summary = convert_videos(
        tmp_path / "first", conv, workers=2, progress=False, storage_options=options
    )
    assert summary.root == conv and summary.num_videos == 3
    convert_videos(tmp_path / "first", tmp_path / "converted", workers=0, progress=False)
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as executor:  # as a cluster
        convert_videos(
            tmp_path / "second",
            conv,
            executor=executor,
            mode="append",
            progress=False,
            storage_options=options,
        )
    convert_videos(
        tmp_path / "second", tmp_path / "converted", workers=0, mode="append", progress=False
    )
    _same_roots(conv, tmp_path / "converted", options)
    assert not [k for k in s3.keys(bucket) if ".hf_lvf" in k]  # no lock or note left behind

    merged = merge_roots(
        [conv, tmp_path / "frames"], f"s3://{bucket}/merged", storage_options=options
    )
    merge_roots([tmp_path / "converted", tmp_path / "frames"], tmp_path / "merged")
    _same_roots(merged, tmp_path / "merged", options, frame_size=(32, 48))
    with pytest.raises(FileExistsError):
        write_frames(conv, _videos(["z"]), storage_options=options)
    write_frames(conv, _videos(["z"]), mode="overwrite", storage_options=options)
    assert hf_lvf.read_layout(conv, storage_options=options).paths_of(np.arange(1)) == ["z"]


_KILLED_WRITER = """
import json, os, sys, time
from pathlib import Path
import numpy as np
import hf_lvf

uri, marker, when = sys.argv[1:4]
options = json.loads(os.environ["HF_LVF_TEST_S3_OPTIONS"])  # not on the command line

def frames():
    for i in range(40):
        if i == 20 and when == "mid-write":
            Path(marker).touch()
            time.sleep(600)
        yield np.full((32, 48, 3), 7 * i % 256, np.uint8)

Path(marker + ".started").touch()
hf_lvf.write.write_frames(uri, [("killed", frames(), None)], mode="append", storage_options=options)
"""


def _start_writer(uri: str, marker: Path, when: str, options: dict) -> subprocess.Popen:
    env = {**os.environ, "HF_LVF_TEST_S3_OPTIONS": json.dumps(options)}
    code = textwrap.dedent(_KILLED_WRITER)
    return subprocess.Popen([sys.executable, "-c", code, uri, str(marker), when], env=env)


def _wait_for(condition, what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds  # a bound against hanging, not a measurement
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("when", ["mid-write", "before-publish"])
def test_a_writer_killed_mid_append_leaves_the_old_root_and_the_next_append_succeeds(
    s3, tmp_path, monkeypatch, when
):
    from hf_lvf.write import store_roots

    bucket, options = s3.new_bucket(), s3.options()
    uri = f"s3://{bucket}/root"
    write_frames(uri, _videos(["a", "b"]), storage_options=options)
    write_frames(tmp_path / "local", _videos(["a", "b"]))
    before = _all_windows(uri, options)
    s3.proxy.clear()
    if when == "before-publish":  # the commit lands, the metadata PUT never does
        s3.proxy.inject(503, times=10**6, method="PUT", path_contains="/_metadata.json")
    marker = tmp_path / "marker"
    writer = _start_writer(uri, marker, when, options)
    try:
        if when == "mid-write":
            _wait_for(marker.exists, "the writer to be mid-write")
        else:
            _wait_for(lambda: s3.proxy.count("/_metadata.json", "PUT") > 0, "the PUT")
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    s3.proxy.clear()
    assert f"root/{LOCK_NAME}" in s3.keys(bucket, "root/")  # the dead writer's lock
    _assert_same(_all_windows(uri, options), before)  # the old root, exactly

    monkeypatch.setattr(store_roots, "_ORPHAN_AGE_S", 0.0)  # collect what the dead one left
    more = _videos(["c"], num_frames=7)
    write_frames(uri, more, mode="append", storage_options=options)
    write_frames(tmp_path / "local", more, mode="append")
    _same_roots(uri, tmp_path / "local", options)
    layout = hf_lvf.read_layout(uri, storage_options=options)
    from hf_lvf.frames import referenced_data_files

    version = layout.header["lance_version"]
    referenced = referenced_data_files(uri, version, storage_options=options)
    data = {k.rsplit("/", 1)[1] for k in s3.keys(bucket, "root/data/")} - {""}  # "data/" itself
    assert data == referenced
    assert f"root/{LOCK_NAME}" not in s3.keys(bucket, "root/")


def test_an_append_reads_the_roots_file_once_under_its_lock(s3):
    """An append reads ``_metadata.json`` for its layout and once more for its text (spans,
    the grown file), not once for each use: 2 GETs and 12 requests to the file in all (16
    and 3 GETs when each use read it: 4 requests a read). 40 requests in all, was 44."""
    bucket, options = s3.new_bucket(), s3.options()
    uri = f"s3://{bucket}/root"
    write_frames(uri, _videos(["a"]), storage_options=options)
    s3.proxy.clear()
    write_frames(uri, _videos(["b"]), mode="append", storage_options=options)
    assert s3.proxy.count("/_metadata.json", "GET") == 2, s3.proxy.requests
    assert s3.proxy.count("/_metadata.json", "PUT") == 1
    assert s3.proxy.count("/_metadata.json") <= 12, s3.proxy.requests
    assert s3.proxy.count() <= 41, s3.proxy.requests
    assert hf_lvf.read_layout(uri, storage_options=options).paths_of([0, 1]) == ["a", "b"]


# Two writers at once, this many times: one publishes, every time. The conditional PUT decides
# each race, so more races show nothing new; each costs more than the last (the root grows by
# a video and a Lance version), and 20 made this the suite's longest test (55 s alone).
_RACES = 6


def test_one_writer_at_a_time(s3, tmp_path, monkeypatch):
    from hf_lvf.write import store_roots

    bucket, options = s3.new_bucket(), s3.options()
    uri = f"s3://{bucket}/root"
    write_frames(uri, _videos(["a"]), storage_options=options)
    before = _all_windows(uri, options)
    # A live writer holds the lock: a second one fails at once, naming it.
    with store_write_lock(uri, options), pytest.raises(BlockingIOError, match=f"{os.getpid()}"):
        write_frames(uri, _videos(["b"]), mode="append", storage_options=options)
    _assert_same(_all_windows(uri, options), before)

    # Two writers that pass the lock at the same moment (as if the lock were not there), again
    # and again: the conditional PUT of _metadata.json lets exactly one publish; the other raises,
    # naming the root, and publishes nothing. The root holds every winner's videos, whole.
    monkeypatch.setattr(store_roots, "store_write_lock", lambda uri, options: nullcontext())
    expected = ["a"]
    for race in range(_RACES):
        both_writing = threading.Barrier(2, timeout=120)
        outcome: dict[str, object] = {}

        def frames(seed: int, barrier=both_writing):
            yield from make_frames(3, 32, 48, seed=seed)
            barrier.wait()
            yield from make_frames(3, 32, 48, seed=seed + 1)

        def append(key: str, seed: int, outcome=outcome) -> None:
            try:
                videos = [(key, frames(seed), None)]
                write_frames(uri, videos, mode="append", storage_options=options)
                outcome[key] = "published"
            except BlockingIOError as err:
                outcome[key] = err

        keys = (f"x{race}", f"y{race}")
        threads = [threading.Thread(target=append, args=(k, 2 * i)) for i, k in enumerate(keys)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        winners = [k for k, v in outcome.items() if v == "published"]
        assert len(winners) == 1, (race, outcome)
        [loser] = [v for v in outcome.values() if v != "published"]
        message = str(loser)
        assert "another writer changed" in message and "nothing was published" in message
        assert repr(uri) in message, message
        expected.append(winners[0])
        layout = hf_lvf.read_layout(uri, storage_options=options)
        assert layout.paths_of(np.arange(len(layout))) == expected, race
    assert len(_all_windows(uri, options)[0]) == len(before[0]) + 2 * _RACES  # 6 frames, hop 2
    # The next writer finds no lock in its way and appends after the winners.
    write_frames(uri, _videos(["z"]), mode="append", storage_options=options)
    assert len(hf_lvf.read_layout(uri, storage_options=options)) == _RACES + 2


def test_a_stale_lock_from_another_host_is_taken_over(s3, monkeypatch):
    from hf_lvf.location import write_store_file
    from hf_lvf.write import store_roots

    bucket, options = s3.new_bucket(), s3.options()
    uri = f"s3://{bucket}/root"
    write_frames(uri, _videos(["a"]), storage_options=options)
    lock = f"{uri}/{LOCK_NAME}"
    holder = {"id": "x", "host": "elsewhere", "pid": 1, "heartbeat": time.time()}
    write_store_file(lock, json.dumps(holder).encode(), options)
    with pytest.raises(BlockingIOError, match="'elsewhere'"):
        write_frames(uri, _videos(["b"]), mode="append", storage_options=options)
    monkeypatch.setattr(store_roots, "_LOCK_STALE_S", 0.0)  # its heartbeat is now too old
    write_frames(uri, _videos(["b"]), mode="append", storage_options=options)
    assert len(hf_lvf.read_layout(uri, storage_options=options)) == 2


def test_file_identity_changes_with_the_file(s3, tmp_path):
    bucket, options = s3.new_bucket(), s3.options()
    uri = f"s3://{bucket}/root"
    write_frames(uri, _videos(["a"]), storage_options=options)
    local = write_frames(tmp_path / "root", _videos(["a"]))
    meta = f"{uri}/_metadata.json"
    first, local_first = (
        store_file_identity(meta, options),
        store_file_identity(str(local / "_metadata.json")),
    )
    assert first == store_file_identity(meta, options)
    write_frames(uri, _videos(["b"]), mode="append", storage_options=options)
    write_frames(local, _videos(["b"]), mode="append")
    assert store_file_identity(meta, options) != first
    assert store_file_identity(str(local / "_metadata.json")) != local_first
    with pytest.raises(FileNotFoundError):
        store_file_identity(f"s3://{bucket}/nothing/_metadata.json", options)


# --- the command line ---------------------------------------------------------------------


def test_cli_takes_urls_with_storage_options_or_the_environment(s3, tmp_path, monkeypatch, hub):
    from _videos import write_video
    from huggingface_hub import HfApi

    from hf_lvf.cli import main as cli_main

    bucket, options = s3.new_bucket(), s3.options()
    for i in range(2):
        write_video(tmp_path / "videos" / f"v{i}.mp4", num_frames=6, seed=i)
    root = f"s3://{bucket}/cli"
    flags = [f"--storage-option={k}={v}" for k, v in options.items()]
    assert cli_main(["convert", str(tmp_path / "videos"), root, "--workers", "0", *flags]) == 0
    assert len(hf_lvf.read_layout(root, storage_options=options)) == 2
    # The same options from the environment, as lance reads them.
    env = {k.upper(): v for k, v in options.items() if k.startswith("aws_")}
    for name, value in {**env, "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(name, value)
    write_video(tmp_path / "more" / "v9.mp4", num_frames=6, seed=9)
    assert cli_main(["convert", str(tmp_path / "more"), root, "--append", "--workers", "0"]) == 0
    assert len(hf_lvf.read_layout(root)) == 3
    assert cli_main(["card", root, "-o", str(tmp_path / "card" / "README.md")]) == 0
    assert "hf_lvf" in (tmp_path / "card" / "README.md").read_text()
    assert cli_main(["push", root, "org/from-s3", "--token", hub.token]) == 0
    files = HfApi(token=hub.token).list_repo_files("org/from-s3", repo_type="dataset")
    assert "_metadata.json" in files and not [f for f in files if ".hf_lvf" in f]
    pushed = VideoWindows("hf://datasets/org/from-s3", token=hub.token, **PARAMS)
    _assert_same(_ids_pixels(pushed.iter_samples()), _all_windows(root))
    missing = ["convert", str(tmp_path / "more"), "s3://no-such-bucket/x", "--workers", "0"]
    assert cli_main(missing) == 2


def test_the_card_of_a_bucket_root_states_its_per_frame_fields(s3, tmp_path):
    # The card scans the per-frame columns with the root's own options: without them the
    # table could not be opened (and the card left the fields out after a long wait).
    options = s3.options()
    uri = f"s3://{s3.new_bucket()}/root"
    score = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    video = {"key": "a", "frames": make_frames(4, 32, 48, seed=0), "frame_fields": {"score": score}}
    write_frames(uri, [video], storage_options=options)
    text = str(hf_lvf.build_card(uri, storage_options=options, preview=False))
    assert "## Inside the videos" in text
    row = next(line for line in text.splitlines() if line.startswith("| `score`"))
    assert "0.5" in row and "3.5" in row, row
