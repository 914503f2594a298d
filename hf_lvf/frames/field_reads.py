"""Per-frame fields in a frame read: which to read, the columns to ask ``take`` for, their values.

No lance here (the reader in :mod:`hf_lvf.frames` calls it with the table it opened and the
rows a ``take`` returned); the Arrow type -> field table is :mod:`hf_lvf.layout.frame_fields`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from ..errors import ParameterError
from ..layout.frame_fields import FrameField, field_values, gather_column


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


__all__ = ["field_columns", "read_fields", "select_fields"]
