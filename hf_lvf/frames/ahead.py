"""Reading ahead: fetching the encoded frames of known coming batches on background threads.

No lance here: :func:`read_ahead` runs any ``fetch(rows) -> list[bytes]`` (the
frame reader's) ahead of the caller. It is bounded by :class:`ReadAheadBudget` (batches
in flight, encoded bytes held) and it is a generator: closing it (a ``break`` in
the caller's loop, an exception, the end of a DataLoader worker) cancels what has
not started and lets the threads end with the fetches already under way.

Passes left open when the interpreter exits (a script that read a few windows with
``next(iter(...))`` and ended) are closed by an ``atexit`` hook (:func:`closed_at_exit`),
while every module is still whole: left to the garbage collector, they would be
finalised while the interpreter tears its modules down, their ``finally`` blocks would
find module globals gone, and Python would print "Exception ignored in: <generator ...>".
The fetch threads of a remote root are daemon threads: they only wait for a read that
runs on a daemon thread of its own (:func:`hf_lvf.location._calls.call_within`), and a
stalled connection must not hold up the exit of a process (Ctrl-C) for its timeouts.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import numbers
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import numpy as np

from ..errors import ParameterError, ParameterTypeError

Fetch = Callable[[np.ndarray], list[bytes]]
# Batches one fetch takes at most (read_ahead's group_rows), and the rows that readers ask
# a fetch to reach: a remote read of 512 scattered rows costs few more requests than one of
# 160, and a local one as little.
_MAX_GROUP = 8
GROUP_ROWS = 512
# Fetches of a remote table under way at once, at most, per pass. Each is a lance take of up
# to GROUP_ROWS scattered rows, which lance splits into ~20 range requests sent together:
# eight at once (the depth) put ~90 requests in flight from one process, more than the
# stand-in's accept queue (64) and the Hub's fair share, and a connection refused there
# waits for a TCP retransmit (1 s, then 3 s) while the pass starves. Four keep ~2 round
# trips of reads ahead of a 2-core decode.
REMOTE_IN_FLIGHT = 4
P = ParamSpec("P")
G = TypeVar("G", bound=Generator)
logger = logging.getLogger("hf_lvf.frames")

# Generators made by closed_at_exit functions and not yet finished (weakly held: one let go
# is closed by the garbage collector as usual, while the interpreter is whole).
_open_generators: weakref.WeakSet[Generator] = weakref.WeakSet()
_atexit_lock = threading.Lock()
_atexit_registered = False


def closed_at_exit(make: Callable[P, G]) -> Callable[P, G]:
    """Decorate a generator function: each generator it makes that is still open when the
    interpreter exits is closed by an ``atexit`` hook, so that its ``finally`` runs while
    the modules it needs are whole. Nothing else changes (the body still starts at the
    first ``next``)."""

    @functools.wraps(make)
    def tracked(*args: P.args, **kwargs: P.kwargs) -> G:
        global _atexit_registered
        generator = make(*args, **kwargs)
        with _atexit_lock:
            if not _atexit_registered:
                atexit.register(close_open_generators)
                # A forked child must not close (and wait for) the passes of its parent.
                os.register_at_fork(after_in_child=_open_generators.clear)
                _atexit_registered = True
            _open_generators.add(generator)
        return generator

    return tracked


def close_open_generators() -> None:
    """Close every generator of :func:`closed_at_exit` functions still open (the ``atexit``
    hook; also safe to call at any time from the thread that iterates them)."""
    for generator in list(_open_generators):
        try:
            generator.close()
        except Exception as err:  # noqa: BLE001  (running in another thread, raised in finally)
            logger.debug("could not close %r at exit: %s", generator, err)


@dataclass(frozen=True, kw_only=True)
class ReadAheadBudget:
    """The read-ahead's budget: how far the encoded frames of known coming reads are
    fetched ahead of decoding (``VideoWindows(..., read_ahead=...)``).

    Used where the order of the coming windows is known: ``VideoWindows.iter_samples``,
    and so ``to_iterable_dataset`` and ``load_dataset(..., streaming=True)``.

    Args:
        depth: batches fetched ahead of the one being decoded, each by its own background
            thread, so that their round trips overlap; ``0`` turns reading ahead off.
        max_bytes: encoded bytes fetched and not yet decoded, at most, estimated from the
            batches fetched so far (until the first is back, only it is fetched); the
            next batch is always fetched, whatever its size.

    The default keeps 8 batches in flight: at 50 ms a round trip that still outruns the
    fastest local front end (streaming, ~450 windows/s on 2 cores).

    Examples:
        >>> ReadAheadBudget(depth=16, max_bytes=256 * 2**20)  # a far-away Hub, memory to spare
        ReadAheadBudget(depth=16, max_bytes=268435456)
    """

    depth: int = 8
    max_bytes: int = 64 * 2**20

    def __post_init__(self) -> None:
        for name, minimum in (("depth", 0), ("max_bytes", 1)):
            value = getattr(self, name)
            integral = isinstance(value, numbers.Integral) and not isinstance(value, bool)
            if not integral or value < minimum:
                raise ParameterError(
                    f"ReadAheadBudget {name} must be an integer >= {minimum}, got {value!r}"
                )

    @classmethod
    def of(cls, value: ReadAheadBudget | None) -> ReadAheadBudget:
        """``value``, or the default for ``None``; anything else is a ``TypeError``."""
        if value is None:
            return cls()
        if not isinstance(value, cls):
            raise ParameterTypeError(
                "read_ahead must be a ReadAheadBudget, e.g. ReadAheadBudget(depth=8), "
                f"got {value!r}"
            )
        return value


class Blobs(list):
    """The encoded frames of rows, in order, and (``fields``) their per-frame field values
    read in the same ``take``: ``{name: array}``, first axis the rows (strings: objects)."""

    def __init__(self, blobs: Iterable[bytes | None], fields: dict[str, np.ndarray] | None = None):
        super().__init__(blobs)
        self.fields = fields or {}


def fields_of(blobs: Sequence[bytes | None]) -> dict[str, np.ndarray]:
    """The field values a read returned with its blobs (none from a plain list)."""
    return getattr(blobs, "fields", {})


class Fetched:
    """The encoded frames of some rows, fetched ahead (and their field values)."""

    def __init__(self, rows: np.ndarray, blobs: Sequence[bytes | None]):
        order = np.argsort(rows, kind="stable")
        self.rows = np.asarray(rows, np.int64)[order]
        self.blobs = [blobs[i] for i in order.tolist()]
        self.fields = {name: values[order] for name, values in fields_of(blobs).items()}
        self.nbytes = sum(len(b) for b in self.blobs if b is not None)  # null frames: 0

    def lookup(self, rows: np.ndarray) -> tuple[Blobs, np.ndarray]:
        """The blobs of ``rows`` in that order (``None`` where not held), and where those are;
        the blobs' ``fields`` hold the field values of the rows held (others: any value)."""
        if self.rows.size == 0:
            return Blobs([None] * len(rows)), np.arange(len(rows))
        pos = np.minimum(np.searchsorted(self.rows, rows), self.rows.size - 1)
        held = self.rows[pos] == rows
        found = [
            self.blobs[p] if h else None for p, h in zip(pos.tolist(), held.tolist(), strict=True)
        ]
        fields = {name: values[pos] for name, values in self.fields.items()}
        return Blobs(found, fields), np.flatnonzero(~held)


