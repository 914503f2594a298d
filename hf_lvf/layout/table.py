"""The video table of a root, as columns: one typed array per field, never an object per video.

A :class:`RootLayout` wraps an Arrow table with one row per video (``id``, ``T``,
``H``, ``W``, ``start_row``, ``path``, ``key``, ``checksum``, ``fps`` and one column
per metadata field, nulls where a video lacks it) plus the top-level fields of
``_metadata.json``. It is built once from the JSON (:mod:`.parse`) and kept in an
Arrow IPC file that every process maps (:mod:`.cache`), so the numeric columns
below are views of shared pages, not copies.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ParameterError, WindowIndexError
from ..location import METADATA_FILENAME, join_uri

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


# --- Arrow <-> numpy without pyarrow's pandas shims ---
# ``pa.array(...)`` and ``Array.to_numpy()`` import pandas (about 0.4 s and 60 MB) whenever it
# is installed, to check for its types; opening a root needs none of it, so the video table
# is built from, and read into, numpy buffers directly (tests/test_open_cost.py).


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
    """Where a table came from (:class:`hf_lvf.layout.cache.TableSource`)."""

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
