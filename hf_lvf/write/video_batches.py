"""Videos -> record batches of a root's Lance table, streamed: frames are encoded as they
arrive and written a few at a time, with the values of the video's per-frame fields sliced
alongside, so memory does not grow with video length."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ..decode import encode_in_order
from ..errors import ParameterError, ParameterTypeError
from ..frames import FRAME_SCHEMA
from ..layout import VideoInfo
from .videos import VideoChecks, VideoInput, clean_spans

# Frames per record batch handed to lance: bounds the writer's memory to a few MB.
_ROWS_PER_BATCH = 32


def check_frame(frame: Any, key: str, frame_idx: int, size: tuple[int, int] | None) -> np.ndarray:
    """A frame as a ``(H, W, 3)`` uint8 array, of the same size as the video's first."""
    array = np.asarray(frame)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ParameterError(
            f"frame {frame_idx} of video {key!r} must be a (H, W, 3) uint8 RGB array, got shape "
            f"{array.shape} dtype {array.dtype}"
        )
    if size is not None and array.shape[:2] != size:
        raise ParameterError(
            f"frame {frame_idx} of video {key!r} is {array.shape[0]}x{array.shape[1]} (HxW) but "
            f"frame 0 is {size[0]}x{size[1]}: every frame of a video must have the same size"
        )
    return array


def frame_batches(
    video_id: int,
    key: str,
    frames: Iterable[Any],
    *,
    encode: Callable[[np.ndarray], bytes],
    on_frame: Callable[[tuple[int, int]], None],
    columns: Mapping[str, pa.Array] | None = None,
    schema: pa.Schema = FRAME_SCHEMA,
    encode_threads: int = 1,
    on_encoded: Callable[[np.ndarray, bytes], None] = lambda frame, blob: None,
) -> Iterator[pa.RecordBatch]:
    """Encode one video's frames into record batches of ``schema``, streaming.

    ``on_frame((H, W))`` is called once per frame, after it is checked, so the
    caller can count frames and learn the size without holding any. ``columns``: the
    video's per-frame fields, the top-level Arrow columns of ``schema`` after the frame
    columns (:func:`hf_lvf.frames.frame_columns`), one value per frame: each
    batch carries the values of its frames. ``on_encoded(frame, blob)`` sees each frame once
    encoded, in order; ``encode_threads``: see :func:`hf_lvf.decode.encode_in_order`.

    Raises:
        ValueError: a bad frame, or (with ``columns``) more or fewer frames than values.
    """
    names = schema.names[len(FRAME_SCHEMA) :]
    if sorted(names) != sorted(columns or {}):
        raise ParameterError(
            f"video {key!r} has the per-frame columns {sorted(columns or {})} but the table "
            f"has {names}"
        )
    values = [columns[name] for name in names] if columns else []
    limit = len(values[0]) if values else None
    blobs: list[bytes] = []
    first = 0
    try:
        frames = iter(frames)
    except TypeError as err:
        raise ParameterTypeError(
            f"frames of video {key!r} must be an iterable of arrays, got {type(frames).__name__}"
        ) from err
    checked = _checked(frames, key, on_frame, limit)
    for frame, blob in encode_in_order(checked, encode, threads=encode_threads):
        on_encoded(frame, blob)
        blobs.append(blob)
        if len(blobs) == _ROWS_PER_BATCH:
            yield _batch(video_id, first, blobs, values, schema)
            first += len(blobs)
            blobs = []
    if blobs:
        yield _batch(video_id, first, blobs, values, schema)
    if limit is not None and first + len(blobs) != limit:
        raise ParameterError(
            f"video {key!r} has {first + len(blobs)} frames but {limit} values in each of its "
            "per-frame fields: one value per frame"
        )


def _checked(
    frames: Iterator[Any], key: str, on_frame: Callable, limit: int | None
) -> Iterator[np.ndarray]:
    """Each frame checked (and counted by ``on_frame``) as it is taken for encoding."""
    size: tuple[int, int] | None = None
    for frame_idx, frame in enumerate(frames):
        if frame_idx == limit:
            raise ParameterError(
                f"video {key!r} has more frames than the {limit} values of each of its per-frame "
                "fields: one value per frame"
            )
        array = check_frame(frame, key, frame_idx, size)
        size = array.shape[:2]
        on_frame(size)
        yield np.ascontiguousarray(array)


def _batch(
    video_id: int, first: int, blobs: list[bytes], values: list[pa.Array], schema: pa.Schema
) -> pa.RecordBatch:
    n = len(blobs)
    return pa.record_batch(
        [
            pa.array(np.full(n, video_id, np.int32)),
            pa.array(np.arange(first, first + n, dtype=np.int32)),
            pa.array(blobs, pa.large_binary()),
            *(column.slice(first, n) for column in values),
        ],
        schema=schema,
    )


def video_batches(
    videos: Iterable[VideoInput],
    entries: list[dict[str, Any]],
    *,
    encode: Callable[[np.ndarray], bytes],
    checks: VideoChecks,
    first_id: int = 0,
    start_row: int = 0,
) -> Iterator[pa.RecordBatch]:
    """Record batches of every video, in order, of ``checks.schema``; each video is checked
    by ``checks`` before its first frame is encoded, and its entry is added to ``entries``
    once its frames are written."""
    for position, video in enumerate(videos):
        checks.check(video)
        video_id = first_id + position
        seen = {"T": 0, "size": (0, 0)}

        def on_frame(size: tuple[int, int], seen=seen) -> None:
            seen["T"] += 1
            seen["size"] = size

        yield from frame_batches(
            video_id,
            video.key,
            video.frames,
            encode=encode,
            on_frame=on_frame,
            columns=video.columns,
            schema=checks.schema,
        )
        if seen["T"] == 0:
            raise ParameterError(f"video {video.key!r} has no frames")
        if video.spans and video.num_frames is None:  # a length known only now
            clean_spans(video.key, video.spans, seen["T"])
        height, width = seen["size"]
        entry = VideoInfo(
            video_idx=len(entries),
            id=video_id,
            key=video.key,
            path=video.key,
            num_frames=seen["T"],
            height=height,
            width=width,
            start_row=start_row,
            metadata=video.metadata,
        ).to_json()
        entries.append({**entry, "spans": video.spans} if video.spans else entry)
        start_row += seen["T"]
    if not entries:
        raise ParameterError("videos is empty: a root needs at least one video")
