"""Image streams on the writing side: more than one encoded image per frame row (FORMAT.md,
"Image streams").

A frame given to :func:`~hf_lvf.write.write_frames` may be a mapping ``{name: (H, W, 3) image}``:
the image under the root's ``video_column`` goes to ``bytes``, every other one to a
``large_binary`` column of its own, named by its dotted name (``observation.images.wrist``
is the child ``wrist`` of struct ``images`` of struct ``observation``, beside any per-frame
field of the same struct, ``observation.state``). ``_metadata.json`` lists them under
``streams`` with their size and encoding; a video whose stream has another size says so in
its own entry.

Pure pyarrow and numpy: the nesting of dotted names into struct columns, both ways, and the
``streams`` entries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import ParameterError, ParameterTypeError

#: The type of a stream column as written here.
STREAM_TYPE = pa.large_binary()
_FRAME_NAMES = ("video_id", "frame_idx", "bytes")


def frame_streams(frame: Any, video_column: str, *, key: str, frame_idx: int) -> list[str]:
    """The stream names of a frame given as a mapping (its keys but ``video_column``, in
    order); ``[]`` for an array.

    Raises:
        ValueError: a mapping without ``video_column``, or a stream named as a frame column.
    """
    if not isinstance(frame, Mapping):
        return []
    if video_column not in frame:
        raise ParameterError(
            f"frame {frame_idx} of video {key!r} is a mapping of stream name to image without "
            f"the key {video_column!r} (video_column), the image stored in 'bytes'; it has "
            f"{sorted(map(str, frame))}"
        )
    names = [name for name in frame if name != video_column]
    for name in names:
        parts = name.split(".") if isinstance(name, str) else []
        if not parts or not all(parts) or parts[0] in _FRAME_NAMES:
            raise ParameterError(
                f"stream name {name!r} of video {key!r} must be a non-empty str, not one of "
                f"{_FRAME_NAMES}, without empty parts between dots"
            )
    return names


def split_frame(
    frame: Any, streams: Sequence[str], video_column: str, *, key: str, frame_idx: int
) -> tuple[Any, list[Any]]:
    """``(the main image, [the image of each of streams])`` of one frame.

    Raises:
        ValueError: a frame with other streams than the video's first frame.
        TypeError: a mapping where the video's frames are arrays, or the reverse.
    """
    if not streams:
        if isinstance(frame, Mapping):
            raise ParameterTypeError(
                f"frame {frame_idx} of video {key!r} is a mapping of streams but the root's "
                "frames have none (its first frame is an array)"
            )
        return frame, []
    if not isinstance(frame, Mapping):
        raise ParameterTypeError(
            f"frame {frame_idx} of video {key!r} is a {type(frame).__name__}, but the root's "
            f"frames are mappings of the streams {[video_column, *streams]}"
        )
    names = [name for name in frame if name != video_column]
    if video_column not in frame or sorted(names) != sorted(streams):
        raise ParameterError(
            f"frame {frame_idx} of video {key!r} has the images {sorted(map(str, frame))}, but "
            f"every frame of the root has {sorted([video_column, *streams])}: every row has an "
            "image in every stream"
        )
    return frame[video_column], [frame[name] for name in streams]


def flat_fields(schema: pa.Schema | Sequence[pa.Field]) -> list[tuple[str, pa.DataType]]:
    """``(dotted name, type)`` of every leaf column of ``schema``'s per-frame columns (struct
    columns flattened, as ``Table.flatten()`` names them), in schema order."""
    found: list[tuple[str, pa.DataType]] = []

    def visit(field: pa.Field, prefix: str) -> None:
        name = f"{prefix}{field.name}"
        if pa.types.is_struct(field.type):
            for child in field.type:
                visit(child, name + ".")
        else:
            found.append((name, field.type))

    for field in schema:
        if field.name not in _FRAME_NAMES:
            visit(field, "")
    return found


def nested_fields(leaves: Sequence[tuple[str, pa.DataType]]) -> list[pa.Field]:
    """The top-level fields that hold ``leaves`` (dotted names -> struct columns), in the
    order the leaves come.

    Raises:
        ValueError: a name given twice, or both a leaf and a struct.
    """
    tree: dict[str, Any] = {}
    for name, kind in leaves:
        node = tree
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ParameterError(f"column {name!r} is inside another column")
        if parts[-1] in node:
            raise ParameterError(f"column {name!r} is given twice, or is a struct")
        node[parts[-1]] = kind

    def build(name: str, node: Any) -> pa.Field:
        if isinstance(node, dict):
            return pa.field(name, pa.struct([build(k, v) for k, v in node.items()]))
        return pa.field(name, node)

    return [build(name, node) for name, node in tree.items()]


def with_streams(schema: pa.Schema, streams: Sequence[str]) -> pa.Schema:
    """A frame table's ``schema`` with a ``large_binary`` column for each of ``streams``
    (nested beside the per-frame fields of the same struct)."""
    if not streams:
        return schema
    leaves = flat_fields(schema) + [(name, STREAM_TYPE) for name in streams]
    return pa.schema([*[f for f in schema if f.name in _FRAME_NAMES], *nested_fields(leaves)])


def schema_streams(schema: pa.Schema) -> list[str]:
    """The dotted names of the binary per-frame columns of ``schema``: its streams."""
    return [
        name
        for name, kind in flat_fields(schema)
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
    ]


def flat_columns(columns: Mapping[str, pa.Array]) -> dict[str, pa.Array]:
    """Top-level Arrow columns (struct columns included) as ``{dotted name: leaf array}``."""
    out: dict[str, pa.Array] = {}

    def visit(name: str, array: pa.Array) -> None:
        if pa.types.is_struct(array.type):
            for i, child in enumerate(array.type):
                visit(f"{name}.{child.name}", array.field(i))
        else:
            out[name] = array

    for name, array in columns.items():
        visit(name, array)
    return out


def nest_columns(leaves: Mapping[str, pa.Array], fields: Sequence[pa.Field]) -> list[pa.Array]:
    """The arrays of the top-level ``fields`` (struct columns built) from their leaves by
    dotted name: what a record batch of those fields holds."""

    def build(field: pa.Field, name: str) -> pa.Array:
        if pa.types.is_struct(field.type):
            children = [build(child, f"{name}.{child.name}") for child in field.type]
            return pa.StructArray.from_arrays(children, fields=list(field.type))
        return leaves[name]

    return [build(field, field.name) for field in fields]


def stream_entries(
    streams: Sequence[str],
    sizes: Sequence[Mapping[str, tuple[int, int]]],
    *,
    codec: str,
    quality: int | None,
    lossless: bool = False,
) -> tuple[dict[str, dict[str, Any]], list[dict[str, dict[str, int]]]]:
    """``(the root's "streams", each video's own "streams" where its sizes differ)`` for
    videos whose images of each stream have ``sizes[v][name]`` ``(H, W)``: the root states
    the first video's size; a video of another size states its own."""
    root: dict[str, dict[str, Any]] = {}
    for name in streams:
        height, width = sizes[0][name] if sizes else (0, 0)
        entry: dict[str, Any] = {"H": int(height), "W": int(width), "encoding": codec}
        entry["quality"] = quality
        if lossless:
            entry["lossless"] = True
        root[name] = entry
    own = []
    for video in sizes:
        differ = {
            name: {"H": int(video[name][0]), "W": int(video[name][1])}
            for name in streams
            if tuple(video[name]) != (root[name]["H"], root[name]["W"])
        }
        own.append(differ)
    return root, own


