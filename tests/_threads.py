"""hf_lvf's read-ahead threads, as tests of fetching ahead and of cancelling it see them."""

from __future__ import annotations

import threading
import time


def fetch_threads() -> list[threading.Thread]:
    """hf_lvf's fetch and read threads alive now."""
    return [t for t in threading.enumerate() if t.name.startswith(("hf_lvf-fetch", "hf_lvf-read"))]


def no_fetch_threads_after(seconds: float) -> bool:
    """Whether every fetch and read thread has ended within ``seconds``."""
    deadline = time.monotonic() + seconds
    while fetch_threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    return not fetch_threads()
