"""Batched reads of encoded frames from the Lance table of a root, and reading ahead.

The only module that imports ``lance``. pylance is not fork-safe: a forked
child of a process that used lance can hang or crash, even if it reopens the
dataset. So a handle is opened lazily in the process that reads, and a read in
a forked child of a process that already opened one raises
:class:`~hf_lvf.errors.ForkSafetyError` at once instead of risking a hang.

Writing and growing a table is in :mod:`.tables` (re-exported here). Reads of a remote
table have a deadline and bounded retries (:mod:`.remote`);
:meth:`FrameReader.reading_ahead` fetches the frames of known coming batches on
background threads while the caller decodes (:mod:`.ahead`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from ..errors import HubError, LayoutError, StoreError
from ..layout import RootLayout, check_row_count
from ..layout.frame_fields import FrameField, frame_fields
from ..location import lance_location
from ..location.store import secret_values
from ..location.store_options import lance_options
from .ahead import AheadReads, Blobs, ReadAheadBudget  # noqa: F401  (re-exported: hf_lvf.ReadAheadBudget)
from .field_reads import field_columns, read_fields, select_fields
from .forks import _enter_lance, check_fork_safe, fork_is_unsafe  # noqa: F401  (re-exported)
from .remote import describe_rows, patiently
from .tables import (  # noqa: F401  (re-exported: the writers' and growers' entry points)
    FRAME_SCHEMA,
    check_frame_schema,
    commit_append,
    commit_columns,
    commit_fragments,
    frame_table_schema,
    referenced_data_files,
    remove_unreferenced_data,
    scan_frame_bytes,
    scan_frame_rows,
    table_schema,
    table_state,
    version_row_count,
    write_columns,
    write_fragments,
    write_frame_table,
)

T = TypeVar("T")

_COLUMN_KINDS = (
    ("video_id", pa.types.is_integer, "int32"),
    ("frame_idx", pa.types.is_integer, "int32"),
    ("bytes", lambda t: pa.types.is_large_binary(t) or pa.types.is_binary(t), "large_binary"),
)
_Folder = os.PathLike[str] | str
_Options = Mapping[str, str] | None  # storage_options, for lance and location.store


class FrameReader(AheadReads):
    """Reads the ``bytes`` of Lance rows, one ``take`` per batch, and ahead (``reading_ahead``);
    picklable (reopens lazily). An ``hf://...@rev`` root is opened as lance takes it.

    ``fields``: the per-frame fields read in the same ``take`` (names; ``None``: all of the
    root's), returned as the ``fields`` of what :meth:`read` returns (a :class:`Blobs`)."""

    def __init__(
        self,
        layout: RootLayout,
        storage_options: Mapping[str, str] | None = None,
        fields: Sequence[str] | None = (),
        required: Sequence[str] = (),
    ):
        uri, self._storage_options = lance_location(layout.uri, lance_options(storage_options))
        self._layout = layout if uri == layout.uri else layout.with_uri(uri)
        self._ds: Any = None
        self._pid: int | None = None
        self._open_lock = threading.Lock()  # read-ahead threads may open the table first
        self._files: tuple[np.ndarray, list[str]] = (np.zeros(1, np.int64), [])
        self._selection = None if fields is None else tuple(fields)
        self._required = tuple(required)  # names that must be fields (read at offsets)
        self._fields: tuple[FrameField, ...] = ()
        self._columns: list[str] = list(FRAME_SCHEMA.names)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "layout": self._layout,
            "storage_options": self._storage_options,
            "fields": self._selection,
            "required": self._required,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = {"fields": (), "required": ()} | state
        self.__init__(state["layout"], state["storage_options"], state["fields"], state["required"])

    @property
    def fields(self) -> tuple[FrameField, ...]:
        """The per-frame fields each read returns (opens the table)."""
        _ = self.dataset
        return self._fields

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
        if self._selection != () or self._required:  # a reader of per-frame fields:
            # unsupported column types are refused here; unknown selected names too.
            found = frame_fields(ds.schema, where=uri)
            select_fields(found, self._required, uri)
            self._fields = select_fields(found, self._selection, uri)
            self._columns = list(FRAME_SCHEMA.names) + field_columns(self._fields)
        # Where each row lives, for error messages: (first row of each fragment, its file).
        fragments = [f.metadata for f in ds.get_fragments()]
        starts = np.cumsum([0] + [f.physical_rows for f in fragments])
        self._files = (starts, [f.files[0].path if f.files else "?" for f in fragments])
        self._ds, self._pid = ds, os.getpid()
        return ds

    def read(self, rows: np.ndarray, *, fields: bool = True) -> list[bytes]:
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
        rows = np.asarray(rows, dtype=np.int64)
        if not fields and self.fields:  # the frames alone: no field column in the take
            return self._read_held(rows, fields=False)
        return self._read_held(rows)

    def _read_now(self, rows: np.ndarray, fields: bool = True) -> Blobs:
        dataset = self.dataset
        # The frames and the selected fields: one take (fields=False: the frames alone).
        columns = self._columns if fields else list(FRAME_SCHEMA.names)

        def take() -> pa.Table:
            return dataset.take(pa.array(rows), columns=columns)

        table = (
            self._patiently(take, lambda: describe_rows(rows, *self._files))
            if self.is_remote
            else take()
        )
        self._check_rows(rows, table)
        values = read_fields(table, self._fields) if fields else {}
        return Blobs(table.column("bytes").to_pylist(), values)

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
