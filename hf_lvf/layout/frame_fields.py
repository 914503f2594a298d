"""Per-frame fields: the Lance columns of a root beside ``video_id``, ``frame_idx``, ``bytes``.

FORMAT.md: the value of such a column in row ``start_row + f`` belongs to frame ``f`` of
that video. Lance refuses ``.`` in a top-level column name, so a dotted name such as
LeRobot's ``observation.state`` is the child ``state`` of a struct column ``observation``;
fields are named flattened, as pyarrow's ``Table.flatten()`` names them.

One table from Arrow type to field, both ways:

- :func:`frame_fields`: a Lance schema -> ``{dotted name: FrameField}`` (readers), refusing
  any type a window cannot carry, with the column and its type named;
- :func:`field_values`: a ``take``'s column -> ``(n, *shape)`` in the field's own dtype, or
  ``n`` strings;
- :func:`frame_columns`: one video's ``{dotted name: array of T values}`` -> the top-level
  Arrow columns to write (writers), checked against the video's frame count.

Pure pyarrow and numpy: nothing here opens a file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import LayoutError, ParameterError, ParameterTypeError

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


__all__ = [
    "FRAME_COLUMNS",
    "FrameField",
    "columns_schema",
    "describe_schema",
    "field_values",
    "frame_columns",
    "frame_fields",
    "gather_column",
]
