"""``_metadata.json`` -> a typed, validated video table, as columns.

- :mod:`.table`: :class:`RootLayout`, the columns and the top-level fields: the file's
  bytes -> columns (msgspec, every check vectorised), parsed once, then every open in any
  process maps the same Arrow file;
- :mod:`.labels` (class names), :mod:`.spans` (the spans of its videos), :mod:`.text`
  (writing and growing ``_metadata.json``).

The checks here need only the metadata file; the checks that need the Lance
table (row count, schema) run when the table is first opened, in the process
that reads it (:mod:`hf_lvf.frames`), through :func:`check_row_count`.
"""

from __future__ import annotations

from ..location import METADATA_FILENAME, join_uri
from .labels import combined_label_names, label_names
from .table import (
    LAYOUT_NAME,
    MISSING_VALUES,
    SAMPLE_KEYS,
    FieldKinds,
    RootLayout,
    TableSource,
    VideoInfo,
    cache_dir,
    check_frame_pixels,
    check_row_count,
    combined_fields,
    field_dtype,
    parse_entry,
    raw_entry_objects,
    read_layout,
    wait_for_writes,
)

__all__ = [
    "LAYOUT_NAME",
    "METADATA_FILENAME",
    "MISSING_VALUES",
    "SAMPLE_KEYS",
    "FieldKinds",
    "RootLayout",
    "TableSource",
    "VideoInfo",
    "cache_dir",
    "check_frame_pixels",
    "check_row_count",
    "combined_fields",
    "combined_label_names",
    "label_names",
    "field_dtype",
    "join_uri",
    "parse_entry",
    "raw_entry_objects",
    "read_layout",
    "wait_for_writes",
]
