"""Writing roots: frames -> WebP, JPEG or PNG rows -> Lance table + ``_metadata.json``,
published atomically.

A root is built in a hidden temporary folder beside its destination and moved
into place only when complete, so an error or a kill part-way leaves either
no root or the previous one intact. Left-overs of killed writers are cleaned
up by the next write to the same destination.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._version import __version__
from ..decode import DEFAULT_QUALITY, Codec, check_codec, encode_frame
from ..errors import ParameterError, ParameterTypeError, RootExistsError
from ..frames import FRAME_SCHEMA, LANCE_VERSION_FIELD
from ..layout import LAYOUT_NAME, METADATA_FILENAME
from ..layout.text import encode_metadata
from ..location import is_object_store_uri, lance_options
from .append import WriteMode, appending, pid_alive, resolve_mode, write_lock
from .frame_table import write_fragments, write_frame_table
from .store_roots import appending_store, creating_store_root
from .streams import frame_streams, stream_entries, with_streams
from .video_batches import check_frame, frame_batches, video_batches  # noqa: F401  (re-exported)
from .videos import VideoChecks, VideoInput, check_metadata, video_input  # noqa: F401

logger = logging.getLogger(__name__)


def frame_encoder(
    codec: Codec, quality: int | None, lossless: bool
) -> Callable[[np.ndarray], bytes]:
    """``frame -> bytes`` for settings as :func:`hf_lvf.decode.check_codec` returns them."""
    return functools.partial(encode_frame, codec=codec, quality=quality, lossless=lossless)


def check_same_encoding(raw: Mapping[str, Any], codec: str, quality: Any, lossless: bool) -> None:
    """Appending or merging: frames must be encoded as the root's (a missing ``encoding``
    is WebP, FORMAT.md; a missing ``lossless`` or a null ``quality`` is unknown)."""
    check_same_setting({"encoding": "webp", **raw}, "encoding", codec, argument="codec")
    check_same_setting(raw, "lossless", lossless)
    check_same_setting(raw, "quality", quality)


def schema_fingerprint(schema: pa.Schema = FRAME_SCHEMA) -> str:
    return hashlib.sha256(schema.to_string().encode()).hexdigest()[:16]


def build_metadata(
    videos: list[dict[str, Any]],
    *,
    codec: Codec = "webp",
    quality: int | None,
    lossless: bool = False,
    resize: Any = None,
    n_skipped: int = 0,
    lineage: Mapping[str, Any] | None = None,
    schema: pa.Schema = FRAME_SCHEMA,
    video_column: str = "video",
    streams: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``_metadata.json`` object for a video table (entries as in FORMAT.md) whose Lance
    table has ``schema``; ``streams``: its image streams' entries (FORMAT.md), if any."""
    num_rows = sum(v["T"] for v in videos)
    extra = {"streams": dict(streams)} if streams else {}
    return {
        "cache_format_version": 1,
        "format": "lance",
        "layout": LAYOUT_NAME,
        "schema_fingerprint": schema_fingerprint(schema),
        "num_rows": num_rows,
        "total_rows": num_rows,
        "n_videos": len(videos),
        "n_skipped": n_skipped,
        "encoding": codec,
        "quality": quality,
        "lossless": lossless,
        "resize": resize,
        "video_column": video_column,
        **extra,
        "videos": videos,
        "lineage": {"writer": f"hf_lvf {__version__}", **dict(lineage or {})},
    }


def write_metadata(folder: Path, metadata: Mapping[str, Any]) -> None:
    (folder / METADATA_FILENAME).write_bytes(encode_metadata(metadata))


# --- atomic publication ---


def _scratch_name(root: Path, kind: str) -> Path:
    return root.parent / f".{root.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def recover(root: Path) -> None:
    """Clean up after writers of ``root`` that were killed: drop their scratch folders,
    and put back a previous root that a kill caught between the two renames of a replace."""
    for path in root.parent.glob(f".{root.name}.*-*-*"):
        kind, _, rest = path.name[len(root.name) + 2 :].partition("-")
        pid_text = rest.split("-", 1)[0]
        if kind not in ("tmp", "old") or not pid_text.isdigit() or pid_alive(int(pid_text)):
            continue
        if kind == "old" and not root.exists():
            logger.warning("restoring %s from an interrupted replace (%s)", root, path)
            path.rename(root)
        else:
            logger.info("removing %s left by an interrupted write", path)
            shutil.rmtree(path, ignore_errors=True)


