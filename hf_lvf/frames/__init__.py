"""Batched reads of encoded frames from the Lance table of a root, and reading ahead.

The only module that imports ``lance``. pylance is not fork-safe: a forked
child of a process that used lance can hang or crash, even if it reopens the
dataset. So a handle is opened lazily in the process that reads, and a read in
a forked child of a process that already opened one raises
:class:`~hf_lvf.errors.ForkSafetyError` at once instead of risking a hang.

Reads of a remote table have a deadline and bounded retries (:mod:`.remote`);
:meth:`FrameReader.reading_ahead` fetches the frames of known coming batches on
background threads while the caller decodes (:mod:`.ahead`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from ..errors import HubError, LayoutError, StoreError
from ..layout import RootLayout, check_row_count
from ..location import lance_location
from ..location.store import is_object_store_uri, secret_values, store_has_table
from ..location.store_options import lance_options
from .ahead import AheadReads, FetchAhead  # noqa: F401  (re-exported: hf_lvf.FetchAhead)
from .forks import _enter_lance, check_fork_safe, fork_is_unsafe  # noqa: F401  (re-exported)
from .remote import describe_rows, patiently

T = TypeVar("T")

FRAME_SCHEMA = pa.schema(
    [("video_id", pa.int32()), ("frame_idx", pa.int32()), ("bytes", pa.large_binary())]
)
_COLUMN_KINDS = (
    ("video_id", pa.types.is_integer, "int32"),
    ("frame_idx", pa.types.is_integer, "int32"),
    ("bytes", lambda t: pa.types.is_large_binary(t) or pa.types.is_binary(t), "large_binary"),
)
_Folder = os.PathLike[str] | str
_Options = Mapping[str, str] | None  # storage_options, for lance and location.store


class FrameReader(AheadReads):
    """Reads the ``bytes`` of Lance rows, one ``take`` per batch, and ahead (``reading_ahead``);
    picklable (reopens lazily). An ``hf://...@rev`` root is opened as lance takes it."""

    def __init__(self, layout: RootLayout, storage_options: Mapping[str, str] | None = None):
        uri, self._storage_options = lance_location(layout.uri, lance_options(storage_options))
        self._layout = layout if uri == layout.uri else layout.with_uri(uri)
        self._ds: Any = None
        self._pid: int | None = None
        self._open_lock = threading.Lock()  # read-ahead threads may open the table first
        self._files: tuple[np.ndarray, list[str]] = (np.zeros(1, np.int64), [])

    def __getstate__(self) -> dict[str, Any]:
        return {"layout": self._layout, "storage_options": self._storage_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["layout"], state["storage_options"])

    @property
    def dataset(self) -> Any:
        """The open ``lance.LanceDataset``, opened and checked on first use in this process."""
        if self._ds is not None and self._pid == os.getpid():
            return self._ds
        with self._open_lock:
            if self._ds is not None and self._pid == os.getpid():
                return self._ds
            return self._open()

    @property
    def is_remote(self) -> bool:
        return "://" in self._layout.uri and not self._layout.uri.startswith("file://")

    def _open(self) -> Any:
        uri = self._layout.uri
        _enter_lance(uri)
        import lance

        version = pinned_version(self._layout)  # the version _metadata.json describes

        def open_table() -> Any:
            options = self._storage_options or None
            return lance.dataset(uri, version=version, storage_options=options)

        try:
            ds = self._patiently(open_table, "the Lance table") if self.is_remote else open_table()
        except (OSError, ValueError, RuntimeError) as err:
            if isinstance(err, (HubError, StoreError)):
                raise
            raise LayoutError(f"cannot open the Lance table of root {uri!r}: {err}") from err
        missing = [name for name in FRAME_SCHEMA.names if ds.schema.get_field_index(name) < 0]
        if missing:
            raise LayoutError(
                f"the Lance table of root {uri!r} has no {', '.join(map(repr, missing))} column "
                f"(columns: {', '.join(ds.schema.names)}); expected {FRAME_SCHEMA}"
            )
        for name, is_kind, expected in _COLUMN_KINDS:
            kind = ds.schema.field(name).type
            if not is_kind(kind):
                raise LayoutError(
                    f"the {name!r} column of root {uri!r} has type {kind}, expected {expected}"
                )
        check_row_count(self._layout, ds.count_rows())
        # Where each row lives, for error messages: (first row of each fragment, its file).
        fragments = [f.metadata for f in ds.get_fragments()]
        starts = np.cumsum([0] + [f.physical_rows for f in fragments])
        self._files = (starts, [f.files[0].path if f.files else "?" for f in fragments])
        self._ds, self._pid = ds, os.getpid()
        return ds

    def read(self, rows: np.ndarray) -> list[bytes]:
        """Encoded frames of ``rows`` (any order), in that order, in one Lance ``take``; rows
        that a read-ahead already fetched (see :meth:`reading_ahead`) are not read again.

        Each row's ``video_id`` and ``frame_idx`` come in the same take and are checked
        against what the video table places there.

        Raises:
            LayoutError: a row holds another frame than the video table says (rows out of
                ``(video, frame)`` order); names the root, the row, what it holds and what
                was expected.
            HubError: a remote read still failed after its retries (see :mod:`.remote`).
        """
        if len(rows) == 0:
            return []
        return self._read_held(np.asarray(rows, dtype=np.int64))

    def _read_now(self, rows: np.ndarray) -> list[bytes]:
        dataset = self.dataset

        def take() -> pa.Table:
            return dataset.take(pa.array(rows), columns=list(FRAME_SCHEMA.names))

        table = (
            self._patiently(take, lambda: describe_rows(rows, *self._files))
            if self.is_remote
            else take()
        )
        self._check_rows(rows, table)
        return table.column("bytes").to_pylist()

    def _patiently(self, call: Callable[[], T], what: str | Callable[[], str]) -> T:
        revision = self._storage_options.get("hf_revision")
        hide = secret_values(self._storage_options)  # credentials: never in a message
        return patiently(call, uri=self._layout.uri, revision=revision, what=what, hide=hide)

    def _check_rows(self, rows: np.ndarray, table: pa.Table) -> None:
        layout = self._layout
        start_rows = layout.start_rows
        video = np.searchsorted(start_rows, rows, side="right") - 1
        ids = layout.ids
        got_ids = table.column("video_id").to_numpy(zero_copy_only=False)
        got_frames = table.column("frame_idx").to_numpy(zero_copy_only=False)
        frames = rows - start_rows[video]
        bad = np.flatnonzero((got_ids != ids[video]) | (got_frames != frames))
        if bad.size:
            k = int(bad[0])
            v = int(video[k])
            raise LayoutError(
                f"Lance row {int(rows[k])} of root {layout.uri!r} holds video_id "
                f"{got_ids[k]}, frame_idx {got_frames[k]}, but _metadata.json places frame "
                f"{int(frames[k])} of video {v} ({layout.path(v)!r}, id {int(ids[v])}) there: "
                "the rows are not in (video, frame) order (FORMAT.md: frame f of video v is row "
                "start_row + f)"
            )


