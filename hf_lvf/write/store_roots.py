"""Writing roots on object stores (``s3://``, ``gs://``, ``az://``), where nothing can be renamed.

A local root is built aside and renamed into place (:mod:`hf_lvf.write.writer`), and an append
swaps ``_metadata.json`` with a rename (:mod:`hf_lvf.write.append`). An object store has no
rename, so the same promises are kept another way:

- **A reader never sees a half-written root.** Readers open the Lance version that
  ``_metadata.json`` names, never the latest. A write puts its Lance data files up and
  commits them first (lance's commits are atomic on S3: the manifest of a new version is
  written with ``If-None-Match``), and ``_metadata.json``, naming the committed version, last,
  in one PUT: a root appears, or grows, only when that PUT lands.
- **An interrupted create or append leaves the old root exactly as it was**: before the
  PUT, ``_metadata.json`` is the old one (or absent), naming a version lance never changes.
- **The next run needs no clean-up.** What an interrupted write left is invisible and in
  nobody's way: a create commits its table as a new version over Lance files that no
  ``_metadata.json`` names, an append restores its base version first
  (:func:`hf_lvf.frames.commit_append`). After publishing, a write deletes the data files
  that its version does not reference and that are older than ``_ORPHAN_AGE_S`` (an hour:
  younger ones may belong to a write under way), so interrupted writes and replaced roots
  do not pile up.
- **One writer at a time.** A writer holds a lock object, ``.hf_lvf-writer.json`` in the
  root, with its host, pid and a heartbeat renewed every ``_HEARTBEAT_S``; a second writer
  that finds it fails at once (``BlockingIOError``). A lock whose holder is dead (same host,
  no such pid) or silent for ``_LOCK_STALE_S`` is taken over. On S3 the lock is created
  with a conditional PUT (``If-None-Match: *``), taken over and renewed with ``If-Match``
  (:mod:`hf_lvf.location.conditional`), and so is ``_metadata.json`` (absent for a create,
  the ETag it started from for an append): of two writers, exactly one publishes, the other
  raises ``BlockingIOError`` and publishes nothing. An append also refuses a Lance version
  that lance rebased on another writer's (:func:`hf_lvf.frames.commit_append`). Where no
  conditional PUT can be sent (``gs://``, ``az://``, credentials pyarrow finds itself, a
  store that ignores the headers) the checks made just before an ordinary PUT decide: its
  Lance version still the latest and ``_metadata.json`` still the one it started from. What
  is left there is one round trip between those checks and the PUT; if two writers publish
  within it, the last PUT wins and the other's videos are not in the root, which is still
  whole (every ``_metadata.json`` names a committed version holding its rows).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .._version import __version__
from ..errors import InputNotFoundError, ParameterError, RootBusyError, RootExistsError
from ..frames import LANCE_VERSION_FIELD, referenced_data_files, table_state
from ..layout import METADATA_FILENAME, read_layout
from ..layout.text import encode_metadata
from ..location import (
    ABSENT,
    PreconditionFailed,
    conditional_puts,
    delete_store_file,
    etag_of,
    ignore_conditions,
    list_store_files,
    object_identity,
    parse_store_uri,
    put_if,
    read_store_file,
    store_file_identity,
    write_store_file,
)
from .append import AppendTarget, base_version, pid_alive

logger = logging.getLogger(__name__)

LOCK_NAME = ".hf_lvf-writer.json"
_HEARTBEAT_S = 30.0
_LOCK_STALE_S = 120.0
_ORPHAN_AGE_S = 3600.0
_ANY = "any"  # publish whatever _metadata.json is there now (overwrite)


# --- the writer's lock ----------------------------------------------------------------------


def _holder_alive(holder: Mapping[str, Any]) -> bool:
    if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
        return pid_alive(holder["pid"])
    beat = holder.get("heartbeat")
    return isinstance(beat, (int, float)) and time.time() - beat < _LOCK_STALE_S


def _read_holder(lock: str, options: Mapping[str, str] | None) -> dict[str, Any] | None:
    text = read_store_file(lock, options, missing_ok=True)
    if text is None:
        return None
    try:
        holder = msgspec.json.decode(text)
    except ValueError:  # half a JSON: not a lock hf_lvf wrote in one PUT; treat as stale
        return {}
    return holder if isinstance(holder, dict) else {}


@contextlib.contextmanager
def store_write_lock(uri: str, storage_options: Mapping[str, str] | None) -> Iterator[None]:
    """Hold the writer's lock of the root at ``uri`` (see the module docstring).

    Raises:
        BlockingIOError: another live writer holds it, or took it at the same moment.
    """
    lock = f"{uri}/{LOCK_NAME}"
    conditional = conditional_puts(lock, storage_options)
    seen = _lock_identity(lock, storage_options) if conditional else None
    holder = _read_holder(lock, storage_options)
    if holder is not None and _holder_alive(holder):
        raise RootBusyError(
            f"another process (pid {holder.get('pid')} on {holder.get('host')!r}) is writing "
            f"{uri!r}; wait for it to finish (its lock: {lock!r}, renewed every "
            f"{_HEARTBEAT_S:g} s, taken over after {_LOCK_STALE_S:g} s of silence)"
        )
    if holder is not None:
        logger.warning("taking over the lock of %s from a writer that is gone (%s)", uri, holder)
    mine = {"id": uuid.uuid4().hex, "host": socket.gethostname(), "pid": os.getpid()}
    tag = ABSENT if seen is None else etag_of(seen)
    if holder is None:
        tag = ABSENT  # it was deleted between the look-up and the read

    def body() -> bytes:
        return msgspec.json.encode(
            {**mine, "heartbeat": time.time(), "writer": f"hf_lvf {__version__}"}
        )

    def beat(text: bytes) -> None:
        nonlocal tag, conditional
        if conditional:
            # Created only if absent, taken over only from the holder judged gone, renewed
            # only if still this writer's: of writers racing for it, exactly one gets it.
            try:
                new = put_if(lock, text, storage_options, match=tag)
            except PreconditionFailed as err:
                raise RootBusyError(
                    f"another process took the lock of {uri!r} at the same moment "
                    f"({lock!r}); wait for it to finish"
                ) from err
            if new is not None:
                tag = new
                return
            conditional = False  # the store answered that it takes no conditional PUT
        write_store_file(lock, text, storage_options)

    first = body()
    beat(first)
    if conditional:
        conditional = _honours_conditions(lock, first, storage_options)
    elif (_read_holder(lock, storage_options) or {}).get("id") != mine["id"]:
        raise RootBusyError(f"another process took the lock of {uri!r} at the same moment")
    stop = threading.Event()

    def keep_alive() -> None:
        while not stop.wait(_HEARTBEAT_S):
            try:
                beat(body())
            except RootBusyError:  # taken over (this writer was silent too long): stop
                logger.warning("another writer took over the lock of %s", uri)
                return
            except OSError:  # a missed beat: the next one may land
                pass

    thread = threading.Thread(target=keep_alive, name="hf_lvf-lock", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with contextlib.suppress(OSError):
            if (_read_holder(lock, storage_options) or {}).get("id") == mine["id"]:
                delete_store_file(lock, storage_options)


def _lock_identity(lock: str, options: Mapping[str, str] | None) -> str | None:
    try:
        return store_file_identity(lock, options)
    except FileNotFoundError:
        return None


def _honours_conditions(lock: str, text: bytes, options: Mapping[str, str] | None) -> bool:
    """Whether the store refuses a PUT "if absent" of the lock just created: an
    S3-compatible server that ignores the header would let every writer in."""
    try:
        put_if(lock, text, options, match=ABSENT)
    except PreconditionFailed:
        return True
    ignore_conditions(lock, options)
    logger.warning(
        "the object store of %s ignores conditional PUTs (If-None-Match): two writers starting "
        "at the same moment are told apart only by checks before publishing",
        lock,
    )
    return False


# --- publishing _metadata.json --------------------------------------------------------------


def _identity(uri: str, options: Mapping[str, str] | None) -> str | None:
    """Identity of the root's ``_metadata.json``, ``None`` if it has none."""
    try:
        return store_file_identity(f"{uri}/{METADATA_FILENAME}", options)
    except FileNotFoundError:
        return None


