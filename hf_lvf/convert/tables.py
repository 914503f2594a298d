"""Tables users have beside their videos, keyed by file: captioned spans (Panda-70M's shape:
per file a list of ``[start, end]`` timestamps and a list of captions; InternVid's: one row
per span) and per-frame values (one row per frame, keyed by frame index or time in seconds).
Times become frames at the converted fps (``round(seconds * fps)``).
"""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InputNotFoundError, ParameterError, ParameterTypeError
from .source_parts import Clip, FrameTable
from .sources import _Source
from .webdataset import json_spans

#: Columns that name the file a row belongs to (the first one present is used).
FILE_COLUMNS = ("file_name", "path", "key", "videoID", "YoutubeID", "video_id")
_START = ("start", "start_time", "Start_timestamp", "start_timestamp")
_END = ("end", "end_time", "End_timestamp", "end_timestamp")


def read_table(table: Any, what: str) -> pa.Table:
    """A pyarrow ``Table``, a pandas ``DataFrame``, a list of row dicts, or a ``.csv``,
    ``.jsonl`` / ``.json`` or ``.parquet`` file, as a pyarrow ``Table``.

    Raises:
        FileNotFoundError: a file that does not exist.
        ValueError: a file of another kind, or one that cannot be read.
    """
    if isinstance(table, pa.Table):
        return table
    if isinstance(table, (str, os.PathLike)):
        path = Path(table)
        if not path.is_file():
            raise InputNotFoundError(f"{what} table {str(path)!r} does not exist")
        try:
            if path.suffix == ".csv":
                import pyarrow.csv

                return pyarrow.csv.read_csv(path)
            if path.suffix in (".jsonl", ".json"):
                import pyarrow.json

                return pyarrow.json.read_json(path)
            if path.suffix == ".parquet":
                import pyarrow.parquet

                return pyarrow.parquet.read_table(path)
        except (OSError, ValueError) as err:
            raise ParameterError(f"cannot read {what} table {str(path)!r}: {err}") from err
        raise ParameterError(
            f"{what} table {str(path)!r} must be a .csv, .jsonl, .json or .parquet file"
        )
    if isinstance(table, Sequence) and all(isinstance(r, Mapping) for r in table):
        return pa.Table.from_pylist(list(table))
    if type(table).__module__.startswith("pandas"):
        return pa.Table.from_pandas(table, preserve_index=False)
    raise ParameterTypeError(
        f"{what} must be a pyarrow Table, a pandas DataFrame, a list of dicts or a file path, "
        f"got {type(table).__name__}"
    )


def _file_column(table: pa.Table, what: str) -> str:
    for name in FILE_COLUMNS:
        if name in table.column_names:
            return name
    raise ParameterError(
        f"{what} table has no column naming the file (one of {FILE_COLUMNS}); its columns: "
        f"{table.column_names!r}"
    )


def _matcher(sources: list[_Source]) -> dict[str, int]:
    """A file name as a table gives it -> the source: by path, key, name or stem."""
    index: dict[str, int] = {}
    for i, s in enumerate(sources):
        name = PurePosixPath(s.path).name
        for alias in {str(s.path), str(s.key), name, PurePosixPath(name).stem}:
            index[alias] = i if index.get(alias, i) == i else -1  # -1: names several inputs
    return index


def _owner(value: Any, index: dict[str, int], what: str, row: int) -> int:
    text = str(value)
    for alias in (text, PurePosixPath(text).name, PurePosixPath(text).stem):
        if index.get(alias) == -1:
            raise ParameterError(
                f"{what} table row {row} names {value!r}, which matches several inputs: give "
                "the path relative to the input folder"
            )
        if alias in index:
            return index[alias]
    raise ParameterError(f"{what} table row {row} names {value!r}, which is not one of the inputs")


