"""``_metadata.json`` bytes -> the columns of the video table, validated.

Parsing is msgspec's: the ``videos`` list is decoded straight into small typed
records (no dict per entry), checked for types and ranges as it is read, and
turned into columns; every other check runs on the columns with numpy. At a
million videos that is about a second, against 2-4 s for ``json.loads`` alone
(README, "Scale"). An entry that the typed decode refuses (a wrong type, a value
out of range, a sample key as a metadata field) sends the file through the
lenient path below, entry by entry, which reads everything FORMAT.md allows and
names the first bad video and field exactly as the checks always have.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import operator
import re
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
import numpy as np
import pyarrow as pa

from ..errors import LayoutError
from ..plan import WEBP_MAX_SIDE
from .table import FIELD_PREFIX, FieldKinds, VideoInfo, array_of, ints_array, numpy_of

LAYOUT_NAME = "lance-video-frames"
_REQUIRED_VIDEO_FIELDS = ("T", "H", "W", "start_row", "path")
# Keys every sample carries; a metadata field of the same name would shadow one.
SAMPLE_KEYS = ("video", "video_idx", "filename", "start_frame", "frame_indices", "sample_idx")
_KNOWN_ENTRY_FIELDS = {"id", "key", "path", "checksum", "metadata", *_REQUIRED_VIDEO_FIELDS}
_Side = Annotated[int, msgspec.Meta(ge=1, le=WEBP_MAX_SIDE)]
_Count = Annotated[int, msgspec.Meta(ge=0)]
_Scalar = str | int | float | bool | None


class _Entry(msgspec.Struct, gc=False):
    """One entry as the fast path takes it; anything else goes the lenient way."""

    T: _Count
    H: _Side
    W: _Side
    start_row: _Count
    path: str
    id: int | None = None
    key: str | None = None
    checksum: str | None = None
    fps: int | float | None = None
    metadata: dict[str, _Scalar] | None = None


Columns = tuple[pa.Table, dict[str, Any], dict[str, FieldKinds]]


def parse_metadata(data: bytes | str, *, where: str) -> Columns:
    """The video table of a ``_metadata.json``: ``(table, header, field kinds)``.

    Args:
        data: the file's contents.
        where: the file's location, for messages.

    Raises:
        LayoutError: the text is not JSON, not this layout, or a video entry is
            missing a required field, has a bad value, or its row range overlaps
            or leaves a gap with its neighbours, or two videos share an id.
    """
    top = decode_top_level(data, where)
    header = {k: msgspec.json.decode(v) for k, v in top.items() if k != "videos"}
    layout = header.get("layout")
    if layout != LAYOUT_NAME:
        raise LayoutError(
            f"{where} has layout {layout!r}; hf_lvf reads only layout {LAYOUT_NAME!r}"
        )
    raw_videos = top.get("videos")
    collecting = gc.isenabled()
    gc.disable()  # a million new objects would set off collections that find nothing
    try:
        columns = _typed_columns(raw_videos)
    except (msgspec.ValidationError, _Lenient):
        columns = None
    finally:
        if collecting:
            gc.enable()
    if columns is None:
        columns = _lenient_columns(raw_videos, where)
    top = raw_videos = None
    _return_freed_memory()
    table, kinds = columns
    _check_row_ranges(table, where)
    _check_unique_ids(table, where)
    return table, header, kinds


_BOM = b"\xef\xbb\xbf"  # UTF-8's byte-order mark, as Windows tools write it
_AT_BYTE = re.compile(r"\(byte (\d+)\)")


def decode_top_level(data: bytes | str, where: str) -> dict[str, msgspec.Raw]:
    skipped = 0  # the BOM's bytes, so offsets in messages count from the file's start
    if isinstance(data, str) and data.startswith("\ufeff"):
        data, skipped = data[1:], len(_BOM)
    elif isinstance(data, bytes) and data.startswith(_BOM):
        data, skipped = memoryview(data)[len(_BOM) :], len(_BOM)  # no copy of a 188 MB file
    try:
        return msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError as err:
        kind = type(msgspec.json.decode(data)).__name__
        raise LayoutError(f"{where} must hold a JSON object, got {kind}") from err
    except (msgspec.DecodeError, UnicodeDecodeError) as err:
        raise LayoutError(f"{where} is not valid JSON{_around(data, err, skipped)}") from err


def _around(data: bytes | str | memoryview, err: Exception, skipped: int) -> str:
    """``err``, with the file's byte offset it names and the text around it."""
    found = _AT_BYTE.search(str(err))
    if found is None:
        return f": {err}"
    at = int(found.group(1))
    raw = data.encode() if isinstance(data, str) else data
    text = bytes(raw[max(0, at - 30) : at + 30]).decode("utf-8", "replace")
    reason = _AT_BYTE.sub("", str(err)).strip()
    return f": {reason} at byte {at + skipped}, around {text!r}"


