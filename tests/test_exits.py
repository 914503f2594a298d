"""Clean exits, as a user's script sees them: each scenario runs as a real subprocess.

- A script that reads one window (a streaming dataset, ``iter_samples()``, a 2-worker
  DataLoader) and ends with the iterator still open, or a whole epoch through persistent
  workers, prints nothing at exit, exits 0 and leaves no thread or process behind.
- Ctrl-C (SIGINT) in a read loop, local or from a Hub whose connections stall, ends the
  process within 2 s of the signal with one ordinary ``KeyboardInterrupt`` traceback.

(A conversion interrupted by Ctrl-C: ``tests/test_convert.py`` for ``convert_videos`` and
``tests/test_cli.py`` for ``hf-lvf convert``.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from _signals import sigint_default, stop_bound
from hub_server import HubServer

from hf_lvf.write.synthetic import write_synthetic_root

# Generous bounds for a loaded machine; the assertions are about what happens, and the one
# about time is how soon Ctrl-C ends the process (_signals.stop_bound).
_RUN_TIMEOUT_S = 180

# Printed by the script's first atexit hook, which runs last (hooks run last-in first-out):
# the hf_lvf threads still alive once every other hook, hf_lvf's included, has run.
_PRELUDE = """
import atexit, threading

def _threads_left():
    names = sorted(t.name for t in threading.enumerate() if t.name.startswith("hf_lvf"))
    print("threads left:", names, flush=True)

atexit.register(_threads_left)
"""

_READ_ONE = {
    "streaming": """
        ds = load_dataset("hf_lvf", data_dir=ROOT, window_length=4, streaming=True,
                          split="train")
        it = iter(ds)
        print("sample", next(it)["sample_idx"])
    """,
    "iter_samples": """
        w = hf_lvf.VideoWindows(ROOT, window_length=4)
        it = w.iter_samples()
        print("sample", next(it)["sample_idx"])
    """,
    "iterable": """
        it = iter(hf_lvf.VideoWindows(ROOT, window_length=4).to_iterable_dataset())
        print("sample", next(it)["sample_idx"])
    """,
    "dataloader": """
        w = hf_lvf.VideoWindows(ROOT, window_length=4)
        it = iter(DataLoader(w, batch_size=2, num_workers=2,
                             multiprocessing_context="forkserver"))
        print("sample", next(it)["sample_idx"].tolist()[0])
    """,
    "dataloader_streaming": """
        ds = load_dataset("hf_lvf", data_dir=ROOT, window_length=4, streaming=True,
                          split="train")
        it = iter(hf_lvf.safe_dataloader(ds, batch_size=2, num_workers=2))
        print("sample", next(it)["sample_idx"].tolist()[0])
    """,
    # A whole epoch, its persistent workers still up at exit (torch tensors went through them):
    # torch shut them down too late, and the resource tracker warned of leaked semaphores.
    "dataloader_epoch_torch": """
        ds = load_dataset("hf_lvf", data_dir=ROOT, window_length=4, hop_size=16,
                          streaming=True, split="train").with_format("torch")
        loader = hf_lvf.safe_dataloader(ds, batch_size=2, num_workers=2)
        print("sample", [batch["sample_idx"].tolist()[0] for batch in loader][0])
    """,
}


def _script(tmp_path: Path, body: str, root: str) -> Path:
    script = tmp_path / f"script_{uuid.uuid4().hex[:8]}.py"
    script.write_text(
        _PRELUDE
        + textwrap.dedent(
            """
            import sys
            import hf_lvf
            from datasets import load_dataset
            from torch.utils.data import DataLoader

            ROOT = {root!r}

            if __name__ == "__main__":
            """
        ).format(root=root)
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return script


def _env(marker: str) -> dict[str, str]:
    # The marker is inherited by every process the script starts: what finds them afterwards.
    return {**os.environ, "HF_LVF_TEST_MARKER": marker, "PYTHONUNBUFFERED": "1"}


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours
            continue
        if f"HF_LVF_TEST_MARKER={marker}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _wait_for_no_process(marker: str, timeout_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> str:
    # Frames big enough that a pass takes several reads: the read-ahead has fetches in
    # flight when the script stops.
    folder = tmp_path_factory.mktemp("exits") / "root"
    return str(write_synthetic_root(folder, num_videos=4, num_frames=200, frame_size=(224, 224)))


def test_passes_left_open_are_what_the_exit_hook_closes(root):
    import threading

    from hf_lvf import VideoWindows
    from hf_lvf.frames import close_open_generators

    w = VideoWindows(root, window_length=4)
    passes = [w.iter_samples(), iter(w)]
    for samples in passes:
        next(samples)
    close_open_generators()  # what runs at exit
    for samples in passes:
        assert next(samples, None) is None  # closed: its finally ran, its read-ahead ended
    deadline = time.monotonic() + 30
    while any(t.name == "hf_lvf-fetch" for t in threading.enumerate()):
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.parametrize("scenario", list(_READ_ONE))
def test_a_script_that_reads_one_window_and_ends_exits_cleanly(tmp_path, root, scenario):
    script = _script(tmp_path, _READ_ONE[scenario], root)
    marker = uuid.uuid4().hex
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=_RUN_TIMEOUT_S,
        env=_env(marker),
        cwd=tmp_path,
    )
    assert result.stderr == ""
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["sample 0", "threads left: []"]
    assert _wait_for_no_process(marker) == []  # no DataLoader worker, no forkserver


_READ_LOOP = """
    import hf_lvf.read.windows
    hf_lvf.read.windows._STRIP_BYTES = 1  # many small reads, as on a big root
    {make}
    reading = False
    while True:
        for sample in {loop}:
            if not reading:
                print("reading", flush=True)
                reading = True
