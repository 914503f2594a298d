"""``_metadata.json`` <-> a typed, validated video table.

The checks here need only the metadata file; the checks that need the Lance
table (row count, schema) live in :mod:`hf_lvf.frames` and run when the table
is first opened, in the process that reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import LayoutError
from .location import METADATA_FILENAME, join_uri, read_root_file
from .sizes import WEBP_MAX_SIDE, frame_pixels_problem

LAYOUT_NAME = "lance-video-frames"
_REQUIRED_VIDEO_FIELDS = ("T", "H", "W", "start_row", "path")
# Keys every sample carries; a metadata field of the same name would shadow one.
SAMPLE_KEYS = ("video", "video_idx", "filename", "start_frame", "frame_indices", "sample_idx")


@dataclass(frozen=True)
class VideoInfo:
    """One entry of the ``videos`` list of ``_metadata.json``.

    Attributes:
        video_idx: position in the ``videos`` list (what samples call ``video_idx``).
        id: the ``id`` stored in the Lance rows' ``video_id`` column.
        key: example key from the source (``None`` if the writer recorded none).
        path: the source file, a label only.
        num_frames: ``T``; height, width: ``H``, ``W`` of every frame.
        start_row: first Lance row of the video.
        metadata: the per-video scalar fields (labels and such).
        checksum: hex digest of the source, if recorded.
        extra: fields of the entry hf_lvf does not interpret, kept as written.
    """

    video_idx: int
    id: int
    key: str | None
    path: str
    num_frames: int
    height: int
    width: int
    start_row: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
    checksum: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The entry as it is written in ``_metadata.json``."""
        entry = {
            "id": self.id,
            "key": self.key,
            "path": self.path,
            "checksum": self.checksum,
            "T": self.num_frames,
            "H": self.height,
            "W": self.width,
            "start_row": self.start_row,
            "metadata": dict(self.metadata),
        }
        entry.update(self.extra)
        return entry


@dataclass(frozen=True)
class RootLayout:
    """A validated ``_metadata.json``: the video table plus the arrays the plan needs."""

    uri: str
    videos: tuple[VideoInfo, ...]
    raw: Mapping[str, Any]

    @property
    def num_rows(self) -> int:
        """Lance rows the video table accounts for (the sum of ``T``)."""
        last = self.videos[-1]
        return last.start_row + last.num_frames

    @property
    def num_frames(self) -> np.ndarray:
        return np.fromiter((v.num_frames for v in self.videos), np.int64, len(self.videos))

    @property
    def start_rows(self) -> np.ndarray:
        return np.fromiter((v.start_row for v in self.videos), np.int64, len(self.videos))

    @property
    def frame_sizes(self) -> np.ndarray:
        """``(n_videos, 2)`` array of ``(H, W)``."""
        return np.array([(v.height, v.width) for v in self.videos], np.int64).reshape(-1, 2)

    @property
    def metadata_path(self) -> str:
        return join_uri(self.uri, METADATA_FILENAME)

    # The accessors below are the video table's interface for code above this module: columns
    # and a few top-level fields, never one Python object per video.

    def __len__(self) -> int:
        """Number of videos."""
        return len(self.videos)

    @property
    def header(self) -> dict[str, Any]:
        """The top-level fields of ``_metadata.json`` other than ``videos`` (``quality``,
        ``label_names``, ``lance_version``, unknown ones...)."""
        return {k: v for k, v in self.raw.items() if k != "videos"}

    @property
    def fields(self) -> dict[str, str]:
        """Per-video metadata field -> ``datasets`` dtype (see :func:`metadata_fields`)."""
        return metadata_fields(self.videos)

    def field_values(self, name: str) -> np.ndarray:
        """``(n_videos,)`` values of metadata field ``name``, typed as :attr:`fields` says
        (an object array of ``str`` for ``string``), placeholders where a video lacks it."""
        dtype = self.fields[name]
        values = [metadata_values(v, {name: dtype})[name] for v in self.videos]
        return np.array(values, object if dtype == "string" else dtype)

    @property
    def video_fps(self) -> np.ndarray:
        """``(n_videos,)`` float64 frame rate of each video: its entry's ``fps``, else its
        ``metadata["fps"]``, else NaN."""
        out = np.full(len(self.videos), np.nan)
        for v in self.videos:
            fps = v.extra.get("fps", v.metadata.get("fps"))
            if isinstance(fps, (int, float)) and not isinstance(fps, bool):
                out[v.video_idx] = fps
        return out

    def path(self, video_idx: int) -> str:
        """The ``path`` of video ``video_idx``."""
        return self.videos[video_idx].path

    def paths_of(self, video_idx: np.ndarray) -> list[str]:
        """The ``path`` of each of ``video_idx``."""
        return [self.videos[v].path for v in np.asarray(video_idx).tolist()]


