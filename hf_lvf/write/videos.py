"""What one video given to :func:`.writer.write_frames` is, checked before its frames are
written.

A video is ``(key, frames, metadata)`` (the original form), or a mapping with the keys
``key`` and ``frames`` and, optionally, ``metadata``, ``frame_fields`` and ``spans``:

- ``frame_fields``: ``{dotted name: values}``, values a ``(T, *shape)`` array of numbers or
  bools, or ``T`` strings: the video's per-frame fields (FORMAT.md), one value per frame.
  Their names, dtypes and shapes are the root's Lance schema: every video of a root has the
  same ones (:func:`check_same_fields`).
- ``spans``: ``[{"start_frame", "end_frame" (exclusive), ...scalar fields}]``, written into
  the video's ``_metadata.json`` entry; every span of a root has the same fields
  (:func:`check_same_span_fields`).

Everything here is checked from the arguments alone, so a bad video is refused before any
of its frames is encoded; only a frame count that nothing states up front (frames from a
generator, no ``frame_fields``) is checked as the frames arrive (the write is atomic).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from ..errors import LayoutError, ParameterError, ParameterTypeError
from ..frames import FRAME_SCHEMA, columns_schema, describe_schema, frame_columns
from ..layout import SAMPLE_KEYS
from .frame_table import frame_table_schema
from .streams import schema_streams, with_streams

#: The keys of a video given as a mapping.
VIDEO_KEYS = ("key", "frames", "metadata", "frame_fields", "spans")
#: The keys every span has; its other fields are its own (``caption``, ``score``, ...).
SPAN_BOUNDS = ("start_frame", "end_frame")
# Sample keys a span field would shadow (the spans' reader adds ``span_idx``).
_SPAN_RESERVED = (*SAMPLE_KEYS, "span_idx")
_Scalar = str | int | float | bool | None


@dataclass
class VideoInput:
    """One video to write, checked (:func:`video_input`).

    Attributes:
        key: its key (also its ``path``).
        frames: its frames, an iterable of ``(H, W, 3)`` uint8 arrays (not consumed yet).
        metadata: its per-video scalar fields.
        columns: its per-frame fields as the top-level Arrow columns to write.
        spans: its spans as written to ``_metadata.json``.
        num_frames: its ``T`` where stated up front (by ``frame_fields`` or ``len(frames)``),
            else ``None`` (known once the frames are written).
    """

    key: str
    frames: Iterable[Any]
    metadata: dict[str, Any]
    columns: dict[str, pa.Array] = field(default_factory=dict)
    spans: list[dict[str, Any]] = field(default_factory=list)
    num_frames: int | None = None

    @property
    def schema(self) -> pa.Schema:
        """The Lance schema its rows have: the frame columns, then its per-frame fields."""
        return frame_table_schema(columns_schema(self.columns))


def video_input(item: Any, position: int) -> VideoInput:
    """``videos[position]`` of a write, checked: key, metadata, per-frame fields (one value
    per frame) and spans (inside the video, when its length is stated up front).

    Raises:
        TypeError, ValueError: naming ``videos[position]`` or the video's key.
    """
    if isinstance(item, Mapping):
        unknown = sorted(set(map(str, item)) - set(VIDEO_KEYS))
        if unknown or "key" not in item or "frames" not in item:
            raise ParameterTypeError(
                f"videos[{position}] must have the keys 'key' and 'frames' and may have "
                f"{', '.join(map(repr, VIDEO_KEYS[2:]))}; got {sorted(map(str, item))}"
            )
        key, frames, metadata = item["key"], item["frames"], item.get("metadata")
        arrays, spans = item.get("frame_fields"), item.get("spans")
    elif isinstance(item, tuple) and len(item) == 3:
        (key, frames, metadata), arrays, spans = item, None, None
    else:
        raise ParameterTypeError(
            f"videos[{position}] must be a (key, frames, metadata) tuple or a mapping with "
            f"the keys {', '.join(map(repr, VIDEO_KEYS))}, got {type(item).__name__}"
        )
    if not isinstance(key, str) or not key:
        raise ParameterTypeError(f"videos[{position}] key must be a non-empty str, got {key!r}")
    video = VideoInput(key, frames, check_metadata(key, metadata))
    stated = len(frames) if isinstance(frames, Sequence | np.ndarray) else None
    if arrays is not None:
        video.columns, video.num_frames = _columns(key, arrays, stated)
    else:
        video.num_frames = stated
    if video.num_frames == 0:
        raise ParameterError(f"video {key!r} has no frames")
    if spans is not None:
        video.spans = clean_spans(key, spans, video.num_frames)
    return video


def _columns(key: str, arrays: Any, stated: int | None) -> tuple[dict[str, pa.Array], int | None]:
    if not isinstance(arrays, Mapping):
        raise ParameterTypeError(
            f"frame_fields of video {key!r} must be a mapping of field name to values, got "
            f"{type(arrays).__name__}"
        )
    if not arrays:
        return {}, stated
    name, values = next(iter(arrays.items()))
    try:
        length = len(values)
    except TypeError:
        raise ParameterTypeError(
            f"per-frame field {name!r} of video {key!r} must be a (T, ...) array or T strings, "
            f"got {type(values).__name__}"
        ) from None
    if stated is not None and stated != length:
        raise ParameterError(
            f"per-frame field {name!r} of video {key!r} has {length} values for {stated} "
            "frames: one value per frame"
        )
    return frame_columns(arrays, length, where=f"video {key!r}"), length


def check_metadata(key: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per-video metadata as JSON scalars; numpy scalars become Python ones."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ParameterTypeError(f"metadata of video {key!r} must be a mapping, got {metadata!r}")
    for name in metadata:
        if name in SAMPLE_KEYS:
            raise ParameterError(
                f"metadata field {name!r} of video {key!r} would shadow the sample key of that name"
            )
    return _scalars(metadata, "metadata", key)


def _scalars(values: Mapping[str, Any], what: str, key: str) -> dict[str, Any]:
    """``values`` as JSON scalars; ``what``: ``"metadata"`` or ``"span 3"``, for messages."""
    clean = {}
    for name, value in values.items():
        if not isinstance(name, str):
            raise ParameterTypeError(
                f"{what} field names of video {key!r} must be str, got {name!r}"
            )
        if isinstance(value, np.generic):
            value = value.item()
        if value is not None and not isinstance(value, _Scalar):
            raise ParameterTypeError(
                f"{what} field {name!r} of video {key!r} must be a str, int, float, bool or "
                f"None, got {value!r}"
            )
        clean[name] = value
    return clean


def clean_spans(key: str, spans: Any, num_frames: int | None) -> list[dict[str, Any]]:
    """A video's spans as written to ``_metadata.json``: ``start_frame`` and ``end_frame``
    integers with ``0 <= start_frame < end_frame <= num_frames`` (when known), then their
    scalar fields.

    Raises:
        TypeError, ValueError: naming the video and the span.
    """
    if isinstance(spans, (str, bytes, Mapping)) or not isinstance(spans, Iterable):
        raise ParameterTypeError(
            f"spans of video {key!r} must be a list of mappings, got {spans!r}"
        )
    clean = []
    for i, span in enumerate(spans):
        where = f"span {i} of video {key!r}"
        if not isinstance(span, Mapping) or not all(b in span for b in SPAN_BOUNDS):
            raise ParameterTypeError(
                f"{where} must be a mapping with 'start_frame' and 'end_frame', got {span!r}"
            )
        start, end = (span[b] for b in SPAN_BOUNDS)
        if not all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) for v in (start, end)
        ):
            raise ParameterTypeError(
                f"{where}: start_frame and end_frame must be ints, got {start!r}, {end!r}"
            )
        start, end = int(start), int(end)
        if start < 0 or end <= start:
            raise ParameterError(
                f"{where} has start_frame={start}, end_frame={end}: a span needs "
                "0 <= start_frame < end_frame (end_frame is exclusive)"
            )
        if num_frames is not None and end > num_frames:
            raise ParameterError(
                f"{where} has end_frame={end}, past the video's {num_frames} frames: a span "
                f"must lie inside its video (end_frame <= {num_frames})"
            )
        fields = {k: v for k, v in span.items() if k not in SPAN_BOUNDS}
        if clean and set(fields) != set(clean[0]) - set(SPAN_BOUNDS):
            raise ParameterError(
                f"{where} has the fields {sorted(fields)} but span 0 has "
                f"{sorted(set(clean[0]) - set(SPAN_BOUNDS))}: every span has the same fields"
            )
        for name in fields:
            if name in _SPAN_RESERVED:
                raise ParameterError(
                    f"{where}: field {name!r} would shadow the sample key of that name"
                )
        clean.append(
            {
                "start_frame": start,
                "end_frame": end,
                **_scalars(fields, f"span {i}", key),
            }
        )
    return clean


def span_field_kinds(spans: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{field: kind}`` of the fields of ``spans`` (not their bounds), ``kind`` the JSON kind
    of their non-null values: ``"string"``, ``"number"``, ``"bool"`` (``"null"``: none)."""
    kinds: dict[str, str] = {}
    for span in spans:
        for name, value in span.items():
            if name in SPAN_BOUNDS:
                continue
            kind = _kind(value)
            if kinds.get(name, "null") == "null":
                kinds[name] = kind
            elif kind not in ("null", kinds[name]):
                kinds[name] = "mixed"
    return kinds


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return "string" if isinstance(value, str) else "number"


