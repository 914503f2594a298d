"""``_metadata.json`` -> a typed, validated video table, as columns.

- :mod:`.parse`: the file's bytes -> columns (msgspec), every check vectorised;
- :mod:`.table`: :class:`RootLayout`, the columns and the top-level fields;
- :mod:`.cache`: parse once, then every open in any process maps the same Arrow file.

The checks here need only the metadata file; the checks that need the Lance
table (row count, schema) run when the table is first opened, in the process
that reads it (:mod:`hf_lvf.frames`), through :func:`check_row_count`.
"""

from __future__ import annotations

import numpy as np

from ..errors import LayoutError
from ..location import METADATA_FILENAME, join_uri
from ..plan import frame_pixels_problem
from .cache import TableSource, cache_dir, raw_entry_objects, read_layout, wait_for_writes
from .labels import combined_label_names, label_names
from .parse import LAYOUT_NAME, SAMPLE_KEYS, parse_entry
from .table import MISSING_VALUES, FieldKinds, RootLayout, VideoInfo, combined_fields, field_dtype


def check_frame_pixels(layout: RootLayout, max_frame_pixels: int) -> None:
    """Raise if a video of ``layout`` declares frames larger than ``max_frame_pixels``.

    Runs when a root is opened for reading, before any frame is allocated.

    Raises:
        LayoutError: names the first such video, its size and the limit.
    """
    sizes = layout.frame_sizes
    over = np.flatnonzero(sizes[:, 0] * sizes[:, 1] > max_frame_pixels)
    if over.size:
        v = int(over[0])
        problem = frame_pixels_problem(int(sizes[v, 0]), int(sizes[v, 1]), max_frame_pixels)
        raise LayoutError(
            f"{layout.metadata_path}: {layout.describe_video(v)} declares {problem}; "
            "if the root is right, pass a larger max_frame_pixels="
        )


def check_row_count(layout: RootLayout, num_rows: int) -> None:
    """Raise if the video table and the Lance table disagree on the number of rows."""
    if layout.num_rows == num_rows:
        return
    if layout.num_rows > num_rows:
        start, frames = layout.start_rows, layout.num_frames
        v = int(np.flatnonzero(start + frames > num_rows)[0])
        raise LayoutError(
            f"{layout.metadata_path}: {layout.describe_video(v)} spans rows "
            f"{int(start[v])}..{int(start[v] + frames[v] - 1)}, past the Lance table's "
            f"{num_rows} rows"
        )
    raise LayoutError(
        f"{layout.metadata_path}: the videos account for {layout.num_rows} rows but the Lance "
        f"table at {layout.uri!r} has {num_rows}"
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
