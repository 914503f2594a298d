"""What a root's per-frame fields hold: one scan of their Lance columns (never of ``bytes``),
reduced a batch at a time to min / mean / max per numeric field. For descriptions
(``hf_lvf.describe``, ``hf-lvf info``, the dataset card)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..layout import RootLayout
from ..layout.frame_fields import FrameField, field_values, frame_fields
from ..layout.streams import stream_names
from . import FrameReader

_ROWS_PER_BATCH = 1 << 16
_EXAMPLES = 3


@dataclass(frozen=True)
class FieldStats:
    """Attributes:
    field: the field (dotted name, dtype, one frame's shape).
    min, mean, max: over every element of every frame (numeric and bool fields; ``None``
        for strings or an empty table).
    examples: the first few distinct values of a string field.
    """

    field: FrameField
    min: float | None = None
    mean: float | None = None
    max: float | None = None
    examples: tuple[str, ...] = ()


def frame_field_stats(
    layout: RootLayout, storage_options: Mapping[str, str] | None = None
) -> dict[str, FieldStats]:
    """Each per-frame field of ``layout``'s root, by dotted name, with its statistics.

    Raises:
        LayoutError: the table cannot be opened, or has a column of an unsupported type.
        HubError, OSError: a remote table could not be read.
    """
    dataset = FrameReader(layout, storage_options).dataset
    fields = frame_fields(dataset.schema, where=layout.uri, streams=stream_names(layout.header))
    if not fields:
        return {}
    top = list(dict.fromkeys(f.column[0] for f in fields.values()))
    low = {n: np.inf for n in fields}
    high = {n: -np.inf for n in fields}
    total = dict.fromkeys(fields, 0.0)
    count = dict.fromkeys(fields, 0)
    examples: dict[str, list[str]] = {n: [] for n in fields}
    for batch in dataset.to_batches(columns=top, batch_size=_ROWS_PER_BATCH):
        for name, field in fields.items():
            values = field_values(_column(batch, field.column), field)
            if field.is_string:
                seen = examples[name]
                seen.extend(v for v in dict.fromkeys(values) if v not in seen)
                del seen[_EXAMPLES:]
                continue
            numbers = np.asarray(values, np.float64).reshape(-1)
            if numbers.size:
                low[name] = min(low[name], float(numbers.min()))
                high[name] = max(high[name], float(numbers.max()))
                total[name] += float(numbers.sum())
                count[name] += numbers.size
    return {
        name: _stats(field, low, high, total, count, examples) for name, field in fields.items()
    }


def _column(batch: pa.RecordBatch, path: tuple[str, ...]) -> pa.Array:
    """The column at ``path`` (a struct's child: ``("observation", "state")``) of ``batch``."""
    column = batch.column(path[0])
    for child in path[1:]:
        column = column.field(child)
    return column


def _stats(field: FrameField, low, high, total, count, examples) -> FieldStats:  # noqa: ANN001
    name = field.name
    if field.is_string:
        return FieldStats(field, examples=tuple(examples[name]))
    if not count[name]:
        return FieldStats(field)
    return FieldStats(field, low[name], total[name] / count[name], high[name])


def root_table_schema(
    layout: RootLayout, storage_options: Mapping[str, str] | None = None
) -> pa.Schema:
    """The Arrow schema of ``layout``'s Lance table (the version it describes)."""
    return FrameReader(layout, storage_options).dataset.schema


__all__ = ["FieldStats", "frame_field_stats", "root_table_schema"]