def publish_metadata(
    uri: str,
    text: bytes,
    version: int,
    options: Mapping[str, str] | None,
    *,
    expect: str | None,
    latest: bool = True,
) -> str | None:
    """PUT ``text`` as ``_metadata.json`` if that is still ``expect`` (an identity, ``None``:
    absent, or ``_ANY``); return its new identity.

    On a store that takes conditional PUTs (S3) the PUT itself carries the condition
    (``If-None-Match: *``, ``If-Match: <ETag>``): of writers publishing over the same file,
    exactly one succeeds. Elsewhere it is checked just before an ordinary PUT, with, if
    ``latest``, Lance ``version`` (the one ``text`` names) still the table's latest.

    Raises:
        BlockingIOError: another writer changed the root meanwhile; nothing was written.
    """
    path = f"{uri}/{METADATA_FILENAME}"

    def busy(what: str) -> RootBusyError:
        return RootBusyError(
            f"another writer changed {uri!r} while this one was writing ({what}); nothing was "
            "published and the root reads as the other writer left it: run this write again"
        )

    if expect != _ANY and conditional_puts(path, options):
        try:
            tag = put_if(path, text, options, match=ABSENT if expect is None else etag_of(expect))
        except PreconditionFailed as err:
            raise busy(f"{METADATA_FILENAME} changed") from err
        if tag is not None:
            return object_identity(len(text), tag)
    newest = table_state(uri, storage_options=options)[0] if latest else version
    current = _identity(uri, options) if expect != _ANY else _ANY
    if newest != version:
        raise busy(f"Lance version {newest} was committed after this one's ({version})")
    if current != expect:
        raise busy(f"{METADATA_FILENAME} changed")
    write_store_file(path, text, options)
    return _identity(uri, options)