def _return_freed_memory() -> None:
    """Give the freed heap of the decoded records back to the system (glibc keeps it).

    A million records are ~900 MB of small allocations; freed, glibc keeps them in its
    arenas, so the RSS of the process that opened the root stays that high. Elsewhere a no-op.
    """
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


class _Lenient(Exception):
    """The typed entries need the lenient path (for its exact message, or its leniency)."""


# Entries decoded into records at a time: the records of a chunk are gone before the next is
# decoded, so the peak holds one chunk's records (~40 MB), not a million (~500 MB).
_CHUNK = 1 << 16  # entries, where the list is split entry by entry


def _typed_columns(raw_videos: msgspec.Raw | None) -> tuple[pa.Table, dict[str, FieldKinds]] | None:
    """The columns of the ``videos`` list by the fast path, chunk by chunk (``None``: it is no
    non-empty list, for the lenient path to say so)."""
    if raw_videos is None or not bytes(memoryview(raw_videos)[:64]).lstrip().startswith(b"["):
        return None
    try:
        return _columns_of(_split(memoryview(raw_videos)))
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError:  # a split fell inside an entry: split at each entry instead
        raws = msgspec.json.decode(raw_videos, type=list[msgspec.Raw] | None)
        chunks = (b",".join(raws[lo : lo + _CHUNK]) for lo in range(0, len(raws or ()), _CHUNK))
        return _columns_of(chunks)


# Where one entry of the list ends and the next starts, as JSON writers write it.
_BETWEEN = re.compile(rb"\}\s*,\s*\{")
_CHUNK_BYTES = 10 << 20


def _split(text: memoryview):
    """The ``videos`` list's text (a valid JSON array) as pieces of about ``_CHUNK_BYTES``,
    each a run of whole entries, cut where ``}, {`` follows a point: such a cut inside an
    entry or a string leaves a piece that is no valid JSON list, which the decode refuses
    (and :func:`_typed_columns` then splits entry by entry)."""
    start = bytes(text[:64]).index(b"[") + 1
    end = len(text) - bytes(text[-64:])[::-1].index(b"]") - 1
    while start < end:
        found = _BETWEEN.search(text, min(start + _CHUNK_BYTES, end), end)
        if found is None:
            yield text[start:end]
            return
        yield text[start : found.start() + 1]
        start = found.end() - 1


