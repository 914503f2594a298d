"""Growing a root sideways: per-frame columns added to its existing frames.

:func:`add_frame_columns` writes the new columns' values next to the frames with Lance's
column addition: each fragment gets a new data file holding them, and one Merge commit
makes a new version whose rows are the old rows plus the new columns. The frames' data
files are neither rewritten nor touched. It runs under the root's write lock, as an append
does (:mod:`hf_lvf.write.append`; on object stores :mod:`hf_lvf.write.store_roots`), and
publishes ``_metadata.json`` naming the new version last: a kill before that leaves the root
reading as before, and a reader opened before keeps reading the version it opened.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._version import __version__
from ..decode import default_decode_threads, start_decoding
from ..errors import LayoutError, ParameterError, ParameterTypeError
from ..frames import FRAME_SCHEMA, columns_schema, describe_schema, frame_columns, scan_frame_rows
from ..layout import RootLayout, VideoInfo
from ..location import is_object_store_uri, lance_options
from .append import appending
from .frame_table import commit_columns, frame_table_schema, write_columns
from .store_roots import appending_store
from .videos import check_same_fields
from .writer import schema_fingerprint

logger = logging.getLogger(__name__)

FrameFunction = Callable[[np.ndarray, VideoInfo], Mapping[str, Any]]
_KEYS = ("video_id", "frame_idx")
_ROWS_PER_BATCH = 65_536  # rows of new values (or keys) handed to or read from lance at a time


def add_frame_columns(
    root: str | os.PathLike[str],
    values: pa.Table | FrameFunction,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> Path | str:
    """Add per-frame columns to an existing root, without rewriting its frames.

    The new columns are written with Lance's column addition as a new version of the
    root's table: the data files of the frames stay as they are (same files, same
    sizes), the commit is atomic, and ``_metadata.json`` names the new version once it is
    committed. A reader opened before keeps reading the version it opened.

    Args:
        root: an existing root: a local folder or a URL on an object store (``s3://...``).
        values: where the new columns' values come from, either

            - an Arrow table with the integer columns ``video_id`` (the video's ``id``) and
              ``frame_idx``, and one column per new field, with one row for every frame
              of the root, in any order; or
            - a function ``fn(frames, video) -> {name: values}`` called once per video, in
              order, with its decoded frames (a ``(T, H, W, 3)`` uint8 array, decoded on
              the decode threads; one video's frames are held in memory at a time) and its entry
              (:class:`~hf_lvf.layout.VideoInfo`: ``key``, ``path``, ``metadata``, ...),
              returning ``(T, *shape)`` arrays or ``T`` strings; every video's must have
              the first's names, dtypes and shapes.

            A dotted name (``"observation.state"``) becomes the child ``state`` of a struct
            column ``observation`` (FORMAT.md), as in :func:`~hf_lvf.write.write_frames`.
        storage_options: for a root on an object store, lance's options (credentials).

    Returns:
        The root's path (its URL on an object store).

    Raises:
        ValueError: a table without ``video_id``/``frame_idx``, naming a frame that is not
            in the root, naming one twice or missing one; a column the root already has;
            values of the wrong length; a video whose values differ in names, dtypes or
            shapes from the first's. A table is checked before anything is written; a
            function's later videos as they come, and the root is left as it was.
        TypeError: a column of a type a per-frame field cannot have, or a ``values`` that
            is neither a table nor callable.
        FrameDecodeError: a stored frame that does not decode (with a function).
        LayoutError: the root's Lance rows are not in the order its ``_metadata.json``
            places the frames (FORMAT.md), so values would land on other frames.
        FileNotFoundError: ``root`` is not a root.
        BlockingIOError: another process is writing it.

    Examples:
        >>> brightness = lambda frames, video: {"brightness": frames.mean(axis=(1, 2, 3))}
        >>> add_frame_columns("my_root", brightness)  # doctest: +SKIP
    """
    if not isinstance(values, pa.Table) and not callable(values):
        raise ParameterTypeError(
            "values must be a pyarrow Table keyed by video_id and frame_idx or a function "
            f"fn(frames, video) -> {{name: values}}, got {type(values).__name__}"
        )
    remote = is_object_store_uri(str(root))
    options = lance_options(storage_options) or None
    with appending_store(str(root), options) if remote else appending(root) as target:
        layout = target.layout
        where = f"root {str(target.root)!r}"
        if isinstance(values, pa.Table):
            columns = _table_columns(values, layout, where)
            for _ in _rows_in_order(layout, target.base, options, []):
                pass  # every row where _metadata.json places it, or no value is placed
            new = columns_schema(columns)
            batches: Iterator[pa.RecordBatch] = iter(pa.table(columns).to_batches(_ROWS_PER_BATCH))
        else:
            new, batches = _computed(values, layout, options, target.base)
        existing = [name for name in new.names if name in target.schema.names]
        if existing:
            raise ParameterError(
                f"{where} already has a column {existing[0]!r} ({describe_schema(target.schema)}):"
                " add_frame_columns adds new columns only"
            )
        schema = frame_table_schema([*target.schema][len(FRAME_SCHEMA) :] + [*new])
        store = {"storage_options": options}
        header = layout.header
        lineage = dict(header["lineage"]) if isinstance(header.get("lineage"), Mapping) else {}
        lineage["columns_added"] = [
            *lineage.get("columns_added", []),
            {"writer": f"hf_lvf {__version__}", "columns": describe_schema(new)},
        ]

        written = write_columns(target.root, batches, new, base=target.base, **store)

        def commit() -> int:
            return commit_columns(target.root, written, base=target.base, **store)

        updates = {"schema_fingerprint": schema_fingerprint(schema), "lineage": lineage}
        target.commit_version(commit, updates)
        logger.info("added %s to %s", describe_schema(new), target.root)
    return target.root


def _table_columns(table: pa.Table, layout: RootLayout, where: str) -> dict[str, pa.Array]:
    """The new columns of ``table``, in the root's row order, as top-level Arrow columns."""
    for key in _KEYS:
        kind = table.schema.field(key).type if key in table.column_names else None
        if kind is None or not pa.types.is_integer(kind) or table.column(key).null_count:
            raise ParameterError(
                "the table of new columns must have the integer columns 'video_id' (the "
                f"video's id) and 'frame_idx', without nulls; it has {table.schema.names}"
            )
    flat = table.flatten()
    names = [name for name in flat.column_names if name not in _KEYS]
    if not names:
        raise ParameterError(
            "the table of new columns has no column besides video_id and frame_idx"
        )
    ids = table.column("video_id").to_numpy().astype(np.int64)
    frames = table.column("frame_idx").to_numpy().astype(np.int64)
    known = layout.ids.astype(np.int64)
    video = _video_of_id(known, ids)
    outside = (frames < 0) | (frames >= layout.num_frames[video])
    bad = np.flatnonzero((known[video] != ids) | outside)
    if bad.size:
        k = int(bad[0])
        raise ParameterError(
            f"row {k} of the table of new columns names frame {int(frames[k])} of video_id "
            f"{int(ids[k])}, which {where} does not have"
        )
    rows = layout.start_rows[video].astype(np.int64) + frames
    seen = np.bincount(rows, minlength=layout.num_rows)
    if len(rows) != layout.num_rows or not (seen == 1).all():
        twice, never = np.flatnonzero(seen > 1), np.flatnonzero(seen == 0)
        row = int(twice[0] if twice.size else never[0])
        v = int(np.searchsorted(layout.start_rows, row, side="right") - 1)
        what = "more than one row" if twice.size else "no row"
        raise ParameterError(
            f"the table of new columns has {what} for frame {row - int(layout.start_rows[v])} "
            f"of video_id {int(layout.ids[v])} ({layout.path(v)!r}) of {where}: it needs "
            "exactly one row per frame"
        )
    order = np.empty(len(rows), np.int64)
    order[rows] = np.arange(len(rows))  # rows is a permutation: its inverse, in O(n)
    taken = flat.select(names).take(pa.array(order))
    return frame_columns(
        {name: taken.column(name) for name in names}, layout.num_rows, where="the table"
    )


def _video_of_id(known: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """For each of ``ids``, the position in ``known`` (the root's ids) of that id, or of
    another id where it is not one of them (the caller compares)."""
    low, high = int(known.min()), int(known.max())
    if high - low < 4 * len(known) + 4096:  # dense ids (every root hf_lvf writes): a lookup
        lookup = np.zeros(high - low + 1, np.int64)
        lookup[known - low] = np.arange(len(known))
        return lookup[np.clip(ids - low, 0, high - low)]
    by_id = np.argsort(known, kind="stable")
    return by_id[np.clip(np.searchsorted(known[by_id], ids), 0, len(known) - 1)]


def _computed(
    fn: FrameFunction, layout: RootLayout, options: Mapping[str, str] | None, base: int
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema of ``fn``'s columns (from the first video's) and their batches, in row
    order, each video's computed from its decoded frames as the frames are scanned."""
    rows = _rows_in_order(layout, base, options, ["bytes"])
    scan = (batch.column("bytes") for batch in rows)
    videos = _video_columns(fn, layout, scan)
    first = next(videos)
    schema = columns_schema(first)

    def batches() -> Iterator[pa.RecordBatch]:
        for v, columns in enumerate(_chain(first, videos)):
            check_same_fields(
                frame_table_schema(columns_schema(columns)),
                frame_table_schema(schema),
                what=f"video {layout.path(v)!r}",
                where=f"the first video {layout.path(0)!r}",
            )
            yield pa.record_batch(list(columns.values()), schema=schema)

    return schema, batches()


def _rows_in_order(
    layout: RootLayout, base: int, options: Mapping[str, str] | None, columns: list[str]
) -> Iterator[pa.RecordBatch]:
    """``video_id``, ``frame_idx`` and ``columns`` of every row of version ``base``, in
    order, each row checked to hold the frame ``_metadata.json`` places there (values are
    placed by row).

    Raises:
        LayoutError: a row holds another frame (FORMAT.md: frame f of video v is row
            start_row + f), naming it.
    """
    starts, ids, row = layout.start_rows, layout.ids, 0
    wanted = ["video_id", "frame_idx", *columns]
    size = 0 if columns else _ROWS_PER_BATCH  # the keys alone: large batches
    scan = scan_frame_rows(
        str(layout.uri), wanted, version=base, storage_options=options, batch_size=size
    )
    for batch in scan:
        rows = np.arange(row, row + len(batch))
        video = np.searchsorted(starts, rows, side="right") - 1
        got_ids = batch.column(0).to_numpy(zero_copy_only=False)
        got_frames = batch.column(1).to_numpy(zero_copy_only=False)
        bad = np.flatnonzero((got_ids != ids[video]) | (got_frames != rows - starts[video]))
        if bad.size:
            k, v = int(bad[0]), int(video[bad[0]])
            raise LayoutError(
                f"Lance row {row + k} of root {layout.uri!r} holds video_id {got_ids[k]}, "
                f"frame_idx {got_frames[k]}, but _metadata.json places frame "
                f"{row + k - int(starts[v])} of {layout.describe_video(v)} (id {int(ids[v])}) "
                "there: the rows are not in (video, frame) order, so no column can be added"
            )
        row += len(batch)
        yield batch


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def _video_columns(
    fn: FrameFunction, layout: RootLayout, scan: Iterator[pa.Array]
) -> Iterator[dict[str, pa.Array]]:
    held: list[bytes] = []
    entries, sizes, threads = layout.videos, layout.frame_sizes, default_decode_threads()
    for v in range(len(layout)):
        count = int(layout.num_frames[v])
        while len(held) < count:
            chunk = next(scan, None)
            if chunk is None:
                raise ParameterError(f"the Lance table of {layout.uri!r} ends inside video {v}")
            held.extend(chunk.to_pylist())
        blobs, held = held[:count], held[count:]
        info = entries[v]
        frames = np.empty((count, *sizes[v], 3), np.uint8)
        start_decoding(
            blobs,
            frames,
            np.arange(count),
            expected_sizes=np.broadcast_to(sizes[v], (count, 2)),
            describe=lambda k, v=v: f"frame {k} of {layout.describe_video(v)} in {layout.uri!r}",
            threads=threads,
        ).wait()
        result = fn(frames, info)
        if not isinstance(result, Mapping) or not result:
            raise ParameterTypeError(
                f"the function of add_frame_columns returned {type(result).__name__} for video "
                f"{info.path!r}: it must return a non-empty mapping of field name to values"
            )
        yield frame_columns(result, count, where=f"video {info.path!r}")