def sub_roots(folder: Path) -> list[Path]:
    """The roots in a folder of roots (one per split or camera, or a split's folder of roots:
    as ``load_dataset(data_dir=...)`` finds them); none in a root or a missing folder."""
    if not folder.is_dir() or (folder / METADATA_FILENAME).exists():
        return []
    found = []
    for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if (child / METADATA_FILENAME).exists():
            found.append(child)
        else:
            found += [p.parent for p in sorted(child.glob(f"[!.]*/{METADATA_FILENAME}"))]
    return found


@contextlib.contextmanager
def write_locks(root: Path) -> Iterator[None]:
    """The write lock of ``root`` and, of a folder of roots, of each root in it: replacing the
    folder never moves a root away from under a writer appending to it.

    Raises:
        BlockingIOError: another process is writing one of them.
    """
    with contextlib.ExitStack() as locks:
        for path in [root, *sub_roots(root)]:
            locks.enter_context(write_lock(path))
        yield


@contextlib.contextmanager
def atomic_root(root: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield an empty scratch folder; on success it becomes ``root``, on error it is removed.
    What was at ``root`` (a root, or a folder of roots) is replaced whole.

    Raises:
        FileExistsError: ``root`` exists and ``overwrite`` is false (checked before any work).
        BlockingIOError: another process is writing ``root`` (or a root in it).
    """
    root = Path(root).absolute()
    root.parent.mkdir(parents=True, exist_ok=True)
    with write_locks(root):
        recover(root)
        if root.exists() and not overwrite:
            raise RootExistsError(
                f"{str(root)!r} already exists; pass overwrite=True to replace it, or "
                "mode='append' to add videos to it"
            )
        with _publish_scratch(root) as scratch:
            yield scratch


@contextlib.contextmanager
def _publish_scratch(root: Path) -> Iterator[Path]:
    scratch = _scratch_name(root, "tmp")
    scratch.mkdir()
    try:
        yield scratch
        if root.exists():
            old = _scratch_name(root, "old")
            root.rename(old)
            scratch.rename(root)
            shutil.rmtree(old, ignore_errors=True)
        else:
            scratch.rename(root)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def write_frames(
    root: str | os.PathLike[str],
    videos: Iterable[
        tuple[str, Iterable[np.ndarray], Mapping[str, Any] | None] | Mapping[str, Any]
    ],
    *,
    codec: Codec = "webp",
    quality: int = DEFAULT_QUALITY,
    lossless: bool = False,
    mode: WriteMode = "create",
    overwrite: bool = False,
    lineage: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
    video_column: str = "video",
) -> Path | str:
    """Write videos given as frame arrays to a lance-video-frames root.

    Frames are streamed: each is encoded (WebP by default) as it arrives and written in
    small batches, so memory does not grow with video length. A new root
    appears only once it is complete; appended videos appear only once all of
    them are written.

    Args:
        root: folder to create (or to append to).
        videos: ``(key, frames, metadata)`` per video, or a mapping with the keys
            ``key``, ``frames`` and optionally ``metadata``, ``frame_fields`` and
            ``spans``. ``frames`` is an iterable of ``(H, W, 3)`` uint8 RGB arrays,
            ``metadata`` a mapping of scalar per-video fields (labels) or ``None``. ``key``
            is also recorded as the video's ``path``. ``frame_fields``: ``{name: values}``,
            ``(T, *shape)`` arrays of numbers or bools or ``T`` strings, one value per
            frame, written beside the frames; the first video's names, dtypes and shapes
            are the root's (a dotted name is a struct column, FORMAT.md). ``spans``:
            ``[{"start_frame", "end_frame" (exclusive), ...scalar fields}]``, written into
            the video's ``_metadata.json`` entry.
        codec: ``"webp"`` (the layout's own encoding, read by every reader of these
            roots), ``"jpeg"`` (decodes about 3x faster, for more bytes; see the
            converting guide) or ``"png"`` (lossless).
        quality: the encoder's quality, 0-100 (ignored where lossless; when appending,
            that of the root).
        lossless: lossless WebP (``codec="webp"`` only; ``"png"`` always is).
        mode: ``"create"`` refuses an existing root; ``"overwrite"`` replaces it
            (atomically); ``"append"`` adds the videos after those of an existing
            root without touching its frames, numbered after its ids, in one
            Lance commit (see the README: a kill leaves the root as it was).
        overwrite: ``True`` is ``mode="overwrite"`` (kept for older callers).
        lineage: free-form provenance stored in ``_metadata.json``.
        storage_options: for a root on an object store (``s3://...``), lance's options
            (credentials, endpoint; see the README); written nowhere.
        video_column: what ``bytes`` holds, recorded as ``video_column``. A frame may be a
            mapping ``{name: (H, W, 3) image}`` of several images (cameras): the one under
            ``video_column`` is stored in ``bytes``, each other one in an image stream of
            that name (FORMAT.md, "Image streams"; a dotted name is a struct column),
            encoded as ``bytes`` is and listed under ``streams`` in ``_metadata.json``.
            The first frame's names are the root's; every frame has them all.

    Returns:
        The root's path (its URL on an object store).

    Raises:
        ValueError, TypeError: a bad argument, frame or metadata value, naming the
            video and frame, a lossless JPEG, or (append) a key already in the root
            or a codec, quality or lossless other than the root's; per-frame fields of
            another length than the video's frames, or whose names, dtypes or shapes
            differ from the first video's (the root's, when appending); a span outside its
            video, with ``end_frame <= start_frame``, or with other fields than the others.
            Checked before anything is written for the videos of a list (a generator's
            as they come); nothing is left behind.
        FileExistsError: ``root`` exists and ``mode`` is ``"create"``.
        FileNotFoundError: ``mode="append"`` and ``root`` is not a root.

    Examples:
        >>> frames = [np.zeros((32, 48, 3), np.uint8)] * 4
        >>> write_frames(tmp / "root", [("clip0", frames, {"label": 1})])  # doctest: +SKIP
        >>> write_frames(tmp / "root", [("clip1", frames, None)], mode="append")  # doctest: +SKIP
        >>> episode = {"key": "ep0", "frames": frames, "frame_fields": {
        ...     "action": np.zeros((4, 6), np.float32)}, "spans": [
        ...     {"start_frame": 0, "end_frame": 4, "caption": "reach"}]}
        >>> write_frames(tmp / "robot", [episode])  # doctest: +SKIP
    """
    codec, quality, lossless = check_codec(codec, quality, lossless)
    encode = frame_encoder(codec, quality, lossless)
    settings = {"codec": codec, "quality": quality, "lossless": lossless}
    mode = resolve_mode(mode, overwrite)
    entries: list[dict[str, Any]] = []
    remote = is_object_store_uri(str(root))  # no rename there: see hf_lvf.write.store_roots
    storage_options = lance_options(storage_options) or None
    if mode == "append":
        with appending_store(str(root), storage_options) if remote else appending(root) as target:
            check_same_encoding(target.layout.header, codec, quality, lossless)
            ready, inputs = _prepared(videos)
            checks = _checks(
                ready,
                target.schema,
                where=f"root {str(target.root)!r}",
                spans=target.span_fields,
                known_keys=target.keys,
            )
            sizes: list[dict[str, tuple[int, int]]] = []
            batches = video_batches(
                inputs,
                entries,
                encode=encode,
                checks=checks,
                first_id=target.next_id,
                start_row=target.num_rows,
                video_column=target.layout.header.get("video_column", "video"),
                stream_sizes=sizes,
                proxies=root_proxies(target.layout.header),
            )
            fragments = write_fragments(batches, target.root, storage_options, schema=target.schema)
            _stream_sizes(entries, sizes, target.layout.header.get("streams") or {})
            target.commit(fragments, entries, lineage=lineage)
        return target.root
    if remote:
        overwrite = mode == "overwrite"
        with creating_store_root(
            str(root), overwrite=overwrite, storage_options=storage_options
        ) as stage:
            schema, batches, streams = _new_root_batches(videos, entries, encode, video_column)
            version = write_frame_table(
                batches, stage.uri, storage_options=storage_options, schema=schema
            )
            metadata = build_metadata(
                entries, **settings, lineage=lineage, schema=schema, **streams()
            )
            stage.publish({**metadata, LANCE_VERSION_FIELD: version})
        return stage.uri
    with atomic_root(root, overwrite=mode == "overwrite") as scratch:
        schema, batches, streams = _new_root_batches(videos, entries, encode, video_column)
        version = write_frame_table(batches, scratch, schema=schema)
        metadata = build_metadata(entries, **settings, lineage=lineage, schema=schema, **streams())
        write_metadata(scratch, {**metadata, LANCE_VERSION_FIELD: version})
    return Path(root).absolute()


def _new_root_batches(
    videos: Iterable[Any],
    entries: list[dict[str, Any]],
    encode: Callable[[np.ndarray], bytes],
    video_column: str = "video",
) -> tuple[pa.Schema, Iterator[pa.RecordBatch], Callable[[], dict[str, Any]]]:
    """The Lance schema of a new root (its first video's fields, and the image streams of
    its first frame), its batches, the videos known up front checked already, and
    ``streams()``: the metadata arguments of its streams, once the batches are written."""
    ready, inputs = _prepared(videos)
    schema = ready[0].schema if ready else FRAME_SCHEMA
    names = _first_streams(ready[0], video_column) if ready else []
    schema = with_streams(schema, names)
    where = f"video {ready[0].key if ready else None!r} (the first)"
    sizes: list[dict[str, tuple[int, int]]] = []
    batches = video_batches(
        inputs,
        entries,
        encode=encode,
        checks=_checks(ready, schema, where=where),
        video_column=video_column,
        stream_sizes=sizes,
    )
    encoding = {"codec": encode.keywords["codec"], "quality": encode.keywords["quality"]}
    encoding["lossless"] = encode.keywords["lossless"]

    def streams() -> dict[str, Any]:
        found = {"video_column": video_column}
        if names:
            found["streams"], _ = stream_entries(names, sizes, **encoding)
            _stream_sizes(entries, sizes, found["streams"])
        return found

    return schema, batches, streams


def root_proxies(header: Mapping[str, Any]) -> dict[str, tuple[int, Callable]]:
    """``{name: (shorter side, encode)}`` of a root's proxy streams of ``bytes``: what an
    appended frame's proxies are made with (the side as :func:`~hf_lvf.write.add_proxy` recorded
    it, else the shorter side of the stream's size)."""
    found = {}
    for name, entry in (header.get("streams") or {}).items():
        if isinstance(entry, Mapping) and entry.get("proxy_of") == "bytes":
            side = entry.get("size") or min(int(entry["H"]), int(entry["W"]))
            codec, quality, lossless = check_codec(
                entry.get("encoding", "jpeg"), entry.get("quality") or DEFAULT_QUALITY, False
            )
            found[name] = (int(side), frame_encoder(codec, quality, lossless))
    return found