"""

_LOOPS = {
    "iter_samples": ("w = hf_lvf.VideoWindows(ROOT, window_length=4)", "w.iter_samples()"),
    "for_in_view": ("w = hf_lvf.VideoWindows(ROOT, window_length=4)", "w"),
    "take": (
        "w = hf_lvf.VideoWindows(ROOT, window_length=4)",
        "(w.take([i, len(w) - 1 - i]) for i in range(len(w)))",
    ),
    "streaming": (
        'ds = load_dataset("hf_lvf", data_dir=ROOT, window_length=4, streaming=True, '
        'split="train")',
        "ds",
    ),
}


def _interrupt_when_reading(
    script: Path, marker: str, before_signal=None
) -> tuple[float, int, str]:
    """Run ``script``, send SIGINT once it prints ``reading`` (and ``before_signal()`` has
    run); return the seconds from the signal to its end over the bound that the child's own
    start gives (:func:`stop_bound`: under 1 passes), its exit code and its stderr."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(marker),
        cwd=script.parent,
        preexec_fn=sigint_default,  # whatever SIGINT the suite started with
    )
    try:
        line = proc.stdout.readline()
        assert line == "reading\n", line or proc.stderr.read()
        bound = stop_bound(time.monotonic() - started)
        if before_signal is not None:
            before_signal()
        time.sleep(0.3)  # well into the loop
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=_RUN_TIMEOUT_S)
        elapsed = time.monotonic() - sent
        stderr = proc.stderr.read()
    finally:
        proc.kill()
        proc.communicate()
    return elapsed / bound, proc.returncode, stderr


def _assert_one_keyboard_interrupt(returncode: int, stderr: str) -> None:
    # Python ends an uncaught KeyboardInterrupt by dying of SIGINT, as shells expect.
    assert returncode == -signal.SIGINT, stderr
    assert stderr.count("Traceback (most recent call last)") == 1, stderr
    assert stderr.rstrip().splitlines()[-1] == "KeyboardInterrupt", stderr
    assert "Exception ignored" not in stderr, stderr


@pytest.mark.parametrize("loop", list(_LOOPS))
def test_ctrl_c_in_a_read_loop_stops_at_once(tmp_path, root, loop):
    make, iterate = _LOOPS[loop]
    script = _script(tmp_path, _READ_LOOP.format(make=make, loop=iterate), root)
    marker = uuid.uuid4().hex
    elapsed, returncode, stderr = _interrupt_when_reading(script, marker)
    _assert_one_keyboard_interrupt(returncode, stderr)
    assert elapsed < 1, f"exited {elapsed:.2f}x the bound after SIGINT"
    assert _wait_for_no_process(marker) == []


@pytest.mark.hub
def test_ctrl_c_while_the_hub_stalls_stops_at_once(tmp_path, hub: HubServer):
    """Fetches stuck on stalled connections (each would wait out a 60 s timeout, then retry)
    do not hold up the end of the process."""
    local = write_synthetic_root(tmp_path / "root", num_videos=3, num_frames=40)
    files = {
        p.relative_to(local).as_posix(): p.read_bytes() for p in local.rglob("*") if p.is_file()
    }
    hub.create_repo("org/stalls")
    sha = hub.commit("org/stalls", files)
    make = f"w = hf_lvf.VideoWindows('hf://datasets/org/stalls', revision={sha!r}, window_length=4)"
    script = _script(tmp_path, _READ_LOOP.format(make=make, loop="w.iter_samples()"), str(local))
    stall = None

    def stall_the_reads() -> None:
        nonlocal stall
        stall = hub.inject(stall=30.0, times=10_000, path_contains="/data/", method="GET")
        deadline = time.monotonic() + 60
        while not stall.hits and time.monotonic() < deadline:  # a read is stuck now
            time.sleep(0.02)

    elapsed, returncode, stderr = _interrupt_when_reading(script, uuid.uuid4().hex, stall_the_reads)
    assert stall is not None and stall.hits >= 1
    _assert_one_keyboard_interrupt(returncode, stderr)
    assert elapsed < 1, f"exited {elapsed:.2f}x the bound after SIGINT"
