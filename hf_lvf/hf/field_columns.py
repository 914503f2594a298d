"""The per-frame fields of map-style rows: their values, gathered per window, as Arrow columns.

A map-style dataset's Arrow cache holds one row per window: a reference that decodes to
the pixels when the row is read, and the other keys' values. The per-frame fields are such
values: every row's are read once per root (in a child process unless this one has used
lance: :func:`hf_lvf.frames.probe.probe_columns`, so forked workers may still read),
then gathered at each window's frames (and offsets) as :class:`VideoWindows` gathers them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..frames import read_fields
from ..frames.probe import probe_columns
from ..read.batches import RowFields
from ..read.windows import VideoWindows


def _row_fields(view: VideoWindows) -> RowFields:
    """Every row's values of the view's fields (read once per view)."""
    held = view.__dict__.get("_map_style_fields")
    if held is None:
        fields = tuple(view.frame_fields.values())
        tops = list(dict.fromkeys(f.column[0] for f in fields))  # a scan flattens struct paths
        table = probe_columns(view.layout, view.storage_options, tops)
        held = RowFields(np.arange(table.num_rows, dtype=np.int64), read_fields(table, fields))
        view.__dict__["_map_style_fields"] = held
    return held


def window_field_columns(
    view: VideoWindows,
    video_idx: np.ndarray,
    frame_indices: np.ndarray,
    schema: pa.Schema,
) -> dict[str, pa.Array]:
    """The columns of the view's per-frame fields (and ``_is_pad`` masks) for windows of
    ``video_idx`` at ``frame_indices``, typed as ``schema`` types them."""
    fields = tuple(view.frame_fields.values())
    if not fields:
        return {}
    columns = view.field_columns(fields, video_idx, frame_indices, _row_fields(view))
    return {name: _arrow(value, schema.field(name).type) for name, value in columns.items()}


def _arrow(value: Any, kind: pa.DataType) -> pa.Array:
    if not isinstance(value, np.ndarray):  # strings: lists of str
        return pa.array(value, type=kind)
    array: pa.Array = pa.array(np.ascontiguousarray(value).reshape(-1))
    for size in reversed(value.shape[1:]):
        array = pa.FixedSizeListArray.from_arrays(array, int(size))
    if isinstance(kind, pa.ExtensionType):  # Array2D/3D/...: its storage, then the type
        return pa.ExtensionArray.from_storage(kind, array.cast(kind.storage_type))
    return array.cast(kind)


__all__ = ["window_field_columns"]
