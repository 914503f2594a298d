"""Worker processes: a fork of a process that used lance must not touch lance, and a script
whose workers run it again must keep its work under ``if __name__ == "__main__":``.

pylance is not fork-safe (a forked child of a process that used lance can hang or crash,
even if it reopens the dataset), so every use of lance goes through :func:`enter_lance`, and
a read in such a fork raises :class:`~hf_lvf.errors.ForkSafetyError` at once. So hf_lvf
starts worker processes with ``spawn`` or ``forkserver`` (a DataLoader's workers,
``convert_videos``' pool), and both run the main script again in each worker (as
``__mp_main__``): :func:`check_main_guard` refuses, before any process starts, a call from
the top level of a script without that guard. Low in the layers (it knows only the errors):
every layer that starts or uses processes asks it.
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import sys
from pathlib import Path
from types import FrameType

from .errors import FORK_WAYS_OUT, ForkSafetyError, UsageError

# ================================================================================================
# Fork safety: a fork of a process that used lance must not touch lance.
#
# pylance is not fork-safe (a forked child of a process that used lance can hang or crash,
# even if it reopens the dataset), so every use of lance goes through :func:`enter_lance`,
# and a read in such a fork raises :class:`~hf_lvf.errors.ForkSafetyError` at once.
# ================================================================================================


# pid of the first process of this lineage that opened Lance; a fork copies it, so a child
# sees its parent's pid here and knows not to touch lance.
_lance_opened_by_pid: int | None = None


def enter_lance(uri: str) -> None:
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


# ================================================================================================
# The main guard: a script whose worker processes run it again must keep its work under
# ``if __name__ == "__main__":``.
#
# pylance is not fork-safe (above), so hf_lvf starts worker processes with ``spawn``
# or ``forkserver`` (a DataLoader's workers, ``convert_videos``' pool), and both run the main
# script again in each worker (as ``__mp_main__``). :func:`check_main_guard` refuses, before
# any process starts, a call from the top level of a script without that guard.
# ================================================================================================


_GUARD = 'if __name__ == "__main__":'


def check_main_guard(entry: str) -> None:
    """Raise if ``entry`` (about to start processes) runs where each new process would run it
    again: at the top level of a main script without the ``__main__`` guard.

    Detected in the parent, from the main script's source (the line of the top-level
    statement that led here), and in a spawned worker that is still importing the main
    script, where multiprocessing would otherwise fail with a bare ``BrokenProcessPool``.

    Raises:
        RuntimeError: the message says what to change.
    """
    hint = (
        f"put the script's top-level code under `{_GUARD}`: worker processes "
        "(started with 'spawn' or 'forkserver', since pylance is not fork-safe) run the main "
        "script again, and without the guard each of them would call "
        f"{entry} again instead of doing its work"
    )
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise UsageError(
            f"{entry} was called while a worker process imports the main script; {hint}"
        )
    where = _unguarded_main_line(sys._getframe(1))
    if where is not None:
        raise UsageError(f"{entry} is called from {where}, outside `{_GUARD}`; {hint}")


def _unguarded_main_line(frame: FrameType | None) -> str | None:
    """``"path, line N"`` of the unguarded top-level statement of the main script that the
    call stack of ``frame`` starts from, or ``None`` (guarded, or not run from a script)."""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    while frame is not None and not (
        frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__"
    ):
        frame = frame.f_back
    if frame is None or not path or frame.f_code.co_filename != path:
        return None  # an interactive session, python -c, a notebook: nothing is re-run
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    line = frame.f_lineno
    for node in ast.walk(tree):  # the guard may sit inside a try:, a with: ...
        if _is_main_guard(node) and node.lineno <= line <= (node.end_lineno or line):
            return None
    return f"{path!r}, line {line}"


def _is_main_guard(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    for compare in ast.walk(node.test):
        if isinstance(compare, ast.Compare):
            parts = [compare.left, *compare.comparators]
            names = {p.id for p in parts if isinstance(p, ast.Name)}
            values = {p.value for p in parts if isinstance(p, ast.Constant)}
            if "__name__" in names and "__main__" in values:
                return True
    return False


__all__ = ["check_main_guard"]
