"""Reading Hub-hosted roots over a slow or faulty network (the local Hub stand-in's knobs):
read-ahead, requests per window, bounded retries and named errors, no hang, no thread left."""

from __future__ import annotations

import time
from pathlib import Path

import datasets
import numpy as np
import pytest
from _threads import fetch_threads_end
from hub_server import HubServer

from hf_lvf import VideoWindows
from hf_lvf.errors import HubError
from hf_lvf.frames import remote as frames_module
from hf_lvf.write.synthetic import write_synthetic_root

pytestmark = [pytest.mark.hub, pytest.mark.usefixtures("small_reads")]

REPO = "org/slow"
PARAMS = {"window_length": 4, "hop_size": 2}


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hub-reads")
    return {
        "small": write_synthetic_root(base / "small", num_videos=3, num_frames=20),
        "many": write_synthetic_root(base / "many", num_videos=12, num_frames=20),
    }


def _commit(hub: HubServer, root: Path, repo: str = REPO) -> str:
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    hub.create_repo(repo, exist_ok=True)
    return hub.commit(repo, files)


def _ids_and_pixels(samples) -> tuple[list[int], np.ndarray]:
    samples = list(samples)
    return [s["sample_idx"] for s in samples], np.stack([s["video"] for s in samples])


def _forget_downloads() -> None:
    """Empty the Hugging Face cache, so that the next download goes to the server."""
    import shutil

    from huggingface_hub import constants

    shutil.rmtree(constants.HF_HUB_CACHE, ignore_errors=True)


