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


#: How soon after Ctrl-C a child must have ended. What these tests guard against is waiting
#: for a whole pass, a 60 s connection timeout or a worker pool's drain, each many times
#: this; an idle machine ends in well under 1 s, and 5 s leaves room for a 2-core machine
#: loaded far past two suites at once (2 s was exceeded at a load average of 13).
CTRL_C_EXIT_S = 5.0
