"""Shared pytest configuration and fixtures.

Sections are independent: add new fixtures in a section of their own.
"""

from __future__ import annotations

# =============================================================================
# Local Hugging Face Hub (tests/hub_server.py)
#
# huggingface_hub and datasets read HF_ENDPOINT and the HF_* switches when they are
# *imported*, so the environment is set here, at conftest import time, before any
# test module imports them. pylance reads HF_ENDPOINT each time it opens a dataset.
# Nothing reaches huggingface.co, and the user's cache and token are never touched.
# =============================================================================
import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _benchmarks import load_benchmark  # noqa: E402
from hub_server import CLIENT_ENV_DROPPED, HubServer, client_environment, free_port  # noqa: E402

HUB_PORT = free_port()
HUB_ENDPOINT = f"http://127.0.0.1:{HUB_PORT}"
_HF_HOME = tempfile.mkdtemp(prefix="hf_lvf-tests-hf-home-")
atexit.register(shutil.rmtree, _HF_HOME, ignore_errors=True)

for _name in CLIENT_ENV_DROPPED:
    os.environ.pop(_name, None)
os.environ.update(client_environment(HUB_ENDPOINT, _HF_HOME))
# hf_lvf's cache of parsed video tables: one per test session, never the user's.
os.environ["HF_LVF_CACHE"] = os.path.join(_HF_HOME, "hf_lvf")


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    """The session's Hub stand-in, listening on HF_ENDPOINT."""
    server = HubServer(tmp_path_factory.mktemp("hub-server"), port=HUB_PORT)
    with server:
        yield server


@pytest.fixture
def hub(hub_server: HubServer) -> Iterator[HubServer]:
    """The Hub stand-in with no repos, no injected faults and an empty request log.

    Fails the test if the server itself raised. Client-side caches that would outlive the
    reset (HfFileSystem instances and their directory listings) are cleared too.
    """
    from huggingface_hub import HfFileSystem

    hub_server.reset()
    HfFileSystem.clear_instance_cache()
    yield hub_server
    hub_server.clear_faults()
    HfFileSystem.clear_instance_cache()
    if hub_server.errors:
        pytest.fail("HubServer raised:\n" + "\n".join(hub_server.errors), pytrace=False)


# =============================================================================
# Small reads (tests of fetching ahead)
# =============================================================================


@pytest.fixture
def small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads of a span and 8 frames (the least a shared read takes, as for HD frames), each
    fetched ahead on its own, so that the small roots of the tests take many reads and
    requests, as big roots do."""
    from hf_lvf import frames
    from hf_lvf.read import windows

    monkeypatch.setattr(windows, "_STRIP_BYTES", 1)
    monkeypatch.setattr(frames, "GROUP_ROWS", 0)


# =============================================================================
# (other sections go below)
# =============================================================================


# =============================================================================
# Local S3 server (tests/_s3.py)
#
# moto's S3 server on 127.0.0.1 behind a fault-injecting proxy, started once per session
# by the first test that asks for it. AWS_* variables of the user's environment are
# dropped for the session, so only the options a test gives (or sets) reach lance/pyarrow.
# =============================================================================


@pytest.fixture(scope="session")
def s3_server():
    import logging

    from _s3 import S3StandIn

    for name in [n for n in os.environ if n.startswith("AWS_")]:
        os.environ.pop(name)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto logs every request
    with S3StandIn() as server:
        yield server


@pytest.fixture
def s3(s3_server):
    """The session's S3 stand-in with no injected faults, no added latency and an empty
    request log."""
    s3_server.proxy.clear()
    yield s3_server
    s3_server.proxy.clear()


# =============================================================================
# Local Azure and GCS emulators (tests/_emulators.py)
#
# Azurite (npm, installed into tests/node_modules by `npm ci --prefix tests`) and
# fake-gcs-server (a dev dependency's binary) on 127.0.0.1, each started once per session
# (per xdist worker that runs one of their tests) by the first test that asks for it, and
# ended with the session. AZURE_* and GOOGLE_* variables of the user's environment are
# dropped, so only the options a test gives reach lance and pyarrow.
# =============================================================================


def _drop_environment(prefixes: tuple[str, ...]) -> None:
    for name in [n for n in os.environ if n.startswith(prefixes)]:
        os.environ.pop(name)


@pytest.fixture(scope="session")
def azurite():
    from _emulators import Azurite

    _drop_environment(("AZURE_", "AZURITE_"))
    with Azurite() as server:
        yield server


@pytest.fixture(scope="session")
def fake_gcs():
    from _emulators import FakeGCS

    _drop_environment(("GOOGLE_", "STORAGE_EMULATOR_HOST", "CLOUD_STORAGE_EMULATOR_ENDPOINT"))
    with FakeGCS() as server:
        yield server


# =============================================================================
# Local Ray (tests/test_ray.py, the Ray guide of docs/)
#
# One Ray per test session (per xdist worker that runs a Ray test), started by the first test
# that asks for it (seconds: a raylet,
# a GCS and worker processes) and shut down at the end. Its workers inherit this process's
# environment (PYTHONPATH, HF_ENDPOINT, HF_LVF_CACHE) as it is when Ray starts.
# =============================================================================


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray of 2 CPUs, without dashboard or progress bars."""
    pytest.importorskip("ray")
    import ray
    import ray.data

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local test cluster: no token file
    # Ray runs its workers at nice 15: beside the other xdist workers' tests they got so
    # little CPU that Ray's tests became the suite's tail (37 s for one read of 2,260
    # windows); at the same priority as the rest they take their share.
    os.environ.setdefault("RAY_worker_niceness", "0")
    # Workers import what tests hand them by reference (functions of test modules, helpers).
    # Ray's processes keep the environment they start with: it is restored here after.
    tests, path = str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [tests, path]))
    try:
        # bench_ray.py's start: one that times out (Ray's fixed 30 s, beside the other workers'
        # tests and the local Ray of bench_ray.py --quick) is tried again.
        load_benchmark("bench_ray").start_ray(
            ray,
            num_cpus=2,
            object_store_memory=256 * 2**20,  # tiny test data; xdist workers may each start one
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    finally:
        if path is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = path
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    yield ray
    ray.shutdown()


# =============================================================================
# pytest-xdist: how many workers ``-n auto`` starts (pyproject's addopts)
# =============================================================================
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers per core: many tests spend their time waiting on child processes,
    servers and injected latency, and a second worker per core fills that time (measured
    on 2 cores: 2 workers 340 s, 3 workers 313 s, 4 workers 285 s)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 * (cores or 1)
