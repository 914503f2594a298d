"""The video table of a root: ``_metadata.json`` parsed, checked, cached and typed, as columns.

A :class:`RootLayout` wraps an Arrow table with one row per video (``id``, ``T``,
``H``, ``W``, ``start_row``, ``path``, ``key``, ``checksum``, ``fps`` and one column
per metadata field, nulls where a video lacks it) plus the top-level fields of
``_metadata.json``. One module, in the order a root's table is made: the table and its
typed columns; the parse of the file's bytes into columns (msgspec, every check
vectorised); the cache (parse once, then every open in any process maps the same Arrow IPC
file, so the numeric columns are views of shared pages, not copies); and the checks made
when a root is opened for reading. The checks that need the Lance table (row count,
schema) run when the frame table is first opened (:mod:`hf_lvf.frames`), through
:func:`check_row_count`.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import hashlib
import itertools
import logging
import operator
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ..errors import LayoutError, ParameterError, ParameterTypeError, WindowIndexError
from ..location import (
    METADATA_FILENAME,
    cache_dir,
    join_uri,
    legacy_file_identity,
    read_root_file_hashing,
    read_root_file_with_identity,
    root_file_identity,
)
from ..location.files import CACHE_ENV  # noqa: F401  (its name, where it was)
from ..plan import WEBP_MAX_SIDE, frame_pixels_problem

# ================================================================================================
# The video table of a root, as columns: one typed array per field, never an object per video.
#
# A :class:`RootLayout` wraps an Arrow table with one row per video (``id``, ``T``,
# ``H``, ``W``, ``start_row``, ``path``, ``key``, ``checksum``, ``fps`` and one column
# per metadata field, nulls where a video lacks it) plus the top-level fields of
# ``_metadata.json``. It is built once from the JSON (:mod:`.parse`) and kept in an
# Arrow IPC file that every process maps (:mod:`.cache`), so the numeric columns
# below are views of shared pages, not copies.
# ================================================================================================


MISSING_VALUES: dict[str, Any] = {"int64": -1, "int8": -1, "float64": float("nan"), "string": ""}


"""What a sample holds for a metadata field its video lacks (or holds as ``null``), by the
field's ``datasets`` dtype: values every collate and Arrow column takes, never ``None``.
A ``bool`` field that some video lacks is typed ``int8`` (1, 0, and -1 where missing)."""


_ARROW_TYPES = {
    "int64": pa.int64(),
    "int8": pa.int8(),
    "float64": pa.float64(),
    "string": pa.string(),
    "bool": pa.bool_(),
}


# Column name of metadata field ``name`` in the table (apart from the entry's own fields).
FIELD_PREFIX = "metadata."


def numpy_of(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a fixed-width ``column`` without nulls, as a numpy array (a view of
    its buffer when it is one chunk)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    dtype = np.dtype(column.type.to_pandas_dtype())
    if len(column) == 0:
        return np.zeros(0, dtype)
    buffer = column.buffers()[1]
    return np.frombuffer(buffer, dtype, count=len(column), offset=column.offset * dtype.itemsize)


def floats_of(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric ``column`` as float64, NaN where null."""
    column = pc.fill_null(pc.cast(column, pa.float64()), float("nan"))
    return numpy_of(column)


