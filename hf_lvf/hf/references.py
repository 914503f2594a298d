"""Map-style rows: the references of windows (no pixels) and their scalar columns, as Arrow;
re-pointing them at a moved copy of their root (:func:`relocate_roots`).

What ``load_dataset("hf_lvf", ...)`` writes into its cache, a whole table of
windows at a time (not one example dict each): ``video`` holds the
:class:`~hf_lvf.WindowVideo` reference (:mod:`hf_lvf.hf.root_binding`: the root, its
identity, ``video_idx`` and ``start_frame``), the
other columns the sample's keys and metadata, typed by the dataset's features.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ParameterError, ParameterTypeError
from ..layout import RootLayout, read_layout
from ..read.samples import span_columns, span_fields
from ..read.windows import VideoWindows
from .feature import WindowVideo
from .field_columns import window_field_columns
from .root_binding import RootStamp, stamp_of


def reference_table(
    view: VideoWindows, stamp: RootStamp, idx: np.ndarray, schema: pa.Schema
) -> pa.Table:
    """Map-style rows of windows ``idx``: what identifies each window, no pixels, as columns.

    A reference's ``start_frame`` is the window's start in the plan's (virtual, with
    ``fps=``) frames, which decoding needs; the row's ``start_frame`` is its first stored
    frame, as in every sample.
    """
    video_idx, start_frame = view.plan.locate(idx)
    frame_indices = view.plan.frame_indices(start_frame, video_idx).astype(np.int32)
    video_idx32 = video_idx.astype(np.int32)
    reference = stamp.references(video_idx32, start_frame)
    columns = {
        "video": reference,
        "video_idx": video_idx32,
        "filename": view.layout.table.column("path").take(video_idx),
        "start_frame": frame_indices[:, 0],
        "frame_indices": _rows_of(frame_indices),
        "sample_idx": idx,
    }
    extras = view.plan.sample_columns(video_idx, start_frame)  # frame_is_pad, timestamps
    columns.update({name: _rows_of(np.asarray(values)) for name, values in extras.items()})
    for name, dtype in view.metadata_fields.items():
        columns[name] = view.layout.field_column(name, dtype, video_idx)
    spans = span_fields(view.layout, view.params, view.metadata_fields)  # windows_in="spans"
    columns |= span_columns(view.layout, view.plan, idx, spans)
    columns.update(window_field_columns(view, video_idx, frame_indices, schema))
    columns.update({name: reference for name in view.streams})  # each stream: same references
    return pa.Table.from_pydict({n: columns[n] for n in schema.names}).cast(schema)


def _rows_of(values: np.ndarray) -> pa.FixedSizeListArray:
    """An ``(n, k)`` array as a column of ``n`` lists of ``k``."""
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


def relocate_roots(
    dataset: datasets.Dataset, moves: Mapping[str | os.PathLike[str], str | os.PathLike[str]]
) -> datasets.Dataset:
    """A map-style dataset whose references into each root ``old`` read ``new`` instead: a
    copy of that same root, moved or copied elsewhere (another disk, another machine).

    References name their root and the state it was in (:mod:`hf_lvf.hf.root_binding`), so a
    saved dataset (``save_to_disk``) whose root moved raises ``LayoutError`` when read; this
    re-points it. It checks that ``new`` is a root whose ``_metadata.json`` names the Lance
    version the references were made at, and, where the dataset has its ``filename`` column,
    that every referenced video has the same path there. Only the references change (one
    vectorised pass, no frame is read).

    Args:
        dataset: a map-style dataset with :class:`~hf_lvf.WindowVideo` columns.
        moves: ``{old root: new root}``: where the references say the root is (see
            ``ds.cast_column("video", WindowVideo(decode=False))``; a local path may be given
            relative, as ``load_dataset`` was) and where it is now.

    Returns:
        A new dataset (its format kept); ``dataset`` is unchanged.

    Raises:
        RootNotFoundError: a new root has no ``_metadata.json``.
        ValueError: a new root is not a copy of the old one (other videos, or another
            Lance version), or the dataset has no ``WindowVideo`` column.

    Examples:
        >>> ds = datasets.load_from_disk("saved/")  # doctest: +SKIP
        >>> new = {"/old/disk/clips/train": "/new/disk/clips/train"}
        >>> ds = hf_lvf.write.relocate_roots(ds, new)  # doctest: +SKIP
    """
    if not isinstance(dataset, datasets.Dataset):
        raise ParameterTypeError(f"dataset must be a datasets.Dataset, got {dataset!r:.80}")
    columns = [name for name, f in dataset.features.items() if isinstance(f, WindowVideo)]
    if not columns:
        raise ParameterError(
            f"relocate_roots needs a dataset with a WindowVideo column, got {dataset}"
        )
    targets = {_absolute(old): read_layout(_absolute(new)) for old, new in moves.items()}
    stamps = {old: stamp_of(layout) for old, layout in targets.items()}

    def repoint(table: pa.Table) -> pa.Table:
        for name in columns:
            refs = table.column(name).combine_chunks()
            root, root_id = refs.field("root"), refs.field("root_id")
            for old, stamp in stamps.items():
                mask = pc.fill_null(pc.equal(root, old), False)
                if not pc.any(mask).as_py():
                    continue
                _check_copy(old, targets[old], stamp, pc.filter(refs, mask), table, mask)
                root = pc.if_else(mask, pa.scalar(stamp.uri), root)
                root_id = pc.if_else(mask, pa.scalar(stamp.root_id, pa.int64()), root_id)
            fields = {f.name: refs.field(f.name) for f in refs.type}
            fields.update(root=root, root_id=root_id)
            refs = pa.StructArray.from_arrays(
                list(fields.values()), fields=list(refs.type), mask=refs.is_null()
            )
            table = table.set_column(table.column_names.index(name), name, refs)
        return table

    fmt = dataset.format
    moved = dataset.with_format("arrow").map(
        repoint, batched=True, features=dataset.features, desc="Re-pointing roots"
    )
    return moved.with_format(
        fmt["type"],
        columns=fmt["columns"],
        output_all_columns=fmt["output_all_columns"],
        **fmt["format_kwargs"],
    )


def _absolute(uri: str | os.PathLike[str]) -> str:
    """A local root as references name it (absolute, as ``load_dataset`` resolves it)."""
    uri = str(uri)
    return uri if "://" in uri else str(Path(uri).expanduser().resolve())


def _check_copy(
    old: str, layout: RootLayout, stamp: RootStamp, refs: pa.StructArray, table: pa.Table, mask
) -> None:
    """Refuse ``layout`` as the new place of root ``old`` unless it holds the same videos."""
    versions = set(pc.unique(refs.field("lance_version")).to_pylist())
    if versions != {stamp.lance_version}:
        raise ParameterError(
            f"root {stamp.uri!r} is not a copy of {old!r}: its _metadata.json names Lance version "
            f"{stamp.lance_version or 'none'}, the references were made at {sorted(versions)}"
        )
    video_idx = refs.field("video_idx").to_numpy(zero_copy_only=False)
    if video_idx.size and int(video_idx.max()) >= len(layout):
        raise ParameterError(
            f"root {stamp.uri!r} is not a copy of {old!r}: it has {len(layout)} videos, the "
            f"references name video {int(video_idx.max())}"
        )
    if "filename" not in table.column_names:
        return
    there = layout.table.column("path").take(pa.array(video_idx))
    here = pc.filter(table.column("filename"), mask).combine_chunks()
    differ = pc.fill_null(pc.not_equal(there.cast(here.type), here), True)
    if pc.any(differ).as_py():
        first = pc.index(differ, True).as_py()
        raise ParameterError(
            f"root {stamp.uri!r} is not a copy of {old!r}: video {int(video_idx[first])} is "
            f"{there[first].as_py()!r} there, {here[first].as_py()!r} in the dataset"
        )
