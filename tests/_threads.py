"""hf_lvf's read-ahead threads, as tests of fetching ahead and of cancelling it see them."""

from __future__ import annotations

import threading

# Long enough that only a hang reaches it, on a machine however loaded: a fetch dropped by a
# closed read ends with its own read (a few ms locally, a request or two remotely).
HANG_S = 120.0


def fetch_threads() -> list[threading.Thread]:
    """hf_lvf's fetch and read threads alive now."""
    return [t for t in threading.enumerate() if t.name.startswith(("hf_lvf-fetch", "hf_lvf-read"))]


def fetch_threads_end(timeout: float = HANG_S) -> bool:
    """Whether every fetch and read thread alive now ends, and none starts after them.

    Joins each one (the read that stopped must not start new ones: a suspended or closed
    generator runs no code), so the answer does not depend on the machine's speed: only a
    thread that never ends, or a read that goes on fetching, makes it False.
    """
    for _ in range(100):  # a read that went on fetching would start threads without end
        alive = fetch_threads()
        if not alive:
            return True
        for thread in alive:
            thread.join(timeout)
            if thread.is_alive():
                return False
    return False