def test_slow_hub_reads_ahead_with_one_request_per_batch(hub: HubServer, roots):
    sha = _commit(hub, roots["small"])
    hub.latency = 0.02
    remote = VideoWindows(f"hf://datasets/{REPO}", revision=sha, **PARAMS)
    local = VideoWindows(roots["small"], **PARAMS)
    remote.take([0])  # open: metadata, manifest, file footer
    hub.clear_requests()
    ids, pixels = _ids_and_pixels(remote.iter_samples(batch_size=4))
    want_ids, want_pixels = _ids_and_pixels(local.iter_samples(batch_size=4))
    assert ids == want_ids == list(range(len(local)))
    np.testing.assert_array_equal(pixels, want_pixels)
    # Consecutive rows of a batch come in one range request; nothing else is asked.
    batches = -(-len(local) // 4)
    assert hub.count("/data/", method="GET") <= batches
    assert hub.count() == hub.count("/data/", method="GET")
    # Batches overlapped in flight: some request started before the previous one ended.
    log = sorted(hub.requests, key=lambda r: r.started)
    assert any(b.started < a.ended for a, b in zip(log, log[1:], strict=False))


def test_opening_a_root_costs_the_same_requests_for_3_or_12_videos(hub: HubServer, roots):
    opening, first_read = [], []
    for name in ("small", "many"):
        sha = _commit(hub, roots[name], repo=f"org/{name}")
        hub.clear_requests()
        VideoWindows(f"hf://datasets/org/{name}", revision=sha, **PARAMS).take([0])
        first_read.append(hub.count("/data/"))
        opening.append(hub.count() - first_read[-1])
    # The commit, _metadata.json (HEAD + GET), the _versions listing and the manifest; then
    # the data file's footer, the rows and their video_id/frame_idx pages (lance reads a
    # small file whole, in one request).
    assert opening == [5, 5]
    assert all(1 <= n <= 4 for n in first_read)


def test_faults_mid_epoch_are_retried_and_every_window_comes_once(
    hub: HubServer, roots, monkeypatch
):
    monkeypatch.setattr(frames_module, "_READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(frames_module, "_BACKOFF_S", (0.05,))
    sha = _commit(hub, roots["small"])
    local = VideoWindows(roots["small"], **PARAMS)
    want_ids, want_pixels = _ids_and_pixels(local.iter_samples(batch_size=3))
    remote = VideoWindows(f"hf://datasets/{REPO}", revision=sha, **PARAMS)
    remote.take([0])
    data = {"path_contains": "/data/", "method": "GET"}
    faults = [
        hub.inject(503, times=6, skip=2, **data),  # more than lance retries on its own
        hub.inject(429, times=5, retry_after=0, skip=1, **data),
        hub.inject(drop_mid_body=True, times=2, **data),
        hub.inject(stall=2.0, times=1, **data),  # longer than a try may take
    ]
    ids, pixels = _ids_and_pixels(remote.iter_samples(batch_size=3))
    assert ids == want_ids
    np.testing.assert_array_equal(pixels, want_pixels)
    assert [f.hits for f in faults] == [6, 5, 2, 1]
    assert fetch_threads_end()


def test_a_hub_that_stays_down_is_a_named_error_not_a_hang(hub: HubServer, roots, monkeypatch):
    monkeypatch.setattr(frames_module, "_RETRY_BUDGET_S", 1.0)
    monkeypatch.setattr(frames_module, "_BACKOFF_S", (0.1,))
    sha = _commit(hub, roots["small"])
    remote = VideoWindows(f"hf://datasets/{REPO}", revision=sha, **PARAMS)
    remote.take([0])
    hub.inject(503, times=10_000, path_contains="/data/", method="GET")
    started = time.monotonic()
    with pytest.raises(HubError) as info:
        list(remote.iter_samples(np.arange(5, len(remote)), batch_size=3))
    message = str(info.value)
    assert "hf://datasets/org/slow" in message and sha in message
    assert "Lance rows" in message and "'data/" in message and ".lance'" in message
    assert "503" in message and "\n" not in message
    # Bounded by the budget: lance's few tries per round, a round per backoff step within
    # 1 s, for each fetch in flight (a read that kept retrying would not end at all).
    assert hub.count("/data/", method="GET") <= 400
    assert time.monotonic() - started < 120  # a hang, not a speed
    assert fetch_threads_end()


def test_a_missing_data_file_fails_at_once(hub: HubServer, roots, monkeypatch):
    monkeypatch.setattr(frames_module, "_RETRY_BUDGET_S", 60.0)
    sha = _commit(hub, roots["small"])
    remote = VideoWindows(f"hf://datasets/{REPO}", revision=sha, **PARAMS)
    remote.take([0])
    data_file = next(f for f in hub.list_files(REPO) if f.startswith("data/"))
    hub.commit(REPO, deletes=[data_file])
    # The view is pinned to the old commit, which still has the file: reads go on.
    assert remote.take([1])[0]["sample_idx"] == 1
    newer = VideoWindows(f"hf://datasets/{REPO}", **PARAMS)
    hub.clear_requests()
    with pytest.raises(HubError, match="(?i)not ?found"):
        newer.take([len(newer) - 1])
    # Not retried for the minute of the budget: lance's own tries of the one read, no more.
    tries = hub.count(data_file)
    assert 1 <= tries <= 4, [(r.method, r.path, r.status) for r in hub.requests]


def test_breaking_out_of_a_hub_streaming_loop_leaves_no_thread(hub: HubServer, roots):
    sha = _commit(hub, roots["many"])
    hub.latency = 0.02
    ds = datasets.load_dataset(
        "hf_lvf",
        data_files=f"hf://datasets/{REPO}@{sha}/**",
        split="train",
        streaming=True,
        **PARAMS,
    )
    for k, row in enumerate(ds):
        if k == 20:
            assert row["sample_idx"] == 20
            break
    assert fetch_threads_end()


def test_opening_a_root_through_a_busy_stalling_hub(hub: HubServer, roots, monkeypatch):
    from hf_lvf.location import _calls

    monkeypatch.setattr(_calls, "_CALL_TIMEOUT_S", 0.5)
    sha = _commit(hub, roots["small"])
    _forget_downloads()
    faults = [
        hub.inject(stall=2.0, times=1, path_contains=f"/api/datasets/{REPO}/revision/"),
        hub.inject(503, times=2, retry_after=0, path_contains="/_metadata.json", method="GET"),
        hub.inject(wrong_content_length=True, path_contains="/_metadata.json", method="GET"),
    ]
    remote = VideoWindows(f"hf://datasets/{REPO}", revision=sha, **PARAMS)
    assert [f.hits for f in faults] == [1, 2, 1]
    local = VideoWindows(roots["small"], **PARAMS)
    ids, pixels = _ids_and_pixels(remote.iter_samples())
    want_ids, want_pixels = _ids_and_pixels(local.iter_samples())
    assert ids == want_ids
    np.testing.assert_array_equal(pixels, want_pixels)


def test_metadata_that_stays_unavailable_is_a_named_error(hub: HubServer, roots, monkeypatch):
    from hf_lvf.location import _calls

    monkeypatch.setattr(_calls, "_MAX_ATTEMPTS", 3)
    sha = _commit(hub, roots["small"])
    _forget_downloads()
    meta = {"path_contains": "/_metadata.json", "method": "GET"}
    fault = hub.inject(503, times=1000, retry_after=0, **meta)
    with pytest.raises(HubError) as info:
        VideoWindows(f"hf://datasets/{REPO}", revision=sha, **PARAMS)
    message = str(info.value)
    assert f"'hf://datasets/{REPO}/_metadata.json' at revision '{sha}'" in message
    assert "answered 503" in message and "\n" not in message
    assert fault.hits == 3
