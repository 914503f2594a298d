"""Formatting columns of lists of windows: what ``Dataset.batch(n)`` makes of a window column.

``ds.batch(4)`` stores each window column as ``List(WindowVideo)``: four references a
row. ``datasets`` decodes such a list by decoding its first item and comparing it with
the stored value (``decoded != reference``), which a decoded array cannot answer ("the
truth value of an array ... is ambiguous"). :class:`WindowLists`, a mixin of hf_lvf's
formatters (:mod:`hf_lvf.hf.formatters`), decodes these columns itself: each row's windows
with one read, as one ``(n, window_length, H, W, 3)`` uint8 array, formatted like a
batch of windows (a list of arrays, a numpy array or a torch tensor).
"""

from __future__ import annotations

from typing import Any

import datasets
import pyarrow as pa


def window_lists(features: datasets.Features | None, pa_table: pa.Table) -> list[str]:
    """The columns of ``pa_table`` whose feature is a list of decoding window features."""
    names = []
    for name in pa_table.column_names:
        feature = (features or {}).get(name)
        if isinstance(feature, (datasets.List, datasets.LargeList)):
            item = feature.feature
            if hasattr(item, "decode_batch_of") and getattr(item, "decode", True):
                names.append(name)
    return names


class WindowLists:
    """Mixin for datasets' formatters (before them in the MRO): list-of-window columns are
    decoded here, a row's windows together; tables without them pass on unchanged.

    The formatter provides ``features`` and ``_window_batch(windows)``, which formats the
    decoded windows of one batch (a dense array, or a list with ``None``).
    """

    features: datasets.Features | None

    def _window_batch(self, windows: Any) -> Any:
        raise NotImplementedError

    def format_row(self, pa_table: pa.Table) -> Any:
        if getattr(self, "lazy", False) or not window_lists(self.features, pa_table):
            return super().format_row(pa_table)
        return {name: values[0] for name, values in self.format_batch(pa_table).items()}

    def format_column(self, pa_table: pa.Table) -> Any:
        if not window_lists(self.features, pa_table):
            return super().format_column(pa_table)
        return self.format_batch(pa_table)[pa_table.column_names[0]]

    def format_batch(self, pa_table: pa.Table) -> Any:
        names = window_lists(self.features, pa_table)
        if not names or getattr(self, "lazy", False):
            return super().format_batch(pa_table)
        decoded = {}
        for name in names:
            decode = self.features[name].feature.decode_batch_of
            rows = pa_table.column(name).to_pylist()
            decoded[name] = self._window_batch(
                [None if refs is None else self._window_batch(decode(refs)) for refs in rows]
            )
        rest = super().format_batch(pa_table.drop_columns(names))
        return {
            name: decoded[name] if name in decoded else rest[name] for name in pa_table.column_names
        }


__all__ = ["WindowLists", "window_lists"]
