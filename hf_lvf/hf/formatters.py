"""datasets' numpy and torch formatters, replaced by ones that keep video windows uint8.

datasets' tensor formatters turn every integer array into int64 (8x the memory of a
window), whatever dataset it comes from. :func:`hf_lvf.hf.internals.register_window_feature`
replaces them with these drop-in subclasses, which leave two kinds of value in their dtype:

- the columns of a window feature (``WindowVideo``, map-style), decoded a batch at a time;
- the windows hf_lvf's streaming front ends handed out in this process
  (:func:`mark_windows`), wherever ``datasets`` carried them: an example dict, a
  ``.batch(n)`` list, a ``.map`` that left them alone, an Arrow table built on their
  memory. ``datasets`` tells a streaming dataset's formatter no features (it drops them
  for typed examples iterables), so a window is known by its memory: its data address
  and shape, kept with a weak reference that forgets it when the array is freed.

A kept window is handed over writable, copied at most once (a read-only window, or the
windows of a batch stacked into one array). Every other value, of every other dataset,
is formatted exactly as datasets' own formatters do. The datasets internals relied on
(``NumpyFormatter``/``TorchFormatter`` and their ``_recursive_tensorize``,
``_consolidate``) are listed in :data:`hf_lvf.hf.internals.INTERNALS`.

:func:`rows_table` (through :func:`wrap_convert_to_arrow`) is the other half, for the table
formats (``arrow``, ``pandas``, ``polars``) of a stream: the examples as the Arrow table
``datasets`` would build from them, with every dense array a column on its own memory
instead of nested Python lists first.
"""

from __future__ import annotations

import functools
import itertools
import logging
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
from datasets.features.features import cast_to_python_objects
from datasets.formatting.formatting import PythonFormatter
from datasets.formatting.np_formatter import NumpyFormatter
from datasets.formatting.torch_formatter import TorchFormatter

from .window_lists import WindowLists

logger = logging.getLogger(__name__)

# Feature types whose decoded columns keep their dtype in the numpy and torch formats.
WINDOW_FEATURES: list[type] = []
# (data address, shape) -> weak reference to a window handed out in this process.
_handed_out: dict[tuple[int, tuple[int, ...]], weakref.ref] = {}


def mark_windows(arrays: Iterable[Any]) -> None:
    """Remember these arrays as windows hf_lvf handed out: formatters keep them uint8."""
    for array in arrays:
        if isinstance(array, np.ndarray):
            key = (array.__array_interface__["data"][0], array.shape)
            _handed_out[key] = weakref.ref(array, functools.partial(_forget, key))


def _forget(key: tuple[int, tuple[int, ...]], ref: weakref.ref) -> None:
    if _handed_out.get(key) is ref:
        del _handed_out[key]


def is_handed_out(value: Any) -> bool:
    """Whether ``value`` is (the memory of) a window hf_lvf handed out and that is alive."""
    if not isinstance(value, np.ndarray) or value.dtype != np.uint8 or not _handed_out:
        return False
    ref = _handed_out.get((value.__array_interface__["data"][0], value.shape))
    return ref is not None and ref() is not None


# --- examples as Arrow: what the table formats of a stream are built from -------------------


def rows_table(
    examples: Sequence[dict[str, Any]], slow: Callable[[list[dict[str, Any]]], pa.Table]
) -> pa.Table:
    """``slow(examples)`` (datasets' ``pa.Table.from_pylist(cast_to_python_objects(...))``),
    with its dense columns built directly: the same table, in microseconds.

    A dense column is one where every example holds a numeric ndarray of two or more
    dimensions; ``slow`` would turn it into nested lists of 1-D arrays and infer
    ``list<...<dtype>>`` from them. Built here it is that type on the arrays' memory, one
    chunk an example, without a copy (the table keeps the arrays alive).
    """
    names = list(examples[0]) if examples else []
    dense = [name for name in names if all(_is_dense(e.get(name)) for e in examples)]
    if not dense:
        return slow(list(examples))
    rest = [{k: v for k, v in e.items() if k not in dense} for e in examples]
    table = slow(rest) if any(rest[0]) else pa.table({})
    for name in dense:
        column = pa.chunked_array([_nested_lists(e[name]) for e in examples])
        if table.num_columns:
            table = table.add_column(names.index(name), name, column)
        else:
            table = pa.table({name: column})
    return table


