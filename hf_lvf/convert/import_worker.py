"""Per-frame values beside a task's frames, a clip's checksum, and fetching an ``hf://`` input:
the worker's side of the importers (LeRobot, webdataset, ``datasets``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from ..frames import FRAME_SCHEMA, columns_schema, frame_columns
from ..location import is_hub_uri
from ..location.hub import fetch_hub_file
from ..write.streams import flat_columns, nest_columns, nested_fields
from .lerobot import episode_values
from .source_parts import Clip, _BadClip


def local_file(file: str, storage_options: Mapping[str, str] | None) -> str:
    """``file``, or for an ``hf://`` file its copy in the Hugging Face cache (fetched once per
    commit, with the Hub reads' retries)."""
    if is_hub_uri(file):
        return str(fetch_hub_file(file, storage_options))
    return file


def clip_checksum(file: str, clip: Clip) -> str | None:
    """SHA-256 of a tar member's bytes; of the file and the times for frames at times (an
    episode of a file of several); ``None`` for a whole file (hashed as before)."""
    if clip.member is not None:
        offset, size = clip.member
        digest = hashlib.sha256()
        with open(file, "rb") as f:
            f.seek(offset)
            left = size
            while left > 0 and (chunk := f.read(min(left, 1 << 20))):
                digest.update(chunk)
                left -= len(chunk)
        return digest.hexdigest()
    if clip.times is not None:
        from .decoding import _sha256

        digest = hashlib.sha256(_sha256(file).encode())
        digest.update(repr((clip.times[0], clip.times[-1], len(clip.times))).encode())
        return digest.hexdigest()
    return None


def with_fields(
    batches: Iterator[pa.RecordBatch],
    clip: Clip,
    decoder: Any,
    where: str,
    out: dict[str, str],
    options: Mapping[str, str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """``batches`` with the clip's per-frame values as columns beside the frames; the
    columns' schema goes to ``out["schema"]``.

    Raises:
        _BadClip: the values do not give each stored frame exactly one (checked when the
            video's frame count is known).
    """
    assert clip.frames is not None
    table = clip.frames
    num_frames = len(clip.times) if clip.times is not None else None
    columns: dict[str, pa.Array] | None = None
    done = 0
    for batch in batches:
        if columns is None:
            expected = num_frames if num_frames is not None else _table_length(table)
            fps = clip.fps or _fps(decoder)
            if table.by == "episode":  # a LeRobot episode's rows, read here, in the worker
                values = episode_values(local_file(table.file, options), table)
            else:
                values = table.per_frame(expected, fps, f"video {where!r}")
            try:
                columns = frame_columns(values, expected, where=f"video {where!r}")
            except (TypeError, ValueError) as err:
                raise _BadClip(str(err)) from None
            out["schema"] = columns_schema(columns).to_string()
            num_frames = expected
        n = batch.num_rows
        if done + n > num_frames:
            raise _BadClip(
                f"it has more frames than its {num_frames} per-frame values: one value per frame"
            )
        if batch.num_columns > len(FRAME_SCHEMA):  # image streams: one struct tree with fields
            yield _merged(batch, {name: c.slice(done, n) for name, c in columns.items()})
        else:
            arrays = list(batch.columns) + [c.slice(done, n) for c in columns.values()]
            names = list(batch.schema.names) + list(columns)
            yield pa.RecordBatch.from_arrays(arrays, names=names)
        done += n
    if num_frames is not None and done != num_frames:
        raise _BadClip(
            f"it has {done} frames but {num_frames} per-frame values: one value per frame"
        )


def _merged(batch: pa.RecordBatch, columns: dict[str, pa.Array]) -> pa.RecordBatch:
    """``batch`` (frame columns and image streams) with the per-frame ``columns``, dotted
    names of both nested into one set of struct columns: fields first, then streams."""
    streams = {name: batch.column(name) for name in batch.schema.names[len(FRAME_SCHEMA) :]}
    leaves = {**flat_columns(columns), **flat_columns(streams)}
    fields = nested_fields([(name, array.type) for name, array in leaves.items()])
    arrays = [*batch.columns[: len(FRAME_SCHEMA)], *nest_columns(leaves, fields)]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema([*FRAME_SCHEMA, *fields]))


def _table_length(table: Any) -> int:
    if table.keys is not None:
        return len(table.keys)
    first = next(iter(table.values.values()))
    return len(first)


def _fps(decoder: Any) -> float | None:
    fps = decoder.options.fps
    return float(fps) if fps is not None else decoder.source_fps
