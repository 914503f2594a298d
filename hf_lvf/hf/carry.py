"""Carrying functions of the main script to worker processes, however it defines them.

A worker started with ``spawn`` or ``forkserver`` runs the main script again as
``__mp_main__``, but not what is under its ``if __name__ == "__main__":`` guard: a transform,
filter or collate function defined there (or nested in another function, or decorated) is
not there to be found by name, and a by-reference ``pickle`` of it cannot be loaded. Like
cloudpickle, hf_lvf then sends whatever comes from ``__main__`` by value: with ``dill``
(what ``datasets`` pickles functions with, so no new dependency), ``recurse=True`` so that
the globals a function uses travel with it instead of being looked up in the child's
``__main__``.

A payload that still cannot be loaded in the worker does not kill it: :func:`loads_or_error`
hands back the worker's exception, formatted, for the caller to raise where the parent
sees it (a DataLoader's worker error, a pool's task error).
"""

from __future__ import annotations

import copyreg
import io
import pickle
import traceback
from typing import Any

from ..errors import WorkerLoadError


class _FromMain(Exception):
    """Raised by :class:`_MainProbe` at the first object it would pickle by a ``__main__``
    reference."""


class _MainProbe(pickle.Pickler):
    """A pickler into nothing that stops at the first function or class of ``__main__``."""

    def reducer_override(self, obj: Any) -> Any:
        if callable(obj) and getattr(obj, "__module__", None) == "__main__":  # classes too
            raise _FromMain(getattr(obj, "__qualname__", repr(obj)))
        return NotImplemented


class _Nowhere(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return len(data)


def needs_by_value(value: Any) -> bool:
    """Whether the standard ``pickle`` cannot carry ``value`` to a spawned worker: it refuses
    it (a lambda, a closure) or would refer to a function or class of ``__main__`` by name."""
    try:
        _MainProbe(_Nowhere(), protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except (_FromMain, pickle.PicklingError, AttributeError, TypeError):
        return True
    return False


def dumps_by_value(value: Any, extra_reducers: dict | None = None) -> bytes:
    """``value`` pickled with ``dill``, what comes from ``__main__`` by value with the globals
    it uses; ``extra_reducers`` are added to the dispatch table (multiprocessing's, so that a
    shared tensor stays shared)."""
    import dill  # installed with datasets

    buffer = io.BytesIO()
    pickler = dill.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL, recurse=True)
    pickler.dispatch_table = {**copyreg.dispatch_table, **(extra_reducers or {})}
    pickler.dump(value)
    return buffer.getvalue()


def loads_or_error(payload: bytes, what: str) -> tuple[Any, WorkerLoadError | None]:
    """``(value, None)``, or ``(None, error)`` when ``payload`` cannot be loaded here: the
    error names ``what`` and carries this process's traceback in its message."""
    import dill

    try:
        return dill.loads(payload), None
    except Exception as err:  # noqa: BLE001  (any failure is reported to the parent)
        child = "".join(traceback.format_exception(err)).rstrip()
        return None, WorkerLoadError(
            f"{what} could not be loaded in the worker process: {type(err).__name__}: {err}. "
            "Define what it uses at the top level of an importable module, or make sure the "
            f"worker can import it. The worker's traceback:\n{child}"
        )


class ByValuePool:
    """A ``multiprocess`` pool whose ``apply_async`` tasks travel by value
    (:func:`~hf_lvf.hf.dumps_by_value`): a ``map`` function defined under the script's
    main guard, and the globals it uses, which a forkserver worker's ``__main__`` lacks. A task
    the worker cannot load fails with the worker's error, which the pool hands to the parent."""

    def __init__(self, pool: Any):
        self._inner = pool

    def __getattr__(self, name: str) -> Any:  # _ctx, _pool, close, join... of the pool
        return getattr(self._inner, name)

    def __enter__(self) -> ByValuePool:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._inner.__exit__(*exc)

    def apply_async(self, func: Any, args: tuple = (), kwds: dict | None = None, **rest: Any):
        from multiprocess.reduction import ForkingPickler

        payload = dumps_by_value((func, args, kwds or {}), ForkingPickler._extra_reducers)
        return self._inner.apply_async(_run_task, (payload,), **rest)


def _run_task(payload: bytes) -> Any:
    task, error = loads_or_error(payload, "A Dataset.map/filter(num_proc=...) task")
    if error is not None:
        raise error
    func, args, kwds = task
    return func(*args, **kwds)


__all__ = ["ByValuePool", "dumps_by_value", "loads_or_error", "needs_by_value"]