def check_same_span_fields(
    fields: Mapping[str, str], expected: Mapping[str, str], *, what: str, where: str
) -> None:
    """Raise ValueError if spans with ``fields`` cannot join spans with ``expected`` (both
    from :func:`span_field_kinds`): every span of a root has the same fields, of the same kinds.
    Spans on one side only agree with any: a video may have no spans."""
    mixed = [name for name, kind in fields.items() if kind == "mixed"]
    if mixed:
        raise ParameterError(
            f"span field {mixed[0]!r} of {what} holds values of different kinds (strings, "
            "numbers, bools): every span's value of a field is of one kind"
        )
    if not fields or not expected:
        return
    clash = set(fields) != set(expected) or any(
        "null" not in (kind, expected[name]) and kind != expected[name]
        for name, kind in fields.items()
    )
    if clash:
        raise ParameterError(
            f"the spans of {what} have the fields {_show(fields)} but those of {where} have "
            f"{_show(expected)}: every span of a root has the same fields"
        )


def _show(fields: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{name}: {kind}" for name, kind in fields.items()) + "}"


def check_same_fields(schema: pa.Schema, expected: pa.Schema, *, what: str, where: str) -> None:
    """Raise ValueError if the per-frame fields of Lance ``schema`` (``what``'s) are not
    those of ``expected`` (``where``'s): same names, dtypes and shapes, in the same order."""
    mine = [f for f in schema if f.name not in FRAME_SCHEMA.names]
    theirs = [f for f in expected if f.name not in FRAME_SCHEMA.names]
    if [(f.name, f.type) for f in mine] != [(f.name, f.type) for f in theirs]:
        raise ParameterError(
            f"the per-frame fields of {what} ({describe_schema(mine)}) differ from those of "
            f"{where} ({describe_schema(theirs)}): every frame of a root has the same fields, "
            "with the same dtypes and shapes"
        )