def collect_orphans(uri: str, version: int, options: Mapping[str, str] | None) -> list[str]:
    """Delete the data files that ``version`` does not reference and that are older than
    ``_ORPHAN_AGE_S``; return their names. A failure is logged, never raised: the root is
    already published."""
    try:
        referenced = referenced_data_files(uri, version, storage_options=options)
        cutoff = time.time() - _ORPHAN_AGE_S
        orphans = [
            f.name
            for f in list_store_files(f"{uri}/data", options)
            if f.name not in referenced and f.mtime < cutoff
        ]
        for name in orphans:
            delete_store_file(f"{uri}/data/{name}", options)
    except (OSError, ValueError, RuntimeError) as err:
        logger.warning("could not delete old unreferenced files of %s: %s", uri, err)
        return []
    if orphans:
        logger.info("deleted %d unreferenced data files of %s", len(orphans), uri)
    return orphans


# --- creating or replacing a root -----------------------------------------------------------


@dataclass
class StoreStage:
    """A root being created (or replaced) on an object store: write its Lance table at
    :attr:`uri`, then :meth:`publish` its metadata naming the version committed."""

    uri: str
    storage_options: dict[str, str] | None
    expect: str | None  # what _metadata.json must be when publishing (None: absent)

    def __str__(self) -> str:
        return self.uri

    def publish(self, metadata: Mapping[str, Any]) -> None:
        version = metadata[LANCE_VERSION_FIELD]
        text = encode_metadata(metadata)
        publish_metadata(self.uri, text, version, self.storage_options, expect=self.expect)
        collect_orphans(self.uri, version, self.storage_options)


def check_store_uri(uri: str) -> str:
    """``uri`` normalised (no trailing slash), with a key: a root is never a whole bucket."""
    url = parse_store_uri(uri)
    if not url.key:
        raise ParameterError(f"a root on an object store needs a key below its bucket, got {uri!r}")
    return url.uri


@contextlib.contextmanager
def creating_store_root(
    uri: str, *, overwrite: bool, storage_options: Mapping[str, str] | None
) -> Iterator[StoreStage]:
    """Hold the lock of a new root at ``uri`` (or of one to replace) while it is written.

    Raises:
        FileExistsError: a root is there and ``overwrite`` is false (before any work).
        BlockingIOError: another process is writing it.
    """
    uri = check_store_uri(uri)
    options = dict(storage_options) if storage_options else None

    def refuse_existing() -> None:
        if not overwrite and _identity(uri, options) is not None:
            raise RootExistsError(
                f"{uri!r} already exists; pass overwrite=True (mode='overwrite') to replace it, "
                "or mode='append' to add videos to it"
            )

    refuse_existing()  # before taking the lock: a wrong bucket or key fails on the root's file
    with store_write_lock(uri, options):
        refuse_existing()
        yield StoreStage(uri, options, _ANY if overwrite else None)


# --- appending ------------------------------------------------------------------------------


@dataclass
class StoreAppendTarget(AppendTarget):
    """:class:`~hf_lvf.write.append.AppendTarget` of a root on an object store (``root`` is its
    URL): ``_metadata.json`` is published by :func:`publish_metadata` instead of a rename."""

    storage_options: dict[str, str] | None = None
    expect: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._store = {"storage_options": self.storage_options}

    def _publish(self, text: bytes, version: int, *, first: bool = False) -> None:
        # The first publication of a foreign root only records its base: not the latest yet.
        uri, options = str(self.root), self.storage_options
        self.expect = publish_metadata(
            uri, text, version, options, expect=self.expect, latest=not first
        )
        if not first:
            collect_orphans(uri, version, options)


@contextlib.contextmanager
def appending_store(
    uri: str, storage_options: Mapping[str, str] | None
) -> Iterator[StoreAppendTarget]:
    """Open an existing root on an object store for an append, under its lock. Whatever
    happens inside, the root reads as before until the target's ``commit`` publishes.

    Raises:
        FileNotFoundError: ``uri`` is not a root (no ``_metadata.json``).
        BlockingIOError: another process is writing it.
        LayoutError: its ``_metadata.json`` and Lance table disagree.
    """
    uri = check_store_uri(uri)
    options = dict(storage_options) if storage_options else None
    if _identity(uri, options) is None:
        raise InputNotFoundError(
            f"cannot append to {uri!r}: it is not a lance-video-frames root (no "
            f"{METADATA_FILENAME}); use mode='create' to write a new one"
        )
    with store_write_lock(uri, options):
        expect = _identity(uri, options)
        layout = read_layout(uri, storage_options=options)
        base = base_version(uri, layout, storage_options=options)
        yield StoreAppendTarget(
            root=uri, layout=layout, base=base, storage_options=options, expect=expect
        )
