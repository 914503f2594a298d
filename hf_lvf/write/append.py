"""Growing a root in place: new videos become new Lance fragments, one commit, one metadata swap.

How ``_metadata.json`` and the Lance version stay in step: the file names the
Lance version it describes in its top-level ``lance_version`` field, and
readers open that version, never simply the latest. An append

1. takes the root's write lock (a ``flock`` on its folder; a second writer
   fails at once instead of interleaving);
2. reads ``_metadata.json``: the version it names is the *base*;
3. deletes data files the base does not reference, and temporary metadata
   files (left by killed appends);
4. writes the new videos as uncommitted fragments into ``data/`` (no version
   lists them, so no reader sees them);
5. commits them in one Lance ``Append`` after the base's rows (a version past
   the base, committed by an append killed before step 6, is set aside by
   restoring the base first; a file that names no version, from another tool,
   first gets the base recorded);
6. writes the extended ``_metadata.json`` naming the new version to a
   temporary file and renames it over the old one (``os.replace``).

A kill before step 6 leaves the old ``_metadata.json``, which names the old
version, which lance never changes: the root reads exactly as before, and the
next append cleans up. Readers that opened the root before step 6 keep reading
the version they opened; a reader opened after it sees the new videos.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from .._version import __version__
from ..errors import (
    InputNotFoundError,
    LayoutError,
    ParameterError,
    ParameterTypeError,
    RootBusyError,
)
from ..frames import (
    FRAME_SCHEMA,
    LANCE_VERSION_FIELD,
    pinned_version,
    table_schema,
    table_state,
    version_row_count,
)
from ..layout import METADATA_FILENAME, RootLayout, read_layout
from ..layout.text import rewrite_metadata
from ..location import read_root_file
from .frame_table import commit_append, frame_table_schema, remove_unreferenced_data
from .videos import check_same_fields, check_same_span_fields, root_span_fields

logger = logging.getLogger(__name__)

WriteMode = Literal["create", "overwrite", "append"]
_MODES = ("create", "overwrite", "append")


def resolve_mode(mode: object, overwrite: object) -> WriteMode:
    """The write mode from ``mode=`` and the older ``overwrite=`` flag (True means
    ``mode="overwrite"``)."""
    if mode not in _MODES:
        raise ParameterError(f"mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    if not isinstance(overwrite, bool):
        raise ParameterTypeError(f"overwrite must be a bool, got {overwrite!r}")
    if overwrite and mode == "append":
        raise ParameterError(
            "overwrite=True replaces the root; it cannot be used with mode='append'"
        )
    return "overwrite" if overwrite else mode  # type: ignore[return-value]


@contextlib.contextmanager
def write_lock(root: Path) -> Iterator[None]:
    """Hold the exclusive write lock of an existing ``root`` (a ``flock`` on the folder
    itself: nothing is left behind, and a killed holder releases it). A root that does
    not exist yet has no lock; creating one publishes it with a rename.

    Raises:
        BlockingIOError: another process is writing ``root``.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            raise RootBusyError(
                f"another process is writing {str(root)!r}; wait for it to finish"
            ) from err
        yield
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine is running (a writer that left files behind)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: running
        return True
    return True


def write_metadata_atomic(root: Path, text: bytes) -> None:
    """Replace ``root/_metadata.json`` with ``text`` in one rename: a reader sees the old or
    the new file."""
    temp = root / f".{METADATA_FILENAME}.{os.getpid()}.tmp"
    try:
        with open(temp, "wb") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, root / METADATA_FILENAME)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@dataclass