def check_image(image: Any, what: str) -> np.ndarray:
    """A stream's image as a C-contiguous ``(H, W, 3)`` uint8 array."""
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ParameterError(
            f"{what} must be a (H, W, 3) uint8 RGB array, got shape {array.shape} dtype "
            f"{array.dtype}"
        )
    return np.ascontiguousarray(array)


def entry_sizes(
    entry: Mapping[str, Any], streams: Mapping[str, Any], into: Mapping[str, Any]
) -> dict[str, Any]:
    """A video entry of a root whose ``streams`` are ``streams``, for a root whose ``streams``
    are ``into`` (a merge): its own ``streams`` state each size that differs from ``into``'s,
    so that no video takes another root's size for its own.

    Raises:
        ValueError: the roots' streams differ in name, ``proxy_of`` or encoding.
    """
    for name, theirs in into.items():
        mine = streams.get(name)
        keys = ("proxy_of", "encoding", "quality", "lossless")
        if not isinstance(mine, Mapping) or any(mine.get(k) != theirs.get(k) for k in keys):
            raise ParameterError(
                f"image stream {name!r} is {dict(mine) if mine else 'missing'} in one root and "
                f"{dict(theirs)} in the other: merged roots have the same streams"
            )
    own = dict(entry.get("streams") or {})
    sizes = {}
    for name, stream in streams.items():
        size = own.get(name) or {"H": stream.get("H"), "W": stream.get("W")}
        root = into.get(name, {})
        if (size.get("H"), size.get("W")) != (root.get("H"), root.get("W")):
            sizes[name] = {"H": size.get("H"), "W": size.get("W")}
    out = {k: v for k, v in entry.items() if k != "streams"}
    return {**out, "streams": sizes} if sizes else out