def wrap_convert_to_arrow() -> None:
    """Make streams' table formats build dense columns directly (idempotent; see
    :data:`hf_lvf.hf.internals.INTERNALS`)."""
    from datasets import iterable_dataset

    convert = getattr(iterable_dataset, "_convert_to_arrow", None)
    if convert is None:
        logger.warning("datasets.iterable_dataset._convert_to_arrow not found: table formats slow")
    elif not getattr(convert, "_hf_lvf_dense", False):
        iterable_dataset._convert_to_arrow = _dense_convert_to_arrow(convert)


def _dense_convert_to_arrow(convert: Any) -> Any:
    def slow(examples: list[dict[str, Any]]) -> pa.Table:  # datasets' own, for one batch
        return pa.Table.from_pylist(cast_to_python_objects(examples, only_1d_for_numpy=True))

    @functools.wraps(convert)
    def convert_to_arrow(
        iterable: Any, batch_size: Any, drop_last_batch: bool = False
    ) -> Iterator[tuple[Any, pa.Table]]:
        if batch_size is None or batch_size <= 0:  # one table of everything: datasets' own
            yield from convert(iterable, batch_size, drop_last_batch)
            return
        iterator = iter(iterable)
        for key, example in iterator:  # batches of batch_size, as datasets groups them
            group = [(key, example), *itertools.islice(iterator, batch_size - 1)]
            if len(group) < batch_size and drop_last_batch:
                return
            keys, examples = zip(*group, strict=True)
            yield "_".join(str(k) for k in keys), rows_table(examples, slow)

    convert_to_arrow._hf_lvf_dense = True
    return convert_to_arrow


def _is_dense(value: Any) -> bool:
    return (
        isinstance(value, np.ndarray)
        and value.ndim >= 2
        and value.dtype.kind in "iuf"
        and value.dtype.isnative
    )


def _nested_lists(value: np.ndarray) -> pa.Array:
    """A one-row ``list<...<dtype>>`` array whose values are ``value``'s memory."""
    if not value.flags.c_contiguous:
        value = np.ascontiguousarray(value)
    leaf = pa.from_numpy_dtype(value.dtype)
    array = pa.Array.from_buffers(leaf, value.size, [None, pa.py_buffer(value)])
    for offsets in reversed(_row_offsets(value.shape)):
        array = pa.ListArray.from_arrays(offsets, array)
    return array


@functools.lru_cache(maxsize=4)
def _row_offsets(shape: tuple[int, ...]) -> tuple[pa.Array, ...]:
    """The list offsets of one ``shape`` array as nested lists, outermost first (the same
    for every array of that shape)."""
    counts = np.cumprod((1, *shape[:-1]))
    return tuple(
        pa.array(np.arange(count + 1, dtype=np.int32) * extent)
        for count, extent in zip(counts, shape, strict=True)
    )


def _handed_out_stack(value: Any) -> bool:
    """Whether ``value`` is a list of handed-out windows of one shape (a ``.batch`` column)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(is_handed_out(v) and v.shape == value[0].shape for v in value)
    )


def _window_columns(features: datasets.Features | None) -> frozenset[str]:
    if not features or not WINDOW_FEATURES:
        return frozenset()
    kinds = tuple(WINDOW_FEATURES)
    return frozenset(
        name for name, f in features.items() if isinstance(f, kinds) and getattr(f, "decode", True)
    )


class _BatchWindows(WindowLists):  # WindowLists: columns of lists of windows (.batch(n))
    """Mixin for datasets' formatters: the window columns of a batch are decoded together."""

    features: datasets.Features | None

    def format_batch(self, pa_table: pa.Table) -> Any:
        """Window columns are decoded with one read for the whole batch (``ds[i:j]``,
        ``ds[[...]]``, ``__getitems__``); the other columns as datasets does."""
        names = [n for n in pa_table.column_names if n in _window_columns(self.features)]
        if not names or getattr(self, "lazy", False):
            return super().format_batch(pa_table)
        decoded = {
            name: self._window_batch(
                self.features[name].decode_batch_of(pa_table.column(name).to_pylist())
            )
            for name in names
        }
        rest = super().format_batch(pa_table.drop_columns(names))
        return {
            name: decoded[name] if name in decoded else rest[name] for name in pa_table.column_names
        }

    def _window_batch(self, windows: np.ndarray | list[Any]) -> Any:
        """The formatted column of a decoded batch: a dense array, or a list with ``None``."""
        raise NotImplementedError


