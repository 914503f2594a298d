"""Children that take Ctrl-C as a terminal's would, however the suite itself was started.

A suite started from a background job of a script, under ``nohup`` or by many CI runners
and job schedulers inherits SIGINT *ignored* (``SigIgn`` in ``/proc/PID/status``), and
Python keeps a signal that was ignored at startup ignored: a child started from it would
drop the SIGINT a test sends. Every test that interrupts a child starts it with
``preexec_fn=sigint_default``, so the child's Python installs its KeyboardInterrupt handler.
"""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """``Popen(preexec_fn=...)``: SIGINT back to its default in the child, before it execs."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_bound(started_s: float) -> float:
    """How soon after Ctrl-C a child must have ended, given the seconds it took in the same
    run to start and reach its work (``started_s``: imports, a root opened, a first read).

    What these tests guard against is waiting for a whole pass, a 60 s connection timeout,
    a 30 s stall or a worker pool's drain. A bound in seconds alone fails on a loaded
    machine without a defect; this one grows with the machine's slowness as measured by the
    child itself: as long as its start took (which an idle machine does in about a second),
    and never under 5 s.
    """
    return max(5.0, started_s)
