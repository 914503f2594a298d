"""Fork safety: a fork of a process that used lance refuses to read; spawn/forkserver work."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _roots import assert_same_samples, hf_root

from hf_lvf import VideoWindows
from hf_lvf.errors import ForkSafetyError

TIMEOUT = 120  # seconds; generous for busy machines, only there so nothing can hang

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return hf_root(tmp_path_factory.mktemp("fork") / "root", (9, 2, 7))


def _run(context: str, target, *args):
    """Run ``target(queue, *args)`` in a child; return what it puts on the queue."""
    ctx = multiprocessing.get_context(context)
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(queue, *args), daemon=True)
    proc.start()
    try:
        result = queue.get(timeout=TIMEOUT)
        proc.join(TIMEOUT)
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
    assert proc.exitcode == 0
    return result


def _outcome(read):
    try:
        read()
    except Exception as err:
        return type(err).__name__, isinstance(err, ForkSafetyError), str(err)
    return None


def _read_in_fork(queue, w, uri):
    queue.put(
        [
            _outcome(lambda: w[0]),  # the frames of w[0] are in the inherited cache
            _outcome(lambda: w.take([3, 4])),
            _outcome(lambda: VideoWindows(uri)[5]),  # a fresh view is refused too
        ]
    )


def test_fork_after_read_refuses_at_once(root):
    w = VideoWindows(root, window_length=2)
    w[0]
    outcomes = _run("fork", _read_in_fork, w, str(root))
    for outcome in outcomes:
        assert outcome is not None, "a forked child read through lance"
        name, is_fork_error, message = outcome
        assert (name, is_fork_error) == ("ForkSafetyError", True)
        assert f"cannot use lance on {str(root)!r}" in message
        assert "'spawn' or 'forkserver'" in message
        for way_out in (  # every way out, each named
            "hf_lvf.safe_dataloader(...)",
            "DataLoader(..., multiprocessing_context='forkserver')",
            "Dataset.map/filter(num_proc=...)",
            "multiprocessing.get_context('forkserver')",
            "set_start_method('forkserver', force=True)",
            "before this process first opens a root",
        ):
            assert way_out in message
    assert len(w[1]["video"]) == 2  # the parent is unaffected


_NEVER_OPENED = textwrap.dedent(
    """
    import multiprocessing, sys
    import numpy as np
    from hf_lvf import VideoWindows

    def child(queue, w):
        queue.put(w.read_video([0, -1]))

    w = VideoWindows(sys.argv[1], window_length=2)  # metadata only: lance is not opened
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=child, args=(queue, w))
    proc.start()
    got = queue.get(timeout=100)
    proc.join(100)
    assert proc.exitcode == 0, proc.exitcode
    np.testing.assert_array_equal(got, w.read_video([0, -1]))
    print("equal", got.shape)
    """
)


def test_fork_of_a_process_that_never_opened_lance_reads(root):
    # In a fresh interpreter: this test process has used lance already.
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _NEVER_OPENED, str(root)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "equal (2, 2, 32, 48, 3)"


def _read_in_spawn(queue, w):
    queue.put(w.take(range(len(w))))


def test_spawn_child_reads(root):
    w = VideoWindows(root, window_length=3, hop_size=2)
    every = w.take(range(len(w)))  # lance is open here
    assert_same_samples(_run("spawn", _read_in_spawn, w), every)


def test_dataloader_forkserver_covers_every_window_once(root):
    from torch.utils.data import DataLoader

    w = VideoWindows(root, window_length=2, frame_skip=1)
    w[0]
    loader = DataLoader(
        w,
        batch_size=3,
        num_workers=2,
        multiprocessing_context="forkserver",
        timeout=TIMEOUT,
    )
    seen = []
    for batch in loader:
        assert tuple(batch["video"].shape[1:]) == (2, 32, 48, 3)
        for k, i in enumerate(batch["sample_idx"].tolist()):
            np.testing.assert_array_equal(batch["video"][k].numpy(), w[i]["video"])
            seen.append(i)
    assert sorted(seen) == list(range(len(w)))
