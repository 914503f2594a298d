"""Writing and growing the frame table of a root (its Lance table): whole tables, fragments
committed once, appends, and the checks and clean-up around them.

Every writer takes the table's ``schema``: :data:`FRAME_SCHEMA` (``video_id``,
``frame_idx``, ``bytes``) followed by the root's per-frame columns, if any
(:func:`frame_table_schema`; FORMAT.md, "Per-frame fields"). It defaults to
:data:`FRAME_SCHEMA`, the schema of a root without per-frame fields.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

from ..errors import ParameterError, RootBusyError
from ..frames import FRAME_COLUMNS, FRAME_SCHEMA, data_files, referenced_data_files
from ..location.store import is_object_store_uri, store_has_table
from ..processes import enter_lance

T = TypeVar("T")

_Folder = os.PathLike[str] | str
_Options = Mapping[str, str] | None  # storage_options, for lance and location.store


def frame_table_schema(fields: pa.Schema | Iterable[pa.Field] | None = None) -> pa.Schema:
    """:data:`FRAME_SCHEMA` followed by the per-frame columns ``fields`` (for instance
    :func:`hf_lvf.frames.columns_schema` of one video's columns).

    Raises:
        ValueError: a field named like a frame column (``video_id``, ``frame_idx``, ``bytes``).
    """
    extra = list(fields or [])
    clash = [f.name for f in extra if f.name in FRAME_COLUMNS]
    if clash:
        raise ParameterError(
            f"per-frame column {clash[0]!r} would replace the frame column of that name; "
            f"per-frame columns are named other than {FRAME_COLUMNS}"
        )
    return pa.schema([*FRAME_SCHEMA, *extra])


def check_frame_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` if it is :data:`FRAME_SCHEMA` followed by per-frame columns, else ValueError."""
    if not isinstance(schema, pa.Schema) or list(schema)[:3] != list(FRAME_SCHEMA):
        raise ParameterError(
            f"schema must start with the frame columns {FRAME_SCHEMA.names} "
            f"({FRAME_SCHEMA.types}), got {schema!r}"
        )
    return schema


def write_frame_table(
    batches: Iterable[pa.RecordBatch],
    folder: _Folder,
    *,
    storage_options: _Options = None,
    schema: pa.Schema = FRAME_SCHEMA,
) -> int:
    """Write batches of ``schema`` (:data:`FRAME_SCHEMA`, then any per-frame columns) as a
    new Lance dataset at ``folder``; return its version (on an object store, over a dataset
    already there: a new version replacing its rows). If ``batches`` raises, the original
    exception propagates (not lance's wrapper)."""
    import lance

    schema = check_frame_schema(schema)
    enter_lance(str(folder))
    mode = "overwrite" if store_has_table(str(folder), storage_options) else "create"
    ds = _write_from(
        batches,
        lambda reader: lance.write_dataset(
            reader, str(folder), schema=schema, mode=mode, storage_options=storage_options
        ),
        schema,
    )
    return ds.version


# --- writing fragments: conversion workers write them, the parent commits them once ---


def write_fragments(
    batches: Iterable[pa.RecordBatch],
    folder: _Folder,
    storage_options: _Options = None,
    *,
    schema: pa.Schema = FRAME_SCHEMA,
) -> list[Any]:
    """Write batches of ``schema`` (:data:`FRAME_SCHEMA`, then any per-frame columns) as new,
    uncommitted fragments of the dataset at ``folder``.

    Safe to call from many processes at once on the same folder: each call writes
    its own data files and nothing else. The fragments become visible only when
    :func:`commit_fragments` commits them. If ``batches`` raises, lance discards
    what it wrote and the original exception propagates (not lance's wrapper).

    Returns:
        The ``lance.FragmentMetadata`` of the written fragments (picklable), in
        row order; empty if ``batches`` yields no rows.
    """
    import lance

    schema = check_frame_schema(schema)
    enter_lance(str(folder))
    # Into an existing dataset lance wants mode="append"; nothing is committed here either way.
    exists = store_has_table(str(folder), storage_options) or (Path(folder) / "_versions").is_dir()
    mode = "append" if exists else "create"
    fragments = _write_from(
        batches,
        lambda reader: lance.fragment.write_fragments(
            reader, str(folder), schema=schema, mode=mode, storage_options=storage_options
        ),
        schema,
    )
    return list(fragments)


def commit_fragments(
    folder: _Folder,
    fragments: Sequence[Any],
    storage_options: _Options = None,
    *,
    schema: pa.Schema = FRAME_SCHEMA,
) -> int:
    """Commit ``fragments`` as the first version of a new dataset at ``folder`` (on an object
    store, as a version replacing the rows of a dataset already there), with ``schema``: the
    one the fragments were written with (:func:`write_fragments`).

    Rows follow the order of ``fragments`` (lance keeps fragment order), so a
    caller that passes each video's fragments in video order gets the row order
    FORMAT.md requires. Data files under ``folder/data`` that no fragment
    references (left by a failed, cancelled or retried task) are deleted (on an object store
    :mod:`hf_lvf.write.store_roots` collects them), so it holds only what it lists. Returns
    the version.
    """
    import lance

    schema = check_frame_schema(schema)
    enter_lance(str(folder))
    if not fragments:
        raise ParameterError("cannot commit a dataset with no fragments")
    operation = lance.LanceOperation.Overwrite(schema, list(fragments))
    ds = lance.LanceDataset.commit(str(folder), operation, storage_options=storage_options)
    referenced = {data_file.path for fragment in fragments for data_file in fragment.files}
    remote = is_object_store_uri(str(folder))
    for path in [] if remote else (Path(folder) / "data").glob("*.lance"):
        if path.name not in referenced:
            path.unlink()
    return ds.version


# --- growing a dataset: append (hf_lvf.write.append) and copy (hf_lvf.write.merge) ---


def commit_append(
    folder: _Folder, fragments: Sequence[Any], *, base: int, storage_options: _Options = None
) -> int:
    """Commit ``fragments`` after the rows of version ``base``, in one Append commit.

    A version later than ``base`` (committed by a writer killed before it could
    publish its ``_metadata.json``) is set aside first: ``base`` is restored as
    the latest version, so its rows are not carried into the new one. Readers
    of any older version are unaffected (lance never changes a version).

    Returns:
        The new version.
    """
    import lance
    from lance.commit import CommitConflictError

    enter_lance(str(folder))
    if not fragments:
        raise ParameterError("cannot append no fragments")
    options = {"storage_options": storage_options}
    busy = f"another writer changed {str(folder)!r} at the same moment (its Lance table)"
    try:
        latest = lance.dataset(str(folder), **options)
        if latest.version != base:
            lance.dataset(str(folder), version=base, **options).restore()
            latest = lance.dataset(str(folder), **options)
        mine = [f.path for fragment in fragments for f in fragment.files]
        expected = {*data_files(latest), *mine}
        append = lance.LanceOperation.Append(list(fragments))
        ds = lance.LanceDataset.commit(str(folder), append, read_version=latest.version, **options)
    except CommitConflictError as err:  # a concurrent restore or commit lance cannot rebase on
        raise RootBusyError(f"{busy}; nothing was published: run this write again ({err})") from err
    # lance rebases an Append on one committed meanwhile: that version holds the other
    # writer's rows too, which this writer's _metadata.json would not describe.
    if data_files(ds) != expected:
        raise RootBusyError(f"{busy}; nothing was published: run this write again")
    return ds.version


def write_columns(
    folder: _Folder,
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    *,
    base: int,
    storage_options: _Options = None,
) -> tuple[list[Any], Any]:
    """Write the values of the columns of ``schema`` for the rows of version ``base``, not
    committed yet (:func:`commit_columns` does).

    ``batches`` hold their values for every row, in row order. Each fragment of ``base``
    gets a new data file for them (lance's column addition): its existing data files are
    neither rewritten nor changed. If ``batches`` raises, its exception propagates (the
    files written so far are referenced by no version).

    Raises:
        ValueError: ``batches`` hold more or fewer rows than ``base`` has.

    Returns:
        ``(the fragments with the new columns, the new Lance schema)``, to commit.
    """
    import lance

    enter_lance(str(folder))
    dataset = lance.dataset(str(folder), version=base, storage_options=storage_options)
    rows = _Rows(iter(batches))
    fragments, lance_schema = [], None
    for fragment in dataset.get_fragments():
        count = fragment.metadata.physical_rows
        if fragment.metadata.deletion_file is not None:
            raise ParameterError(f"the Lance table of {str(folder)!r} has deleted rows: not a root")
        merge = fragment.merge_columns
        metadata, lance_schema = _write_from(rows.take(count, schema), merge, schema)
        fragments.append(metadata)
    rows.check_exhausted(dataset.count_rows())
    return fragments, lance_schema


def commit_columns(
    folder: _Folder, written: tuple[list[Any], Any], *, base: int, storage_options: _Options = None
) -> int:
    """Commit columns :func:`write_columns` wrote after version ``base``, in one Merge commit:
    the new version's rows are ``base``'s with the new columns; readers of ``base`` or older
    versions are unaffected. A version later than ``base`` (of a killed writer) is set aside
    first, as by :func:`commit_append`. Returns the new version."""
    import lance

    enter_lance(str(folder))
    options = {"storage_options": storage_options}
    latest = lance.dataset(str(folder), **options)
    if latest.version != base:
        lance.dataset(str(folder), version=base, **options).restore()
        latest = lance.dataset(str(folder), **options)
    operation = lance.LanceOperation.Merge(*written)
    ds = lance.LanceDataset.commit(str(folder), operation, read_version=latest.version, **options)
    return ds.version


class _Rows:
    """Record batches handed out ``count`` rows at a time (a fragment's), in order."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self._batches, self._held, self.given = batches, None, 0

    def take(self, count: int, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        while count:
            batch = self._held if self._held is not None else next(self._batches, None)
            if batch is None:
                raise ParameterError(f"the new columns have values for {self.given} rows only")
            if batch.schema != schema:
                raise ParameterError(f"a batch of the new columns has the schema {batch.schema}")
            self._held = batch.slice(count) if len(batch) > count else None
            batch = batch.slice(0, count)
            count -= len(batch)
            self.given += len(batch)
            yield batch

    def check_exhausted(self, num_rows: int) -> None:
        extra = (len(self._held) if self._held is not None else 0) + sum(
            len(b) for b in self._batches
        )
        if extra:
            raise ParameterError(
                f"the new columns have values for {self.given + extra} rows, the table has "
                f"{num_rows}"
            )


def remove_unreferenced_data(folder: os.PathLike[str] | str, version: int) -> list[str]:
    """Delete the data files of ``folder`` that ``version`` does not reference.

    For a table that only ever grew by appends, every version a reader may hold
    references a subset of ``version``'s files, so what is left is what killed or
    failed appends wrote (uncommitted, or committed but never published; lance's
    ``.tmp*`` files too). The caller must hold the root's write lock, so no writer
    is adding files.

    Returns:
        The names of the deleted files.
    """
    referenced = referenced_data_files(folder, version)
    removed = []
    for path in (Path(folder) / "data").iterdir():  # *.lance, and .tmp* of killed writes
        if path.is_file() and path.name not in referenced:
            path.unlink()
            removed.append(path.name)
    return removed


def _write_from(
    batches: Iterable[pa.RecordBatch],
    write: Callable[[pa.RecordBatchReader], T],
    schema: pa.Schema = FRAME_SCHEMA,
) -> T:
    """``write(reader over batches)``, re-raising an error of ``batches`` itself rather than
    the OSError lance wraps it in."""
    errors: list[BaseException] = []

    def capture() -> Iterator[pa.RecordBatch]:
        try:
            yield from batches
        except BaseException as err:
            errors.append(err)
            raise

    try:
        result = write(pa.RecordBatchReader.from_batches(schema, capture()))
    except Exception:
        if errors:
            raise errors[0] from None
        raise
    if errors:
        raise errors[0]
    return result