# --- the Lance version a _metadata.json describes (see hf_lvf.write.append) ---

#: Top-level ``_metadata.json`` field naming the Lance version the file describes.
LANCE_VERSION_FIELD = "lance_version"


def pinned_version(layout: RootLayout) -> int | None:
    """The Lance version ``layout``'s ``_metadata.json`` names, or ``None`` (the latest:
    roots written by other tools, or by hf_lvf before it recorded the version)."""
    version = layout.header.get(LANCE_VERSION_FIELD)
    if version is None:
        return None
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise LayoutError(
            f"{layout.metadata_path}: field {LANCE_VERSION_FIELD} must be an integer >= 1, "
            f"got {version!r}"
        )
    return version


def write_frame_table(
    batches: Iterable[pa.RecordBatch], folder: _Folder, *, storage_options: _Options = None
) -> int:
    """Write frame-schema batches as a new Lance dataset at ``folder``; return its version (on
    an object store, over a dataset already there: a new version replacing its rows). If
    ``batches`` raises, the original exception propagates (not lance's wrapper)."""
    import lance

    _enter_lance(str(folder))
    mode = "overwrite" if store_has_table(str(folder), storage_options) else "create"
    ds = _write_from(
        batches,
        lambda reader: lance.write_dataset(
            reader, str(folder), schema=FRAME_SCHEMA, mode=mode, storage_options=storage_options
        ),
    )
    return ds.version


# --- writing fragments: conversion workers write them, the parent commits them once ---


def write_fragments(
    batches: Iterable[pa.RecordBatch], folder: _Folder, storage_options: _Options = None
) -> list[Any]:
    """Write frame-schema batches as new, uncommitted fragments of the dataset at ``folder``.

    Safe to call from many processes at once on the same folder: each call writes
    its own data files and nothing else. The fragments become visible only when
    :func:`commit_fragments` commits them. If ``batches`` raises, lance discards
    what it wrote and the original exception propagates (not lance's wrapper).

    Returns:
        The ``lance.FragmentMetadata`` of the written fragments (picklable), in
        row order; empty if ``batches`` yields no rows.
    """
    import lance

    _enter_lance(str(folder))
    # Into an existing dataset lance wants mode="append"; nothing is committed here either way.
    exists = store_has_table(str(folder), storage_options) or (Path(folder) / "_versions").is_dir()
    mode = "append" if exists else "create"
    fragments = _write_from(
        batches,
        lambda reader: lance.fragment.write_fragments(
            reader, str(folder), schema=FRAME_SCHEMA, mode=mode, storage_options=storage_options
        ),
    )
    return list(fragments)


