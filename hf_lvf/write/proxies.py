"""Proxies: a smaller copy of every frame, stored once beside the full one as an image stream
(FORMAT.md, "Image streams": ``proxy_of``), so that reads of small frames decode small images.

:func:`add_proxy` goes through :func:`~hf_lvf.write.add_frame_columns`' path (:mod:`.columns`): the
root's write lock, Lance's column addition (the frames' data files are not touched), one
Merge commit, ``_metadata.json`` published last. The frames are scanned in row order a batch
at a time, each decoded once straight to the proxy's size on the decode threads (JPEG
DCT-scaled where it can be), encoded on as many threads, and handed on: memory holds a batch
of rows, not a video.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._version import __version__
from ..decode import (
    DEFAULT_QUALITY,
    Codec,
    check_codec,
    default_decode_threads,
    encode_in_order,
    start_decoding,
)
from ..errors import ParameterError
from ..layout import RootLayout
from ..location import is_object_store_uri, lance_options, read_root_file
from .append import appending
from .columns import _rows_in_order
from .frame_table import commit_columns, write_columns
from .store_roots import appending_store
from .streams import STREAM_TYPE
from .writer import frame_encoder, schema_fingerprint

logger = logging.getLogger(__name__)


def proxy_size(height: int, width: int, size: int) -> tuple[int, int]:
    """``(H, W)`` of the proxy of a ``height x width`` frame: the shorter side ``size``, the
    longer one scaled by the same factor and rounded (aspect kept); a frame already that
    small keeps its size (a proxy never enlarges)."""
    if min(height, width) <= size:
        return height, width
    if height <= width:
        return size, max(1, round(width * size / height))
    return max(1, round(height * size / width)), size


def add_proxy(
    root: str | os.PathLike[str],
    size: int = 224,
    *,
    codec: Codec = "jpeg",
    quality: int = DEFAULT_QUALITY,
    name: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Path | str:
    """Add a proxy stream to a root: every frame of ``bytes`` again, resized so that its
    shorter side is ``size`` (aspect kept), encoded with ``codec``, in a column ``name``
    (default ``proxy_<size>``) listed under ``streams`` with ``proxy_of: "bytes"``.

    A read whose frame size fits in the proxy may decode it instead of the full frame
    (FORMAT.md). Atomic like :func:`~hf_lvf.write.add_frame_columns`: a kill leaves the root as it
    was, and a reader opened before keeps reading the version it opened.

    Args:
        root: an existing root (local folder, a Hub repo's local clone, or ``s3://...``).
        size: the proxy's shorter side, in pixels.
        codec: ``"jpeg"`` (default: decodes fastest), ``"webp"`` or ``"png"``.
        quality: the encoder's quality, 0-100.
        name: the stream's column name (no dot).
        storage_options: for a root on an object store, lance's options.

    Returns:
        The root's path (its URL on an object store).

    Raises:
        ValueError: a bad ``size``, ``codec`` or ``name``, or a column of that name already.
        FrameDecodeError: a stored frame that does not decode, naming the video and frame.
        FileNotFoundError: ``root`` is not a root.
        BlockingIOError: another process is writing it.

    Examples:
        >>> add_proxy("my_root", 224)  # doctest: +SKIP
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ParameterError(f"size must be a positive int (the proxy's shorter side): {size!r}")
    codec, quality, lossless = check_codec(codec, quality, False)
    name = f"proxy_{size}" if name is None else name
    if not isinstance(name, str) or not name or "." in name or name in ("video_id", "bytes"):
        raise ParameterError(f"name must be a column name without dots, got {name!r}")
    remote = is_object_store_uri(str(root))
    options = lance_options(storage_options) or None
    with appending_store(str(root), options) if remote else appending(root) as target:
        layout = target.layout
        if name in [f.name for f in target.schema]:
            raise ParameterError(
                f"root {str(target.root)!r} already has a column {name!r}: pass another name="
            )
        sizes = np.array(
            [proxy_size(int(h), int(w), size) for h, w in layout.frame_sizes], np.int64
        ).reshape(-1, 2)
        new = pa.schema([pa.field(name, STREAM_TYPE)])
        encode = frame_encoder(codec, quality, lossless)
        batches = _proxy_batches(layout, target.base, options, sizes, encode, new)
        store = {"storage_options": options}
        written = write_columns(target.root, batches, new, base=target.base, **store)
        header = layout.header
        entry: dict[str, Any] = {"proxy_of": "bytes", "H": int(sizes[0][0]), "W": int(sizes[0][1])}
        entry |= {"encoding": codec, "quality": quality, "size": size}
        streams = dict(header.get("streams") or {}) | {name: entry}
        lineage = dict(header["lineage"]) if isinstance(header.get("lineage"), Mapping) else {}
        lineage["columns_added"] = [
            *lineage.get("columns_added", []),
            {"writer": f"hf_lvf {__version__}", "columns": f"{name}: proxy of bytes at {size}"},
        ]
        schema = pa.schema([*target.schema, *new])
        updates: dict[str, Any] = {
            "schema_fingerprint": schema_fingerprint(schema),
            "lineage": lineage,
            "streams": streams,
        }
        differ = np.flatnonzero((sizes != sizes[0]).any(axis=1))
        if differ.size:  # a video of another size states its own (FORMAT.md)
            text = read_root_file(str(target.root), storage_options=options)
            videos = json.loads(text)["videos"]
            for v in differ.tolist():
                own = dict(videos[v].get("streams") or {})
                own[name] = {"H": int(sizes[v][0]), "W": int(sizes[v][1])}
                videos[v]["streams"] = own
            updates["videos"] = videos

        def commit() -> int:
            return commit_columns(target.root, written, base=target.base, **store)

        target.commit_version(commit, updates)
        logger.info("added the proxy %s (%d px) to %s", name, size, target.root)
    return target.root


def _proxy_batches(
    layout: RootLayout,
    base: int,
    options: Mapping[str, str] | None,
    sizes: np.ndarray,
    encode: Any,
    schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """The proxy's encoded images of every row, in row order, a scanned batch at a time: each
    frame decoded once, straight to its video's proxy size."""
    threads = default_decode_threads()
    starts, frame_sizes, row = layout.start_rows, layout.frame_sizes, 0
    for batch in _rows_in_order(layout, base, options, ["bytes"]):
        blobs = batch.column("bytes").to_pylist()
        rows = np.arange(row, row + len(blobs))
        video = np.searchsorted(starts, rows, side="right") - 1
        out: list[bytes] = []
        for v in np.unique(video).tolist():  # a batch may hold the end and start of videos
            part = np.flatnonzero(video == v)
            frames = np.empty((len(part), *sizes[v], 3), np.uint8)
            start_decoding(
                [blobs[k] for k in part.tolist()],
                frames,
                np.arange(len(part)),
                expected_sizes=np.broadcast_to(frame_sizes[v], (len(part), 2)),
                describe=lambda k, v=v, p=part, r=row: (
                    f"frame {r + int(p[k]) - int(starts[v])} of {layout.describe_video(v)} in "
                    f"{layout.uri!r}"
                ),
                threads=threads,
                crop="none",
            ).wait()
            out += [blob for _, blob in encode_in_order(frames, encode, threads=threads)]
        row += len(blobs)
        yield pa.record_batch([pa.array(out, STREAM_TYPE)], schema=schema)


def proxies(header: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The proxy streams a ``_metadata.json`` lists, by name."""
    streams = header.get("streams") or {}
    return {k: dict(v) for k, v in streams.items() if isinstance(v, Mapping) and v.get("proxy_of")}


__all__ = ["add_proxy", "proxies", "proxy_size"]
