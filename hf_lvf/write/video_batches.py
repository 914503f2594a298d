"""Videos -> record batches of a root's Lance table, streamed: frames are encoded as they
arrive and written a few at a time, with the values of the video's per-frame fields sliced
alongside, so memory does not grow with video length."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..decode import encode_in_order
from ..errors import ParameterError, ParameterTypeError
from ..frames import FRAME_SCHEMA
from ..layout import VideoInfo
from .streams import check_image, flat_columns, flat_fields, nest_columns, split_frame
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
    streams: Sequence[str] = (),
    video_column: str = "video",
    stream_sizes: dict[str, tuple[int, int]] | None = None,
    proxies: Mapping[str, tuple[int, Callable[[np.ndarray], bytes]]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Encode one video's frames into record batches of ``schema``, streaming.

    ``on_frame((H, W))`` is called once per frame, after it is checked, so the
    caller can count frames and learn the size without holding any. ``columns``: the
    video's per-frame fields, the top-level Arrow columns of ``schema`` after the frame
    columns (:func:`hf_lvf.frames.frame_columns`), one value per frame: each
    batch carries the values of its frames. ``on_encoded(frame, blob)`` sees each frame once
    encoded, in order; ``encode_threads``: see :func:`hf_lvf.decode.encode_in_order`.
    ``streams``: the image streams (:mod:`.streams`) of ``schema``; each frame is then a
    mapping ``{video_column: image, stream: image, ...}``, every image encoded with
    ``encode``, and ``stream_sizes`` gets each stream's ``(H, W)``. ``proxies``: the streams
    of ``streams`` that are proxies of ``bytes``, ``{name: (shorter side, encode)}``: made
    here from each frame's main image (area-averaged), not given by the frame.

    Raises:
        ValueError: a bad frame, or (with ``columns``) more or fewer frames than values.
    """
    if streams:
        leaves = flat_columns(columns or {})
        names = [n for n, _ in flat_fields(schema) if n not in streams]
        if sorted(names) != sorted(leaves):
            raise ParameterError(
                f"video {key!r} has the per-frame columns {sorted(leaves)} but the table "
                f"has {names}"
            )
        values = [leaves[name] for name in names]
    else:
        names = schema.names[len(FRAME_SCHEMA) :]
        if sorted(names) != sorted(columns or {}):
            raise ParameterError(
                f"video {key!r} has the per-frame columns {sorted(columns or {})} but the "
                f"table has {names}"
            )
        values = [columns[name] for name in names] if columns else []
    limit = len(values[0]) if values else None
    blobs: list[Any] = []
    first = 0
    try:
        frames = iter(frames)
    except TypeError as err:
        raise ParameterTypeError(
            f"frames of video {key!r} must be an iterable of arrays, got {type(frames).__name__}"
        ) from err
    proxies = dict(proxies or {})
    given = [name for name in streams if name not in proxies]
    checked = _checked(frames, key, on_frame, limit, given, video_column, bool(streams))
    make = functools.partial(_batch, names=names, streams=streams) if streams else _batch
    if streams:
        checked = _with_streams(checked, key, streams, proxies, stream_sizes)
        encoders = [proxies[name][1] if name in proxies else encode for name in streams]
        encode = functools.partial(_encode_all, encode, encoders)
    for frame, blob in encode_in_order(checked, encode, threads=encode_threads):
        if streams:
            frame, blob = frame[0], blob
            on_encoded(frame, blob[0])
        else:
            on_encoded(frame, blob)
        blobs.append(blob)
        if len(blobs) == _ROWS_PER_BATCH:
            yield make(video_id, first, blobs, values, schema)
            first += len(blobs)
            blobs = []
    if blobs:
        yield make(video_id, first, blobs, values, schema)
    if limit is not None and first + len(blobs) != limit:
        raise ParameterError(
            f"video {key!r} has {first + len(blobs)} frames but {limit} values in each of its "
            "per-frame fields: one value per frame"
        )


def _checked(
    frames: Iterator[Any],
    key: str,
    on_frame: Callable,
    limit: int | None,
    streams: Sequence[str] = (),
    video_column: str = "video",
    split: bool = False,
) -> Iterator[Any]:
    """Each frame checked (and counted by ``on_frame``) as it is taken for encoding; a frame
    of several streams (``split``) as ``(main image, [the images of streams])``."""
    size: tuple[int, int] | None = None
    for frame_idx, frame in enumerate(frames):
        images = None
        if split:
            frame, images = split_frame(frame, streams, video_column, key=key, frame_idx=frame_idx)
        if frame_idx == limit:
            raise ParameterError(
                f"video {key!r} has more frames than the {limit} values of each of its per-frame "
                "fields: one value per frame"
            )
        array = check_frame(frame, key, frame_idx, size)
        size = array.shape[:2]
        on_frame(size)
        yield np.ascontiguousarray(array) if images is None else (array, images)