def _listed(value: Any) -> Any:
    """Panda-70M's CSV writes lists as Python literals (``"[['0:00:01.000', ...]]"``)."""
    if isinstance(value, str) and value.startswith("["):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def attach_spans(sources: list[_Source], table: Any) -> list[_Source]:
    """``sources`` with the spans of ``table`` (seconds; frames once the fps is known).

    Raises:
        ValueError: no file column, a row naming no input, neither shape of spans, or
            malformed spans (see :func:`~hf_lvf.convert.webdataset.json_spans`).
    """
    table = read_table(table, "spans")
    key = _file_column(table, "spans")
    index = _matcher(sources)
    spans: dict[int, list[dict[str, Any]]] = {}
    start = next((c for c in _START if c in table.column_names), None)
    end = next((c for c in _END if c in table.column_names), None)
    for row_no, row in enumerate(table.to_pylist()):
        owner = _owner(row.pop(key), index, "spans", row_no)
        if "timestamp" in row:  # Panda-70M: lists of [start, end] and of captions per file
            lists = {k: _listed(v) for k, v in row.items()}
            pairs = lists["timestamp"]
            count = len(pairs) if isinstance(pairs, list) else -1
            meta = {k: v for k, v in lists.items() if isinstance(v, list) and len(v) == count}
            found = json_spans(meta, f"spans table row {row_no}")
            for span, extra in zip(found, range(len(found)), strict=True):
                for name, values in meta.items():
                    if name not in ("timestamp", "caption"):
                        span[name] = values[extra]
            spans.setdefault(owner, []).extend(found)
        elif start is not None and end is not None:  # InternVid: one row per span
            fields = {k: v for k, v in row.items() if k not in (start, end)}
            fields = {("caption" if k == "Caption" else k): v for k, v in fields.items()}
            first = json_spans({"timestamp": [[row[start], row[end]]]}, f"row {row_no}")[0]
            spans.setdefault(owner, []).append({**first, **fields})
        else:
            raise ParameterError(
                f"spans table needs a 'timestamp' column of [start, end] lists (Panda-70M) or "
                f"start and end columns ({_START} / {_END}, InternVid); its columns: "
                f"{table.column_names!r}"
            )
    return [
        dataclasses.replace(s, spans=(*s.spans, *spans[i])) if i in spans else s
        for i, s in enumerate(sources)
    ]


def _column_values(column: pa.ChunkedArray) -> Any:
    array = column.combine_chunks()
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return np.asarray(array.to_pylist(), dtype=object)
    if pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
        return np.asarray(array.to_pylist())
    return array.to_numpy(zero_copy_only=False)


def attach_frame_values(sources: list[_Source], table: Any) -> list[_Source]:
    """``sources`` with per-frame values from ``table``: a file column, ``frame`` (index of
    the converted video's frame) or ``timestamp`` / ``time`` (seconds), and the values.

    Raises:
        ValueError: no file or frame/time column, a row naming no input, an input without
            rows, or an input whose per-frame values come from elsewhere already (LeRobot).
    """
    table = read_table(table, "frame values")
    key = _file_column(table, "frame values")
    by = next(
        (c for c in ("frame", "frame_idx", "timestamp", "time") if c in table.column_names), None
    )
    if by is None:
        raise ParameterError(
            "frame values table needs a 'frame' (frame index) or 'timestamp' (seconds) column; "
            f"its columns: {table.column_names!r}"
        )
    index = _matcher(sources)
    owners = np.array(
        [_owner(v, index, "frame values", i) for i, v in enumerate(table.column(key).to_pylist())]
    )
    names = [n for n in table.column_names if n not in (key, by)]
    values = {n: _column_values(table.column(n)) for n in names}
    keys = _column_values(table.column(by))
    out = []
    for i, source in enumerate(sources):
        rows = np.flatnonzero(owners == i)
        if len(rows) == 0:
            raise ParameterError(f"frame values table has no row for input {source.path!r}")
        if source.clip is not None and source.clip.frames is not None:
            raise ParameterError(f"input {source.path!r} already has per-frame values")
        frames = FrameTable(
            "frame" if by in ("frame", "frame_idx") else "time",
            keys[rows],
            {n: (list(v[rows]) if v.dtype == object else v[rows]) for n, v in values.items()},
        )
        clip = dataclasses.replace(source.clip or Clip(), frames=frames)
        out.append(dataclasses.replace(source, clip=clip))
    return out
