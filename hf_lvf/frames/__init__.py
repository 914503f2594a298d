"""Batched reads of encoded frames from the Lance table of a root, and reading ahead.

The only module that imports ``lance``. pylance is not fork-safe: a forked
child of a process that used lance can hang or crash, even if it reopens the
dataset. So a handle is opened lazily in the process that reads, and a read in
a forked child of a process that already opened one raises
:class:`~hf_lvf.errors.ForkSafetyError` at once instead of risking a hang.

Writing and growing a table is :mod:`hf_lvf.write.frame_table`. Reads of a remote
table have a deadline and bounded retries (:mod:`.remote`);
:meth:`FrameReader.reading_ahead` fetches the frames of known coming batches on
background threads while the caller decodes (:func:`read_ahead`).
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
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import numpy as np
import pyarrow as pa

from ..errors import HubError, LayoutError, ParameterError, ParameterTypeError, StoreError
from ..layout import RootLayout, check_row_count
from ..layout.image_streams import stream_names
from ..location import lance_location
from ..location.paths import lance_options
from ..location.store import secret_values
from ..processes import enter_lance
from .remote import describe_rows, patiently

# ================================================================================================
# Batched reads of encoded frames from the Lance table of a root, and reading ahead.
#
# The only module that imports ``lance``. pylance is not fork-safe: a forked
# child of a process that used lance can hang or crash, even if it reopens the
# dataset. So a handle is opened lazily in the process that reads, and a read in
# a forked child of a process that already opened one raises
# :class:`~hf_lvf.errors.ForkSafetyError` at once instead of risking a hang.
#
# Writing and growing a table is :mod:`hf_lvf.write.frame_table`. Reads of a remote
# table have a deadline and bounded retries (:mod:`.remote`);
# :meth:`FrameReader.reading_ahead` fetches the frames of known coming batches on
# background threads while the caller decodes (:func:`read_ahead`).
# ================================================================================================


# The columns every frame table has (FORMAT.md); per-frame fields follow them.
FRAME_SCHEMA = pa.schema(
    [("video_id", pa.int32()), ("frame_idx", pa.int32()), ("bytes", pa.large_binary())]
)


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
    read in the same ``take``: ``{name: array}``, first axis the rows (strings: objects);
    ``streams``: the encoded images of the rows in each image stream read, ``{name: list}``."""

    def __init__(
        self,
        blobs: Iterable[bytes | None],
        fields: dict[str, np.ndarray] | None = None,
        streams: dict[str, list[bytes | None]] | None = None,
    ):
        super().__init__(blobs)
        self.fields = fields or {}
        self.streams = streams or {}


def fields_of(blobs: Sequence[bytes | None]) -> dict[str, np.ndarray]:
    """The field values a read returned with its blobs (none from a plain list)."""
    return getattr(blobs, "fields", {})


def streams_of(blobs: Sequence[bytes | None]) -> dict[str, list[bytes | None]]:
    """The images of each stream a read returned with its blobs (none from a plain list)."""
    return getattr(blobs, "streams", {})


class Fetched:
    """The encoded frames of some rows, fetched ahead (and their field values)."""

    def __init__(self, rows: np.ndarray, blobs: Sequence[bytes | None]):
        order = np.argsort(rows, kind="stable")
        self.rows = np.asarray(rows, np.int64)[order]
        self.blobs = [blobs[i] for i in order.tolist()]
        self.fields = {name: values[order] for name, values in fields_of(blobs).items()}
        picks = order.tolist()
        self.streams = {name: [s[i] for i in picks] for name, s in streams_of(blobs).items()}
        self.nbytes = sum(len(b) for b in self.blobs if b is not None)  # null frames: 0
        for images in self.streams.values():
            self.nbytes += sum(len(b) for b in images if b is not None)

    def lookup(self, rows: np.ndarray) -> tuple[Blobs, np.ndarray]:
        """The blobs of ``rows`` in that order (``None`` where not held), and where those are;
        the blobs' ``fields`` hold the field values of the rows held (others: any value)."""
        if self.rows.size == 0:
            empty = {name: [None] * len(rows) for name in self.streams}
            return Blobs([None] * len(rows), streams=empty), np.arange(len(rows))
        pos = np.minimum(np.searchsorted(self.rows, rows), self.rows.size - 1)
        held = self.rows[pos] == rows
        places = list(zip(pos.tolist(), held.tolist(), strict=True))
        found = [self.blobs[p] if h else None for p, h in places]
        fields = {name: values[pos] for name, values in self.fields.items()}
        streams = {
            name: [s[p] if h else None for p, h in places] for name, s in self.streams.items()
        }
        return Blobs(found, fields, streams), np.flatnonzero(~held)


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