@closed_at_exit
def read_ahead(
    fetch: Fetch,
    row_batches: Iterable[np.ndarray],
    options: ReadAheadBudget,
    seen: list[int] | None = None,
    *,
    daemon: bool = False,
    group_rows: int = 0,
    in_flight: int | None = None,
) -> Iterator[Fetched]:
    """Yield the encoded frames of each batch of ``row_batches``, fetched ahead by ``fetch``.

    Up to ``options.depth`` batches are fetched on background threads while the caller
    works on the current one, within ``options.max_bytes``, estimated from ``seen`` (rows
    and bytes fetched so far, updated here; pass the same list to later runs). Passes
    that share ``seen`` (one reader's, run side by side) share that budget too: together
    they hold at most ``max_bytes`` ahead, beyond each one's next batch. While it
    is empty, the first batch is fetched alone, in the calling thread (so a reader opens
    its table there), and handed out before the fetches ahead start. ``row_batches`` is
    consumed lazily, as far as the read-ahead reaches. Closing the generator drops the
    fetches under way: they end on their own (bounded by the reader's timeouts) and so do
    their threads, one per fetch, named
    ``hf_lvf-fetch``; ``daemon=True`` makes them daemon threads, which the exit of the
    interpreter does not wait for. With ``group_rows``, each fetch but that of the batch
    needed next takes following batches (up to 8) until it holds that many rows: one
    remote read of scattered rows costs about as many requests as one of fewer (the same
    :class:`Fetched` is then yielded for each of its batches). With ``in_flight``, at most
    that many fetches are under way at once (the others of ``depth`` start as these end):
    a remote table's (:data:`REMOTE_IN_FLIGHT`).

    Raises:
        whatever ``fetch`` raises, when the batch that failed is reached.
    """
    batches = iter(row_batches)
    seen = [0, 0] if seen is None else seen
    with _held_lock:
        if len(seen) < 3:
            seen.append(0)  # bytes every pass sharing ``seen`` holds ahead (estimated)
    held = 0  # of which this pass's
    if options.depth == 0:
        for rows in batches:
            rows = np.asarray(rows, np.int64)
            yield _counted(Fetched(rows, fetch(rows)), seen)
        return
    # The batches to hand out next, then those fetched ahead: (done or a Future, rows, batches).
    pending: deque[tuple[Fetched | Future[Fetched], int, int]] = deque()
    if not seen[0]:  # handed out before any fetch ahead starts: nothing competes with its decode
        first = next(batches, None)
        if first is None:
            return
        first = np.asarray(first, np.int64)
        yield _counted(Fetched(first, fetch(first)), seen)
    exhausted = False
    try:
        while True:
            per_row = seen[1] / max(seen[0], 1)
            ahead = sum(n for _, n, _ in list(pending)[1:]) * per_row
            # Other passes of the same reader (datasets' shuffle interleaves several) share
            # the budget: together they hold at most max_bytes ahead, each its next batch.
            others = max(0.0, seen[2] - held)
            running = _running(pending) if in_flight else 0
            while not exhausted and len(pending) <= options.depth:
                if len(pending) > 1 and ahead + others > options.max_bytes:
                    break
                if in_flight and running >= in_flight and len(pending) > 0:
                    break
                group = []
                while not group or (pending and _fits(group, group_rows, per_row, options)):
                    rows = next(batches, None)
                    if rows is None:
                        exhausted = True
                        break
                    group.append(np.asarray(rows, np.int64))
                if not group:
                    break
                rows = group[0] if len(group) == 1 else np.unique(np.concatenate(group))
                pending.append((_start_fetch(fetch, rows, daemon), len(rows), len(group)))
                running += 1
                ahead += len(rows) * per_row
                held = _hold(seen, held, len(rows) * per_row)
            if not pending:
                return
            item, size, count = pending.popleft()
            held = _hold(seen, held, -size * per_row)
            fetched = item if isinstance(item, Fetched) else _counted(item.result(), seen)
            for _ in range(count):
                yield fetched
    finally:
        pending.clear()  # what is under way ends on its own, its result dropped
        _hold(seen, held, -held)


