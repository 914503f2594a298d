"""Several roots -> one, copying the encoded bytes of every frame as they are (no re-encoding)."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._version import __version__
from ..errors import LayoutError, ParameterError, SkippedVideoWarning
from ..frames import (
    FRAME_SCHEMA,
    LANCE_VERSION_FIELD,
    pinned_version,
    scan_frame_rows,
    table_schema,
)
from ..layout import RootLayout, raw_entry_objects, read_layout
from ..location import is_hub_uri, is_object_store_uri, lance_options, pin_root
from .frame_table import frame_table_schema, write_frame_table
from .store_roots import check_store_uri, creating_store_root
from .streams import entry_sizes
from .videos import check_same_fields, check_same_span_fields, span_field_kinds
from .writer import atomic_root, check_same_encoding, write_metadata

logger = logging.getLogger(__name__)

# Top-level fields that describe every frame of a root: kept when all inputs agree.
_SHARED_FIELDS = ("quality", "lossless", "resize", "encoding", "label_names")


def merge_roots(
    roots: Sequence[str | os.PathLike[str]],
    dest: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> Path | str:
    """Build one root from several, copying every frame's encoded bytes unchanged.

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
            the same key, or their ``label_names`` differ, or their frames are encoded
            differently (``encoding``, ``quality`` or ``lossless``): a root-level field
            must stay true of every frame. All checked before anything is written.
        FileExistsError: ``dest`` exists and ``overwrite`` is false.
        RootNotFoundError, LayoutError: a root is missing or malformed.

    A video whose source checksum is already in an earlier root is skipped with
    a :class:`~hf_lvf.errors.SkippedVideoWarning`. Fields such as ``resize`` are
    kept when every root agrees, else left out (each input's are
    in ``lineage.merged_from``).

    Examples:
        >>> merge_roots(["week1", "week2"], "all_weeks")  # doctest: +SKIP
    """
    if isinstance(roots, (str, os.PathLike)) or not roots:
        raise ParameterError(f"roots must be a non-empty list of roots, got {roots!r}")
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
            raise ParameterError(f"dest {str(dest)!r} is also one of the roots to merge")
        inputs.append((read_layout(uri, storage_options=options or None), options))
    _check_same_encoding([layout for layout, _ in inputs])
    schema = _check_same_fields(inputs)
    plan = _plan([layout for layout, _ in inputs])
    metadata = _merged_metadata([layout for layout, _ in inputs], plan.entries)

    def batches() -> Iterator[pa.RecordBatch]:
        for (layout, options), new_ids in zip(inputs, plan.new_ids, strict=True):
            yield from _copy(layout, options, new_ids, schema)

    if remote:  # no rename there: see hf_lvf.write.store_roots
        options = dict(storage_options or {}) or None
        with creating_store_root(
            str(dest_path), overwrite=overwrite, storage_options=options
        ) as stage:
            version = write_frame_table(
                batches(), stage.uri, storage_options=options, schema=schema
            )
            stage.publish({**metadata, LANCE_VERSION_FIELD: version})
        return stage.uri
    with atomic_root(dest_path, overwrite=overwrite) as scratch:
        version = write_frame_table(batches(), scratch, schema=schema)
        write_metadata(scratch, {**metadata, LANCE_VERSION_FIELD: version})
    logger.info("merged %d roots into %s (%d videos)", len(inputs), dest_path, len(plan.entries))
    return dest_path


class _Plan:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.new_ids: list[np.ndarray] = []  # per root: new id per video, -1 = dropped


def _first_of_each(values: pa.Array) -> np.ndarray:
    """For each position, whether it holds the first occurrence of its (non-null) value."""
    codes = pc.dictionary_encode(values).indices.to_numpy(zero_copy_only=False)
    valid = ~np.asarray(values.is_null())
    first = np.zeros(len(values), bool)
    _, where = np.unique(np.where(valid, codes, -1), return_index=True)
    first[where] = True
    return first | ~valid


def _plan(layouts: list[RootLayout]) -> _Plan:
    """Which videos the merge keeps (a repeated checksum is skipped), their new ids and rows,
    from the columns of all roots at once."""
    tables = [layout.table.select(["id", "T", "key", "path", "checksum"]) for layout in layouts]
    table = pa.concat_tables(tables).combine_chunks()
    root = np.repeat(np.arange(len(layouts)), [len(layout) for layout in layouts])
    keep = _first_of_each(table.column("checksum").chunk(0))
    checksums, paths = table.column("checksum"), table.column("path")
    for v in np.flatnonzero(~keep):
        first = int(np.flatnonzero(pc.equal(checksums, checksums[int(v)]).to_numpy(False))[0])
        warnings.warn(
            f"skipped video {paths[int(v)].as_py()!r} of root {layouts[root[v]].uri!r}: the same "
            f"source (checksum) is already merged as {paths[first].as_py()!r}",
            SkippedVideoWarning,
            stacklevel=3,
        )
    kept = np.flatnonzero(keep)
    keys = pc.coalesce(table.column("key"), paths).take(kept).combine_chunks()
    unique = _first_of_each(keys)
    if not unique.all():
        v = int(np.flatnonzero(~unique)[0])
        first = int(np.flatnonzero(pc.equal(keys, keys[v]).to_numpy(False))[0])
        raise ParameterError(
            f"video key {keys[v].as_py()!r} is in root {layouts[root[kept[first]]].uri!r} and in "
            f"root {layouts[root[kept[v]]].uri!r}; keys must be unique in a root"
        )
    offsets = np.cumsum([0] + [int(layout.ids.max()) + 1 for layout in layouts])[:-1]
    new_ids = np.where(keep, table.column("id").to_numpy() + offsets[root], -1)
    frames = table.column("T").to_numpy()[kept]
    starts = np.concatenate([[0], np.cumsum(frames)[:-1]]).tolist()
    plan = _Plan()
    bounds = np.cumsum([0] + [len(layout) for layout in layouts])
    plan.new_ids = [new_ids[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    into = layouts[0].header.get("streams") or {}
    entries = [
        entry_sizes(e, layout.header.get("streams") or {}, into) if into else e
        for layout in layouts
        for e in raw_entry_objects(layout)
    ]
    plan.entries = [
        {**entries[v], "id": i, "start_row": start}
        for v, i, start in zip(kept.tolist(), new_ids[kept].tolist(), starts, strict=True)
    ]
    return plan


def _check_same_encoding(layouts: list[RootLayout]) -> None:
    """Every root's frames encoded as the first's, so ``encoding``, ``quality`` and
    ``lossless`` stay true of every frame of the merged root."""
    first = layouts[0].header
    for layout in layouts[1:]:
        header = layout.header
        try:
            check_same_encoding(
                first,
                header.get("encoding", "webp"),
                header.get("quality"),
                header.get("lossless", first.get("lossless")),
            )
        except ValueError as err:
            raise ParameterError(
                f"cannot merge {layout.uri!r} into a root with {layouts[0].uri!r}: {err}"
            ) from None


def _check_same_fields(inputs: list[tuple[RootLayout, dict[str, str]]]) -> pa.Schema:
    """The Lance schema of the merged root: every root's per-frame fields, and the fields
    of their spans, must be the first's (a frame or span of the merged root would lack a
    value otherwise). Returns the first root's schema."""
    schemas = [
        table_schema(layout.uri, pinned_version(layout), storage_options=options or None)
        for layout, options in inputs
    ]
    spans = [
        span_field_kinds(s for entry in raw_entry_objects(layout) for s in entry.get("spans") or ())
        for layout, _ in inputs
    ]
    first, seen = inputs[0][0].uri, (spans[0], inputs[0][0].uri)
    for (layout, _), schema, fields in zip(inputs, schemas, spans, strict=True):
        what = f"root {layout.uri!r}"
        check_same_fields(schema, schemas[0], what=what, where=f"root {first!r}")
        check_same_span_fields(fields, seen[0], what=what, where=f"root {seen[1]!r}")
        if fields and not seen[0]:
            seen = (fields, layout.uri)
    return frame_table_schema([f for f in schemas[0] if f.name not in FRAME_SCHEMA.names])


