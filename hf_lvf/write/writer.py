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
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._version import __version__
from ..decode import DEFAULT_QUALITY, Codec, check_codec, encode_frame
from ..frames import FRAME_SCHEMA, LANCE_VERSION_FIELD, write_fragments, write_frame_table
from ..layout import LAYOUT_NAME, METADATA_FILENAME, SAMPLE_KEYS, VideoInfo
from ..layout.text import encode_metadata
from ..location import is_object_store_uri, lance_options
from .append import WriteMode, appending, pid_alive, resolve_mode, write_lock
from .store_roots import appending_store, creating_store_root

logger = logging.getLogger(__name__)

# Frames per record batch handed to lance: bounds the writer's memory to a few MB.
_ROWS_PER_BATCH = 32


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


def check_metadata(key: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per-video metadata as JSON scalars; numpy scalars become Python ones."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata of video {key!r} must be a mapping, got {metadata!r}")
    clean = {}
    for name, value in metadata.items():
        if not isinstance(name, str):
            raise TypeError(f"metadata field names of video {key!r} must be str, got {name!r}")
        if name in SAMPLE_KEYS:
            raise ValueError(
                f"metadata field {name!r} of video {key!r} would shadow the sample key of that name"
            )
        if isinstance(value, np.generic):
            value = value.item()
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise TypeError(
                f"metadata field {name!r} of video {key!r} must be a str, int, float, bool or "
                f"None, got {value!r}"
            )
        clean[name] = value
    return clean


def check_frame(frame: Any, key: str, frame_idx: int, size: tuple[int, int] | None) -> np.ndarray:
    """A frame as a ``(H, W, 3)`` uint8 array, of the same size as the video's first."""
    array = np.asarray(frame)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(
            f"frame {frame_idx} of video {key!r} must be a (H, W, 3) uint8 RGB array, got shape "
            f"{array.shape} dtype {array.dtype}"
        )
    if size is not None and array.shape[:2] != size:
        raise ValueError(
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
) -> Iterator[pa.RecordBatch]:
    """Encode one video's frames into record batches of the frame schema, streaming.

    ``on_frame((H, W))`` is called once per frame, after it is checked, so the
    caller can count frames and learn the size without holding any.
    """
    size: tuple[int, int] | None = None
    blobs: list[bytes] = []
    first = 0
    try:
        frames = iter(frames)
    except TypeError as err:
        raise TypeError(
            f"frames of video {key!r} must be an iterable of arrays, got {type(frames).__name__}"
        ) from err
    for frame_idx, frame in enumerate(frames):
        array = check_frame(frame, key, frame_idx, size)
        size = array.shape[:2]
        blobs.append(encode(np.ascontiguousarray(array)))
        on_frame(size)
        if len(blobs) == _ROWS_PER_BATCH:
            yield _batch(video_id, first, blobs)
            first += len(blobs)
            blobs = []
    if blobs:
        yield _batch(video_id, first, blobs)


def _batch(video_id: int, first: int, blobs: list[bytes]) -> pa.RecordBatch:
    n = len(blobs)
    return pa.record_batch(
        [
            pa.array(np.full(n, video_id, np.int32)),
            pa.array(np.arange(first, first + n, dtype=np.int32)),
            pa.array(blobs, pa.large_binary()),
        ],
        schema=FRAME_SCHEMA,
    )


def schema_fingerprint() -> str:
    return hashlib.sha256(FRAME_SCHEMA.to_string().encode()).hexdigest()[:16]


