"""Reads of a remote Lance table (``hf://``, object stores): a deadline per try, backoff, a budget.

lance waits out a stalled connection for as long as it stalls and gives up on a 503
after a few instant tries, with an error that names neither the root nor the revision.
:func:`patiently` gives each try ``_READ_TIMEOUT_S``, tries again after a backoff while
``_RETRY_BUDGET_S`` lasts (not on errors that trying again cannot fix), then raises a
:class:`~hf_lvf.errors.HubError` (``hf://`` roots) or ``OSError`` naming the root, the
revision, what was read and the last answer. No lance here: it wraps any call.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from ..errors import HubError
from ..location._calls import call_within

T = TypeVar("T")
logger = logging.getLogger("hf_lvf.frames")

_READ_TIMEOUT_S = 60.0
_RETRY_BUDGET_S = 120.0
_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
# Errors that trying again cannot fix: HTTP statuses, and words of lance's error kinds.
_PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 410, 416})
_PERMANENT_WORDS = ("notfound", "not found", "permissiondenied", "permission denied")
_STATUS_RE = re.compile(r"status: (\d{3})")


def patiently(
    call: Callable[[], T], *, uri: str, revision: str | None, what: str | Callable[[], str]
) -> T:
    """``call()``, given ``_READ_TIMEOUT_S`` a try and tried again after a backoff on a failure
    that may pass, within ``_RETRY_BUDGET_S``.

    Raises:
        HubError: for an ``hf://`` root, once the budget is spent or the error is permanent.
        OSError: the same, for other remote roots.
    """
    started = time.monotonic()
    for attempt in itertools.count():
        try:
            return call_within(call, _READ_TIMEOUT_S)
        except (OSError, ValueError, RuntimeError) as err:
            elapsed = time.monotonic() - started
            wait = _BACKOFF_S[min(attempt, len(_BACKOFF_S) - 1)]
            described = what if isinstance(what, str) else what()
            if _is_permanent(err) or elapsed + wait > _RETRY_BUDGET_S:
                where = f"{uri!r}" + (f" at revision {revision!r}" if revision else "")
                message = (
                    f"cannot read {described} of root {where} ({attempt + 1} tries in "
                    f"{elapsed:.1f} s): {_summary(err)}"
                )
                if not uri.startswith("hf://"):
                    raise OSError(message) from err
                raise HubError(
                    f"{message}; the Hub is unreachable, busy or too slow, or the file is "
                    "missing: check the connection (and HF_ENDPOINT) and try again later"
                ) from err
            logger.warning(
                "reading %s of %s failed (%s); trying again in %.2f s",
                described,
                uri,
                _summary(err),
                wait,
            )
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def describe_rows(rows: np.ndarray, starts: np.ndarray, files: list[str]) -> str:
    """``rows`` and the data files that hold them (fragment ``k`` holds rows ``starts[k]`` to
    ``starts[k + 1] - 1`` in ``files[k]``), for an error message."""
    fragment = np.searchsorted(starts, rows, side="right") - 1
    names = sorted({f"data/{files[f]}" for f in fragment.tolist() if 0 <= f < len(files)})
    shown = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
    return f"Lance rows {int(rows.min())}-{int(rows.max())} (in {shown})"


def _summary(err: BaseException) -> str:
    """One line about a failed read: the HTTP status if lance names one, else its message."""
    text = " ".join(str(err).split())
    status = _STATUS_RE.search(text)
    if status:
        return f"the server answered {status.group(1)}"
    return text[:300] or type(err).__name__


def _is_permanent(err: BaseException) -> bool:
    text = str(err).lower()
    status = _STATUS_RE.search(text)
    if status:
        return int(status.group(1)) in _PERMANENT_STATUSES
    return any(word in text for word in _PERMANENT_WORDS)