_held_lock = threading.Lock()


def _running(pending: Iterable[tuple[Fetched | Future[Fetched], int, int]]) -> int:
    """How many of ``pending``'s fetches are still under way."""
    return sum(isinstance(item, Future) and not item.done() for item, _, _ in pending)


def _hold(seen: list, held: float, change: float) -> float:
    """Count ``change`` bytes more held ahead by a pass (which held ``held``) in ``seen[2]``,
    the total of every pass sharing ``seen``; the pass's new count."""
    change = max(change, -held)
    with _held_lock:
        seen[2] = max(0.0, seen[2] + change)
    return held + change


def _fits(
    group: list[np.ndarray], group_rows: int, per_row: float, options: ReadAheadBudget
) -> bool:
    """Whether a fetch of ``group``'s batches takes one batch more: fewer than ``group_rows``
    rows, and (estimated) bytes within a share of the budget that leaves room for ``depth``
    such fetches twice over."""
    rows = sum(len(r) for r in group)
    share = options.max_bytes / (2 * max(options.depth, 1))
    return len(group) < _MAX_GROUP and rows < group_rows and rows * per_row < share


def _start_fetch(fetch: Fetch, rows: np.ndarray, daemon: bool) -> Future[Fetched]:
    """``Fetched(rows, fetch(rows))`` on a thread of its own (at most ``depth`` at once)."""
    future: Future[Fetched] = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(Fetched(rows, fetch(rows)))
        except BaseException as err:  # handed to whoever takes the batch
            future.set_exception(err)

    threading.Thread(target=run, name="hf_lvf-fetch", daemon=daemon).start()
    return future


