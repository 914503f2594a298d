"""Parse a root's ``_metadata.json`` once; every later open, in any process, maps the result.

The columns of a video table are kept in an Arrow IPC file under the cache folder
(``HF_LVF_CACHE``, default ``~/.cache/hf_lvf``), named after what identifies the
content of the ``_metadata.json`` it came from (:func:`hf_lvf.location.root_file_identity`:
the pinned commit and path of an ``hf://`` root; the size and ETag of an object-store
file; else a digest of the bytes, remembered per stat state of a local file so that
reopening it hashes nothing: see :mod:`hf_lvf.location.digests`). So a copy of a root,
or the same root mounted on another machine, maps the table one of them made. Opening
it is a memory map: every process that opens the root (DataLoader workers included)
shares the same pages instead of holding a copy, and a pickled table carries only its
:class:`TableSource` (location and identity).

Files are written under a temporary name and renamed into place, so several
processes opening a root for the first time at once each write the same bytes and
readers never see a partial file. A name is never reused for other content, so a
cached table is never stale; a source whose cached file is gone is read again,
and refused if its file changed meanwhile (another table is there now).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from ..errors import LayoutError, ParameterTypeError
from ..location import (
    METADATA_FILENAME,
    cache_dir,
    join_uri,
    legacy_file_identity,
    read_root_file_hashing,
    read_root_file_with_identity,
    root_file_identity,
)
from ..location.digests import CACHE_ENV  # noqa: F401  (its name, where it was)
from .parse import Columns, decode_top_level, parse_entry, parse_metadata, raw_entries
from .table import FieldKinds, RootLayout, VideoInfo

logger = logging.getLogger(__name__)

# Bump when the table's columns or their meaning change: old files are then never read.
_FORMAT = 1
_META_KEY = b"hf_lvf"
# Tables opened in this process, by identity (a second open reuses the mapping).
_OPEN: OrderedDict[str, RootLayout] = OrderedDict()
_OPEN_MAX = 32
# Cache files being written, by identity (see _store).
_WRITES: dict[str, threading.Thread] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class TableSource:
    """Where a video table was read from, and what identifies that content.

    Attributes:
        uri: the root whose ``_metadata.json`` was read.
        identity: what identifies the file's content (see the module docstring).
        storage_options: what reading it again takes (a Hub token, store credentials):
            kept in memory and in pickles, never in the cache.
    """

    uri: str
    identity: str
    storage_options: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def where(self) -> str:
        return join_uri(self.uri, METADATA_FILENAME)

    def settle(self) -> None:
        """Wait for this table's cache file, if it is being written (before pickling: the
        receiving process then maps it instead of parsing again)."""
        wait_for_writes(self.identity)

    def reopen(self, uri: str) -> RootLayout:
        """The table again, read at ``uri``: what a pickled :class:`RootLayout` becomes."""
        layout = _cached(self) or _rebuild(self)
        return layout if layout.uri == uri else layout.with_uri(uri)

    def entry(self, video_idx: int) -> VideoInfo:
        """Entry ``video_idx`` of the ``videos`` list, as written (reads the file again)."""
        return parse_entry(video_idx, msgspec.json.decode(_entries(self)[video_idx]), self.where)


def read_layout(uri: str, *, storage_options: Mapping[str, str] | None = None) -> RootLayout:
    """Read and validate the ``_metadata.json`` of a root (local path, ``hf://`` or store URL),
    as columns; a root opened before (by any process) is mapped, not parsed.

    Raises:
        RootNotFoundError: there is no ``_metadata.json`` at ``uri``.
        LayoutError: see :func:`hf_lvf.layout.parse.parse_metadata`.
        ParameterTypeError: ``uri`` is not a string or path.
    """
    if not isinstance(uri, (str, os.PathLike)):
        raise ParameterTypeError(f"uri must be a path or URL string, got {uri!r}")
    uri = os.fspath(uri)
    options = tuple(sorted((storage_options or {}).items()))
    identity = root_file_identity(uri, METADATA_FILENAME, storage_options, read=False)
    if identity is not None:
        layout = _cached(TableSource(uri, identity, options))
        if layout is not None:
            return layout if layout.uri == uri else layout.with_uri(uri)
    data, pending = read_root_file_hashing(uri, METADATA_FILENAME, storage_options)
    if isinstance(pending, str) or pending.hinted is not None:
        # Known now, or likely cached already (this content seen at this path, size and
        # modification time, here or on another machine): a cached table spares the parse.
        identity = pending if isinstance(pending, str) else pending.result()
        source = TableSource(uri, identity, options)
        return _cached(source) or _store(source, _parse(data, source.where))
    parsed = _parse(data, join_uri(uri, METADATA_FILENAME))  # hashed meanwhile
    source = TableSource(uri, pending.result(), options)
    return _cached(source) or _store(source, parsed)


def _path(identity: str) -> Path:
    digest = hashlib.sha256(f"{_FORMAT}\0{identity}".encode()).hexdigest()[:40]
    return cache_dir() / "tables" / f"{digest}.arrow"


def _cached(source: TableSource) -> RootLayout | None:
    """The table of ``source`` if this process or the cache folder has it."""
    with _lock:
        layout = _OPEN.get(source.identity)
        if layout is not None:
            _OPEN.move_to_end(source.identity)
            if layout.source == source:
                return layout
            return RootLayout(source.uri, layout.table, layout.header, layout.field_kinds, source)
    path = _path(source.identity)
    try:
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, pa.ArrowInvalid) as err:  # a damaged file: made again
        logger.warning("ignoring damaged cached video table %s: %s", path, err)
        return None
    meta = msgspec.json.decode((table.schema.metadata or {}).get(_META_KEY, b"{}"))
    if meta.get("identity") != source.identity:  # another content under this name: rebuild
        return None
    return _remember(_layout(table, source))


def _layout(table: pa.Table, source: TableSource) -> RootLayout:
    meta = msgspec.json.decode(table.schema.metadata[_META_KEY])
    kinds = {n: FieldKinds(frozenset(k), p) for n, (k, p) in meta["fields"].items()}
    return RootLayout(
        source.uri, table.replace_schema_metadata(None), meta["header"], kinds, source
    )


def _remember(layout: RootLayout) -> RootLayout:
    with _lock:
        _OPEN[layout.source.identity] = layout
        while len(_OPEN) > _OPEN_MAX:
            _OPEN.popitem(last=False)
    return layout


def _parse(data: bytes, where: str) -> Columns:
    return parse_metadata(data, where=where)


def _store(source: TableSource, parsed: Columns) -> RootLayout:
    """Keep the parsed table of ``source``; it is written to the cache folder by a thread of
    its own while this process reads from memory (:func:`wait_for_writes` and pickling wait
    for it)."""
    table, header, kinds = parsed
    meta = {
        "format": _FORMAT,
        "identity": source.identity,
        "header": header,
        "fields": {n: [sorted(k.kinds), k.present] for n, k in kinds.items()},
    }
    table = table.replace_schema_metadata({_META_KEY: msgspec.json.encode(meta)})
    writer = threading.Thread(
        target=_write, args=(source, table), name="hf_lvf-table-cache", daemon=False
    )
    with _lock:
        _WRITES[source.identity] = writer
    writer.start()
    return _remember(_layout(table, source))


def write_arrow_file(path: Path, table: pa.Table) -> None:
    """Write ``table`` as the Arrow file ``path``: a temporary file renamed into place, so
    that readers never see a part of it and concurrent writers of the same table agree.

    Raises:
        OSError: the folder cannot be written (nothing is left behind).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".arrow")
    try:
        with os.fdopen(fd, "wb") as f, pa.ipc.new_file(f, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write(source: TableSource, table: pa.Table) -> None:
    """Write ``table`` as the cached table of ``source``."""
    try:
        write_arrow_file(_path(source.identity), table)
    except OSError as err:  # no writable cache: this process keeps its own copy
        logger.info("video table of %s not cached (%s)", source.uri, err)
    finally:
        with _lock:
            _WRITES.pop(source.identity, None)


def wait_for_writes(identity: str | None = None) -> None:
    """Wait until the cache files being written (of ``identity``, or all) are in place."""
    with _lock:
        writers = [w for i, w in _WRITES.items() if identity is None or i == identity]
    for writer in writers:
        writer.join()


def _rebuild(source: TableSource) -> RootLayout:
    """A source whose cached table is gone: read again, if its file is unchanged."""
    return _store(source, _parse(_read_same(source), source.where))


def _read_same(source: TableSource) -> bytes:
    """The bytes of ``source``'s file, which must still be the content it was read as."""
    options = dict(source.storage_options)
    if source.identity.startswith("file:"):  # recorded by an older hf_lvf (see legacy_...)
        if legacy_file_identity(source.uri) != source.identity:
            raise _changed(source)
        return read_root_file_with_identity(source.uri, METADATA_FILENAME, options)[0]
    identity = root_file_identity(source.uri, METADATA_FILENAME, options, read=False)
    if identity is not None and identity != source.identity:
        raise _changed(source)
    data, identity = read_root_file_with_identity(source.uri, METADATA_FILENAME, options)
    if identity != source.identity:
        raise _changed(source)
    return data


def _changed(source: TableSource) -> LayoutError:
    return LayoutError(
        f"{source.where} was replaced since this view of the root was opened, and the cached "
        f"video table of the old file is gone from {cache_dir()}: open the root again"
    )


# Raw entries of recently asked sources (layout.videos[i]): small roots, messages, writers.
_ENTRIES: OrderedDict[str, list[Any]] = OrderedDict()


def _entries(source: TableSource) -> list[Any]:
    with _lock:
        if source.identity in _ENTRIES:
            return _ENTRIES[source.identity]
    entries = raw_entries(_read_same(source), source.where)
    with _lock:
        _ENTRIES[source.identity] = entries
        while len(_ENTRIES) > 2:
            _ENTRIES.popitem(last=False)
    return entries


def raw_entry_objects(layout: RootLayout) -> list[dict[str, Any]]:
    """The entries of ``layout``'s ``videos`` list as written, decoded (for writers that copy
    them: a merge). Reads the file again; it must be the one the table came from."""
    source = layout.source
    raw = decode_top_level(_read_same(source), source.where).get("videos")
    return msgspec.json.decode(raw or b"[]")
