"""How every read of the Hub is called: a deadline per try, retries with backoff within a
budget, and errors as :class:`HubError`.

The publishing module uses the same two helpers for its writes (which are retried on a
busy answer only: a write whose answer was lost may have happened). :func:`retry_transient`
is the same loop for any remote call (Lance reads, object-store files): the caller says which
errors are permanent and what to raise when it gives up.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..errors import HubError

logger = logging.getLogger("hf_lvf.location")

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_MAX_ATTEMPTS = 5
_MAX_RETRY_WAIT_S = 30.0
# A read of the Hub (huggingface_hub waits forever for most answers) gets this long a try,
# and its tries and waits together this long.
_CALL_TIMEOUT_S = 60.0
_RETRY_BUDGET_S = 120.0
_LOGIN_HINT = "pass token= (or set HF_TOKEN, or run `hf auth login`)"
_T = TypeVar("_T")


def with_retries(
    call: Callable[[], _T],
    *,
    what: str,
    statuses: frozenset[int] = _RETRY_STATUSES,
    read: bool = False,
) -> _T:
    """``call()``, again after a wait when the Hub answers a retryable status (``Retry-After``).

    With ``read=True`` (a call that changes nothing) each try also gets ``_CALL_TIMEOUT_S``,
    and a dropped connection or a try that runs out of time is tried again too; tries and
    waits stay within ``_RETRY_BUDGET_S``. The last error is raised as it came.
    """
    from huggingface_hub.errors import HfHubHTTPError

    started = time.monotonic()
    for attempt in range(1, _MAX_ATTEMPTS + 1):
        try:
            return call_within(call, _CALL_TIMEOUT_S) if read else call()
        except HfHubHTTPError as err:
            response = getattr(err, "response", None)
            status = getattr(response, "status_code", None)
            if status not in statuses or attempt == _MAX_ATTEMPTS:
                raise
            wait = _retry_after(response, attempt)
            if read and time.monotonic() - started + wait > _RETRY_BUDGET_S:
                raise
            reason = f"the Hub answered {status}"
        except Exception as err:
            if not (read and _is_transport_error(err)) or attempt == _MAX_ATTEMPTS:
                raise
            wait = min(float(2 ** (attempt - 1)), _MAX_RETRY_WAIT_S)
            if time.monotonic() - started + wait > _RETRY_BUDGET_S:
                raise
            reason = f"the connection failed ({type(err).__name__}: {err})"
        logger.warning(
            "%s while %s; retrying in %.1f s (attempt %d of %d)",
            reason,
            what,
            wait,
            attempt + 1,
            _MAX_ATTEMPTS,
        )
        time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def call_within(call: Callable[[], _T], timeout_s: float) -> _T:
    """``call()`` on a helper thread, given up (``TimeoutError``) after ``timeout_s``; the
    thread then ends whenever ``call`` returns, its result dropped."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as err:  # handed over to the caller
            box["error"] = err

    thread = threading.Thread(target=run, name="hf_lvf-read", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def retry_transient(
    call: Callable[[], _T],
    *,
    timeout_s: float,
    budget_s: float,
    backoff_s: tuple[float, ...],
    is_permanent: Callable[[BaseException], bool],
    give_up: Callable[[BaseException, int, float], BaseException],
    on_retry: Callable[[BaseException, float], None],
) -> _T:
    """``call()`` given ``timeout_s`` a try, tried again after ``backoff_s[attempt]`` (the last
    value repeats) on an ``OSError``/``ValueError``/``RuntimeError`` that ``is_permanent`` does
    not call permanent, while tries and waits stay within ``budget_s``.

    ``on_retry(err, wait)`` is called before each wait. When it gives up, it raises
    ``give_up(last error, tries, seconds spent)``, chained to the last error.
    """
    started = time.monotonic()
    for attempt in itertools.count():
        try:
            return call_within(call, timeout_s)
        except (OSError, ValueError, RuntimeError) as err:
            elapsed = time.monotonic() - started
            wait = backoff_s[min(attempt, len(backoff_s) - 1)]
            if is_permanent(err) or elapsed + wait > budget_s:
                raise give_up(err, attempt + 1, elapsed) from err
            on_retry(err, wait)
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _retry_after(response: Any, attempt: int) -> float:
    value = (getattr(response, "headers", None) or {}).get("Retry-After")
    try:
        wait = float(value) if value is not None else float(2 ** (attempt - 1))
    except ValueError:  # an HTTP date: not worth parsing, back off instead
        wait = float(2 ** (attempt - 1))
    return min(max(wait, 0.0), _MAX_RETRY_WAIT_S)


def is_entry_not_found(err: BaseException | None) -> bool:
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    return isinstance(err, EntryNotFoundError) and not isinstance(err, LocalEntryNotFoundError)


def _is_transport_error(err: BaseException) -> bool:
    if isinstance(err, (ConnectionError, TimeoutError)):
        return True
    if isinstance(err, OSError) and "consistency check failed" in str(err).lower():
        return True  # huggingface_hub's word for a body shorter than announced
    names = {cls.__name__ for cls in type(err).__mro__}
    return bool(names & {"TransportError", "TimeoutException", "ConnectError", "RequestError"})


@contextlib.contextmanager
def hub_errors(
    repo_id: str, *, revision: str | None, what: str, writing: bool = False
) -> Iterator[None]:
    """Raise ``huggingface_hub``'s errors as :class:`HubError`, with a message saying what to do."""
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        DisabledRepoError,
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    url = f"{constants.ENDPOINT}/datasets/{repo_id}"
    try:
        yield
    except HubError:
        raise
    except GatedRepoError as err:
        raise HubError(
            f"dataset repo {repo_id!r} is gated: accept its conditions at {url} and {_LOGIN_HINT}"
        ) from err
    except RepositoryNotFoundError as err:
        raise HubError(
            f"dataset repo {repo_id!r} was not found at {constants.ENDPOINT}, or it is private: "
            f"check the repo id, or {_LOGIN_HINT} with a token that can read it"
        ) from err
    except RevisionNotFoundError as err:
        raise HubError(
            f"revision {revision!r} does not exist in dataset repo {repo_id!r}: pass a branch, "
            "tag or commit sha of that repo"
        ) from err
    except DisabledRepoError as err:
        raise HubError(f"dataset repo {repo_id!r} is disabled on the Hub") from err
    except OfflineModeIsEnabled as err:
        raise HubError(
            f"cannot read {what}: HF_HUB_OFFLINE is set; unset it to use the Hub"
        ) from err
    except LocalEntryNotFoundError as err:
        raise HubError(
            f"cannot read {what}: the Hub at {constants.ENDPOINT} could not be reached and the "
            "file is not in the local cache; check the connection (and HF_ENDPOINT)"
        ) from err
    except EntryNotFoundError as err:
        raise HubError(
            f"{what} does not exist at revision {revision or 'main'!r} of dataset repo "
            f"{repo_id!r}: check the path in the repo"
        ) from err
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        server = getattr(err, "server_message", None) or str(err).splitlines()[0]
        if status in (401, 403) and writing:
            hint = f"{_LOGIN_HINT} with a token that has write access to {repo_id!r}"
        elif status in (401, 403):
            hint = _LOGIN_HINT
        elif status is not None and status >= 500 or status == 429:
            hint = "the Hub is busy or down; try again later"
        else:
            hint = "see the message above"
        raise HubError(f"the Hub answered {status} for {what}: {server.strip()}; {hint}") from err
    except Exception as err:
        if _is_transport_error(err):
            raise HubError(
                f"cannot reach the Hub at {constants.ENDPOINT} for {what}: {err}; check the "
                "connection (and HF_ENDPOINT)"
            ) from err
        raise