def _counted(fetched: Fetched, seen: list[int]) -> Fetched:
    seen[0] += fetched.rows.size
    seen[1] += fetched.nbytes
    return fetched


class AheadReads:
    """What a reader needs to read ahead: it implements ``_read_now(rows)``; its reads go
    through ``_read_held(rows)``, which serves what the current batch of a read-ahead holds."""

    _current: Fetched | None = None
    #: Reads of a remote table wait on a daemon thread of their own (see the module docstring).
    is_remote: bool = False

    def _read_now(self, rows: np.ndarray, fields: bool = True) -> list[bytes]:
        raise NotImplementedError

    def _read_held(self, rows: np.ndarray, fields: bool = True) -> list[bytes]:
        """The frames of ``rows`` (and, unless ``fields=False``, their fields' values)."""

        def now(rows: np.ndarray) -> list[bytes]:  # a reader without fields takes one argument
            return self._read_now(rows) if fields else self._read_now(rows, fields=False)

        if self._current is None:
            return now(rows)
        found, missing = self._current.lookup(rows)
        if missing.size == len(rows):
            return now(rows)
        if missing.size:
            read = now(rows[missing])
            for k, blob in zip(missing.tolist(), read, strict=True):
                found[k] = blob
            values = fields_of(read)
            if fields and set(values) != set(found.fields):  # fetched with other fields
                return now(rows)
            for name, column in values.items():
                found.fields[name][missing] = column
        return found  # type: ignore[return-value]  # every None was filled

    @contextlib.contextmanager
    def reading_ahead(
        self, row_batches: Iterable[np.ndarray], options: ReadAheadBudget
    ) -> Iterator[Callable[[], None]]:
        """Fetch the rows of ``row_batches`` ahead (:func:`read_ahead`); yields
        ``next_batch()``, which makes the next batch's frames what reads are served from.

        Call ``next_batch()`` right before the reads of each batch, with no ``yield`` in
        between, so that interleaved readers of one view each get their own batch. Leaving
        the block (a ``break``, an exception, ``close()`` of the caller) stops the read-ahead.
        """
        seen = self.__dict__.setdefault("_ahead_seen", [0, 0])  # row sizes, across passes
        remote = self.is_remote
        fetched = read_ahead(
            self._read_now,
            row_batches,
            options,
            seen,
            daemon=remote,
            group_rows=GROUP_ROWS,
            in_flight=REMOTE_IN_FLIGHT if remote else None,
        )

        def next_batch() -> None:
            self._current = None
            self._current = next(fetched, None)

        try:
            yield next_batch
        finally:
            self._current = None
            fetched.close()