def parse_metadata(text: str | bytes, *, uri: str) -> RootLayout:
    """Validate the text of a ``_metadata.json`` and return its video table.

    Args:
        text: the file's contents.
        uri: the root it belongs to, for messages.

    Raises:
        LayoutError: the text is not JSON, not this layout, or a video entry is
            missing a required field, has a bad value, or its row range overlaps
            or leaves a gap with its neighbours.
    """
    where = join_uri(uri, METADATA_FILENAME)
    try:
        meta = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise LayoutError(f"{where} is not valid JSON: {err}") from err
    if not isinstance(meta, dict):
        raise LayoutError(f"{where} must hold a JSON object, got {type(meta).__name__}")
    layout = meta.get("layout")
    if layout != LAYOUT_NAME:
        raise LayoutError(
            f"{where} has layout {layout!r}; hf_lvf reads only layout {LAYOUT_NAME!r}"
        )
    entries = meta.get("videos")
    if not isinstance(entries, list) or not entries:
        raise LayoutError(f"{where} lists no videos: 'videos' must be a non-empty list")
    videos = tuple(_parse_video(i, entry, where) for i, entry in enumerate(entries))
    _check_row_ranges(videos, where)
    _check_unique_ids(videos, where)
    return RootLayout(uri=uri, videos=videos, raw=meta)


def _parse_video(video_idx: int, entry: Any, where: str) -> VideoInfo:
    if not isinstance(entry, dict):
        raise LayoutError(f"{where}: videos[{video_idx}] must be an object, got {entry!r}")
    name = f"videos[{video_idx}]" + (f" (key {entry['key']!r})" if "key" in entry else "")
    missing = [f for f in _REQUIRED_VIDEO_FIELDS if f not in entry]
    if missing:
        raise LayoutError(f"{where}: {name} is missing required field(s) {', '.join(missing)}")
    ints = {}
    for f, minimum in (("T", 0), ("H", 1), ("W", 1), ("start_row", 0)):
        value = entry[f]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise LayoutError(
                f"{where}: {name} field {f} must be an integer >= {minimum}, got {value!r}"
            )
        ints[f] = value
    if max(ints["H"], ints["W"]) > WEBP_MAX_SIDE:
        raise LayoutError(
            f"{where}: {name} declares frames of {ints['H']}x{ints['W']} (HxW), but a WebP "
            f"image has at most {WEBP_MAX_SIDE} pixels per side"
        )
    metadata = entry.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise LayoutError(f"{where}: {name} field metadata must be an object, got {metadata!r}")
    for k, v in metadata.items():
        if k in SAMPLE_KEYS:
            raise LayoutError(
                f"{where}: {name} metadata field {k!r} would shadow the sample key of that name"
            )
        if v is not None and not isinstance(v, (str, int, float, bool)):
            raise LayoutError(f"{where}: {name} metadata field {k!r} must be a scalar, got {v!r}")
    known = {"id", "key", "path", "checksum", "metadata", *_REQUIRED_VIDEO_FIELDS}
    video_id = entry.get("id")
    if video_id is None:  # optional: other tools may leave it out
        video_id = video_idx
    elif isinstance(video_id, bool) or not isinstance(video_id, int):
        raise LayoutError(f"{where}: {name} field id must be an integer, got {video_id!r}")
    key = entry.get("key")
    return VideoInfo(
        video_idx=video_idx,
        id=int(video_id),
        key=None if key is None else str(key),
        path=str(entry["path"]),
        num_frames=ints["T"],
        height=ints["H"],
        width=ints["W"],
        start_row=ints["start_row"],
        metadata=dict(metadata),
        checksum=entry.get("checksum"),
        extra={k: v for k, v in entry.items() if k not in known},
    )


def _check_row_ranges(videos: tuple[VideoInfo, ...], where: str) -> None:
    expected = 0
    for v in videos:
        if v.start_row != expected:
            what = "overlaps the previous video" if v.start_row < expected else "leaves a gap"
            raise LayoutError(
                f"{where}: videos[{v.video_idx}] ({v.path!r}) starts at row {v.start_row} but the "
                f"previous videos end at row {expected}: its row range {what}"
            )
        expected += v.num_frames