T = TypeVar("T")


_COLUMN_KINDS = (
    ("video_id", pa.types.is_integer, "int32"),
    ("frame_idx", pa.types.is_integer, "int32"),
    ("bytes", lambda t: pa.types.is_large_binary(t) or pa.types.is_binary(t), "large_binary"),
)


_Folder = os.PathLike[str] | str


_Options = Mapping[str, str] | None  # storage_options, for lance and location.store


class FrameReader:
    """Reads the ``bytes`` of Lance rows, one ``take`` per batch, and ahead (``reading_ahead``);
    picklable (reopens lazily). An ``hf://...@rev`` root is opened as lance takes it.

    ``fields``: the per-frame fields read in the same ``take`` (names; ``None``: all of the
    root's), returned as the ``fields`` of what :meth:`read` returns (a :class:`Blobs`).
    ``streams``: the image streams (dotted names) read in the same ``take``, returned as its
    ``streams``, with the frames (also by a read of the frames alone, ``fields=False``)."""

    def __init__(
        self,
        layout: RootLayout,
        storage_options: Mapping[str, str] | None = None,
        fields: Sequence[str] | None = (),
        required: Sequence[str] = (),
        streams: Sequence[str] = (),
        images: str = "bytes",
    ):
        uri, self._storage_options = lance_location(layout.uri, lance_options(storage_options))
        self._layout = layout if uri == layout.uri else layout.with_uri(uri)
        self._ds: Any = None
        self._pid: int | None = None
        self._open_lock = threading.Lock()  # read-ahead threads may open the table first
        self._files: tuple[np.ndarray, list[str]] = (np.zeros(1, np.int64), [])
        self._selection = None if fields is None else tuple(fields)
        self._required = tuple(required)  # names that must be fields (read at offsets)
        self._fields: tuple[FrameField, ...] = ()
        self._streams = tuple(streams)
        # The column whose images are the frames read: ``bytes``, or a proxy of it that
        # serves a smaller frame size (FORMAT.md, "Image streams"); its bytes alone are read.
        self._images = images
        # The frames and the streams: what every take reads; the fields' columns follow.
        self._frame_columns = ["video_id", "frame_idx", images, *self._streams]
        self._columns: list[str] = list(self._frame_columns)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "layout": self._layout,
            "storage_options": self._storage_options,
            "fields": self._selection,
            "required": self._required,
            "streams": self._streams,
            "images": self._images,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = {"fields": (), "required": (), "streams": (), "images": "bytes"} | state
        self.__init__(
            state["layout"],
            state["storage_options"],
            state["fields"],
            state["required"],
            state["streams"],
            state["images"],
        )

    @property
    def streams(self) -> tuple[str, ...]:
        """The image streams each read returns (dotted names)."""
        return self._streams

    @property
    def images(self) -> str:
        """The column the frames are read from: ``"bytes"``, or a proxy of it."""
        return self._images

    @property
    def fields(self) -> tuple[FrameField, ...]:
        """The per-frame fields each read returns (opens the table)."""
        _ = self.dataset
        return self._fields

    @property
    def dataset(self) -> Any:
        """The open ``lance.LanceDataset``, opened and checked on first use in this process."""
        if self._ds is not None and self._pid == os.getpid():
            return self._ds
        with self._open_lock:
            if self._ds is not None and self._pid == os.getpid():
                return self._ds
            return self._open()

    @property
    def is_open(self) -> bool:
        """Whether the table was opened (so its schema is known) in this process."""
        return self._ds is not None

    @property
    def is_remote(self) -> bool:
        return "://" in self._layout.uri and not self._layout.uri.startswith("file://")

    def _open(self) -> Any:
        uri = self._layout.uri
        enter_lance(uri)
        import lance

        version = pinned_version(self._layout)  # the version _metadata.json describes

        def open_table() -> Any:
            options = self._storage_options or None
            return lance.dataset(uri, version=version, storage_options=options)

        try:
            ds = self._patiently(open_table, "the Lance table") if self.is_remote else open_table()
        except (OSError, ValueError, RuntimeError) as err:
            if isinstance(err, (HubError, StoreError)):
                raise
            raise LayoutError(f"cannot open the Lance table of root {uri!r}: {err}") from err
        missing = [name for name in FRAME_SCHEMA.names if ds.schema.get_field_index(name) < 0]
        if missing:
            raise LayoutError(
                f"the Lance table of root {uri!r} has no {', '.join(map(repr, missing))} column "
                f"(columns: {', '.join(ds.schema.names)}); expected {FRAME_SCHEMA}"
            )
        for name, is_kind, expected in _COLUMN_KINDS:
            kind = ds.schema.field(name).type
            if not is_kind(kind):
                raise LayoutError(
                    f"the {name!r} column of root {uri!r} has type {kind}, expected {expected}"
                )
        check_row_count(self._layout, ds.count_rows())
        self._check_streams(ds.schema)
        if self._selection != () or self._required:  # a reader of per-frame fields:
            # unsupported column types are refused here; unknown selected names too.
            found = frame_fields(ds.schema, where=uri, streams=stream_names(self._layout.header))
            select_fields(found, self._required, uri)
            self._fields = select_fields(found, self._selection, uri)
            self._columns = self._frame_columns + field_columns(self._fields)
        # Where each row lives, for error messages: (first row of each fragment, its file).
        fragments = [f.metadata for f in ds.get_fragments()]
        starts = np.cumsum([0] + [f.physical_rows for f in fragments])
        self._files = (starts, [f.files[0].path if f.files else "?" for f in fragments])
        self._ds, self._pid = ds, os.getpid()
        return ds

    def _check_streams(self, schema: pa.Schema) -> None:
        """Refuse a stream read that has no binary column in ``schema``, naming it."""
        proxy = () if self._images == "bytes" else (self._images,)
        for name in (*self._streams, *proxy):
            kind: Any = None
            container: Any = schema
            for part in name.split("."):
                index = container.get_field_index(part) if container is not None else -1
                if index < 0:
                    kind = None
                    break
                kind = container.field(index).type
                container = kind if pa.types.is_struct(kind) else None
            if kind is None or not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
                raise LayoutError(
                    f"_metadata.json of root {self._layout.uri!r} lists the image stream "
                    f"{name!r}, but its Lance table has "
                    + ("no such column" if kind is None else f"it of type {kind}")
                    + ": a stream is a binary column of that dotted name (FORMAT.md)"
                )

    def read(self, rows: np.ndarray, *, fields: bool = True) -> list[bytes]:
        """Encoded frames of ``rows`` (any order), in that order, in one Lance ``take``; rows
        that a read-ahead already fetched (see :meth:`reading_ahead`) are not read again.

        Each row's ``video_id`` and ``frame_idx`` come in the same take and are checked
        against what the video table places there.

        Raises:
            LayoutError: a row holds another frame than the video table says (rows out of
                ``(video, frame)`` order); names the root, the row, what it holds and what
                was expected.
            HubError: a remote read still failed after its retries (see :mod:`.remote`).
        """
        if len(rows) == 0:
            return []
        rows = np.asarray(rows, dtype=np.int64)
        if not fields and self.fields:  # the frames alone: no field column in the take
            return self._read_held(rows, fields=False)
        return self._read_held(rows)

    def _read_now(self, rows: np.ndarray, fields: bool = True) -> Blobs:
        dataset = self.dataset
        # The frames and the selected fields: one take (fields=False: the frames alone).
        columns = self._columns if fields else self._frame_columns

        def take() -> pa.Table:
            return dataset.take(pa.array(rows), columns=columns)

        table = (
            self._patiently(take, lambda: describe_rows(rows, *self._files))
            if self.is_remote
            else take()
        )
        self._check_rows(rows, table)
        values = read_fields(table, self._fields) if fields else {}
        streams = {name: _stream_column(table, name).to_pylist() for name in self._streams}
        return Blobs(_stream_column(table, self._images).to_pylist(), values, streams)

    def _patiently(self, call: Callable[[], T], what: str | Callable[[], str]) -> T:
        revision = self._storage_options.get("hf_revision")
        hide = secret_values(self._storage_options)  # credentials: never in a message
        return patiently(call, uri=self._layout.uri, revision=revision, what=what, hide=hide)

    def _check_rows(self, rows: np.ndarray, table: pa.Table) -> None:
        layout = self._layout
        start_rows = layout.start_rows
        video = np.searchsorted(start_rows, rows, side="right") - 1
        ids = layout.ids
        got_ids = table.column("video_id").to_numpy(zero_copy_only=False)
        got_frames = table.column("frame_idx").to_numpy(zero_copy_only=False)
        frames = rows - start_rows[video]
        bad = np.flatnonzero((got_ids != ids[video]) | (got_frames != frames))
        if bad.size:
            k = int(bad[0])
            v = int(video[k])
            raise LayoutError(
                f"Lance row {int(rows[k])} of root {layout.uri!r} holds video_id "
                f"{got_ids[k]}, frame_idx {got_frames[k]}, but _metadata.json places frame "
                f"{int(frames[k])} of video {v} ({layout.path(v)!r}, id {int(ids[v])}) there: "
                "the rows are not in (video, frame) order (FORMAT.md: frame f of video v is row "
                "start_row + f)"
            )

    _current: Fetched | None = None

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
            for name, images in streams_of(read).items():
                held = found.streams.get(name)
                if held is None:  # fetched without this stream: read them all now
                    return now(rows)
                for k, image in zip(missing.tolist(), images, strict=True):
                    held[k] = image
            values = fields_of(read)
            if fields and set(values) != set(found.fields):  # fetched with other fields
                return now(rows)
            for name, column in values.items():
                found.fields[name][missing] = column
        return found  # type: ignore[return-value]  # every None was filled

    def fetch_ahead(
        self, row_batches: Iterable[np.ndarray], options: ReadAheadBudget
    ) -> Iterator[Fetched]:
        """:func:`read_ahead` of ``row_batches`` with this reader's takes, within one budget
        for all its passes (the row sizes seen so far); a remote table's with daemon threads
        and at most :data:`REMOTE_IN_FLIGHT` fetches under way."""
        seen = self.__dict__.setdefault("_ahead_seen", [0, 0])  # row sizes, across passes
        remote = self.is_remote
        return read_ahead(
            self._read_now,
            row_batches,
            options,
            seen,
            daemon=remote,
            group_rows=GROUP_ROWS,
            in_flight=REMOTE_IN_FLIGHT if remote else None,
        )

    @contextlib.contextmanager
    def serving(self, fetched: Fetched | None) -> Iterator[None]:
        """Within the block, reads are served from ``fetched`` (a batch fetched ahead) as far
        as it holds their rows; what was served before comes back after."""
        before, self._current = self._current, fetched
        try:
            yield
        finally:
            self._current = before

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
        fetched = self.fetch_ahead(row_batches, options)

        def next_batch() -> None:
            self._current = None
            self._current = next(fetched, None)

        try:
            yield next_batch
        finally:
            self._current = None
            fetched.close()


