"""Where a conversion writes: a new root (built aside, renamed into place) or an existing
one it appends to (fragments written into it, one commit; see :mod:`hf_lvf.write.append`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import ParameterError
from ..frames import FRAME_SCHEMA, LANCE_VERSION_FIELD
from ..layout import METADATA_FILENAME, read_layout
from ..location import delete_store_file, is_object_store_uri, list_store_files
from ..write.append import AppendTarget, WriteMode, appending, fidelity_summary
from ..write.frame_table import commit_fragments
from ..write.store_roots import StoreStage, appending_store, creating_store_root
from ..write.writer import (
    atomic_root,
    build_metadata,
    check_same_encoding,
    check_same_setting,
    write_metadata,
)
from .decoding import _FrameOptions, _sha256
from .import_worker import clip_checksum
from .pool import _CANCEL_MARKER, _PROGRESS_PREFIX
from .source_parts import Clip
from .sources import _Source


@contextlib.contextmanager
def _destination(
    root: str | os.PathLike[str], mode: WriteMode, storage_options: Mapping[str, str] | None
) -> Iterator[tuple[Path | StoreStage, AppendTarget | None]]:
    """``(folder the workers write into, the append target or None)``; on an object store
    the "folder" of a new root is a :class:`~hf_lvf.write.store_roots.StoreStage` (``str()`` of it
    is the root's URL) and the workers write into the root itself."""
    if is_object_store_uri(str(root)):
        with _store_destination(str(root), mode, storage_options) as destination:
            yield destination
    elif mode == "append":
        with appending(root) as target:
            # The workers write into the root itself, so the marker that cancels them and
            # their progress files must not outlive this run, nor a killed earlier one (a
            # scratch folder would have taken them along).
            _remove_run_files(target.root)
            try:
                yield target.root, target
            finally:
                _remove_run_files(target.root)
    else:
        with atomic_root(root, overwrite=mode == "overwrite") as scratch:
            yield scratch, None


@contextlib.contextmanager
def _store_destination(
    uri: str, mode: WriteMode, storage_options: Mapping[str, str] | None
) -> Iterator[tuple[StoreStage | str, AppendTarget | None]]:
    if mode != "append":
        overwrite = mode == "overwrite"
        with creating_store_root(
            uri, overwrite=overwrite, storage_options=storage_options
        ) as stage:
            _remove_store_run_files(stage.uri, storage_options)  # of a killed run
            try:
                yield stage, None
            finally:
                _remove_store_run_files(stage.uri, storage_options)
        return
    with appending_store(uri, storage_options) as target:
        _remove_store_run_files(str(target.root), storage_options)
        try:
            yield str(target.root), target
        finally:
            _remove_store_run_files(str(target.root), storage_options)


def _remove_run_files(root: Path) -> None:
    (root / _CANCEL_MARKER).unlink(missing_ok=True)
    for progress in root.glob(f"{_PROGRESS_PREFIX}*"):
        progress.unlink(missing_ok=True)


def _remove_store_run_files(uri: str, storage_options: Mapping[str, str] | None) -> None:
    for note in list_store_files(uri, storage_options, recursive=False):
        if note.name == _CANCEL_MARKER or note.name.startswith(_PROGRESS_PREFIX):
            delete_store_file(f"{uri}/{note.name}", storage_options)


def _write_new_metadata(folder: Path | StoreStage, metadata: Mapping[str, Any]) -> None:
    """Write a new root's ``_metadata.json``: into its scratch folder, or, on an object
    store, published in one PUT (see :mod:`hf_lvf.write.store_roots`)."""
    if isinstance(folder, StoreStage):
        folder.publish(metadata)
    else:
        write_metadata(folder, metadata)


def _known_labels(
    root: str | os.PathLike[str], mode: WriteMode, storage_options: Mapping[str, str] | None
) -> list[str] | None:
    """The class names of the root an append adds to (its new folder labels index them)."""
    if mode == "append" and is_object_store_uri(str(root)):
        try:
            names = read_layout(str(root), storage_options=storage_options).header.get(
                "label_names"
            )
        except FileNotFoundError:  # not a root: the append says so
            return None
        return list(names) if isinstance(names, list) else None
    if mode != "append" or not (Path(root) / METADATA_FILENAME).is_file():
        return None
    names = read_layout(str(Path(root).absolute())).header.get("label_names")
    return list(names) if isinstance(names, list) else None


def _recorded_resize(options: _FrameOptions) -> int | list[int] | None:
    """``resize`` as ``_metadata.json`` records it."""
    return list(options.resize) if isinstance(options.resize, tuple) else options.resize


def _plan_append(
    sources: list[_Source],
    target: AppendTarget,
    options: _FrameOptions,
    label_names: list[str] | None,
    *,
    schema: pa.Schema = FRAME_SCHEMA,
    span_fields: Mapping[str, str] | None = None,
) -> tuple[list[_Source], list[tuple[str, str]]]:
    """The sources to convert into ``target``, and ``(path, reason)`` of those skipped as
    already in the root (by SHA-256 of the file, also among the new ones). ``schema``: the
    Lance schema of the converted rows; ``span_fields``: the fields of their spans.

    Raises:
        ValueError: the conversion settings, labels, per-frame fields or span fields differ
            from the root's, or a new video's key is taken by a different video of the root.
    """
    if any(s.clip is not None and s.clip.frames is not None for s in sources):
        # Per-frame values: their columns are known once converted (check_joins, before the
        # commit); the spans' fields too, in frames.
        schema = target.schema
    target.check_agrees(schema, span_fields, what="the converted videos")
    raw = target.layout.header
    check_same_encoding(raw, options.codec, options.quality, options.lossless)
    check_same_setting(raw, "resize", _recorded_resize(options))
    check_same_setting(raw, "crop", options.crop)
    lineage = raw.get("lineage")
    if isinstance(lineage, dict) and "fps" in lineage:
        fps = None if options.fps is None else float(options.fps)
        check_same_setting(lineage, "fps", fps)
    if raw.get("label_names") != label_names and ("label_names" in raw or label_names):
        raise ParameterError(
            f"the new videos' class folders give label_names {label_names!r} but the root has "
            f"{raw.get('label_names')!r}: appended videos must use the same classes"
        )
    checksums = dict(target.checksums)
    kept, duplicates = [], []
    for source in sources:
        clip = source.clip or Clip()
        checksum = source.checksum or clip_checksum(source.file, clip) or _sha256(source.file)
        if checksum in checksums:
            duplicates.append(
                (
                    source.path,
                    f"the same file (SHA-256) is already in the root as {checksums[checksum]!r}",
                )
            )
            continue
        if source.key in target.keys:
            raise ParameterError(
                f"the root already holds a different video with key {source.key!r} (new file "
                f"{source.file!r}); keys must be unique: rename the file"
            )
        checksums[checksum] = source.path
        kept.append(dataclasses.replace(source, checksum=checksum))  # workers need not hash again
    return kept, duplicates


def _write_new_root(
    scratch: Any,
    folder: Any,
    fragments: list[Any],
    entries: list[dict[str, Any]],
    options: _FrameOptions,
    facts: dict[str, Any],
    label_names: list[str] | None,
    schema: Any,
    storage_options: Mapping[str, str] | None,
) -> None:
    """Commit the fragments of a new root with ``schema`` and write its ``_metadata.json``
    (``facts``: ``n_skipped``, ``lineage``, ``measured`` frames of the fidelity measure)."""
    version = commit_fragments(folder, fragments, storage_options, schema=schema)
    metadata = build_metadata(
        entries,
        codec=options.codec,
        quality=options.quality,
        lossless=options.lossless,
        resize=_recorded_resize(options),
        n_skipped=facts["n_skipped"],
        lineage=facts["lineage"],
        schema=schema,
        video_column=facts.get("video_column", "video"),
        streams=facts.get("streams"),
    )
    if facts["measured"] is not None:
        metadata["fidelity"] = fidelity_summary(entries, facts["measured"])
    metadata["crop"] = options.crop
    metadata.update(facts.get("header") or {})  # an importer's own fields (LeRobot's meta)
    if label_names is not None:
        metadata["label_names"] = label_names
    _write_new_metadata(scratch, {**metadata, LANCE_VERSION_FIELD: version})
