"""Fork safety: a fork of a process that used lance must not touch lance.

pylance is not fork-safe (a forked child of a process that used lance can hang or crash,
even if it reopens the dataset), so every use of lance goes through :func:`_enter_lance`,
and a read in such a fork raises :class:`~hf_lvf.errors.ForkSafetyError` at once.
"""

from __future__ import annotations

import os

from ..errors import FORK_WAYS_OUT, ForkSafetyError

# pid of the first process of this lineage that opened Lance; a fork copies it, so a child
# sees its parent's pid here and knows not to touch lance.
_lance_opened_by_pid: int | None = None


def _enter_lance(uri: str) -> None:
    """Call before any use of lance: refuse in a fork of a lance user, else note the use."""
    global _lance_opened_by_pid
    check_fork_safe(uri)
    if _lance_opened_by_pid is None:
        _lance_opened_by_pid = os.getpid()


def fork_is_unsafe() -> bool:
    """Whether a fork could not use lance: this process (or its parent) opened a dataset."""
    return _lance_opened_by_pid is not None


def check_fork_safe(uri: str) -> None:
    """Raise :class:`ForkSafetyError` if this process is a fork of one that used lance."""
    if _lance_opened_by_pid is not None and _lance_opened_by_pid != os.getpid():
        raise ForkSafetyError(
            f"cannot use lance on {uri!r}: this process (pid {os.getpid()}) was forked from pid "
            f"{_lance_opened_by_pid}, which had already opened a Lance dataset, and pylance is not "
            f"fork-safe (the child may hang or crash). {FORK_WAYS_OUT}"
        )