def _stream_column(table: pa.Table, name: str) -> pa.ChunkedArray:
    """The column of stream ``name`` (dotted: a child of struct columns) in a take's table."""
    parts = name.split(".")
    column: Any = table.column(parts[0])
    for child in parts[1:]:
        column = pa.chunked_array(
            [chunk.field(child) for chunk in column.chunks], type=column.type.field(child).type
        )
    return column


#: Top-level ``_metadata.json`` field naming the Lance version the file describes.
LANCE_VERSION_FIELD = "lance_version"


def pinned_version(layout: RootLayout) -> int | None:
    """The Lance version ``layout``'s ``_metadata.json`` names, or ``None`` (the latest:
    roots written by other tools, or by hf_lvf before it recorded the version)."""
    version = layout.header.get(LANCE_VERSION_FIELD)
    if version is None:
        return None
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise LayoutError(
            f"{layout.metadata_path}: field {LANCE_VERSION_FIELD} must be an integer >= 1, "
            f"got {version!r}"
        )
    return version


def select_fields(
    fields: Mapping[str, FrameField], selection: Sequence[str] | None, where: str
) -> tuple[FrameField, ...]:
    """The fields of ``selection`` (``None``: all, in schema order; ``()``: none).

    Raises:
        ValueError: a name that is not a per-frame field of the root, naming it and listing
            the root's fields.
    """
    if selection is None:
        return tuple(fields.values())
    unknown = [name for name in selection if name not in fields]
    if unknown:
        raise ParameterError(
            f"frame_fields names {', '.join(map(repr, unknown))}, not a per-frame field of root "
            f"{where!r}; its fields: {', '.join(map(repr, fields)) or 'none'}"
        )
    return tuple(fields[name] for name in dict.fromkeys(selection))