class AppendTarget:
    """An existing root opened for an append (inside :func:`appending`).

    Attributes:
        root: the root folder; workers write fragments into it.
        layout: its video table as ``_metadata.json`` describes it.
        base: the Lance version that file names.
    """

    root: Path
    layout: RootLayout
    base: int
    published: bool = False
    _store: dict[str, Any] = field(default_factory=dict, init=False, repr=False)  # for lance

    @property
    def num_rows(self) -> int:
        return self.layout.num_rows

    @property
    def next_id(self) -> int:
        """The ``id`` of the first new video."""
        return int(self.layout.ids.max()) + 1

    @functools.cached_property
    def checksums(self) -> dict[str, str]:
        """Source checksum -> path, of the videos already in the root that record one."""
        table = self.layout.table.filter(pc.is_valid(self.layout.table.column("checksum")))
        checksums, paths = table.column("checksum").to_pylist(), table.column("path").to_pylist()
        return dict(zip(checksums, paths, strict=True))

    @functools.cached_property
    def keys(self) -> frozenset[str]:
        """Keys of the videos already in the root (a video without one: its path)."""
        table = self.layout.table
        return frozenset(pc.coalesce(table.column("key"), table.column("path")).to_pylist())

    @functools.cached_property
    def schema(self) -> pa.Schema:
        """The Lance schema new rows are written with: the frame columns, then the per-frame
        fields of the base version, which every new row must have."""
        table = table_schema(self.root, self.base, **self._store)
        return frame_table_schema([f for f in table if f.name not in FRAME_SCHEMA.names])

    @functools.cached_property
    def text(self) -> bytes:
        """The root's ``_metadata.json`` as this writer found it, read once (on an object
        store, each read is 4 requests): unchanged while this process holds the root's write
        lock, and a file that changed all the same is refused when publishing."""
        return read_root_file(str(self.root), storage_options=self._store.get("storage_options"))

    @functools.cached_property
    def span_fields(self) -> dict[str, str]:
        """The fields of the root's spans (:func:`hf_lvf.write.videos.span_field_kinds`)."""
        return root_span_fields(self.text, where=self.layout.metadata_path)

    def check_agrees(
        self, schema: pa.Schema, spans: Mapping[str, str] | None = None, *, what: str
    ) -> None:
        """Raise ValueError, naming both, if rows of ``schema`` or spans with the fields
        ``spans`` (of ``what``: the new videos) cannot join the root's."""
        where = f"root {str(self.root)!r}"
        check_same_fields(schema, self.schema, what=what, where=where)
        check_same_span_fields(spans or {}, self.span_fields, what=what, where=where)

    def commit(
        self,
        fragments: Sequence[Any],
        entries: list[dict[str, Any]],
        *,
        n_skipped: int = 0,
        lineage: Mapping[str, Any] | None = None,
        frames_measured: int | None = None,
    ) -> bytes:
        """Commit the new videos' fragments, then publish the extended ``_metadata.json``.

        ``entries`` are the new videos' entries, ``start_row`` counted from
        :attr:`num_rows`; ``frames_measured``: their fidelity was measured on that many
        frames (their ``psnr``), to extend the root's ``fidelity``. Returns the new file's
        text.
        """
        updates = _grown_fields(self.layout, entries, n_skipped=n_skipped, lineage=lineage)
        if frames_measured is not None:
            grown = _grown_fidelity(self.layout, entries, frames_measured)
            if grown is not None:
                updates["fidelity"] = grown

        def commit() -> int:
            return commit_append(self.root, fragments, base=self.base, **self._store)

        text = self.commit_version(commit, updates, new_entries=entries)
        logger.info("appended %d videos to %s", len(entries), self.root)
        return text

    def commit_version(
        self,
        commit: Callable[[], int],
        updates: Mapping[str, Any],
        *,
        new_entries: list[dict[str, Any]] | None = None,
    ) -> bytes:
        """Run ``commit`` (a Lance commit after :attr:`base`; returns its version), then
        publish ``_metadata.json`` with ``updates`` to its top-level fields, ``new_entries``
        added to its videos, naming that version. Returns the new file's text."""
        old = self.text
        where = self.layout.metadata_path
        if pinned_version(self.layout) is None:
            # A root from another tool or an older hf_lvf: record the version its file
            # describes first (same content otherwise), so that a kill after the commit
            # below leaves a file that still names the version it describes.
            pinned = {LANCE_VERSION_FIELD: self.base}
            self._publish(rewrite_metadata(old, where=where, updates=pinned), self.base, first=True)
        version = commit()
        updates = {**updates, LANCE_VERSION_FIELD: version}
        text = rewrite_metadata(old, where=where, updates=updates, new_entries=new_entries or ())
        self._publish(text, version)
        self.published = True
        logger.info("published %s (Lance version %d)", where, version)
        return text

    # Overridden for roots on object stores (hf_lvf.write.store_roots), which have no rename.
    def _publish(self, text: bytes, version: int, *, first: bool = False) -> None:
        """Make ``text``, naming Lance ``version``, the root's ``_metadata.json``."""
        write_metadata_atomic(self.root, text)


