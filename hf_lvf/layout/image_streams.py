"""Image streams of a root: more encoded images per frame row (FORMAT.md, "Image streams").

``_metadata.json`` lists them under ``streams``, keyed by the column's dotted name, with the
size of every image (``H``, ``W``) and, where a video's differ, that video's own sizes in
its entry. A stream with ``proxy_of`` is a proxy (a smaller copy of another stream), never a
sample key of its own; every other stream is one: ``(window_length, H, W, 3)`` uint8 RGB.

:func:`root_streams` reads them from a layout; :func:`sample_streams` picks those a view's
samples carry. Their columns are not per-frame fields
(:func:`hf_lvf.frames.frame_fields` leaves them out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import LayoutError, ParameterError, ParameterTypeError
from .table import RootLayout


@dataclass(frozen=True)
class ImageStream:
    """One image stream of a root.

    Attributes:
        name: the column's dotted name (``"observation.images.wrist"``): the sample's key.
        column: its path in the Lance schema (``("observation", "images", "wrist")``).
        proxy_of: the stream a proxy copies (``"bytes"``), or ``None``.
        sizes: ``(num_videos, 2)`` ``(H, W)`` of each video's images of the stream.
    """

    name: str
    column: tuple[str, ...]
    proxy_of: str | None
    sizes: np.ndarray

    @property
    def is_proxy(self) -> bool:
        return self.proxy_of is not None


def stream_names(header: Mapping[str, Any]) -> tuple[str, ...]:
    """The dotted names of the streams ``_metadata.json``'s top level lists (none: ``()``)."""
    streams = header.get("streams") or {}
    return tuple(streams) if isinstance(streams, Mapping) else ()


def main_camera(header: Mapping[str, Any]) -> str | None:
    """The key the images of ``bytes`` have beside ``video`` (``video_column``, when it names
    a camera: ``observation.images.top`` in a LeRobot root), or ``None`` (plain videos)."""
    name = header.get("video_column")
    return name if isinstance(name, str) and name not in ("", "video", "bytes") else None


def offset_image_names(header: Mapping[str, Any]) -> tuple[str, ...]:
    """The names that read images at offsets (``frame_offsets=``, ``delta_timestamps=``):
    every stream, and the main camera (:func:`main_camera`)."""
    main = main_camera(header)
    return (*stream_names(header), *((main,) if main is not None else ()))


def _size(value: Any, what: str) -> tuple[int, int]:
    height, width = (value or {}).get("H"), (value or {}).get("W")
    ok = all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (height, width))
    if not ok:
        raise LayoutError(f"{what} must state H and W as positive integers, got {value!r}")
    return int(height), int(width)


def root_streams(layout: RootLayout) -> dict[str, ImageStream]:
    """Every stream of ``layout``, by name, in the order ``_metadata.json`` lists them.

    Raises:
        LayoutError: ``streams`` is not a mapping of mappings, or a stream (or a video's
            own entry for it) states no positive ``H`` and ``W``; names the file.
    """
    streams = layout.header.get("streams") or {}
    where = layout.metadata_path
    if not isinstance(streams, Mapping):
        raise LayoutError(f"{where}: streams must be a mapping of stream names, got {streams!r}")
    if not streams:
        return {}
    found: dict[str, ImageStream] = {}
    default = {}
    for name, stream in streams.items():
        if not isinstance(stream, Mapping):
            raise LayoutError(f"{where}: stream {name!r} must be a mapping, got {stream!r}")
        default[name] = _size(stream, f"{where}: stream {name!r}")
    sizes = {
        name: np.tile(np.array(size, np.int64), (len(layout), 1)) for name, size in default.items()
    }
    for video in layout.videos:  # a video's own sizes, where they differ
        own = video.extra.get("streams") or {}
        for name, size in own.items() if isinstance(own, Mapping) else ():
            if name in sizes:
                what = f"{where}: stream {name!r} of {layout.describe_video(video.video_idx)}"
                sizes[name][video.video_idx] = _size(size, what)
    for name, stream in streams.items():
        proxy_of = stream.get("proxy_of")
        found[name] = ImageStream(name, tuple(name.split(".")), proxy_of, sizes[name])
    return found


def sample_streams(
    streams: Mapping[str, ImageStream], selection: Sequence[str] | None, where: str
) -> tuple[ImageStream, ...]:
    """The streams samples carry: ``selection`` (``None``: every stream that is not a proxy).

    Raises:
        ValueError: a name that is no stream of the root, or a proxy.
    """
    if selection is None:
        return tuple(s for s in streams.values() if not s.is_proxy)
    if isinstance(selection, str) or not isinstance(selection, Sequence):
        raise ParameterTypeError(f"streams must be a list of stream names, got {selection!r}")
    unknown = [name for name in selection if name not in streams or streams[name].is_proxy]
    if unknown:
        keys = [name for name, s in streams.items() if not s.is_proxy]
        raise ParameterError(
            f"streams names {unknown[0]!r}, not an image stream of root {where!r} that "
            f"samples carry (a proxy is none); its streams: {', '.join(map(repr, keys)) or 'none'}"
        )
    return tuple(streams[name] for name in dict.fromkeys(selection))


def serving_proxy(
    streams: Mapping[str, ImageStream], size: tuple[int, int], videos: np.ndarray
) -> ImageStream | None:
    """The proxy of ``bytes`` that serves reads at ``size``: the smallest whose images are,
    for each video of ``videos`` (a mask), at least ``size``'s height and width; ``None``
    when none covers it (the full frames serve the read)."""
    fits = [
        stream
        for stream in streams.values()
        if stream.proxy_of == "bytes"
        and bool(np.all(stream.sizes[videos] >= np.asarray(size, np.int64)))
    ]
    if not fits:
        return None
    return min(fits, key=lambda s: int((s.sizes[videos, 0] * s.sizes[videos, 1]).sum()))


__all__ = [
    "ImageStream",
    "main_camera",
    "offset_image_names",
    "root_streams",
    "sample_streams",
    "serving_proxy",
    "stream_names",
]