def build_metadata(
    videos: list[dict[str, Any]],
    *,
    codec: Codec = "webp",
    quality: int | None,
    lossless: bool = False,
    resize: Any = None,
    n_skipped: int = 0,
    lineage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``_metadata.json`` object for a video table (entries as in FORMAT.md)."""
    num_rows = sum(v["T"] for v in videos)
    return {
        "cache_format_version": 1,
        "format": "lance",
        "layout": LAYOUT_NAME,
        "schema_fingerprint": schema_fingerprint(),
        "num_rows": num_rows,
        "total_rows": num_rows,
        "n_videos": len(videos),
        "n_skipped": n_skipped,
        "encoding": codec,
        "quality": quality,
        "lossless": lossless,
        "resize": resize,
        "video_column": "video",
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


@contextlib.contextmanager
def atomic_root(root: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield an empty scratch folder; on success it becomes ``root``, on error it is removed.

    Raises:
        FileExistsError: ``root`` exists and ``overwrite`` is false (checked before any work).
    """
    root = Path(root).absolute()
    root.parent.mkdir(parents=True, exist_ok=True)
    with write_lock(root):
        recover(root)
        if root.exists() and not overwrite:
            raise FileExistsError(
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
    videos: Iterable[tuple[str, Iterable[np.ndarray], Mapping[str, Any] | None]],
    *,
    codec: Codec = "webp",
    quality: int = DEFAULT_QUALITY,
    lossless: bool = False,
    mode: WriteMode = "create",
    overwrite: bool = False,
    lineage: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Path | str:
    """Write videos given as frame arrays to a lance-video-frames root.

    Frames are streamed: each is encoded (WebP by default) as it arrives and written in
    small batches, so memory does not grow with video length. A new root
    appears only once it is complete; appended videos appear only once all of
    them are written.

    Args:
        root: folder to create (or to append to).
        videos: ``(key, frames, metadata)`` per video; ``frames`` is an iterable of
            ``(H, W, 3)`` uint8 RGB arrays, ``metadata`` a mapping of scalar
            per-video fields (labels) or ``None``. ``key`` is also recorded as the
            video's ``path``.
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

    Returns:
        The root's path (its URL on an object store).

    Raises:
        ValueError, TypeError: a bad argument, frame or metadata value, naming the
            video and frame, a lossless JPEG, or (append) a key already in the root
            or a codec, quality or lossless other than the root's; nothing is left
            behind.
        FileExistsError: ``root`` exists and ``mode`` is ``"create"``.
        FileNotFoundError: ``mode="append"`` and ``root`` is not a root.

    Examples:
        >>> frames = [np.zeros((32, 48, 3), np.uint8)] * 4
        >>> write_frames(tmp / "root", [("clip0", frames, {"label": 1})])  # doctest: +SKIP
        >>> write_frames(tmp / "root", [("clip1", frames, None)], mode="append")  # doctest: +SKIP
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
            batches = _video_batches(
                videos,
                entries,
                encode=encode,
                first_id=target.next_id,
                start_row=target.num_rows,
                known_keys=target.keys,
            )
            fragments = write_fragments(batches, target.root, storage_options)
            target.commit(fragments, entries, lineage=lineage)
        return target.root
    if remote:
        overwrite = mode == "overwrite"
        with creating_store_root(
            str(root), overwrite=overwrite, storage_options=storage_options
        ) as stage:
            batches = _video_batches(videos, entries, encode=encode)
            version = write_frame_table(batches, stage.uri, storage_options=storage_options)
            metadata = build_metadata(entries, **settings, lineage=lineage)
            stage.publish({**metadata, LANCE_VERSION_FIELD: version})
        return stage.uri
    with atomic_root(root, overwrite=mode == "overwrite") as scratch:
        batches = _video_batches(videos, entries, encode=encode)
        version = write_frame_table(batches, scratch)
        metadata = build_metadata(entries, **settings, lineage=lineage)
        write_metadata(scratch, {**metadata, LANCE_VERSION_FIELD: version})
    return Path(root).absolute()


def check_same_setting(
    raw: Mapping[str, Any], name: str, value: Any, *, argument: str | None = None
) -> None:
    """Appending: ``value`` (of the argument ``argument``, default ``name``) must be the
    root's recorded ``name`` (when it records one), so the root-level field stays true of
    every frame. A ``quality`` of ``None`` is unknown."""
    argument = argument or name
    if name in raw and raw[name] != value and not (name == "quality" and raw[name] is None):
        raise ValueError(
            f"{argument}={value!r} differs from the root's {name} {raw[name]!r}: appended "
            f"videos must be written like the others; pass {argument}={raw[name]!r}"
        )


def _video_batches(
    videos: Iterable[Any],
    entries: list[dict[str, Any]],
    *,
    encode: Callable[[np.ndarray], bytes],
    first_id: int = 0,
    start_row: int = 0,
    known_keys: Iterable[str] = (),
) -> Iterator[pa.RecordBatch]:
    """Record batches of every video, in order; each video's entry is added to ``entries``
    once its frames are written."""
    known = set(known_keys)
    keys: set[str] = set()
    for position, video in enumerate(videos):
        video_id = first_id + position
        key, frames, metadata = _unpack(video, position)
        if key in known:
            raise ValueError(f"video key {key!r} is already in the root; keys must be unique")
        if key in keys:
            raise ValueError(f"video key {key!r} appears twice; keys must be unique")
        keys.add(key)
        meta = check_metadata(key, metadata)
        seen = {"T": 0, "size": (0, 0)}

        def on_frame(size: tuple[int, int], seen=seen) -> None:
            seen["T"] += 1
            seen["size"] = size

        yield from frame_batches(video_id, key, frames, encode=encode, on_frame=on_frame)
        if seen["T"] == 0:
            raise ValueError(f"video {key!r} has no frames")
        height, width = seen["size"]
        entries.append(
            VideoInfo(
                video_idx=len(entries),
                id=video_id,
                key=key,
                path=key,
                num_frames=seen["T"],
                height=height,
                width=width,
                start_row=start_row,
                metadata=meta,
            ).to_json()
        )
        start_row += seen["T"]
    if not entries:
        raise ValueError("videos is empty: a root needs at least one video")


def _unpack(video: Any, video_id: int) -> tuple[str, Iterable[Any], Mapping[str, Any] | None]:
    if not isinstance(video, tuple) or len(video) != 3:
        raise TypeError(
            f"videos[{video_id}] must be a (key, frames, metadata) tuple, "
            f"got {type(video).__name__}"
        )
    key, frames, metadata = video
    if not isinstance(key, str) or not key:
        raise TypeError(f"videos[{video_id}] key must be a non-empty str, got {key!r}")
    return key, frames, metadata