class _Spans(msgspec.Struct):
    spans: list[dict[str, Any]] | None = None


class _Videos(msgspec.Struct):
    videos: list[_Spans] = []


def root_span_fields(text: bytes, *, where: str = "_metadata.json") -> dict[str, str]:
    """:func:`span_field_kinds` of every span of a root, from its ``_metadata.json`` text (only
    the spans are decoded).

    Raises:
        LayoutError: a video's ``spans`` is not a list of objects (FORMAT.md).
    """
    try:
        videos = msgspec.json.decode(text, type=_Videos).videos
    except msgspec.ValidationError as err:
        raise LayoutError(f"{where}: {err} (spans are a list of objects, FORMAT.md)") from None
    return span_field_kinds(span for video in videos for span in video.spans or ())


class VideoChecks:
    """The videos of one write, checked one by one to agree with each other and with the
    root they go to: unique keys, the same per-frame fields, the same span fields.

    Args:
        schema: the Lance schema every video's rows must have (the root's, or the first
            video's); ``where``: whose it is, for messages.
        spans: the root's :func:`span_field_kinds` (empty for a new root).
        known_keys: the keys already in the root.
    """

    def __init__(
        self,
        schema: pa.Schema,
        *,
        where: str,
        spans: Mapping[str, str] | None = None,
        known_keys: Iterable[str] = (),
    ) -> None:
        self.schema, self.where = schema, where
        #: the image streams of ``schema`` (:mod:`hf_lvf.write.streams`): every video has them.
        self.streams = schema_streams(schema)
        self.spans, self.spans_where = dict(spans or {}), where
        self.known, self.keys = frozenset(known_keys), set[str]()

    def check(self, video: VideoInput) -> None:
        """Raise ValueError if ``video`` cannot join the videos checked so far."""
        if video.key in self.known:
            raise ParameterError(
                f"video key {video.key!r} is already in the root; keys must be unique"
            )
        if video.key in self.keys:
            raise ParameterError(f"video key {video.key!r} appears twice; keys must be unique")
        what = f"video {video.key!r}"
        schema = with_streams(video.schema, self.streams)
        check_same_fields(schema, self.schema, what=what, where=self.where)
        fields = span_field_kinds(video.spans)
        check_same_span_fields(fields, self.spans, what=what, where=self.spans_where)
        if fields and not self.spans:
            self.spans, self.spans_where = fields, what
        self.keys.add(video.key)
