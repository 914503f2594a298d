"""Per-frame field values of the rows of a read, carried beside the decoded frames.

A frame read (:mod:`hf_lvf.read.batches`) decodes each distinct frame once and keeps the
frames of its last read; the field values of the same rows come with the same ``take``
(:class:`hf_lvf.frames.FrameReader` reads the selected fields with the bytes). A read also
wants the values of rows it does not decode (a field read at offsets from a window's last
frame, an action chunk); those rows join the same take. The values of the last read's rows
are kept, so a sequential pass reads each row's values once, as it decodes each frame once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..frames import FrameReader
from ..frames.ahead import fields_of
from ..layout.frame_fields import FrameField

_EMPTY_ROWS = np.empty(0, np.int64)


class RowFields:
    """Field values of sorted, distinct Lance ``rows``: ``values[name][k]`` is row ``rows[k]``'s
    (``(len(rows), *shape)`` arrays; strings as objects)."""

    def __init__(self, rows: np.ndarray = _EMPTY_ROWS, values: dict[str, np.ndarray] | None = None):
        self.rows, self.values = rows, values or {}

    def at(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """``{name: values of rows}``, each ``(*rows.shape, *shape)``; ``rows`` must be held."""
        if not self.values:
            return {}
        pos = np.searchsorted(self.rows, rows)
        return {name: values[pos] for name, values in self.values.items()}


NO_FIELDS = RowFields()


class FieldRows:
    """The field cache of one view: reads the field values a read needs beside its frames."""

    def __init__(self, reader: FrameReader):
        self._reader = reader
        self._last = NO_FIELDS

    def forget(self) -> None:
        self._last = NO_FIELDS

    def read(
        self, decode_rows: np.ndarray, field_rows: np.ndarray
    ) -> tuple[Sequence[bytes | None], RowFields]:
        """One ``take``: the encoded frames of ``decode_rows`` (sorted, distinct), in order,
        and the field values of the sorted, distinct ``field_rows`` (the rows the read's
        windows use and their offsets), those of the last read's rows not read again."""
        fields: tuple[FrameField, ...] = self._reader.fields
        if not fields or not field_rows.size:  # no field wanted: the take reads no field column
            if not decode_rows.size:
                return [], NO_FIELDS
            if not fields:
                return self._reader.read(decode_rows), NO_FIELDS
            return self._reader.read(decode_rows, fields=False), NO_FIELDS
        known = self._last
        have = np.zeros(len(field_rows), bool)
        pos = np.zeros(len(field_rows), np.int64)
        if known.rows.size and set(known.values) == {f.name for f in fields}:
            pos = np.minimum(np.searchsorted(known.rows, field_rows), known.rows.size - 1)
            have = known.rows[pos] == field_rows
        read_rows = np.union1d(decode_rows, field_rows[~have])
        got: Any = self._reader.read(read_rows) if read_rows.size else []
        blobs = [got[i] for i in np.searchsorted(read_rows, decode_rows).tolist()]
        fresh = fields_of(got)
        take = np.searchsorted(read_rows, field_rows[~have])
        values = {}
        for field in fields:
            if have.all():
                values[field.name] = known.values[field.name][pos]
                continue
            read = fresh[field.name]
            column = np.empty((len(field_rows), *read.shape[1:]), read.dtype)
            column[~have] = read[take]
            if have.any():
                column[have] = known.values[field.name][pos[have]]
            values[field.name] = column
        self._last = RowFields(field_rows, values)
        return blobs, self._last


__all__ = ["NO_FIELDS", "FieldRows", "RowFields"]
