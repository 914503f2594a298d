"""Several roots -> one, copying the WebP bytes of every frame as they are (no re-encoding)."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ._version import __version__
from .errors import LayoutError, SkippedVideoWarning
from .frames import (
    FRAME_SCHEMA,
    LANCE_VERSION_FIELD,
    pinned_version,
    scan_frame_bytes,
    write_frame_table,
)
from .layout import RootLayout, read_layout
from .location import is_hub_uri, is_object_store_uri, lance_options, pin_root
from .store_roots import check_store_uri, creating_store_root
from .writer import atomic_root, write_metadata

logger = logging.getLogger(__name__)

# Top-level fields that describe every frame of a root: kept when all inputs agree.
_SHARED_FIELDS = ("quality", "resize", "encoding", "label_names")


def merge_roots(
    roots: Sequence[str | os.PathLike[str]],
    dest: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> Path | str:
    """Build one root from several, copying every frame's WebP bytes unchanged.

    The videos follow each other in the order of ``roots``, then of each root's
    ``videos`` list. A video keeps its entry (key, path, checksum, metadata and
    any extra fields); its ``id`` is shifted past the ids of the roots before it
    (so merging the roots of two conversions gives the ids one conversion of all
    inputs would), and ``start_row`` follows the new row order. Frame sizes may
    differ between roots. Each root is read at the Lance version its
    ``_metadata.json`` names, so a root that grows meanwhile is read consistently.
    The destination appears only when complete.

    Args:
        roots: the roots to merge: local folders, ``hf://`` roots or URLs lance reads.
        dest: the local folder to create, or a URL on an object store (``s3://...``).
        overwrite: replace an existing ``dest`` (atomically) instead of refusing.
        storage_options: passed to lance for every root and for ``dest`` (object-store
            credentials).

    Returns:
        The new root's path (its URL on an object store).

    Raises:
        ValueError: ``roots`` is empty or names ``dest``, two roots hold a video of
            the same key, or their ``label_names`` differ.
        FileExistsError: ``dest`` exists and ``overwrite`` is false.
        RootNotFoundError, LayoutError: a root is missing or malformed.

    A video whose source checksum is already in an earlier root is skipped with
    a :class:`~hf_lvf.errors.SkippedVideoWarning`. Fields such as ``quality`` and
    ``resize`` are kept when every root agrees, else left out (each input's are
    in ``lineage.merged_from``).

    Example:
        >>> merge_roots(["week1", "week2"], "all_weeks")  # doctest: +SKIP
    """
    if isinstance(roots, (str, os.PathLike)) or not roots:
        raise ValueError(f"roots must be a non-empty list of roots, got {roots!r}")
    storage_options = lance_options(storage_options) or None
    remote = is_object_store_uri(str(dest))
    dest_path = check_store_uri(str(dest)) if remote else Path(dest).absolute()
    inputs = []
    for root in roots:
        uri, options = str(root), dict(storage_options or {})
        if is_hub_uri(uri):
            pinned = pin_root(uri, storage_options=options)
            uri, options = pinned.uri, dict(pinned.storage_options or {})
        elif (uri.rstrip("/") if remote else Path(uri).absolute()) == dest_path:
            raise ValueError(f"dest {str(dest)!r} is also one of the roots to merge")
        inputs.append((read_layout(uri, storage_options=options or None), options))
    plan = _plan([layout for layout, _ in inputs])
    metadata = _merged_metadata([layout for layout, _ in inputs], plan.entries)

    def batches() -> Iterator[pa.RecordBatch]:
        for (layout, options), new_ids in zip(inputs, plan.new_ids, strict=True):
            yield from _copy(layout, options, new_ids)

    if remote:  # no rename there: see hf_lvf.store_roots
        options = dict(storage_options or {}) or None
        with creating_store_root(
            str(dest_path), overwrite=overwrite, storage_options=options
        ) as stage:
            version = write_frame_table(batches(), stage.uri, storage_options=options)
            stage.publish({**metadata, LANCE_VERSION_FIELD: version})
        return stage.uri
    with atomic_root(dest_path, overwrite=overwrite) as scratch:
        version = write_frame_table(batches(), scratch)
        write_metadata(scratch, {**metadata, LANCE_VERSION_FIELD: version})
    logger.info("merged %d roots into %s (%d videos)", len(inputs), dest_path, len(plan.entries))
    return dest_path


class _Plan:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.new_ids: list[np.ndarray] = []  # per root: new id per video, -1 = dropped


def _plan(layouts: list[RootLayout]) -> _Plan:
    plan = _Plan()
    keys: dict[str, str] = {}
    checksums: dict[str, str] = {}
    offset, start_row = 0, 0
    for layout in layouts:
        new_ids = np.full(len(layout.videos), -1, np.int64)
        for video, raw in zip(layout.videos, layout.raw["videos"], strict=True):
            key = video.key if video.key is not None else video.path
            if video.checksum and video.checksum in checksums:
                warnings.warn(
                    f"skipped video {video.path!r} of root {layout.uri!r}: the same source "
                    f"(checksum) is already merged as {checksums[video.checksum]!r}",
                    SkippedVideoWarning,
                    stacklevel=3,
                )
                continue
            if key in keys:
                raise ValueError(
                    f"video key {key!r} is in root {keys[key]!r} and in root {layout.uri!r}; "
                    "keys must be unique in a root"
                )
            keys[key] = layout.uri
            if video.checksum:
                checksums[video.checksum] = video.path
            new_ids[video.video_idx] = offset + video.id
            plan.entries.append({**raw, "id": offset + video.id, "start_row": start_row})
            start_row += video.num_frames
        offset += max(v.id for v in layout.videos) + 1
        plan.new_ids.append(new_ids)
    return plan


def _merged_metadata(layouts: list[RootLayout], entries: list[dict[str, Any]]) -> dict[str, Any]:
    first = layouts[0].raw
    metadata = {k: v for k, v in first.items() if k not in (LANCE_VERSION_FIELD, "lineage")}
    for name in _SHARED_FIELDS:
        values = [layout.raw.get(name) for layout in layouts]
        if name == "label_names" and any(v != values[0] for v in values):
            raise ValueError(
                f"the roots have different label_names ({values!r}); their labels would not "
                "mean the same class"
            )
        if any(v != values[0] for v in values):
            metadata.pop(name, None)
    num_rows = sum(e["T"] for e in entries)
    metadata.update(
        videos=entries,
        num_rows=num_rows,
        total_rows=num_rows,
        n_videos=len(entries),
        n_skipped=sum(int(layout.raw.get("n_skipped") or 0) for layout in layouts),
        lineage={
            "writer": f"hf_lvf {__version__}",
            "merged_from": [
                {
                    "uri": layout.uri,
                    LANCE_VERSION_FIELD: pinned_version(layout),
                    "n_videos": len(layout.videos),
                    **{name: layout.raw[name] for name in _SHARED_FIELDS if name in layout.raw},
                    "lineage": layout.raw.get("lineage"),
                }
                for layout in layouts
            ],
        },
    )
    return metadata


def _copy(
    layout: RootLayout, options: Mapping[str, str], new_ids: np.ndarray
) -> Iterator[pa.RecordBatch]:
    """The rows of one root as frame-schema batches with the new ids; the ``video_id`` and
    ``frame_idx`` of a row follow from its position (FORMAT.md), its bytes are copied."""
    starts = layout.start_rows
    row = 0
    for column in scan_frame_bytes(
        layout.uri, version=pinned_version(layout), storage_options=options or None
    ):
        rows = np.arange(row, row + len(column))
        row += len(column)
        video_idx = np.searchsorted(starts, rows, side="right") - 1
        ids = new_ids[video_idx]
        keep = ids >= 0
        if not keep.any():
            continue
        yield pa.record_batch(
            [
                pa.array(ids[keep].astype(np.int32)),
                pa.array((rows - starts[video_idx])[keep].astype(np.int32)),
                column if keep.all() else column.filter(pa.array(keep)),
            ],
            schema=FRAME_SCHEMA,
        )
    if row != layout.num_rows:
        raise LayoutError(
            f"{layout.metadata_path}: the videos account for {layout.num_rows} rows but the "
            f"Lance table at {layout.uri!r} has {row}"
        )