def fidelity_summary(entries: Sequence[Mapping[str, Any]], frames_measured: int) -> dict[str, Any]:
    """``_metadata.json``'s ``fidelity``: the mean and worst ``psnr`` of the videos (dB)."""
    psnrs = [float(e["psnr"]) for e in entries if e.get("psnr") is not None]
    return {
        "psnr_mean": round(sum(psnrs) / len(psnrs), 2) if psnrs else None,
        "psnr_min": min(psnrs) if psnrs else None,
        "frames_measured": frames_measured,
        "videos_measured": len(psnrs),
    }


def _grown_fidelity(
    layout: RootLayout, entries: list[dict[str, Any]], frames_measured: int
) -> dict[str, Any] | None:
    """The root's ``fidelity`` with the new videos in, if it covered every old video."""
    old = layout.header.get("fidelity")
    if not isinstance(old, Mapping) or old.get("videos_measured") != len(layout):
        return None  # not measured (older roots, fidelity=False): a mean of some would lie
    new = fidelity_summary(entries, frames_measured)
    old_n, new_n = int(old["videos_measured"]), new["videos_measured"]
    if not new_n or not old_n:
        return new if not old_n else dict(old)
    mean = (old["psnr_mean"] * old_n + new["psnr_mean"] * new_n) / (old_n + new_n)
    return {
        "psnr_mean": round(mean, 2),
        "psnr_min": min(old["psnr_min"], new["psnr_min"]),
        "frames_measured": int(old["frames_measured"]) + frames_measured,
        "videos_measured": old_n + new_n,
    }


def _grown_fields(
    layout: RootLayout,
    entries: list[dict[str, Any]],
    *,
    n_skipped: int = 0,
    lineage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The top-level fields of a root's ``_metadata.json`` that ``entries`` added to it change."""
    header = layout.header
    num_rows = layout.num_rows + sum(v["T"] for v in entries)
    fields = {"num_rows": num_rows, "total_rows": num_rows, "n_videos": len(layout) + len(entries)}
    fields["n_skipped"] = int(header.get("n_skipped") or 0) + n_skipped
    old_lineage = header.get("lineage")
    merged = dict(old_lineage) if isinstance(old_lineage, Mapping) else {}
    merged["appends"] = [
        *merged.get("appends", []),
        {"writer": f"hf_lvf {__version__}", "videos": len(entries), **dict(lineage or {})},
    ]
    fields["lineage"] = merged
    return fields


@contextlib.contextmanager
def appending(root: str | os.PathLike[str]) -> Iterator[AppendTarget]:
    """Open an existing local root for an append, under its write lock.

    Whatever happens inside, the root reads as before until
    :meth:`AppendTarget.commit` publishes; on an error the files written so far
    are removed.

    Raises:
        FileNotFoundError: ``root`` is not a root (no ``_metadata.json``).
        BlockingIOError: another process is writing it.
        LayoutError: its ``_metadata.json`` and Lance table disagree.
    """
    root = Path(root).absolute()
    if not (root / METADATA_FILENAME).is_file():
        raise InputNotFoundError(
            f"cannot append to {str(root)!r}: it is not a lance-video-frames root (no "
            f"{METADATA_FILENAME}); use mode='create' to write a new one"
        )
    with write_lock(root):
        for stale in root.glob(f".{METADATA_FILENAME}.*.tmp"):  # a writer killed mid-write
            stale.unlink(missing_ok=True)
        layout = read_layout(str(root))
        base = base_version(root, layout)
        removed = remove_unreferenced_data(root, base)
        if removed:
            logger.info("removed %d data files left by interrupted appends", len(removed))
        target = AppendTarget(root=root, layout=layout, base=base)
        try:
            yield target
        except BaseException:
            if not target.published:  # files of a published version are the root's now
                with contextlib.suppress(Exception):
                    remove_unreferenced_data(root, base)
            raise


def base_version(root: Path | str, layout: RootLayout, **store: Any) -> int:
    """The Lance version ``_metadata.json`` describes: the one it names, else (a root from
    another tool or an older hf_lvf) the latest, which must then hold its rows.
    ``store``: ``storage_options=`` of a root on an object store."""
    version = pinned_version(layout)
    if version is not None:
        rows = version_row_count(root, version, **store)
    else:
        version, rows = table_state(root, **store)
    if rows != layout.num_rows:
        raise LayoutError(
            f"{layout.metadata_path}: the videos account for {layout.num_rows} rows but Lance "
            f"version {version} of {str(root)!r} has {rows}; cannot append to it"
        )
    return version