def field_columns(fields: Sequence[FrameField]) -> list[str]:
    """The columns a ``take`` reads for ``fields``: each field's path, dotted (lance reads
    one child of a struct column by it)."""
    return list(dict.fromkeys(".".join(field.column) for field in fields))


def read_fields(table: pa.Table, fields: Sequence[FrameField]) -> dict[str, np.ndarray]:
    """``{name: values}`` of ``fields`` in ``table``: ``(n, *shape)`` in the field's dtype;
    strings as an object array of ``n`` str."""
    out = {}
    for field in fields:
        values = field_values(gather_column(table, field), field)
        out[field.name] = np.array(values, dtype=object) if field.is_string else values
    return out


def table_state(folder: _Folder, **options: Any) -> tuple[int, int]:
    """``(latest version, its row count)`` of the dataset at ``folder`` (``storage_options=``)."""
    import lance

    enter_lance(str(folder))
    ds = lance.dataset(str(folder), **options)
    return ds.version, ds.count_rows()


def table_schema(folder: _Folder, version: int | None = None, **options: Any) -> pa.Schema:
    """The Arrow schema of ``version`` (default: the latest) of the dataset at ``folder``."""
    import lance

    enter_lance(str(folder))
    return lance.dataset(str(folder), version=version, **options).schema


