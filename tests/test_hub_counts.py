"""Guards for the Hub reads that regressed unseen (issue 44): what a read sends to the Hub
stand-in, and how much of it is in flight at once, counted instead of timed.

- A read in a random order keeps its read-ahead: once its first window is out, it has
  :data:`~hf_lvf.frames.REMOTE_IN_FLIGHT` fetches in flight at once, and never more
  than twice that many requests.
- A streaming ``load_dataset`` reaches its first window in as few requests as the layout
  allows: the revision is asked once, ``_metadata.json`` read once, the table's manifest
  once by the schema probe and once by the reader.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import datasets
import numpy as np
import pytest
from _threads import fetch_threads_end
from hub_server import HubServer
from test_hub_reads import PARAMS, REPO, _commit, _forget_downloads

from hf_lvf import VideoWindows, frames
from hf_lvf.write.synthetic import write_synthetic_root

pytestmark = [pytest.mark.hub, pytest.mark.usefixtures("small_reads")]

HANG_S = 60.0  # only a hang takes this long


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return write_synthetic_root(
        tmp_path_factory.mktemp("hub-counts") / "r", num_videos=12, num_frames=20
    )


def _wait_for(condition, timeout: float = HANG_S) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_random_order_keeps_its_fetches_in_flight(hub: HubServer, root: Path):
    sha = _commit(hub, root)
    remote = VideoWindows(f"hf://datasets/{REPO}", revision=sha, **PARAMS)
    remote.take([0])  # opened: what follows is reads only
    order = np.random.default_rng(0).permutation(len(remote))
    samples = remote.iter_samples(order, batch_size=4)
    seen = [next(samples)["sample_idx"]]  # the first batch is fetched alone, then read-ahead
    hub.clear_requests()
    reader = threading.Thread(target=lambda: seen.extend(s["sample_idx"] for s in samples))
    with hub.hold(timeout=HANG_S):  # nothing is answered: what is sent stays in flight
        reader.start()
        reached = _wait_for(lambda: hub.in_flight >= frames.REMOTE_IN_FLIGHT)
        held = hub.in_flight
    reader.join(HANG_S)
    assert not reader.is_alive()
    assert reached, f"{held} requests in flight at once, not {frames.REMOTE_IN_FLIGHT}"
    assert hub.peak_in_flight <= 2 * frames.REMOTE_IN_FLIGHT
    assert seen == order.tolist()
    batches = -(-len(order) // 4)
    assert hub.count() == hub.count("/data/", method="GET") <= 2 * batches
    assert fetch_threads_end()


def test_a_streaming_first_window_takes_the_requests_the_layout_needs(hub: HubServer, root: Path):
    sha = _commit(hub, root)
    _forget_downloads()
    hub.clear_requests()
    ds = datasets.load_dataset(
        "hf_lvf",
        data_files=f"hf://datasets/{REPO}@{sha}/**",
        split="train",
        streaming=True,
        **PARAMS,
    )
    before_iterating = hub.count()
    assert next(iter(ds))["sample_idx"] == 0
    log = [(r.method, r.path) for r in hub.requests]
    # The revision and the video table, once each, before the stream is iterated.
    assert before_iterating <= 5, log
    assert hub.count("/revision/") == 1, log
    assert hub.count("/_metadata.json", method="GET") == 1, log
    # The manifest: once in the schema probe's child, once in the reader.
    assert hub.count(".manifest") <= 2, log
    assert hub.count("paths-info") <= 2, log
    assert hub.count("/data/") <= 4, log
    assert len(log) <= 11, log