def _encode_all(
    encode: Callable[[np.ndarray], bytes], encoders: Sequence[Callable], item: tuple
) -> tuple[bytes, ...]:
    """A frame of several streams, ``(main image, [stream images])``, encoded image by image
    (each stream's with its own encoder)."""
    images = zip(encoders, item[1], strict=True)
    return (encode(item[0]), *(stream_encode(image) for stream_encode, image in images))


def _with_streams(
    checked: Iterator[Any],
    key: str,
    streams: Sequence[str],
    proxies: Mapping[str, tuple[int, Any]],
    sizes: dict[str, tuple[int, int]] | None,
) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """Frames of several streams as ``(main image, [the image of each of streams])``, each
    image checked and of its stream's size at the video's first frame; a proxy's made from
    the main image."""
    seen: dict[str, tuple[int, int]] = {} if sizes is None else sizes
    for frame_idx, (main, images) in enumerate(checked):
        arrays, given = [], iter(images)
        for name in streams:
            if name in proxies:
                arrays.append(_resized(main, proxies[name][0]))
                seen.setdefault(name, arrays[-1].shape[:2])
                continue
            image = next(given)
            array = check_image(image, f"image {name!r} of frame {frame_idx} of video {key!r}")
            size = seen.setdefault(name, array.shape[:2])
            if array.shape[:2] != size:
                raise ParameterError(
                    f"image {name!r} of frame {frame_idx} of video {key!r} is "
                    f"{array.shape[0]}x{array.shape[1]} (HxW) but that of frame 0 is "
                    f"{size[0]}x{size[1]}: every image of a stream of a video has one size"
                )
            arrays.append(array)
        yield main, arrays


def _resized(image: np.ndarray, side: int) -> np.ndarray:
    """``image`` with its shorter side ``side`` (aspect kept, area-averaged; never enlarged),
    as :func:`hf_lvf.write.proxies.proxy_size` sizes a proxy."""
    from PIL import Image

    height, width = image.shape[:2]
    if min(height, width) <= side:
        return image
    if height <= width:
        size = (side, max(1, round(width * side / height)))
    else:
        size = (max(1, round(height * side / width)), side)
    return np.asarray(Image.fromarray(image).resize(size[::-1], Image.BOX))


def _batch(
    video_id: int,
    first: int,
    blobs: list[Any],
    values: list[pa.Array],
    schema: pa.Schema,
    *,
    names: Sequence[str] = (),
    streams: Sequence[str] = (),
) -> pa.RecordBatch:
    n = len(blobs)
    if streams:  # blobs: (bytes, *stream bytes) per frame; leaves nested as the schema says
        leaves = {name: column.slice(first, n) for name, column in zip(names, values, strict=True)}
        for s, name in enumerate(streams, start=1):
            leaves[name] = pa.array([blob[s] for blob in blobs], pa.large_binary())
        return pa.record_batch(
            [
                pa.array(np.full(n, video_id, np.int32)),
                pa.array(np.arange(first, first + n, dtype=np.int32)),
                pa.array([blob[0] for blob in blobs], pa.large_binary()),
                *nest_columns(leaves, list(schema)[len(FRAME_SCHEMA) :]),
            ],
            schema=schema,
        )
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
    video_column: str = "video",
    stream_sizes: list[dict[str, tuple[int, int]]] | None = None,
    proxies: Mapping[str, tuple[int, Callable[[np.ndarray], bytes]]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of every video, in order, of ``checks.schema``; each video is checked
    by ``checks`` before its first frame is encoded, and its entry is added to ``entries``
    once its frames are written. With image streams (``checks.streams``), each video's
    ``{stream: (H, W)}`` is added to ``stream_sizes``."""
    for position, video in enumerate(videos):
        checks.check(video)
        video_id = first_id + position
        seen = {"T": 0, "size": (0, 0)}
        sizes: dict[str, tuple[int, int]] = {}

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
            streams=checks.streams,
            video_column=video_column,
            stream_sizes=sizes,
            proxies=proxies,
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
        if stream_sizes is not None:
            stream_sizes.append(sizes)
        start_row += seen["T"]
    if not entries:
        raise ParameterError("videos is empty: a root needs at least one video")