def version_row_count(folder: _Folder, version: int, **options: Any) -> int:
    """Rows of ``version`` of the dataset at ``folder`` (``storage_options=``)."""
    import lance

    enter_lance(str(folder))
    try:
        return lance.dataset(str(folder), version=version, **options).count_rows()
    except (OSError, ValueError, RuntimeError) as err:
        raise LayoutError(
            f"cannot open version {version} of the Lance table of root {str(folder)!r}: {err}"
        ) from err


def referenced_data_files(folder: _Folder, version: int, **options: Any) -> set[str]:
    """Names of the data files (in ``data/``) that ``version`` of the dataset references."""
    import lance

    enter_lance(str(folder))
    return data_files(lance.dataset(str(folder), version=version, **options))


def data_files(ds: Any) -> set[str]:
    return {f.path for fragment in ds.get_fragments() for f in fragment.metadata.files}


def scan_frame_rows(
    uri: str,
    columns: Sequence[str],
    *,
    version: int | None,
    storage_options: Mapping[str, str] | None = None,
    batch_size: int = 0,
) -> Iterator[pa.RecordBatch]:
    """``columns`` of every row of ``version`` of a root's table, in row order, a batch at
    a time (``batch_size`` rows; default: a few MB of frames) (``bytes`` as stored: a copy
    re-encodes nothing)."""
    import lance

    enter_lance(uri)
    try:
        ds = lance.dataset(
            uri, version=version, storage_options=dict(storage_options or {}) or None
        )
    except (OSError, ValueError, RuntimeError) as err:
        raise LayoutError(f"cannot open the Lance table of root {uri!r}: {err}") from err
    size = batch_size or _ROWS_PER_SCAN
    yield from ds.to_batches(columns=list(columns), batch_size=size, scan_in_order=True)


