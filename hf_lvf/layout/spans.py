"""The spans of a root's videos (FORMAT.md: ``videos[v].spans``) as one shared, columnar table.

A video entry may hold ``spans``: a list of ``{"start_frame", "end_frame" (exclusive),
...scalar fields}`` (a ``caption``, a ``score``, an ``event``). All spans of a root are one
Arrow table, video by video and in list order: ``video_idx``, ``start_frame``,
``end_frame``, then one column per field (first-seen order, nulls where a span lacks it);
each video's spans are a contiguous run of it (:attr:`SpanTable.offsets`). No per-span
Python object is kept.

Spans are parsed on first use (span windows, :func:`hf_lvf.describe`, the card), not
when a root is opened: at a million videos with five spans each, parsing them costs more
than the whole video table, and a reader that never asks for them should not pay it. The
first use reads ``_metadata.json`` again (it must be the content the video table came from),
parses the spans with Arrow's multi-threaded JSON reader, checks them with numpy and keeps
the table beside the cached video table (:mod:`.cache`), so every later use, in any process,
maps it. A span outside its video, or with ``end_frame <= start_frame``, is a
:class:`~hf_lvf.errors.LayoutError` naming the file, the video and the span.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from ..errors import LayoutError
from .table import (
    MISSING_VALUES,
    FieldKinds,
    RootLayout,
    _read_same,
    cache_dir,
    decode_top_level,
    field_dtype,
    write_arrow_file,
)

#: The bounds of a span; every other key of a span is a field.
SPAN_BOUNDS = ("start_frame", "end_frame")
_FORMAT = 1
_SPANS_KEY = b'"spans"'
_MEMO: OrderedDict[str, SpanTable] = OrderedDict()
_lock = threading.Lock()


class _SpansOnly(msgspec.Struct, gc=False):
    """An entry as the span parser takes it: its ``spans`` still as JSON text."""

    spans: msgspec.Raw = msgspec.Raw(b"null")


class SpanTable:
    """All spans of a root: an Arrow table (``video_idx``, ``start_frame``, ``end_frame``,
    fields), sorted by video, and the offsets of each video's run of rows."""

    def __init__(self, table: pa.Table, num_videos: int):
        self._table = table
        self._num_videos = num_videos

    def __len__(self) -> int:
        return self._table.num_rows

    def __repr__(self) -> str:
        return f"SpanTable(spans={len(self)}, fields={list(self.fields)})"

    @property
    def table(self) -> pa.Table:
        return self._table

    @functools.cached_property
    def video_idx(self) -> np.ndarray:
        """``(n_spans,)`` int64: the video of each span."""
        return self._table.column("video_idx").to_numpy()

    @functools.cached_property
    def start_frame(self) -> np.ndarray:
        return self._table.column("start_frame").to_numpy()

    @functools.cached_property
    def end_frame(self) -> np.ndarray:
        """``(n_spans,)`` int64: one past each span's last frame."""
        return self._table.column("end_frame").to_numpy()

    @functools.cached_property
    def offsets(self) -> np.ndarray:
        """``(n_videos + 1,)``: the spans of video ``v`` are rows ``offsets[v]:offsets[v+1]``."""
        counts = np.bincount(self.video_idx, minlength=self._num_videos)
        offsets = np.zeros(self._num_videos + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        return offsets

    @functools.cached_property
    def fields(self) -> dict[str, str]:
        """Span field -> ``datasets`` dtype (as metadata fields are typed: ``string``,
        ``int64``, ``float64``, ``bool``; ``int8`` for a bool some span lacks)."""
        names = self._table.column_names[3:]
        return {n: field_dtype(n, _kinds(self._table.column(n)), len(self)) for n in names}

    def field_column(self, name: str, span_idx: np.ndarray) -> pa.Array:
        """Field ``name`` of spans ``span_idx``, typed as :attr:`fields` says, placeholders
        (:data:`hf_lvf.layout.MISSING_VALUES`) where a span lacks it."""
        dtype = self.fields[name]
        column = self._table.column(name).take(np.asarray(span_idx, np.int64))
        target = pa.int8() if dtype == "int8" else column.type
        column = column.combine_chunks().cast(target)
        if column.null_count:
            column = column.fill_null(pa.scalar(MISSING_VALUES[dtype], target))
        return column

    def rows(self, span_idx: np.ndarray | list[int]) -> list[dict[str, Any]]:
        """Spans ``span_idx`` as written (bounds and fields, nulls left out): for messages
        and small listings, never for a loop over a root."""
        taken = self._table.take(np.asarray(span_idx, np.int64)).drop_columns(["video_idx"])
        return [{k: v for k, v in row.items() if v is not None} for row in taken.to_pylist()]


def _kinds(column: pa.ChunkedArray) -> FieldKinds:
    kind = column.type
    names = (
        {"bool"}
        if pa.types.is_boolean(kind)
        else {"int"}
        if pa.types.is_integer(kind)
        else {"float"}
        if pa.types.is_floating(kind)
        else {"str"}
        if pa.types.is_string(kind)
        else set()
    )
    return FieldKinds(frozenset(names), len(column) - column.null_count)


def layout_spans(layout: RootLayout) -> SpanTable:
    """The spans of ``layout``'s videos (an empty table if none has any), parsed and checked
    on first use, then mapped from the cache folder.

    Raises:
        LayoutError: a span is not an object with integer bounds and scalar fields, lies
            outside its video, or has ``end_frame <= start_frame`` (the message names the
            metadata file, the video by index and path, and the span).
    """
    identity = layout.source.identity
    with _lock:
        if identity in _MEMO:
            return _MEMO[identity]
    path = _path(identity)
    try:
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (OSError, pa.ArrowInvalid):  # not cached yet (or damaged): parsed again
        table = _parse(layout)
        _write(path, table)
    spans = SpanTable(table, len(layout))
    with _lock:
        _MEMO[identity] = spans
        while len(_MEMO) > 8:
            _MEMO.popitem(last=False)
    return spans


def _path(identity: str) -> Path:
    digest = hashlib.sha256(f"spans{_FORMAT}\0{identity}".encode()).hexdigest()[:40]
    return cache_dir() / "tables" / f"{digest}.spans.arrow"


def _write(path: Path, table: pa.Table) -> None:
    with contextlib.suppress(OSError):  # no writable cache: this process keeps its own copy
        write_arrow_file(path, table)


_EMPTY = pa.schema([(n, pa.int64()) for n in ("video_idx", *SPAN_BOUNDS)])


def _parse(layout: RootLayout) -> pa.Table:
    where = layout.metadata_path
    data = _read_same(layout.source)  # type: ignore[arg-type]
    if _SPANS_KEY not in data:
        return _EMPTY.empty_table()
    raw = decode_top_level(data, where).get("videos")
    entries = msgspec.json.decode(raw or b"[]", type=list[_SpansOnly])
    del data, raw
    lists = _arrow_spans(entries)
    if lists is None:
        lists = _python_spans(entries, layout)
    table = _flat(lists, where, layout)
    check_spans(table, layout.num_frames, layout.paths_of, where)
    return table


def _arrow_spans(entries: list[_SpansOnly]) -> pa.ListArray | None:
    """The spans of every entry as one list column, parsed by Arrow's JSON reader (one line per
    entry); ``None`` where it cannot (a value of changing type, a span that is no object):
    the Python path then names the problem or keeps the values."""
    raws = [e.spans for e in entries]  # views of the file's bytes, joined without a copy each
    text = b'{"s":' + b'}\n{"s":'.join(raws) + b"}"
    del raws
    options = pa_json.ReadOptions(block_size=max(1 << 20, min(len(text) // 4, 64 << 20)))
    column = None
    for newlines in (False, True):  # True: a pretty-printed list of spans (slower to read)
        parse = pa_json.ParseOptions(newlines_in_values=newlines)
        try:
            column = pa_json.read_json(io.BytesIO(text), options, parse).column("s")
            break
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    if column is None:
        return None
    column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_null(column.type):
        return pa.array([[]] * len(entries), pa.list_(pa.struct([])))
    if not pa.types.is_list(column.type) or not pa.types.is_struct(column.type.value_type):
        return None
    kinds = {f.name: f.type for f in column.type.value_type}
    if not all(pa.types.is_integer(kinds.get(b, pa.null())) for b in SPAN_BOUNDS):
        return None  # a bound as a float (promoted for all), missing or no number
    return column


def _python_spans(entries: list[_SpansOnly], layout: RootLayout) -> pa.ListArray:
    """The lenient path, entry by entry: every span checked, each field typed by its values (a
    field whose values mix types is kept as their JSON text)."""
    where = layout.metadata_path
    lists: list[list[dict[str, Any]] | None] = []
    for v, entry in enumerate(entries):
        spans = msgspec.json.decode(entry.spans)
        if spans is not None and not isinstance(spans, list):
            raise LayoutError(
                f"{where}: {layout.describe_video(v)} field spans must be a list of objects, "
                f"got {spans!r}"
            )
        for j, span in enumerate(spans or ()):
            problem = _span_problem(span)
            if problem:
                raise LayoutError(f"{where}: {layout.describe_video(v)} spans[{j}] {problem}")
        lists.append(spans)
    names = list(dict.fromkeys(k for spans in lists for s in spans or () for k in s))
    kinds = {n: set() for n in names}
    for spans in lists:
        for span in spans or ():
            for n, x in span.items():
                if x is not None:
                    kinds[n].add(_KIND[type(x)])
    mixed = {n for n, k in kinds.items() if len(k) > 1}

    def value(span: dict[str, Any], n: str) -> Any:
        x = span.get(n)
        if n not in mixed or x is None or isinstance(x, str):
            return x
        return msgspec.json.encode(x).decode()

    rows = [
        None if spans is None else [{n: value(s, n) for n in names} for s in spans]
        for spans in lists
    ]
    try:
        return pa.array(rows)
    except (OverflowError, pa.ArrowInvalid) as err:  # an int past 64 bits
        raise LayoutError(f"{where}: a span holds a value out of range: {err}") from err


_KIND = {bool: "bool", int: "number", float: "number", str: "str"}


def _span_problem(span: Any) -> str | None:
    if not isinstance(span, dict):
        return f"must be an object, got {span!r}"
    for bound in SPAN_BOUNDS:
        x = span.get(bound)
        if isinstance(x, bool) or not isinstance(x, int):
            return f"{span!r}: {bound} must be an integer frame number, got {x!r}"
    for name, x in span.items():
        if x is not None and not isinstance(x, (str, int, float, bool)):
            return f"{span!r}: field {name!r} must be a scalar, got {x!r}"
    return None


def _flat(lists: pa.ListArray, where: str, layout: RootLayout) -> pa.Table:
    """The list column of spans per video -> the span table, its types checked."""
    offsets = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), np.int64)
    counts = np.diff(offsets)
    values = lists.flatten()
    if len(values) == 0:  # only empty lists (or a '"spans"' elsewhere in the file)
        return _EMPTY.empty_table()
    video_idx = np.repeat(np.arange(len(lists), dtype=np.int64), counts)
    if values.null_count:
        j = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        v = int(video_idx[j])
        raise LayoutError(
            f"{where}: {layout.describe_video(v)} spans[{j - offsets[v]}] must be an object, "
            "got None"
        )
    columns = {"video_idx": pa.array(video_idx)}
    kinds = {f.name: f.type for f in values.type}
    for bound in SPAN_BOUNDS:
        column = values.field(bound) if bound in kinds else None
        if column is not None and pa.types.is_integer(column.type) and not column.null_count:
            columns[bound] = column.cast(pa.int64())
            continue
        row = 0 if column is None else _first_not_integer(column)
        v = int(video_idx[row])
        span = {k: x for k, x in values[row].as_py().items() if x is not None}
        raise LayoutError(
            f"{where}: {layout.describe_video(v)} spans[{row - offsets[v]}] {span!r}: "
            f"{bound} must be an integer frame number, got {span.get(bound)!r}"
        )
    for name, kind in kinds.items():
        if name in SPAN_BOUNDS:
            continue
        if pa.types.is_nested(kind):
            row = int(np.flatnonzero(values.field(name).is_valid().to_numpy(False))[0])
            v = int(video_idx[row])
            raise LayoutError(
                f"{where}: {layout.describe_video(v)} spans[{row - offsets[v]}] field {name!r} "
                f"must be a scalar, got {values.field(name)[row].as_py()!r}"
            )
        columns[name] = values.field(name)
    return pa.table(columns)


def _first_not_integer(column: pa.Array) -> int:
    """The first row of a bounds column that is missing or no integer."""
    values = column.to_pylist()
    return next((i for i, x in enumerate(values) if type(x) is not int), 0)


def check_spans(table: pa.Table, num_frames: np.ndarray, paths_of: Any, where: str) -> None:
    """Raise if a span of ``table`` lies outside its video or is empty (vectorised).

    Raises:
        LayoutError: names the file, the first bad span's video (index and path), the span
            (its index in the video's list and its values) and what is allowed.
    """
    if table.num_rows == 0:
        return
    video_idx = table.column("video_idx").to_numpy()
    start = table.column("start_frame").to_numpy()
    end = table.column("end_frame").to_numpy()
    frames = np.asarray(num_frames, np.int64)[video_idx]
    bad = np.flatnonzero((start < 0) | (end <= start) | (end > frames))
    if not bad.size:
        return
    row = int(bad[0])
    v = int(video_idx[row])
    j = row - int(np.searchsorted(video_idx, v, side="left"))
    span = {k: x for k, x in table.slice(row, 1).to_pylist()[0].items() if x is not None}
    span.pop("video_idx")
    why = (
        "end_frame must be > start_frame (spans hold frames [start_frame, end_frame))"
        if end[row] <= start[row]
        else f"it must lie inside the video's {int(frames[row])} frames "
        f"(0 <= start_frame < end_frame <= T={int(frames[row])})"
    )
    raise LayoutError(f"{where}: videos[{v}] ({paths_of([v])[0]!r}) spans[{j}] {span!r}: {why}")


__all__ = ["SPAN_BOUNDS", "SpanTable", "check_spans", "layout_spans"]