def _first_streams(video: VideoInput, video_column: str) -> list[str]:
    """The image streams of ``video``'s first frame (put back in front of its frames)."""
    frames = video.frames
    if isinstance(frames, Sequence | np.ndarray):
        first = frames[0] if len(frames) else None
    else:
        try:
            items = iter(frames)
        except TypeError:
            return []  # refused, naming the video, where its frames are taken
        first = next(items, None)
        video.frames = items if first is None else itertools.chain([first], items)
    if first is None:
        return []
    return frame_streams(first, video_column, key=video.key, frame_idx=0)


def _stream_sizes(
    entries: list[dict[str, Any]],
    sizes: list[dict[str, tuple[int, int]]],
    streams: Mapping[str, Any],
) -> None:
    """Each video's entry states the sizes of its streams that differ from the root's."""
    for entry, video in zip(entries[len(entries) - len(sizes) :], sizes, strict=True):
        differ = {
            name: {"H": int(h), "W": int(w)}
            for name, (h, w) in video.items()
            if name in streams and (h, w) != (streams[name].get("H"), streams[name].get("W"))
        }
        if differ:
            entry["streams"] = differ


def _prepared(videos: Iterable[Any]) -> tuple[list[VideoInput], Iterator[VideoInput]]:
    """``(the videos checked up front, all videos)``: a sequence is checked whole before any
    frame is written; of another iterable, only its first video (whose fields are a new
    root's schema), the others as they come."""
    if isinstance(videos, Sequence) and not isinstance(videos, str):
        ready = [video_input(item, i) for i, item in enumerate(videos)]
        return ready, iter(ready)
    if not isinstance(videos, Iterable):
        raise ParameterTypeError(
            f"videos must be an iterable of videos, got {type(videos).__name__}"
        )
    items = iter(videos)
    ready = [video_input(item, 0) for item in itertools.islice(items, 1)]
    rest = (video_input(item, i) for i, item in enumerate(items, start=1))
    return ready, itertools.chain(ready, rest)


def _checks(ready: list[VideoInput], schema: pa.Schema, **root: Any) -> VideoChecks:
    """Check the videos known up front against each other and the root (before anything is
    written); return fresh checks for the write itself."""
    up_front = VideoChecks(schema, **root)
    for video in ready:
        up_front.check(video)
    return VideoChecks(schema, **root)


def check_same_setting(
    raw: Mapping[str, Any], name: str, value: Any, *, argument: str | None = None
) -> None:
    """Appending: ``value`` (of the argument ``argument``, default ``name``) must be the
    root's recorded ``name`` (when it records one), so the root-level field stays true of
    every frame. A ``quality`` of ``None`` is unknown."""
    argument = argument or name
    if name in raw and raw[name] != value and not (name == "quality" and raw[name] is None):
        raise ParameterError(
            f"{argument}={value!r} differs from the root's {name} {raw[name]!r}: appended "
            f"videos must be written like the others; pass {argument}={raw[name]!r}"
        )