def _validity(valid: np.ndarray) -> pa.Buffer | None:
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def array_of(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """``values`` (Python scalars, ``None`` for null) as an Arrow array of ``kind`` (int64,
    float64, bool or string), as ``pa.array(values, kind)`` makes it.

    Raises:
        OverflowError: an int does not fit in 64 bits.
    """
    n = len(values)
    bitmap = None
    if None in values:
        if values.count(None) == n:  # a field no entry holds (often ``fps``, ``checksum``)
            return pa.nulls(n, kind)
        bitmap = _validity(np.fromiter(map(_not_none, values), bool, n))
    if pa.types.is_string(kind):
        plain = values if bitmap is None else ["" if v is None else v for v in values]
        return _strings(plain, bitmap)
    if pa.types.is_boolean(kind):
        bits = np.fromiter((v is True for v in values), bool, n)
        buffers = [bitmap, pa.py_buffer(np.packbits(bits, bitorder="little"))]
        return pa.Array.from_buffers(pa.bool_(), n, buffers)
    dtype = np.float64 if pa.types.is_floating(kind) else np.int64
    filled = values if bitmap is None else [0 if v is None else v for v in values]
    numbers = np.fromiter(filled, dtype, n)
    return pa.Array.from_buffers(kind, n, [bitmap, pa.py_buffer(numbers)])


def _strings(values: Sequence[str], bitmap: pa.Buffer | None = None) -> pa.Array:
    n = len(values)
    text = "".join(values)
    data = text.encode()
    if len(data) == len(text):  # ASCII: a string's length is its number of bytes
        lengths = np.fromiter(map(len, values), np.int64, n)
    else:
        lengths = np.fromiter((len(v.encode()) for v in values), np.int64, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] < 2**31:
        buffers = [bitmap, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
        return pa.Array.from_buffers(pa.string(), n, buffers)
    buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.large_string(), n, buffers).cast(pa.string())


def _not_none(value: Any) -> bool:
    return value is not None


def ints_array(values: np.ndarray) -> pa.Array:
    """An int64 numpy array as an Arrow array (no copy)."""
    values = np.ascontiguousarray(values, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


@dataclass(frozen=True)
class VideoInfo:
    """One entry of the ``videos`` list of ``_metadata.json``, as written.

    A root's table holds columns, not these; one is made on request
    (``layout.videos[i]``) for messages, single lookups and writing entries.

    Attributes:
        video_idx: position in the ``videos`` list (what samples call ``video_idx``).
        id: the ``id`` stored in the Lance rows' ``video_id`` column.
        key: example key from the source (``None`` if the writer recorded none).
        path: the source file, a label only.
        num_frames: ``T``; height, width: ``H``, ``W`` of every frame.
        start_row: first Lance row of the video.
        metadata: the per-video scalar fields (labels and such).
        checksum: hex digest of the source, if recorded.
        extra: fields of the entry hf_lvf does not interpret, kept as written.
    """

    video_idx: int
    id: int
    key: str | None
    path: str
    num_frames: int
    height: int
    width: int
    start_row: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
    checksum: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The entry as it is written in ``_metadata.json``."""
        entry = {
            "id": self.id,
            "key": self.key,
            "path": self.path,
            "checksum": self.checksum,
            "T": self.num_frames,
            "H": self.height,
            "W": self.width,
            "start_row": self.start_row,
            "metadata": dict(self.metadata),
        }
        entry.update(self.extra)
        return entry


@dataclass(frozen=True)
class FieldKinds:
    """What one root's videos hold in one metadata field: the Python types of its non-null
    values (``"int"``, ``"float"``, ``"bool"``, ``"str"``) and how many videos hold one."""

    kinds: frozenset[str]
    present: int

    def __or__(self, other: FieldKinds) -> FieldKinds:
        return FieldKinds(self.kinds | other.kinds, self.present + other.present)


def field_dtype(name: str, kinds: FieldKinds, num_videos: int) -> str:
    """The ``datasets`` dtype of a field: ``string`` for text (and a field that is ``null``
    everywhere), ``int64``, ``float64`` (ints and floats mixed), ``bool``, and ``int8`` for a
    ``bool`` field some video lacks (so that it has a placeholder).

    Raises:
        ValueError: the field holds values of incompatible types across videos.
    """
    seen = kinds.kinds
    if not seen or seen == {"str"}:
        return "string"
    if seen == {"bool"}:
        return "bool" if kinds.present == num_videos else "int8"
    if seen == {"int"}:
        return "int64"
    if seen <= {"int", "float"}:
        return "float64"
    names = ", ".join(sorted(seen))
    raise ParameterError(f"metadata field {name!r} mixes value types across videos: {names}")


def combined_fields(layouts: Iterable[RootLayout]) -> dict[str, str]:
    """Metadata field -> ``datasets`` dtype over the videos of several roots together (a root
    may lack a field another has, or type it otherwise: int here, float there).

    Raises:
        ValueError: a field's values have incompatible types across the videos.
    """
    kinds: dict[str, FieldKinds] = {}
    total = 0
    for layout in layouts:
        total += len(layout)
        for name, k in layout.field_kinds.items():
            kinds[name] = kinds[name] | k if name in kinds else k
    return {name: field_dtype(name, k, total) for name, k in kinds.items()}


class Source(Protocol):
    """Where a table came from (:class:`hf_lvf.layout.table.TableSource`)."""

    where: str

    def settle(self) -> None: ...

    def reopen(self, uri: str) -> RootLayout: ...

    def entry(self, video_idx: int) -> VideoInfo: ...


class RootLayout:
    """A validated ``_metadata.json``: the video table as columns, and the top-level fields.

    Made by :func:`hf_lvf.read_layout`. Pickles as its location and the identity of its
    ``_metadata.json`` (a few hundred bytes): the receiving process maps the same cached
    table, or rebuilds it from the file if that is unchanged (else a ``LayoutError``).
    """

    def __init__(
        self,
        uri: str,
        table: pa.Table,
        header: Mapping[str, Any],
        field_kinds: Mapping[str, FieldKinds],
        source: Source,
    ):
        self._uri = uri
        self._table = table
        self._header = dict(header)
        self._field_kinds = dict(field_kinds)
        self._source = source

    # --- identity and pickling ---

    @property
    def uri(self) -> str:
        """Where the root's Lance table is read."""
        return self._uri

    @property
    def source(self) -> Source:
        """Where ``_metadata.json`` was read and what identifies its content."""
        return self._source

    def with_uri(self, uri: str) -> RootLayout:
        """The same table, read at ``uri`` (a copy of the root: a download, lance's form of
        an ``hf://`` URI)."""
        return RootLayout(uri, self._table, self._header, self._field_kinds, self._source)

    def __reduce__(self) -> tuple[Any, ...]:
        # The table stays behind: the other process maps the cached copy (Source.reopen).
        self._source.settle()
        return self._source.reopen, (self._uri,)

    def __repr__(self) -> str:
        return f"RootLayout({self._uri!r}, videos={len(self)}, rows={self.num_rows})"

    # --- columns ---

    def __len__(self) -> int:
        """Number of videos."""
        return self._table.num_rows

    @property
    def table(self) -> pa.Table:
        """The video table itself (one row per video; metadata fields as nullable columns
        named ``metadata.<field>``)."""
        return self._table

    def _ints(self, name: str) -> np.ndarray:
        return numpy_of(self._table.column(name))

    @functools.cached_property
    def ids(self) -> np.ndarray:
        """``(n_videos,)`` int64: each video's ``id`` (its Lance rows' ``video_id``)."""
        return self._ints("id")

    @functools.cached_property
    def num_frames(self) -> np.ndarray:
        """``(n_videos,)`` int64: ``T`` of each video."""
        return self._ints("T")

    @functools.cached_property
    def start_rows(self) -> np.ndarray:
        """``(n_videos,)`` int64: each video's first Lance row."""
        return self._ints("start_row")

    @functools.cached_property
    def frame_sizes(self) -> np.ndarray:
        """``(n_videos, 2)`` int64 array of ``(H, W)``."""
        return np.stack([self._ints("H"), self._ints("W")], axis=1)

    @property
    def num_rows(self) -> int:
        """Lance rows the video table accounts for (the sum of ``T``)."""
        return int(self.start_rows[-1] + self.num_frames[-1])

    @property
    def video_fps(self) -> np.ndarray:
        """``(n_videos,)`` float64 frame rate of each video: its entry's ``fps``, else its
        ``metadata["fps"]``, else NaN."""
        fps = floats_of(self._table.column("fps"))
        if FIELD_PREFIX + "fps" in self._table.column_names and self._numeric("fps"):
            fps = np.where(np.isnan(fps), floats_of(self._table.column(FIELD_PREFIX + "fps")), fps)
        return fps

    def _numeric(self, name: str) -> bool:
        kinds = self._field_kinds[name].kinds
        return bool(kinds) and kinds <= {"int", "float"}

    def path(self, video_idx: int) -> str:
        """The ``path`` of video ``video_idx``."""
        return self._table.column("path")[int(video_idx)].as_py()

    def paths_of(self, video_idx: np.ndarray | Sequence[int]) -> list[str]:
        """The ``path`` of each of ``video_idx``."""
        return self._table.column("path").take(np.asarray(video_idx, np.int64)).to_pylist()

    def describe_video(self, video_idx: int) -> str:
        """``"videos[i] (path)"``, how messages name a video."""
        return f"videos[{int(video_idx)}] ({self.path(video_idx)!r})"

    # --- top-level fields and metadata fields ---

    @property
    def header(self) -> dict[str, Any]:
        """The top-level fields of ``_metadata.json`` other than ``videos`` (``quality``,
        ``label_names``, ``lance_version``, unknown ones...)."""
        return dict(self._header)

    @property
    def field_kinds(self) -> dict[str, FieldKinds]:
        return dict(self._field_kinds)

    @functools.cached_property
    def fields(self) -> dict[str, str]:
        """Per-video metadata field -> ``datasets`` dtype, in first-seen order.

        Raises:
            ValueError: a field holds values of incompatible types across videos.
        """
        return {n: field_dtype(n, k, len(self)) for n, k in self._field_kinds.items()}

    def field_column(self, name: str, dtype: str, video_idx: np.ndarray | None = None) -> pa.Array:
        """Field ``name`` of the videos ``video_idx`` (default all) as ``dtype``, missing
        values (absent, ``null``, or no such field in this root) as its placeholder."""
        n = len(self) if video_idx is None else len(video_idx)
        target = _ARROW_TYPES[dtype]
        if name not in self._field_kinds:
            return (
                pa.array(np.full(n, MISSING_VALUES[dtype]), target) if n else pa.array([], target)
            )
        column = self._table.column(FIELD_PREFIX + name)
        if video_idx is not None:
            column = column.take(np.asarray(video_idx, np.int64))
        column = pc.cast(column, target)
        if column.null_count:
            column = pc.fill_null(column, pa.scalar(MISSING_VALUES[dtype], target))
        return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column

    def field_raw(self, name: str) -> pa.Array | None:
        """Field ``name`` as stored: its values, nulls where a video lacks it (ints and floats
        of one field as floats); ``None`` if no video has it, or its types do not mix."""
        column = FIELD_PREFIX + name
        if column not in self._table.column_names:
            return None
        return self._table.column(column).combine_chunks()

    def field_values(self, name: str) -> np.ndarray:
        """``(n_videos,)`` values of metadata field ``name``, typed as :attr:`fields` says
        (an object array of ``str`` for ``string``), placeholders where a video lacks it."""
        dtype = self.fields[name]
        return self.field_column(name, dtype).to_numpy(zero_copy_only=False)

    def metadata_columns(
        self, fields: Mapping[str, str], video_idx: np.ndarray
    ) -> dict[str, list[Any]]:
        """The values of ``fields`` for the videos ``video_idx``, as Python lists typed as
        ``fields`` says, placeholders where missing: what samples carry."""
        return {n: self.field_column(n, d, video_idx).to_pylist() for n, d in fields.items()}

    # --- entries as written ---

    @property
    def videos(self) -> _Entries:
        """The entries of ``_metadata.json`` as :class:`VideoInfo`, made one at a time on
        request (the first access reads the file's entries again)."""
        return _Entries(self)

    @property
    def metadata_path(self) -> str:
        return join_uri(self._uri, METADATA_FILENAME)


class _Entries(Sequence[VideoInfo]):
    """``layout.videos``: a sequence of :class:`VideoInfo` made on access."""

    def __init__(self, layout: RootLayout):
        self._layout = layout

    def __len__(self) -> int:
        return len(self._layout)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        n = len(self)
        i = int(index) + n if int(index) < 0 else int(index)
        if not 0 <= i < n:
            raise WindowIndexError(f"video index {index} is out of range for {n} videos")
        return self._layout.source.entry(i)

    def __iter__(self) -> Iterator[VideoInfo]:
        return (self[i] for i in range(len(self)))


# ================================================================================================
# ``_metadata.json`` bytes -> the columns of the video table, validated.
#
# Parsing is msgspec's: the ``videos`` list is decoded straight into small typed
# records (no dict per entry), checked for types and ranges as it is read, and
# turned into columns; every other check runs on the columns with numpy. At a
# million videos that is about a second, against 2-4 s for ``json.loads`` alone
# (README, "Scale"). An entry that the typed decode refuses (a wrong type, a value
# out of range, a sample key as a metadata field) sends the file through the
# lenient path below, entry by entry, which reads everything FORMAT.md allows and
# names the first bad video and field exactly as the checks always have.
# ================================================================================================


LAYOUT_NAME = "lance-video-frames"


_REQUIRED_VIDEO_FIELDS = ("T", "H", "W", "start_row", "path")


# Keys every sample carries; a metadata field of the same name would shadow one.
SAMPLE_KEYS = ("video", "video_idx", "filename", "start_frame", "frame_indices", "sample_idx")


_KNOWN_ENTRY_FIELDS = {"id", "key", "path", "checksum", "metadata", *_REQUIRED_VIDEO_FIELDS}


_Side = Annotated[int, msgspec.Meta(ge=1, le=WEBP_MAX_SIDE)]


_Count = Annotated[int, msgspec.Meta(ge=0)]


_Scalar = str | int | float | bool | None


class _Entry(msgspec.Struct, gc=False):
    """One entry as the fast path takes it; anything else goes the lenient way."""

    T: _Count
    H: _Side
    W: _Side
    start_row: _Count
    path: str
    id: int | None = None
    key: str | None = None
    checksum: str | None = None
    fps: int | float | None = None
    metadata: dict[str, _Scalar] | None = None


Columns = tuple[pa.Table, dict[str, Any], dict[str, FieldKinds]]


def parse_metadata(data: bytes | str, *, where: str) -> Columns:
    """The video table of a ``_metadata.json``: ``(table, header, field kinds)``.

    Args:
        data: the file's contents.
        where: the file's location, for messages.

    Raises:
        LayoutError: the text is not JSON, not this layout, or a video entry is
            missing a required field, has a bad value, or its row range overlaps
            or leaves a gap with its neighbours, or two videos share an id.
    """
    top = decode_top_level(data, where)
    header = {k: msgspec.json.decode(v) for k, v in top.items() if k != "videos"}
    layout = header.get("layout")
    if layout != LAYOUT_NAME:
        raise LayoutError(
            f"{where} has layout {layout!r}; hf_lvf reads only layout {LAYOUT_NAME!r}"
        )
    raw_videos = top.get("videos")
    collecting = gc.isenabled()
    gc.disable()  # a million new objects would set off collections that find nothing
    try:
        columns = _typed_columns(raw_videos)
    except (msgspec.ValidationError, _Lenient):
        columns = None
    finally:
        if collecting:
            gc.enable()
    if columns is None:
        columns = _lenient_columns(raw_videos, where)
    top = raw_videos = None
    _return_freed_memory()
    table, kinds = columns
    _check_row_ranges(table, where)
    _check_unique_ids(table, where)
    return table, header, kinds


_BOM = b"\xef\xbb\xbf"  # UTF-8's byte-order mark, as Windows tools write it


_AT_BYTE = re.compile(r"\(byte (\d+)\)")


def decode_top_level(data: bytes | str, where: str) -> dict[str, msgspec.Raw]:
    skipped = 0  # the BOM's bytes, so offsets in messages count from the file's start
    if isinstance(data, str) and data.startswith("\ufeff"):
        data, skipped = data[1:], len(_BOM)
    elif isinstance(data, bytes) and data.startswith(_BOM):
        data, skipped = memoryview(data)[len(_BOM) :], len(_BOM)  # no copy of a 188 MB file
    try:
        return msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError as err:
        kind = type(msgspec.json.decode(data)).__name__
        raise LayoutError(f"{where} must hold a JSON object, got {kind}") from err
    except (msgspec.DecodeError, UnicodeDecodeError) as err:
        raise LayoutError(f"{where} is not valid JSON{_around(data, err, skipped)}") from err


def _around(data: bytes | str | memoryview, err: Exception, skipped: int) -> str:
    """``err``, with the file's byte offset it names and the text around it."""
    found = _AT_BYTE.search(str(err))
    if found is None:
        return f": {err}"
    at = int(found.group(1))
    raw = data.encode() if isinstance(data, str) else data
    text = bytes(raw[max(0, at - 30) : at + 30]).decode("utf-8", "replace")
    reason = _AT_BYTE.sub("", str(err)).strip()
    return f": {reason} at byte {at + skipped}, around {text!r}"


def _return_freed_memory() -> None:
    """Give the freed heap of the decoded records back to the system (glibc keeps it).

    A million records are ~900 MB of small allocations; freed, glibc keeps them in its
    arenas, so the RSS of the process that opened the root stays that high. Elsewhere a no-op.
    """
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


class _Lenient(Exception):
    """The typed entries need the lenient path (for its exact message, or its leniency)."""


# Entries decoded into records at a time: the records of a chunk are gone before the next is
# decoded, so the peak holds one chunk's records (~40 MB), not a million (~500 MB).
_CHUNK = 1 << 16  # entries, where the list is split entry by entry


def _typed_columns(raw_videos: msgspec.Raw | None) -> tuple[pa.Table, dict[str, FieldKinds]] | None:
    """The columns of the ``videos`` list by the fast path, chunk by chunk (``None``: it is no
    non-empty list, for the lenient path to say so)."""
    if raw_videos is None or not bytes(memoryview(raw_videos)[:64]).lstrip().startswith(b"["):
        return None
    columns = _arrow_columns(memoryview(raw_videos))
    if columns is not None:
        return columns
    try:
        return _columns_of(_split(memoryview(raw_videos)))
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError:  # a split fell inside an entry: split at each entry instead
        raws = msgspec.json.decode(raw_videos, type=list[msgspec.Raw] | None)
        chunks = (b",".join(raws[lo : lo + _CHUNK]) for lo in range(0, len(raws or ()), _CHUNK))
        return _columns_of(chunks)


# The fastest path: Arrow's JSON reader builds the columns in C++, with no Python object per
# entry (a million entries: ~1 s, against ~3 s for typed records turned into columns). It
# reads JSON Lines, so each of the list's pieces (:func:`_split`) becomes lines of entries,
# the separator between two entries, as the writer wrote it, a newline. It takes the
# usual file, which holds only what the typed records take (the required fields as ints and
# strings, metadata of ints, strings, bools and floats); anything else returns ``None`` and
# goes the typed way, whose checks and messages are the reference: a wrong type (Arrow
# refuses a column that changes type), a value out of range, a sample key as a field, a
# nested value, an int past 64 bits (Arrow would read it as a float: such a value sends the
# file the typed way), or a separator found inside a string or a nested list (the JSON is
# then broken, or the count of separators is not that of entries: both are checked).


_ARROW_BLOCK = 2 << 20  # bytes of text a reader's thread parses at a time


_ARROW_KINDS = {pa.int64(): "int", pa.string(): "str", pa.bool_(): "bool", pa.float64(): "float"}


def _arrow_columns(text: memoryview) -> tuple[pa.Table, dict[str, FieldKinds]] | None:
    """The columns of the ``videos`` list (``text``, a non-empty JSON list) by Arrow's JSON
    reader, or ``None`` where the file is not the usual one (the typed path then reads it)."""
    parts = []
    for piece in _split(text):  # a piece at a time: the peak holds one piece's parse
        piece = bytes(piece)
        found = _BETWEEN.search(piece)
        cuts = 0
        if found is not None:
            separator, size = found.group(), len(piece)
            piece = piece.replace(separator, b"}\n{")
            shorter = len(separator) - 3  # each one replaced shortens the piece this much
            cuts = (size - len(piece)) // shorter if shorter else piece.count(b"}\n{")
        try:
            # The system's allocator, not Arrow's pool: what the reader frees on the way goes
            # back to the system (parse_metadata trims the heap), where Arrow's pool would
            # keep it as the process's memory (+250 MB held at 1M videos, against +35 MB).
            part = pj.read_json(
                pa.BufferReader(piece),
                read_options=pj.ReadOptions(block_size=_ARROW_BLOCK),
                parse_options=pj.ParseOptions(newlines_in_values=True),
                memory_pool=pa.system_memory_pool(),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if part.num_rows != cuts + 1:  # a separator inside a string: not one entry a line
            return None
        parts.append(part)
        del piece
    if not parts:  # an empty list: the typed path finds no entry, the lenient one says so
        return None
    try:  # a field first seen in a later piece joins the schema; a type that changes does not
        table = pa.concat_tables(parts, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    del parts
    n = table.num_rows
    columns = _arrow_entry_columns(table)
    fields = _arrow_fields(table["metadata"] if "metadata" in table.column_names else None, n)
    del table
    if columns is None or fields is None:
        return None
    return _table(columns, fields[0]), fields[1]


def _arrow_entry_columns(table: pa.Table) -> dict[str, pa.ChunkedArray] | None:
    """The entry columns of Arrow's table, as the typed records hold them (``None``: a
    missing, null or mistyped required field, or a value out of range)."""
    n, names = table.num_rows, set(table.column_names)
    columns: dict[str, pa.ChunkedArray] = {}
    for name, least in (("T", 0), ("H", 1), ("W", 1), ("start_row", 0)):
        if name not in names or table[name].type != pa.int64() or table[name].null_count:
            return None
        column = table[name]
        low, high = pc.min_max(column).values()
        if low.as_py() < least or (name in ("H", "W") and high.as_py() > WEBP_MAX_SIDE):
            return None
        columns[name] = column
    if "path" not in names or table["path"].type != pa.string() or table["path"].null_count:
        return None
    columns["path"] = table["path"]
    for name, kind, allowed in (
        ("key", pa.string(), {pa.string(), pa.null()}),
        ("checksum", pa.string(), {pa.string(), pa.null()}),
        ("fps", pa.float64(), {pa.int64(), pa.float64(), pa.null()}),
        ("id", pa.int64(), {pa.int64(), pa.null()}),
    ):
        if name not in names:
            columns[name] = pa.nulls(n, kind)
        elif table[name].type in allowed:
            columns[name] = table[name].cast(kind)
        else:
            return None
    if columns["id"].null_count:  # optional: the position stands in for a missing id
        columns["id"] = pc.coalesce(columns["id"], ints_array(np.arange(n)))
    return columns


def _arrow_fields(
    metadata: pa.ChunkedArray | None, n: int
) -> tuple[dict[str, pa.Array], dict[str, FieldKinds]] | None:
    """The metadata fields of Arrow's ``metadata`` column (a struct, one child a field), as
    :func:`_field_columns` makes them (``None``: a value the typed records do not take)."""
    if metadata is None or metadata.type == pa.null():
        return {}, {}
    if not pa.types.is_struct(metadata.type):
        return None
    columns, kinds = {}, {}
    names = [metadata.type.field(i).name for i in range(metadata.type.num_fields)]
    for name, values in zip(names, metadata.flatten(), strict=True):
        if name in SAMPLE_KEYS or (values.type != pa.null() and values.type not in _ARROW_KINDS):
            return None
        if values.type == pa.float64():
            low, high = pc.min_max(values).values()
            if max(abs(low.as_py() or 0.0), abs(high.as_py() or 0.0)) >= 2.0**63:
                return None  # maybe an int past 64 bits: the typed path names it
        types = frozenset() if values.type == pa.null() else frozenset({_ARROW_KINDS[values.type]})
        kinds[name] = FieldKinds(types, n - values.null_count)
        columns[FIELD_PREFIX + name] = values.cast(_storage_type(types))
    return columns, kinds


# Where one entry of the list ends and the next starts, as JSON writers write it.
_BETWEEN = re.compile(rb"\}\s*,\s*\{")


_CHUNK_BYTES = 10 << 20


def _split(text: memoryview):
    """The ``videos`` list's text (a valid JSON array) as pieces of about ``_CHUNK_BYTES``,
    each a run of whole entries, cut where ``}, {`` follows a point: such a cut inside an
    entry or a string leaves a piece that is no valid JSON list, which the decode refuses
    (and :func:`_typed_columns` then splits entry by entry)."""
    start = bytes(text[:64]).index(b"[") + 1
    end = len(text) - bytes(text[-64:])[::-1].index(b"]") - 1
    while start < end:
        found = _BETWEEN.search(text, min(start + _CHUNK_BYTES, end), end)
        if found is None:
            yield text[start:end]
            return
        yield text[start : found.start() + 1]
        start = found.end() - 1


def _columns_of(chunks) -> tuple[pa.Table, dict[str, FieldKinds]] | None:
    """The columns of the entries of ``chunks`` (each a run of entries, comma-separated)."""
    ints: dict[str, list[np.ndarray]] = {n: [] for n in ("id", "T", "H", "W", "start_row")}
    strings: dict[str, list[pa.Array]] = {name: [] for name in ("path", "key", "checksum")}
    fps: list[pa.Array] = []
    fields = _FieldChunks()
    lo = 0
    for chunk in chunks:
        entries = msgspec.json.decode(b"[" + chunk + b"]", type=list[_Entry])
        m = len(entries)
        del chunk
        for name in ("T", "H", "W", "start_row"):
            ints[name].append(np.fromiter(map(operator.attrgetter(name), entries), np.int64, m))
        ids = list(map(operator.attrgetter("id"), entries))
        if None in ids:  # optional: other tools may leave it out; the position stands in
            ids = [lo + i if v is None else v for i, v in enumerate(ids)]
        ints["id"].append(np.fromiter(ids, np.int64, m))
        for name, parts in strings.items():
            parts.append(array_of(list(map(operator.attrgetter(name), entries)), pa.string()))
        fps.append(array_of(list(map(operator.attrgetter("fps"), entries)), pa.float64()))
        fields.add([e.metadata or {} for e in entries])
        lo += m
        del entries
    if not lo:
        return None
    columns = {name: ints_array(np.concatenate(parts)) for name, parts in ints.items()}
    columns |= {name: pa.concat_arrays(parts) for name, parts in strings.items()}
    columns["fps"] = pa.concat_arrays(fps)
    field_arrays, kinds = fields.columns()
    return _table(columns, field_arrays), kinds


class _FieldChunks:
    """The metadata fields of the entries, a chunk at a time: typed arrays per chunk, cast to
    the field's type over all chunks at the end."""

    def __init__(self) -> None:
        self._sizes: list[int] = []
        self._arrays: dict[str, list[tuple[int, pa.Array | None]]] = {}
        self._kinds: dict[str, FieldKinds] = {}

    def add(self, metadata: list[Mapping[str, Any]]) -> None:
        k = len(self._sizes)
        self._sizes.append(len(metadata))
        arrays, kinds = _field_columns(metadata, len(metadata))
        for name, kind in kinds.items():
            known = self._kinds.get(name)
            self._kinds[name] = kind if known is None else known | kind
            self._arrays.setdefault(name, []).append((k, arrays.get(FIELD_PREFIX + name)))

    def columns(self) -> tuple[dict[str, pa.Array], dict[str, FieldKinds]]:
        out = {}
        for name, parts in self._arrays.items():
            kind = _storage_type(self._kinds[name].kinds)
            if kind is None or any(a is None for _, a in parts):
                continue
            chunks = dict(parts)
            pieces = [
                pa.nulls(size, kind) if k not in chunks else chunks[k].cast(kind)
                for k, size in enumerate(self._sizes)
            ]
            out[FIELD_PREFIX + name] = pa.concat_arrays(pieces)
        return out, self._kinds


# The entry's own columns of the video table, and their types (metadata fields follow).
_ENTRY_COLUMNS = {"id": pa.int64(), "T": pa.int64(), "H": pa.int64(), "W": pa.int64()}


_ENTRY_COLUMNS |= {"start_row": pa.int64(), "path": pa.string(), "key": pa.string()}


_ENTRY_COLUMNS |= {"checksum": pa.string(), "fps": pa.float64()}


def _table(columns: Mapping[str, Any], fields: Mapping[str, pa.Array]) -> pa.Table:
    """The video table of the entry columns (values of :data:`_ENTRY_COLUMNS`: Arrow arrays,
    chunked or not, or lists) and fields."""
    typed = {
        name: columns[name]
        if isinstance(columns[name], pa.Array | pa.ChunkedArray)
        else array_of(columns[name], kind)
        for name, kind in _ENTRY_COLUMNS.items()
    }
    return pa.table({**typed, **fields})


def _field_columns(
    metadata: list[Mapping[str, Any]], n: int
) -> tuple[dict[str, pa.Array], dict[str, FieldKinds]]:
    """One nullable column per metadata field (first-seen order), and what each holds."""
    names = list(dict.fromkeys(itertools.chain.from_iterable(metadata)))
    if any(name in SAMPLE_KEYS for name in names):
        raise _Lenient  # for the message naming the first such video
    columns, kinds = {}, {}
    for name in names:
        values = list(map(operator.methodcaller("get", name), metadata))
        types = frozenset(t.__name__ for t in set(map(type, values)) if t is not type(None))
        kinds[name] = FieldKinds(types, n - values.count(None))
        arrow_type = _storage_type(types)
        if arrow_type is not None:
            try:
                columns[FIELD_PREFIX + name] = array_of(values, arrow_type)
            except (OverflowError, pa.ArrowInvalid) as err:  # an int past 64 bits
                message = f"metadata field {name!r} holds a value out of range: {err}"
                raise LayoutError(message) from err
    return columns, kinds


def _storage_type(types: frozenset[str]) -> pa.DataType | None:
    """How a field is stored: as its values are (nulls where missing); ``None`` for a field
    whose types do not mix (its dtype raises when asked for)."""
    if not types or types == {"str"}:
        return pa.string()
    if types == {"bool"}:
        return pa.bool_()
    if types == {"int"}:
        return pa.int64()
    if types <= {"int", "float"}:
        return pa.float64()
    return None


def parse_entry(video_idx: int, entry: Any, where: str) -> VideoInfo:
    """One entry of the ``videos`` list, validated (``where``: the file, for messages)."""
    if not isinstance(entry, dict):
        raise LayoutError(f"{where}: videos[{video_idx}] must be an object, got {entry!r}")
    name = f"videos[{video_idx}]" + (f" (key {entry['key']!r})" if "key" in entry else "")
    missing = [f for f in _REQUIRED_VIDEO_FIELDS if f not in entry]
    if missing:
        raise LayoutError(f"{where}: {name} is missing required field(s) {', '.join(missing)}")
    ints = {}
    for f, minimum in (("T", 0), ("H", 1), ("W", 1), ("start_row", 0)):
        value = entry[f]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise LayoutError(
                f"{where}: {name} field {f} must be an integer >= {minimum}, got {value!r}"
            )
        ints[f] = value
    if max(ints["H"], ints["W"]) > WEBP_MAX_SIDE:
        raise LayoutError(
            f"{where}: {name} declares frames of {ints['H']}x{ints['W']} (HxW), but a WebP "
            f"image has at most {WEBP_MAX_SIDE} pixels per side"
        )
    metadata = entry.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise LayoutError(f"{where}: {name} field metadata must be an object, got {metadata!r}")
    for k, v in metadata.items():
        if k in SAMPLE_KEYS:
            raise LayoutError(
                f"{where}: {name} metadata field {k!r} would shadow the sample key of that name"
            )
        if v is not None and not isinstance(v, (str, int, float, bool)):
            raise LayoutError(f"{where}: {name} metadata field {k!r} must be a scalar, got {v!r}")
    video_id = entry.get("id")
    if video_id is None:  # optional: other tools may leave it out
        video_id = video_idx
    elif isinstance(video_id, bool) or not isinstance(video_id, int):
        raise LayoutError(f"{where}: {name} field id must be an integer, got {video_id!r}")
    key = entry.get("key")
    return VideoInfo(
        video_idx=video_idx,
        id=int(video_id),
        key=None if key is None else str(key),
        path=str(entry["path"]),
        num_frames=ints["T"],
        height=ints["H"],
        width=ints["W"],
        start_row=ints["start_row"],
        metadata=dict(metadata),
        checksum=entry.get("checksum"),
        extra={k: v for k, v in entry.items() if k not in _KNOWN_ENTRY_FIELDS},
    )


def _lenient_columns(
    raw_videos: msgspec.Raw | None, where: str
) -> tuple[pa.Table, dict[str, FieldKinds]]:
    entries = None if raw_videos is None else msgspec.json.decode(raw_videos)
    if not isinstance(entries, list) or not entries:
        raise LayoutError(f"{where} lists no videos: 'videos' must be a non-empty list")
    videos = [parse_entry(i, entry, where) for i, entry in enumerate(entries)]
    n = len(videos)
    fps = [v.extra.get("fps") for v in videos]
    fps = [f if isinstance(f, (int, float)) and not isinstance(f, bool) else None for f in fps]
    fields, kinds = _field_columns([v.metadata for v in videos], n)
    columns = {
        "id": [v.id for v in videos],
        "T": [v.num_frames for v in videos],
        "H": [v.height for v in videos],
        "W": [v.width for v in videos],
        "start_row": [v.start_row for v in videos],
        "path": [v.path for v in videos],
        "key": [v.key for v in videos],
        "checksum": [_text(v.checksum) for v in videos],
        "fps": fps,
    }
    return _table(columns, fields), kinds


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _check_row_ranges(table: pa.Table, where: str) -> None:
    start = numpy_of(table.column("start_row"))
    frames = numpy_of(table.column("T"))
    expected = np.zeros_like(start)
    np.cumsum(frames[:-1], out=expected[1:])
    bad = np.flatnonzero(start != expected)
    if bad.size:
        v = int(bad[0])
        what = "overlaps the previous video" if start[v] < expected[v] else "leaves a gap"
        path = table.column("path")[v].as_py()
        raise LayoutError(
            f"{where}: videos[{v}] ({path!r}) starts at row {int(start[v])} but the previous "
            f"videos end at row {int(expected[v])}: its row range {what}"
        )


def _check_unique_ids(table: pa.Table, where: str) -> None:
    ids = numpy_of(table.column("id"))
    order = np.argsort(ids, kind="stable")
    repeats = order[1:][ids[order[1:]] == ids[order[:-1]]]  # later videos with a seen id
    if repeats.size:
        v = int(repeats.min())
        first = int(np.flatnonzero(ids == ids[v])[0])
        paths = table.column("path")
        raise LayoutError(
            f"{where}: videos[{v}] ({paths[v].as_py()!r}) has id {int(ids[v])}, the id of "
            f"videos[{first}] ({paths[first].as_py()!r}): video ids must be unique, since the "
            "Lance rows name their video by id"
        )


def raw_entries(data: bytes, where: str) -> list[msgspec.Raw]:
    """The entries of the ``videos`` list of a ``_metadata.json``, each still as JSON text."""
    raw = decode_top_level(data, where).get("videos")
    return msgspec.json.decode(raw or b"[]", type=list[msgspec.Raw])


# ================================================================================================
# Parse a root's ``_metadata.json`` once; every later open, in any process, maps the result.
#
# The columns of a video table are kept in an Arrow IPC file under the cache folder
# (``HF_LVF_CACHE``, default ``~/.cache/hf_lvf``), named after what identifies the
# content of the ``_metadata.json`` it came from (:func:`hf_lvf.location.root_file_identity`:
# the pinned commit and path of an ``hf://`` root; the size and ETag of an object-store
# file; else a digest of the bytes, remembered per stat state of a local file so that
# reopening it hashes nothing: see :mod:`hf_lvf.location.files`). So a copy of a root,
# or the same root mounted on another machine, maps the table one of them made. Opening
# it is a memory map: every process that opens the root (DataLoader workers included)
# shares the same pages instead of holding a copy, and a pickled table carries only its
# :class:`TableSource` (location and identity).
#
# Files are written under a temporary name and renamed into place, so several
# processes opening a root for the first time at once each write the same bytes and
# readers never see a partial file. A name is never reused for other content, so a
# cached table is never stale; a source whose cached file is gone is read again,
# and refused if its file changed meanwhile (another table is there now).
# ================================================================================================


logger = logging.getLogger(__name__)


# Bump when the table's columns or their meaning change: old files are then never read.
_FORMAT = 1


_META_KEY = b"hf_lvf"


# Tables opened in this process, by identity (a second open reuses the mapping).
_OPEN: OrderedDict[str, RootLayout] = OrderedDict()


_OPEN_MAX = 32


# Cache files being written, by identity (see _store).
_WRITES: dict[str, threading.Thread] = {}


_lock = threading.Lock()


@dataclass(frozen=True)
class TableSource:
    """Where a video table was read from, and what identifies that content.

    Attributes:
        uri: the root whose ``_metadata.json`` was read.
        identity: what identifies the file's content (see the module docstring).
        storage_options: what reading it again takes (a Hub token, store credentials):
            kept in memory and in pickles, never in the cache.
    """

    uri: str
    identity: str
    storage_options: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def where(self) -> str:
        return join_uri(self.uri, METADATA_FILENAME)

    def settle(self) -> None:
        """Wait for this table's cache file, if it is being written (before pickling: the
        receiving process then maps it instead of parsing again)."""
        wait_for_writes(self.identity)

    def reopen(self, uri: str) -> RootLayout:
        """The table again, read at ``uri``: what a pickled :class:`RootLayout` becomes."""
        layout = _cached(self) or _rebuild(self)
        return layout if layout.uri == uri else layout.with_uri(uri)

    def entry(self, video_idx: int) -> VideoInfo:
        """Entry ``video_idx`` of the ``videos`` list, as written (reads the file again)."""
        return parse_entry(video_idx, msgspec.json.decode(_entries(self)[video_idx]), self.where)


def read_layout(uri: str, *, storage_options: Mapping[str, str] | None = None) -> RootLayout:
    """Read and validate the ``_metadata.json`` of a root (local path, ``hf://`` or store URL),
    as columns; a root opened before (by any process) is mapped, not parsed.

    Raises:
        RootNotFoundError: there is no ``_metadata.json`` at ``uri``.
        LayoutError: see :func:`hf_lvf.layout.table.parse_metadata`.
        ParameterTypeError: ``uri`` is not a string or path.
    """
    if not isinstance(uri, (str, os.PathLike)):
        raise ParameterTypeError(f"uri must be a path or URL string, got {uri!r}")
    uri = os.fspath(uri)
    options = tuple(sorted((storage_options or {}).items()))
    identity = root_file_identity(uri, METADATA_FILENAME, storage_options, read=False)
    if identity is not None:
        layout = _cached(TableSource(uri, identity, options))
        if layout is not None:
            return layout if layout.uri == uri else layout.with_uri(uri)
    data, pending = read_root_file_hashing(uri, METADATA_FILENAME, storage_options)
    if isinstance(pending, str) or pending.hinted is not None:
        # Known now, or likely cached already (this content seen at this path, size and
        # modification time, here or on another machine): a cached table spares the parse.
        identity = pending if isinstance(pending, str) else pending.result()
        source = TableSource(uri, identity, options)
        return _cached(source) or _store(source, _parse(data, source.where))
    parsed = _parse(data, join_uri(uri, METADATA_FILENAME))  # hashed meanwhile
    source = TableSource(uri, pending.result(), options)
    return _cached(source) or _store(source, parsed)


def _path(identity: str) -> Path:
    digest = hashlib.sha256(f"{_FORMAT}\0{identity}".encode()).hexdigest()[:40]
    return cache_dir() / "tables" / f"{digest}.arrow"


def _cached(source: TableSource) -> RootLayout | None:
    """The table of ``source`` if this process or the cache folder has it."""
    with _lock:
        layout = _OPEN.get(source.identity)
        if layout is not None:
            _OPEN.move_to_end(source.identity)
            if layout.source == source:
                return layout
            return RootLayout(source.uri, layout.table, layout.header, layout.field_kinds, source)
    path = _path(source.identity)
    try:
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, pa.ArrowInvalid) as err:  # a damaged file: made again
        logger.warning("ignoring damaged cached video table %s: %s", path, err)
        return None
    meta = msgspec.json.decode((table.schema.metadata or {}).get(_META_KEY, b"{}"))
    if meta.get("identity") != source.identity:  # another content under this name: rebuild
        return None
    return _remember(_layout(table, source))


def _layout(table: pa.Table, source: TableSource) -> RootLayout:
    meta = msgspec.json.decode(table.schema.metadata[_META_KEY])
    kinds = {n: FieldKinds(frozenset(k), p) for n, (k, p) in meta["fields"].items()}
    return RootLayout(
        source.uri, table.replace_schema_metadata(None), meta["header"], kinds, source
    )


def _remember(layout: RootLayout) -> RootLayout:
    with _lock:
        _OPEN[layout.source.identity] = layout
        while len(_OPEN) > _OPEN_MAX:
            _OPEN.popitem(last=False)
    return layout


def _parse(data: bytes, where: str) -> Columns:
    return parse_metadata(data, where=where)


def _store(source: TableSource, parsed: Columns) -> RootLayout:
    """Keep the parsed table of ``source``; it is written to the cache folder by a thread of
    its own while this process reads from memory (:func:`wait_for_writes` and pickling wait
    for it)."""
    table, header, kinds = parsed
    meta = {
        "format": _FORMAT,
        "identity": source.identity,
        "header": header,
        "fields": {n: [sorted(k.kinds), k.present] for n, k in kinds.items()},
    }
    table = table.replace_schema_metadata({_META_KEY: msgspec.json.encode(meta)})
    writer = threading.Thread(
        target=_write, args=(source, table), name="hf_lvf-table-cache", daemon=False
    )
    with _lock:
        _WRITES[source.identity] = writer
    writer.start()
    return _remember(_layout(table, source))


def write_arrow_file(path: Path, table: pa.Table) -> None:
    """Write ``table`` as the Arrow file ``path``: a temporary file renamed into place, so
    that readers never see a part of it and concurrent writers of the same table agree.

    Raises:
        OSError: the folder cannot be written (nothing is left behind).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".arrow")
    try:
        with os.fdopen(fd, "wb") as f, pa.ipc.new_file(f, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write(source: TableSource, table: pa.Table) -> None:
    """Write ``table`` as the cached table of ``source``."""
    try:
        write_arrow_file(_path(source.identity), table)
    except OSError as err:  # no writable cache: this process keeps its own copy
        logger.info("video table of %s not cached (%s)", source.uri, err)
    finally:
        with _lock:
            _WRITES.pop(source.identity, None)


def wait_for_writes(identity: str | None = None) -> None:
    """Wait until the cache files being written (of ``identity``, or all) are in place."""
    with _lock:
        writers = [w for i, w in _WRITES.items() if identity is None or i == identity]
    for writer in writers:
        writer.join()


def _rebuild(source: TableSource) -> RootLayout:
    """A source whose cached table is gone: read again, if its file is unchanged."""
    return _store(source, _parse(_read_same(source), source.where))


def _read_same(source: TableSource) -> bytes:
    """The bytes of ``source``'s file, which must still be the content it was read as."""
    options = dict(source.storage_options)
    if source.identity.startswith("file:"):  # recorded by an older hf_lvf (see legacy_...)
        if legacy_file_identity(source.uri) != source.identity:
            raise _changed(source)
        return read_root_file_with_identity(source.uri, METADATA_FILENAME, options)[0]
    identity = root_file_identity(source.uri, METADATA_FILENAME, options, read=False)
    if identity is not None and identity != source.identity:
        raise _changed(source)
    data, identity = read_root_file_with_identity(source.uri, METADATA_FILENAME, options)
    if identity != source.identity:
        raise _changed(source)
    return data


def _changed(source: TableSource) -> LayoutError:
    return LayoutError(
        f"{source.where} was replaced since this view of the root was opened, and the cached "
        f"video table of the old file is gone from {cache_dir()}: open the root again"
    )


# Raw entries of recently asked sources (layout.videos[i]): small roots, messages, writers.
_ENTRIES: OrderedDict[str, list[Any]] = OrderedDict()


def _entries(source: TableSource) -> list[Any]:
    with _lock:
        if source.identity in _ENTRIES:
            return _ENTRIES[source.identity]
    entries = raw_entries(_read_same(source), source.where)
    with _lock:
        _ENTRIES[source.identity] = entries
        while len(_ENTRIES) > 2:
            _ENTRIES.popitem(last=False)
    return entries


def raw_entry_objects(layout: RootLayout) -> list[dict[str, Any]]:
    """The entries of ``layout``'s ``videos`` list as written, decoded (for writers that copy
    them: a merge). Reads the file again; it must be the one the table came from."""
    source = layout.source
    raw = decode_top_level(_read_same(source), source.where).get("videos")
    return msgspec.json.decode(raw or b"[]")


def check_frame_pixels(layout: RootLayout, max_frame_pixels: int) -> None:
    """Raise if a video of ``layout`` declares frames larger than ``max_frame_pixels``.

    Runs when a root is opened for reading, before any frame is allocated.

    Raises:
        LayoutError: names the first such video, its size and the limit.
    """
    sizes = layout.frame_sizes
    over = np.flatnonzero(sizes[:, 0] * sizes[:, 1] > max_frame_pixels)
    if over.size:
        v = int(over[0])
        problem = frame_pixels_problem(int(sizes[v, 0]), int(sizes[v, 1]), max_frame_pixels)
        raise LayoutError(
            f"{layout.metadata_path}: {layout.describe_video(v)} declares {problem}; "
            "if the root is right, pass a larger max_frame_pixels="
        )


def check_row_count(layout: RootLayout, num_rows: int) -> None:
    """Raise if the video table and the Lance table disagree on the number of rows."""
    if layout.num_rows == num_rows:
        return
    if layout.num_rows > num_rows:
        start, frames = layout.start_rows, layout.num_frames
        v = int(np.flatnonzero(start + frames > num_rows)[0])
        raise LayoutError(
            f"{layout.metadata_path}: {layout.describe_video(v)} spans rows "
            f"{int(start[v])}..{int(start[v] + frames[v] - 1)}, past the Lance table's "
            f"{num_rows} rows"
        )
    raise LayoutError(
        f"{layout.metadata_path}: the videos account for {layout.num_rows} rows but the Lance "
        f"table at {layout.uri!r} has {num_rows}"
    )