def scan_frame_bytes(
    uri: str, *, version: int | None, storage_options: Mapping[str, str] | None = None
) -> Iterator[pa.Array]:
    """The ``bytes`` of every row of ``version`` of a root's table, in row order, a batch at
    a time, as ``large_binary`` arrays (the WebP bytes as stored: a copy re-encodes nothing).
    """
    rows = scan_frame_rows(uri, ["bytes"], version=version, storage_options=storage_options)
    for batch in rows:
        yield batch.column(0).cast(pa.large_binary())


# Rows per batch when copying a table: a few MB of WebP frames.
_ROWS_PER_SCAN = 64


# ================================================================================================
# Per-frame fields: the Lance columns of a root beside ``video_id``, ``frame_idx``, ``bytes``.
#
# FORMAT.md: the value of such a column in row ``start_row + f`` belongs to frame ``f`` of
# that video. Lance refuses ``.`` in a top-level column name, so a dotted name such as
# LeRobot's ``observation.state`` is the child ``state`` of a struct column ``observation``;
# fields are named flattened, as pyarrow's ``Table.flatten()`` names them.
#
# One table from Arrow type to field, both ways:
#
# - :func:`frame_fields`: a Lance schema -> ``{dotted name: FrameField}`` (readers), refusing
#   any type a window cannot carry, with the column and its type named;
# - :func:`field_values`: a ``take``'s column -> ``(n, *shape)`` in the field's own dtype, or
#   ``n`` strings;
# - :func:`frame_columns`: one video's ``{dotted name: array of T values}`` -> the top-level
#   Arrow columns to write (writers), checked against the video's frame count.
#
# Pure pyarrow and numpy: nothing here opens a file.
# ================================================================================================


#: The columns of every root; any other column is a per-frame field.
FRAME_COLUMNS = ("video_id", "frame_idx", "bytes")


_NUMERIC = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean)


@dataclass(frozen=True)
class FrameField:
    """One per-frame field: where it is in the Lance schema and what one frame's value is.

    Attributes:
        name: the flattened, dotted name (``"observation.state"``): the sample's key.
        column: its path in the Lance schema (``("observation", "state")``).
        dtype: the numpy dtype of its values (``"float32"``, ``"bool"``), or ``"string"``.
        shape: one frame's shape: ``()`` for a scalar, ``(6,)`` for a 6-vector.

    ``VideoWindows.frame_fields`` lists those a view's samples carry.

    Examples:
        >>> schema = pa.schema([("observation", pa.struct([("state", pa.list_(pa.float32(), 6))]))])
        >>> state = frame_fields(schema, where="robot")["observation.state"]
        >>> state.column, state.dtype, state.shape
        (('observation', 'state'), 'float32', (6,))
    """

    name: str
    column: tuple[str, ...]
    dtype: str
    shape: tuple[int, ...]

    @property
    def is_string(self) -> bool:
        return self.dtype == "string"


