"""Reads of a remote Lance table (``hf://``, object stores): a deadline per try, backoff, a budget.

lance waits out a stalled connection for as long as it stalls and gives up on a 503
after a few instant tries, with an error that names neither the root nor the revision.
:func:`patiently` gives each try ``_READ_TIMEOUT_S``, tries again after a backoff while
``_RETRY_BUDGET_S`` lasts (not on errors that trying again cannot fix), then raises a
:class:`~hf_lvf.errors.HubError` (``hf://`` roots), :class:`~hf_lvf.errors.StoreError`
(object stores) or ``OSError`` naming the root, the revision, what was read and the last
answer, credentials masked. No lance here: it wraps any call, with the loop of
:func:`hf_lvf.location._calls.retry_transient`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from ..errors import HubError, StoreError
from ..location._calls import retry_transient
from ..location.store import is_object_store_uri, redact

T = TypeVar("T")
logger = logging.getLogger("hf_lvf.frames")

_READ_TIMEOUT_S = 60.0
_RETRY_BUDGET_S = 120.0
_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
# Errors that trying again cannot fix: HTTP statuses, and words of lance's error kinds.
_PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 410, 416})
_PERMANENT_WORDS = ("notfound", "not found", "permissiondenied", "permission denied")
_STATUS_RE = re.compile(r"status(?: code)?: (\d{3})")
_CODE_RE = re.compile(r"<Code>(\w+)</Code>")


def patiently(
    call: Callable[[], T],
    *,
    uri: str,
    revision: str | None,
    what: str | Callable[[], str],
    hide: Sequence[str] = (),
) -> T:
    """``call()``, given ``_READ_TIMEOUT_S`` a try and tried again after a backoff on a failure
    that may pass, within ``_RETRY_BUDGET_S``. ``hide``: values (credentials) never to show in
    a message.

    Raises:
        HubError: for an ``hf://`` root, once the budget is spent or the error is permanent.
        StoreError: the same, for an object-store root (``s3://``, ``gs://``, ``az://``).
        OSError: the same, for other remote roots.
    """

    def described() -> str:
        return what if isinstance(what, str) else what()

    def give_up(err: BaseException, tries: int, elapsed: float) -> BaseException:
        where = f"{uri!r}" + (f" at revision {revision!r}" if revision else "")
        message = (
            f"cannot read {described()} of root {where} ({tries} tries in "
            f"{elapsed:.1f} s): {_summary(err, hide)}"
        )
        if uri.startswith("hf://"):
            return HubError(
                f"{message}; the Hub is unreachable, busy or too slow, or the file is "
                "missing: check the connection (and HF_ENDPOINT) and try again later"
            )
        if is_object_store_uri(uri):
            return StoreError(
                f"{message}; check the bucket, the credentials and the endpoint in "
                "storage_options (or the environment), and try again later"
            )
        return OSError(message)

    def on_retry(err: BaseException, wait: float) -> None:
        logger.warning(
            "reading %s of %s failed (%s); trying again in %.2f s",
            described(),
            uri,
            _summary(err, hide),
            wait,
        )

    return retry_transient(
        call,
        timeout_s=_READ_TIMEOUT_S,
        budget_s=_RETRY_BUDGET_S,
        backoff_s=_BACKOFF_S,
        is_permanent=_is_permanent,
        give_up=give_up,
        on_retry=on_retry,
    )


def describe_rows(rows: np.ndarray, starts: np.ndarray, files: list[str]) -> str:
    """``rows`` and the data files that hold them (fragment ``k`` holds rows ``starts[k]`` to
    ``starts[k + 1] - 1`` in ``files[k]``), for an error message."""
    fragment = np.searchsorted(starts, rows, side="right") - 1
    names = sorted({f"data/{files[f]}" for f in fragment.tolist() if 0 <= f < len(files)})
    shown = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
    return f"Lance rows {int(rows.min())}-{int(rows.max())} (in {shown})"


def _summary(err: BaseException, hide: Sequence[str] = ()) -> str:
    """One line about a failed read: the HTTP status if lance names one (and the store's error
    code), else its message; the values in ``hide`` are masked."""
    text = redact(" ".join(str(err).split()), hide)
    status = _STATUS_RE.search(text)
    if status:
        code = _CODE_RE.search(text)
        return f"the server answered {status.group(1)}" + (f" ({code.group(1)})" if code else "")
    return text[:300] or type(err).__name__


def _is_permanent(err: BaseException) -> bool:
    text = str(err).lower()
    status = _STATUS_RE.search(text)
    if status:
        return int(status.group(1)) in _PERMANENT_STATUSES
    return any(word in text for word in _PERMANENT_WORDS)