def _columns_of(chunks) -> tuple[pa.Table, dict[str, FieldKinds]] | None:
    """The columns of the entries of ``chunks`` (each a run of entries, comma-separated)."""
    ints: dict[str, list[np.ndarray]] = {n: [] for n in ("id", "T", "H", "W", "start_row")}
    strings: dict[str, list[pa.Array]] = {name: [] for name in ("path", "key", "checksum")}
    fps: list[pa.Array] = []
    fields = _FieldChunks()
    lo = 0
    for chunk in chunks:
        entries = msgspec.json.decode(b"[" + chunk + b"]", type=list[_Entry])
        m = len(entries)
        del chunk
        for name in ("T", "H", "W", "start_row"):
            ints[name].append(np.fromiter(map(operator.attrgetter(name), entries), np.int64, m))
        ids = list(map(operator.attrgetter("id"), entries))
        if None in ids:  # optional: other tools may leave it out; the position stands in
            ids = [lo + i if v is None else v for i, v in enumerate(ids)]
        ints["id"].append(np.fromiter(ids, np.int64, m))
        for name, parts in strings.items():
            parts.append(array_of(list(map(operator.attrgetter(name), entries)), pa.string()))
        fps.append(array_of(list(map(operator.attrgetter("fps"), entries)), pa.float64()))
        fields.add([e.metadata or {} for e in entries])
        lo += m
        del entries
    if not lo:
        return None
    columns = {name: ints_array(np.concatenate(parts)) for name, parts in ints.items()}
    columns |= {name: pa.concat_arrays(parts) for name, parts in strings.items()}
    columns["fps"] = pa.concat_arrays(fps)
    field_arrays, kinds = fields.columns()
    return _table(columns, field_arrays), kinds


class _FieldChunks:
    """The metadata fields of the entries, a chunk at a time: typed arrays per chunk, cast to
    the field's type over all chunks at the end."""

    def __init__(self) -> None:
        self._sizes: list[int] = []
        self._arrays: dict[str, list[tuple[int, pa.Array | None]]] = {}
        self._kinds: dict[str, FieldKinds] = {}

    def add(self, metadata: list[Mapping[str, Any]]) -> None:
        k = len(self._sizes)
        self._sizes.append(len(metadata))
        arrays, kinds = _field_columns(metadata, len(metadata))
        for name, kind in kinds.items():
            known = self._kinds.get(name)
            self._kinds[name] = kind if known is None else known | kind
            self._arrays.setdefault(name, []).append((k, arrays.get(FIELD_PREFIX + name)))

    def columns(self) -> tuple[dict[str, pa.Array], dict[str, FieldKinds]]:
        out = {}
        for name, parts in self._arrays.items():
            kind = _storage_type(self._kinds[name].kinds)
            if kind is None or any(a is None for _, a in parts):
                continue
            chunks = dict(parts)
            pieces = [
                pa.nulls(size, kind) if k not in chunks else chunks[k].cast(kind)
                for k, size in enumerate(self._sizes)
            ]
            out[FIELD_PREFIX + name] = pa.concat_arrays(pieces)
        return out, self._kinds


# The entry's own columns of the video table, and their types (metadata fields follow).
_ENTRY_COLUMNS = {"id": pa.int64(), "T": pa.int64(), "H": pa.int64(), "W": pa.int64()}
_ENTRY_COLUMNS |= {"start_row": pa.int64(), "path": pa.string(), "key": pa.string()}
_ENTRY_COLUMNS |= {"checksum": pa.string(), "fps": pa.float64()}


def _table(columns: Mapping[str, Any], fields: Mapping[str, pa.Array]) -> pa.Table:
    """The video table of the entry columns (values of :data:`_ENTRY_COLUMNS`: Arrow arrays
    or lists) and fields."""
    typed = {
        name: columns[name]
        if isinstance(columns[name], pa.Array)
        else array_of(columns[name], kind)
        for name, kind in _ENTRY_COLUMNS.items()
    }
    return pa.table({**typed, **fields})


def _field_columns(
    metadata: list[Mapping[str, Any]], n: int
) -> tuple[dict[str, pa.Array], dict[str, FieldKinds]]:
    """One nullable column per metadata field (first-seen order), and what each holds."""
    names = list(dict.fromkeys(itertools.chain.from_iterable(metadata)))
    if any(name in SAMPLE_KEYS for name in names):
        raise _Lenient  # for the message naming the first such video
    columns, kinds = {}, {}
    for name in names:
        values = list(map(operator.methodcaller("get", name), metadata))
        types = frozenset(t.__name__ for t in set(map(type, values)) if t is not type(None))
        kinds[name] = FieldKinds(types, n - values.count(None))
        arrow_type = _storage_type(types)
        if arrow_type is not None:
            try:
                columns[FIELD_PREFIX + name] = array_of(values, arrow_type)
            except (OverflowError, pa.ArrowInvalid) as err:  # an int past 64 bits
                message = f"metadata field {name!r} holds a value out of range: {err}"
                raise LayoutError(message) from err
    return columns, kinds