def commit_fragments(folder: _Folder, fragments: Sequence[Any], storage_options: _Options = None):
    """Commit ``fragments`` as the first version of a new dataset at ``folder`` (on an object
    store, as a version replacing the rows of a dataset already there).

    Rows follow the order of ``fragments`` (lance keeps fragment order), so a
    caller that passes each video's fragments in video order gets the row order
    FORMAT.md requires. Data files under ``folder/data`` that no fragment
    references (left by a failed, cancelled or retried task) are deleted (on an object store
    :mod:`hf_lvf.write.store_roots` collects them), so it holds only what it lists. Returns
    the version.
    """
    import lance

    _enter_lance(str(folder))
    if not fragments:
        raise ValueError("cannot commit a dataset with no fragments")
    operation = lance.LanceOperation.Overwrite(FRAME_SCHEMA, list(fragments))
    ds = lance.LanceDataset.commit(str(folder), operation, storage_options=storage_options)
    referenced = {data_file.path for fragment in fragments for data_file in fragment.files}
    remote = is_object_store_uri(str(folder))
    for path in [] if remote else (Path(folder) / "data").glob("*.lance"):
        if path.name not in referenced:
            path.unlink()
    return ds.version


# --- growing a dataset: append (hf_lvf.write.append) and copy (hf_lvf.write.merge) ---


def table_state(folder: _Folder, **options: Any) -> tuple[int, int]:
    """``(latest version, its row count)`` of the dataset at ``folder`` (``storage_options=``)."""
    import lance

    _enter_lance(str(folder))
    ds = lance.dataset(str(folder), **options)
    return ds.version, ds.count_rows()


def version_row_count(folder: _Folder, version: int, **options: Any) -> int:
    """Rows of ``version`` of the dataset at ``folder`` (``storage_options=``)."""
    import lance

    _enter_lance(str(folder))
    try:
        return lance.dataset(str(folder), version=version, **options).count_rows()
    except (OSError, ValueError, RuntimeError) as err:
        raise LayoutError(
            f"cannot open version {version} of the Lance table of root {str(folder)!r}: {err}"
        ) from err


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

    _enter_lance(str(folder))
    if not fragments:
        raise ValueError("cannot append no fragments")
    options = {"storage_options": storage_options}
    latest = lance.dataset(str(folder), **options)
    if latest.version != base:
        lance.dataset(str(folder), version=base, **options).restore()
        latest = lance.dataset(str(folder), **options)
    operation = lance.LanceOperation.Append(list(fragments))
    ds = lance.LanceDataset.commit(str(folder), operation, read_version=latest.version, **options)
    return ds.version


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


def referenced_data_files(folder: _Folder, version: int, **options: Any) -> set[str]:
    """Names of the data files (in ``data/``) that ``version`` of the dataset references."""
    import lance

    _enter_lance(str(folder))
    ds = lance.dataset(str(folder), version=version, **options)
    return {f.path for fragment in ds.get_fragments() for f in fragment.metadata.files}


def scan_frame_bytes(
    uri: str, *, version: int | None, storage_options: Mapping[str, str] | None = None
) -> Iterator[pa.Array]:
    """The ``bytes`` of every row of ``version`` of a root's table, in row order, a batch at
    a time, as ``large_binary`` arrays (the WebP bytes as stored: a copy re-encodes nothing).
    """
    import lance

    _enter_lance(uri)
    try:
        ds = lance.dataset(
            uri, version=version, storage_options=dict(storage_options or {}) or None
        )
    except (OSError, ValueError, RuntimeError) as err:
        raise LayoutError(f"cannot open the Lance table of root {uri!r}: {err}") from err
    batches = ds.to_batches(columns=["bytes"], batch_size=_ROWS_PER_SCAN, scan_in_order=True)
    for batch in batches:
        yield batch.column(0).cast(pa.large_binary())


# Rows per batch when copying a table: a few MB of WebP frames.
_ROWS_PER_SCAN = 64


def _write_from(batches: Iterable[pa.RecordBatch], write: Callable[[pa.RecordBatchReader], T]) -> T:
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
        result = write(pa.RecordBatchReader.from_batches(FRAME_SCHEMA, capture()))
    except Exception:
        if errors:
            raise errors[0] from None
        raise
    if errors:
        raise errors[0]
    return result