def _merged_metadata(layouts: list[RootLayout], entries: list[dict[str, Any]]) -> dict[str, Any]:
    headers = [layout.header for layout in layouts]
    first = headers[0]
    metadata = {k: v for k, v in first.items() if k not in (LANCE_VERSION_FIELD, "lineage")}
    for name in _SHARED_FIELDS:
        values = [header.get(name) for header in headers]
        if name == "label_names" and any(v != values[0] for v in values):
            raise ParameterError(
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
        n_skipped=sum(int(header.get("n_skipped") or 0) for header in headers),
        lineage={
            "writer": f"hf_lvf {__version__}",
            "merged_from": [
                {
                    "uri": layout.uri,
                    LANCE_VERSION_FIELD: pinned_version(layout),
                    "n_videos": len(layout),
                    **{name: header[name] for name in _SHARED_FIELDS if name in header},
                    "lineage": header.get("lineage"),
                }
                for layout, header in zip(layouts, headers, strict=True)
            ],
        },
    )
    return metadata


def _copy(
    layout: RootLayout, options: Mapping[str, str], new_ids: np.ndarray, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """The rows of one root as batches of ``schema`` with the new ids; the ``video_id`` and
    ``frame_idx`` of a row follow from its position (FORMAT.md), its bytes and per-frame
    fields are copied."""
    starts = layout.start_rows
    row = 0
    copied = ["bytes", *schema.names[len(FRAME_SCHEMA) :]]
    for batch in scan_frame_rows(
        layout.uri, copied, version=pinned_version(layout), storage_options=options or None
    ):
        rows = np.arange(row, row + len(batch))
        row += len(batch)
        video_idx = np.searchsorted(starts, rows, side="right") - 1
        ids = new_ids[video_idx]
        keep = ids >= 0
        if not keep.any():
            continue
        batch = batch if keep.all() else batch.filter(pa.array(keep))
        yield pa.record_batch(
            [
                pa.array(ids[keep].astype(np.int32)),
                pa.array((rows - starts[video_idx])[keep].astype(np.int32)),
                batch.column(0).cast(pa.large_binary()),
                *batch.columns[1:],
            ],
            schema=schema,
        )
    if row != layout.num_rows:
        raise LayoutError(
            f"{layout.metadata_path}: the videos account for {layout.num_rows} rows but the "
            f"Lance table at {layout.uri!r} has {row}"
        )