class _KeepWindows(_BatchWindows):
    """Mixin for datasets' tensor formatters: decoded windows skip the int64 upcast."""

    features: datasets.Features | None

    def _keep(self, value: Any) -> Any:
        raise NotImplementedError

    def recursive_tensorize(self, data_struct: Any) -> Any:
        names = _window_columns(self.features)
        if not names or not isinstance(data_struct, dict) or not names & data_struct.keys():
            return super().recursive_tensorize(data_struct)
        kept = {k: self._keep(v) for k, v in data_struct.items() if k in names}
        out = super().recursive_tensorize({k: v for k, v in data_struct.items() if k not in names})
        return {k: kept[k] if k in kept else out[k] for k in data_struct}

    def _recursive_tensorize(self, data_struct: Any) -> Any:
        # Windows a stream handed out, alone or as the list of a .batch(n): kept, one copy at most.
        if is_handed_out(data_struct):
            return self._keep(data_struct if data_struct.flags.writeable else data_struct.copy())
        if _handed_out_stack(data_struct):
            return self._keep(np.stack(data_struct))
        return super()._recursive_tensorize(data_struct)

    def format_column(self, pa_table: pa.Table) -> Any:
        name = pa_table.column_names[0]
        if name not in _window_columns(self.features):
            return super().format_column(pa_table)
        column = self.numpy_arrow_extractor().extract_column(pa_table)
        column = self.python_features_decoder.decode_column(column, name)
        return self._consolidate(self._keep(list(column)))


class WindowAwarePythonFormatter(_BatchWindows, PythonFormatter):
    """datasets' default formatter, except that a batch's windows are decoded together."""

    def _window_batch(self, windows: np.ndarray | list[Any]) -> Any:
        return list(windows)


class WindowAwareNumpyFormatter(_KeepWindows, NumpyFormatter):
    """datasets' numpy formatter, except that decoded windows keep their dtype (uint8) and a
    batch's windows are decoded together."""

    def _window_batch(self, windows: np.ndarray | list[Any]) -> Any:
        if isinstance(windows, np.ndarray):
            return np.asarray(windows, **self.np_array_kwargs)
        return self._consolidate(self._keep(windows))

    def _keep(self, value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return np.asarray(value, **self.np_array_kwargs)
        if isinstance(value, list):
            return [self._keep(v) for v in value]
        return value


class WindowAwareTorchFormatter(_KeepWindows, TorchFormatter):
    """datasets' torch formatter, except that decoded windows stay uint8 (zero-copy) and a
    batch's windows are decoded together."""

    def _window_batch(self, windows: np.ndarray | list[Any]) -> Any:
        if isinstance(windows, np.ndarray):
            return self._keep(windows)
        return self._consolidate(self._keep(windows))

    def _keep(self, value: Any) -> Any:
        import torch

        if isinstance(value, np.ndarray):
            if self.torch_tensor_kwargs:
                return torch.as_tensor(value, **self.torch_tensor_kwargs)
            return torch.from_numpy(value)
        if isinstance(value, list):
            return [self._keep(v) for v in value]
        return value


__all__ = [
    "WINDOW_FEATURES",
    "is_handed_out",
    "mark_windows",
    "rows_table",
    "wrap_convert_to_arrow",
]