def _value_kind(kind: pa.DataType) -> tuple[str, tuple[int, ...]] | None:
    """``(dtype, shape)`` of a supported per-frame type, else ``None``."""
    if isinstance(kind, pa.FixedShapeTensorType):
        inner = _value_kind(kind.value_type)
        if inner is None or inner[1] or inner[0] == "string":
            return None
        return inner[0], tuple(int(n) for n in kind.shape)
    if any(test(kind) for test in _NUMERIC):
        return np.dtype(kind.to_pandas_dtype()).name, ()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string", ()
    if pa.types.is_fixed_size_list(kind):
        inner = _value_kind(kind.value_type)
        if inner is None or inner[0] == "string":
            return None
        return inner[0], (kind.list_size, *inner[1])
    return None


def frame_fields(
    schema: pa.Schema, *, where: str, streams: Sequence[str] = ()
) -> dict[str, FrameField]:
    """The per-frame fields of a root's Lance ``schema``, by dotted name, in schema order.

    Args:
        schema: the Lance table's Arrow schema.
        where: what to name in errors (the root's URI).
        streams: the dotted names of the root's image streams (``_metadata.json``'s
            ``streams``): binary columns read as images, not fields (left out here).

    Raises:
        LayoutError: a column of a type a window cannot carry (lists of varying length,
            binary, nested lists of strings, ...), naming the column and its type; or two
            columns that flatten to one name.
    """
    found: dict[str, FrameField] = {}
    image_streams = set(streams)

    def visit(field: pa.Field, path: tuple[str, ...]) -> None:
        if pa.types.is_struct(field.type):
            for child in field.type:
                visit(child, (*path, child.name))
            return
        name = ".".join(path)
        if name in image_streams:
            return
        kind = _value_kind(field.type)
        if kind is None:
            raise LayoutError(
                f"column {name!r} of root {where!r} has type {field.type}, which a per-frame "
                "field cannot have: numeric or bool scalars, fixed-size lists and fixed-shape "
                "tensors of them, and strings are supported (FORMAT.md)"
            )
        if name in found:
            raise LayoutError(f"root {where!r} has two columns named {name!r} once flattened")
        found[name] = FrameField(name, path, kind[0], kind[1])

    for field in schema:
        if field.name not in FRAME_COLUMNS:
            visit(field, (field.name,))
    return found