def _storage_type(types: frozenset[str]) -> pa.DataType | None:
    """How a field is stored: as its values are (nulls where missing); ``None`` for a field
    whose types do not mix (its dtype raises when asked for)."""
    if not types or types == {"str"}:
        return pa.string()
    if types == {"bool"}:
        return pa.bool_()
    if types == {"int"}:
        return pa.int64()
    if types <= {"int", "float"}:
        return pa.float64()
    return None


# --- the lenient path: entry by entry, every message as it always was ---


def parse_entry(video_idx: int, entry: Any, where: str) -> VideoInfo:
    """One entry of the ``videos`` list, validated (``where``: the file, for messages)."""
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
        extra={k: v for k, v in entry.items() if k not in _KNOWN_ENTRY_FIELDS},
    )


def _lenient_columns(
    raw_videos: msgspec.Raw | None, where: str
) -> tuple[pa.Table, dict[str, FieldKinds]]:
    entries = None if raw_videos is None else msgspec.json.decode(raw_videos)
    if not isinstance(entries, list) or not entries:
        raise LayoutError(f"{where} lists no videos: 'videos' must be a non-empty list")
    videos = [parse_entry(i, entry, where) for i, entry in enumerate(entries)]
    n = len(videos)
    fps = [v.extra.get("fps") for v in videos]
    fps = [f if isinstance(f, (int, float)) and not isinstance(f, bool) else None for f in fps]
    fields, kinds = _field_columns([v.metadata for v in videos], n)
    columns = {
        "id": [v.id for v in videos],
        "T": [v.num_frames for v in videos],
        "H": [v.height for v in videos],
        "W": [v.width for v in videos],
        "start_row": [v.start_row for v in videos],
        "path": [v.path for v in videos],
        "key": [v.key for v in videos],
        "checksum": [_text(v.checksum) for v in videos],
        "fps": fps,
    }
    return _table(columns, fields), kinds


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# --- checks on the columns ---


def _check_row_ranges(table: pa.Table, where: str) -> None:
    start = numpy_of(table.column("start_row"))
    frames = numpy_of(table.column("T"))
    expected = np.zeros_like(start)
    np.cumsum(frames[:-1], out=expected[1:])
    bad = np.flatnonzero(start != expected)
    if bad.size:
        v = int(bad[0])
        what = "overlaps the previous video" if start[v] < expected[v] else "leaves a gap"
        path = table.column("path")[v].as_py()
        raise LayoutError(
            f"{where}: videos[{v}] ({path!r}) starts at row {int(start[v])} but the previous "
            f"videos end at row {int(expected[v])}: its row range {what}"
        )


def _check_unique_ids(table: pa.Table, where: str) -> None:
    ids = numpy_of(table.column("id"))
    order = np.argsort(ids, kind="stable")
    repeats = order[1:][ids[order[1:]] == ids[order[:-1]]]  # later videos with a seen id
    if repeats.size:
        v = int(repeats.min())
        first = int(np.flatnonzero(ids == ids[v])[0])
        paths = table.column("path")
        raise LayoutError(
            f"{where}: videos[{v}] ({paths[v].as_py()!r}) has id {int(ids[v])}, the id of "
            f"videos[{first}] ({paths[first].as_py()!r}): video ids must be unique, since the "
            "Lance rows name their video by id"
        )


def raw_entries(data: bytes, where: str) -> list[msgspec.Raw]:
    """The entries of the ``videos`` list of a ``_metadata.json``, each still as JSON text."""
    raw = decode_top_level(data, where).get("videos")
    return msgspec.json.decode(raw or b"[]", type=list[msgspec.Raw])