def _check_unique_ids(videos: tuple[VideoInfo, ...], where: str) -> None:
    first: dict[int, VideoInfo] = {}
    for v in videos:
        seen = first.setdefault(v.id, v)
        if seen is not v:
            raise LayoutError(
                f"{where}: videos[{v.video_idx}] ({v.path!r}) has id {v.id}, the id of "
                f"videos[{seen.video_idx}] ({seen.path!r}): video ids must be unique, since the "
                "Lance rows name their video by id"
            )


def check_frame_pixels(layout: RootLayout, max_frame_pixels: int) -> None:
    """Raise if a video of ``layout`` declares frames larger than ``max_frame_pixels``.

    Runs when a root is opened for reading, before any frame is allocated.

    Raises:
        LayoutError: names the first such video, its size and the limit.
    """
    for v in layout.videos:
        problem = frame_pixels_problem(v.height, v.width, max_frame_pixels)
        if problem is not None:
            raise LayoutError(
                f"{layout.metadata_path}: videos[{v.video_idx}] ({v.path!r}) declares {problem}; "
                "if the root is right, pass a larger max_frame_pixels="
            )


def check_row_count(layout: RootLayout, num_rows: int) -> None:
    """Raise if the video table and the Lance table disagree on the number of rows."""
    if layout.num_rows == num_rows:
        return
    if layout.num_rows > num_rows:
        past = next(v for v in layout.videos if v.start_row + v.num_frames > num_rows)
        raise LayoutError(
            f"{layout.metadata_path}: videos[{past.video_idx}] ({past.path!r}) spans rows "
            f"{past.start_row}..{past.start_row + past.num_frames - 1}, past the Lance table's "
            f"{num_rows} rows"
        )
    raise LayoutError(
        f"{layout.metadata_path}: the videos account for {layout.num_rows} rows but the Lance "
        f"table at {layout.uri!r} has {num_rows}"
    )


def read_layout(uri: str, *, storage_options: Mapping[str, str] | None = None) -> RootLayout:
    """Read and validate the ``_metadata.json`` of a root (local path, ``hf://`` or fsspec URL).

    Raises:
        RootNotFoundError: there is no ``_metadata.json`` at ``uri``.
        LayoutError: see :func:`parse_metadata`.
    """
    return parse_metadata(read_root_file(uri, METADATA_FILENAME, storage_options), uri=uri)


#: What a sample holds for a metadata field its video lacks (or holds as ``null``), by the
#: field's ``datasets`` dtype: values every collate and Arrow column takes, never ``None``.
#: A ``bool`` field that some video lacks is typed ``int8`` (1, 0, and -1 where missing).
MISSING_VALUES: dict[str, Any] = {"int64": -1, "int8": -1, "float64": float("nan"), "string": ""}


def metadata_fields(videos: Sequence[VideoInfo]) -> dict[str, str]:
    """Per-video metadata field -> ``datasets`` dtype, in first-seen order.

    ``string`` for text (and for a field that is missing or ``null`` everywhere),
    ``int64``, ``float64`` (ints and floats mixed), ``bool``; a ``bool`` field that
    some video lacks becomes ``int8`` so that it has a placeholder (see
    :data:`MISSING_VALUES`).

    Raises:
        ValueError: a field holds values of incompatible types across videos.
    """
    kinds: dict[str, set[type]] = {}
    present: dict[str, int] = {}
    for video in videos:
        for name, value in video.metadata.items():
            seen = kinds.setdefault(name, set())
            if value is not None:
                seen.add(type(value))
                present[name] = present.get(name, 0) + 1
    fields = {}
    for name, seen in kinds.items():
        if not seen or seen == {str}:
            fields[name] = "string"
        elif seen == {bool}:
            fields[name] = "bool" if present[name] == len(videos) else "int8"
        elif seen == {int}:
            fields[name] = "int64"
        elif seen <= {int, float}:
            fields[name] = "float64"
        else:
            names = ", ".join(sorted(t.__name__ for t in seen))
            raise ValueError(f"metadata field {name!r} mixes value types across videos: {names}")
    return fields


def metadata_values(video: VideoInfo, fields: Mapping[str, str]) -> dict[str, Any]:
    """The values of ``fields`` for one video, typed as ``fields`` says; missing ones (absent
    or ``null``) take their dtype's placeholder from :data:`MISSING_VALUES`."""
    values = {}
    for name, dtype in fields.items():
        value = video.metadata.get(name)
        if value is None:
            value = MISSING_VALUES[dtype]
        elif dtype == "int8" or dtype == "int64":
            value = int(value)
        elif dtype == "float64":
            value = float(value)
        values[name] = value
    return values