def field_values(column: pa.Array | pa.ChunkedArray, field: FrameField) -> Any:
    """A field's values for ``n`` rows: ``(n, *shape)`` in its dtype, or ``n`` strings.

    Raises:
        LayoutError: a null value (a frame without one), naming the field.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if column.null_count:
        raise LayoutError(
            f"per-frame field {field.name!r} has a null value in row "
            f"{column.is_null().index(True).as_py()} of the rows read: every frame needs one"
        )
    if field.is_string:
        return column.to_pylist()
    n = len(column)
    if isinstance(column, pa.ExtensionArray):
        column = column.storage
    while pa.types.is_fixed_size_list(column.type):
        column = column.flatten()  # honours a sliced array's offset, as .values would not
    values = column.to_numpy(zero_copy_only=False)
    return values.astype(field.dtype, copy=False).reshape((n, *field.shape))


def gather_column(table: pa.Table, field: FrameField) -> pa.Array | pa.ChunkedArray:
    """The column of ``field`` in a table read with its top-level struct columns."""
    column: Any = table.column(field.column[0])
    for child in field.column[1:]:
        column = pa.chunked_array(
            [chunk.field(child) for chunk in column.chunks], type=column.type.field(child).type
        )
    return column


def _arrow_values(name: str, values: Any, num_frames: int, where: str) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if _value_kind(values.type) is None:
            raise ParameterTypeError(
                f"per-frame field {name!r} of {where} has type {values.type}, which a per-frame "
                "field cannot have: numeric or bool scalars, fixed-size lists and fixed-shape "
                "tensors of them, and strings are supported (FORMAT.md)"
            )
        if values.null_count:
            raise ParameterError(
                f"per-frame field {name!r} of {where} has {values.null_count} null values: "
                "every frame needs one"
            )
        array = values
    elif isinstance(values, (list, tuple)) and values and all(isinstance(v, str) for v in values):
        array: pa.Array = pa.array(values, type=pa.string())
    else:
        data = np.asarray(values)
        if data.dtype.kind in "US":
            array = pa.array(data.astype(str).tolist(), type=pa.string())
        elif data.dtype.kind not in "biuf" or data.ndim < 1:
            raise ParameterTypeError(
                f"per-frame field {name!r} of {where} must be an array of numbers or bools of "
                f"shape (T, ...) or a list of T strings, got {type(values).__name__} of dtype "
                f"{data.dtype}"
            )
        else:
            flat = pa.array(np.ascontiguousarray(data).reshape(-1))
            for size in reversed(data.shape[1:]):
                flat = pa.FixedSizeListArray.from_arrays(flat, int(size))
            array = flat
    if len(array) != num_frames:
        raise ParameterError(
            f"per-frame field {name!r} of {where} has {len(array)} values for {num_frames} "
            "frames: one value per frame"
        )
    return array


def frame_columns(arrays: Mapping[str, Any], num_frames: int, *, where: str) -> dict[str, pa.Array]:
    """One video's per-frame values as the top-level Arrow columns to write beside its frames.

    Args:
        arrays: ``{dotted name: values}``; values are ``(T, *shape)`` arrays of numbers or
            bools, ``T`` strings, or an Arrow array of ``T`` values of a per-frame type (no
            nulls). A dotted name becomes a struct column (FORMAT.md).
        num_frames: the video's ``T``.
        where: what to name in errors (``"video 'clip_003'"``).

    Raises:
        ValueError: a name that is empty, a frame column's, or both a field and a struct;
            values of another length than ``T``.
        TypeError: values that are neither numbers, bools nor strings; an Arrow array of
            another type.
    """
    tree: dict[str, Any] = {}
    for name, values in arrays.items():
        parts = name.split(".") if isinstance(name, str) else []
        if not parts or not all(parts) or parts[0] in FRAME_COLUMNS:
            raise ParameterError(
                f"per-frame field name {name!r} of {where} must be a non-empty str, not one of "
                f"{FRAME_COLUMNS}, without empty parts between dots"
            )
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ParameterError(f"per-frame field {name!r} of {where} is inside another field")
        if parts[-1] in node:
            raise ParameterError(
                f"per-frame field {name!r} of {where} is given twice or is a struct"
            )
        node[parts[-1]] = _arrow_values(name, values, num_frames, where)

    def build(node: Any) -> pa.Array:
        if not isinstance(node, dict):
            return node
        children = {key: build(child) for key, child in node.items()}
        return pa.StructArray.from_arrays(list(children.values()), names=list(children))

    return {key: build(child) for key, child in tree.items()}


def columns_schema(columns: Mapping[str, pa.Array]) -> pa.Schema:
    """The schema of :func:`frame_columns`' output: what two videos of one root share."""
    return pa.schema([pa.field(name, column.type) for name, column in columns.items()])


def describe_schema(schema: pa.Schema | Sequence[pa.Field]) -> str:
    """``name: type`` of each per-frame column, for messages."""
    fields = [f for f in schema if f.name not in FRAME_COLUMNS]
    return ", ".join(f"{f.name}: {f.type}" for f in fields) or "no per-frame fields"
