"""Reading one file of a root, wherever the root lives (local, object store, ``hf://``), and
what identifies its content (for a local file, a digest of its bytes, remembered; see the
section on digests below).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from ..errors import LayoutError, ParameterError, RootNotFoundError
from .hints import videos_hint
from .hub import download_root, list_file_entries, read_hub_file
from .paths import METADATA_FILENAME, is_hub_uri, parse_hub_uri
from .store import (
    download_store_root,
    is_object_store_uri,
    list_store_files,
    read_store_file,
    store_file_identity,
)

logger = logging.getLogger("hf_lvf.location")  # digests and reads alike

# ================================================================================================
# What a local file holds, as a digest of its bytes: the identity of a local root.
#
# A root is identified by the content of its ``_metadata.json`` (which names the Lance
# version), never by where the bytes sit: a copy (``cp -a``, ``rsync -a``, tar, a backup
# restore) and the same file seen by another machine (an NFS client numbers the mount
# with a ``st_dev`` of its own) are the same root; a file rewritten in place, even at the
# same size with its modification time put back, is another.
#
# The identity is ``sha256:<hex>`` of the bytes (of a root's ``_metadata.json``, followed by
# the names of its Lance transaction files: see :func:`_table_marker`). Hashing a 1M-video
# ``_metadata.json`` (~155 MB) takes ~0.2 s, too much for every open, so the digest of a file
# is remembered against its *stat state* (real path, device, inode, size, modification and
# change times), in this process and as a small file in the cache folder
# (``$HF_LVF_CACHE/digests``): a later open whose ``stat`` is the same reads the digest back
# instead of the bytes. The stat state only decides whether the bytes must be hashed again; it
# is never the identity, so a state not seen before (a copy, another machine, a rewrite) costs
# one hash and gives the digest of what the file holds now. That hash runs on a thread while
# the file is parsed; only where a file at this path with this size and modification time was
# hashed before (a copy put back, another machine: likely a table is cached already) does the
# open wait for it first, to map that table instead of parsing. A state is remembered only
# once its times are :data:`RACY_NS` old, so that a rewrite within one tick of the file
# system's clock (the same times) cannot be mistaken for the file that was hashed.
# ================================================================================================


CACHE_ENV = "HF_LVF_CACHE"


DIGEST_PREFIX = "sha256:"


# A stat state is remembered once its times are this old: coarser file-system clocks
# (1 s on ext3 and some NFS servers, 2 s on FAT) give a rewrite within one tick the same times.
RACY_NS = 2_000_000_000


_MEMO: OrderedDict[str, str] = OrderedDict()  # stat state -> digest, this process


_MEMO_MAX = 256


_lock = threading.Lock()


def cache_dir() -> Path:
    """Where hf_lvf keeps what it derives from roots: ``$HF_LVF_CACHE``, else
    ``~/.cache/hf_lvf``. Deleting it is always safe: all of it is made again from the roots.
    """
    base = os.environ.get(CACHE_ENV)
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "hf_lvf")
    return Path(base)


def content_digest(data: bytes, *more: bytes) -> str:
    """``sha256:<hex>`` of ``data`` followed by ``more``."""
    digest = hashlib.sha256(data)
    for extra in more:
        digest.update(extra)
    return DIGEST_PREFIX + digest.hexdigest()


def remembered_digest(path: str) -> str | None:
    """The digest of the local file ``path`` if its current stat state was hashed before
    (by this process, or by any that shares the cache folder); ``None`` if not, or if the
    file is missing."""
    try:
        key = _state(path, os.stat(path))
    except OSError:
        return None
    with _lock:
        digest = _MEMO.get(key)
        if digest is not None:
            _MEMO.move_to_end(key)
            return digest
    try:
        text = _memo_path(key).read_text()
    except (OSError, UnicodeDecodeError):
        return None
    stored_key, _, digest = text.partition("\n")
    if stored_key != key or not digest.startswith(DIGEST_PREFIX):
        return None
    _remember(key, digest, store=False)
    return digest


class PendingDigest:
    """The digest of bytes just read, computed on a thread of its own (``hashlib`` lets go
    of the GIL, so a first open parses the file while it is hashed), then remembered
    against the stat state they were read in (see :func:`read_with_digest`).

    Attributes:
        hinted: the digest last remembered for a file at this path with this size and
            modification time (by any machine sharing the cache folder), if any: a
            guess that this content has a cached table already, never taken as the
            digest (the same size and times may hold other bytes).
    """

    def __init__(self, path: str, data: bytes, before: os.stat_result, hinted: str | None):
        self.hinted = hinted
        self._digest: str | None = None
        self._thread = threading.Thread(
            target=self._run, args=(path, data, before), name="hf_lvf-digest", daemon=True
        )
        self._thread.start()

    def _run(self, path: str, data: bytes, before: os.stat_result) -> None:
        digest = content_digest(data, _table_marker(path))
        try:
            after = os.stat(path)
        except OSError:
            after = None
        key = _state(path, before)
        if after is not None and key == _state(path, after):
            newest = max(after.st_mtime_ns, after.st_ctime_ns)
            hint = _hint_key(path, after)
            if time.time_ns() - newest >= RACY_NS:
                _remember(key, digest, store=True, hint=hint)
            else:  # too new to trust its stat state; a hint is checked by the digest anyway
                _write_memo(hint, digest)
        self._digest = digest

    def result(self) -> str:
        """The digest (waits for the thread)."""
        self._thread.join()
        assert self._digest is not None
        return self._digest


def read_with_digest(path: str) -> tuple[bytes, PendingDigest]:
    """The bytes of the local file ``path`` and their digest, being computed. The digest
    is remembered against the file's stat state when that state held for the whole read
    and is older than :data:`RACY_NS`.

    Raises:
        OSError: the file cannot be read (``FileNotFoundError``, ``IsADirectoryError``...).
    """
    before = os.stat(path)
    with open(path, "rb") as f:
        data = f.read()
    return data, PendingDigest(path, data, before, _hinted(_hint_key(path, before)))


def _table_marker(path: str) -> bytes:
    """For a root's ``_metadata.json``: the names of its Lance transaction files, one per
    commit, each named after a fresh UUID. Two roots can hold byte-identical metadata files
    (the same keys and sizes, other pixels: a root written again over itself); their
    commits are never named alike, while a copy (tar, ``cp -a``, another machine) keeps the
    names. Empty for other files and for a table without the folder."""
    if os.path.basename(path) != "_metadata.json":
        return b""
    try:
        names = sorted(os.listdir(os.path.join(os.path.dirname(path), "_transactions")))
    except OSError:
        return b""
    return b"\0lance-transactions\0" + "\0".join(names).encode()


def _hint_key(path: str, st: os.stat_result) -> str:
    return f"hint\0{os.path.realpath(path)}\0{st.st_size}:{st.st_mtime_ns}"


def _hinted(hint: str) -> str | None:
    try:
        stored, _, digest = _memo_path(hint).read_text().partition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return digest if stored == hint and digest.startswith(DIGEST_PREFIX) else None


def _state(path: str, st: os.stat_result) -> str:
    real = os.path.realpath(path)
    return f"{real}\0{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _memo_path(key: str) -> Path:
    name = hashlib.sha256(key.encode()).hexdigest()[:40]
    return cache_dir() / "digests" / name[:2] / name


def _remember(key: str, digest: str, *, store: bool, hint: str | None = None) -> None:
    with _lock:
        _MEMO[key] = digest
        while len(_MEMO) > _MEMO_MAX:
            _MEMO.popitem(last=False)
    if store:
        _write_memo(key, digest)
    if hint is not None:
        _write_memo(hint, digest)


def _write_memo(key: str, digest: str) -> None:
    path = _memo_path(key)
    try:  # a temporary file renamed into place: readers never see a part of it
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"{key}\n{digest}")
            try:
                os.rename(tmp, path)  # replaces on POSIX; elsewhere one is there already
            except FileExistsError:
                Path(tmp).unlink(missing_ok=True)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as err:  # no writable cache: the next process hashes the file again
        logger.debug("digest of %s not remembered on disk (%s)", key.split("\0")[0], err)


def forget_digests() -> None:
    """Forget what this process remembers (tests: a new process's view of the files)."""
    with _lock:
        _MEMO.clear()


# ================================================================================================
# Reading one file of a root, wherever the root lives (local, object store, ``hf://``).
# ================================================================================================


_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


T = TypeVar("T")


def join_uri(uri: str, name: str) -> str:
    return uri.rstrip("/") + "/" + name


def read_root_file(
    uri: str, name: str = METADATA_FILENAME, storage_options: Mapping[str, str] | None = None
) -> bytes:
    """The bytes of file ``name`` of the root at ``uri``.

    Raises:
        RootNotFoundError: the file does not exist there (for ``_metadata.json``: ``uri``
            is not a root).
        LayoutError: the name is a folder, not a file.
        HubError: an ``hf://`` root's repo, revision or file is not accessible.
        StoreError: an object-store root's bucket is missing or refuses the credentials,
            or the store does not answer (see :mod:`.store`).
    """
    if "://" in uri:
        return read_root_file_hashing(uri, name, storage_options)[0]
    path = join_uri(uri, name)
    return _local(uri, name, path, lambda: Path(path).read_bytes())


def read_root_file_with_identity(
    uri: str, name: str = METADATA_FILENAME, storage_options: Mapping[str, str] | None = None
) -> tuple[bytes, str]:
    """The bytes of file ``name`` of the root at ``uri`` and the identity of those bytes (see
    :func:`root_file_identity`), taken so that both describe the same content.

    Raises:
        RootNotFoundError, HubError, StoreError: as :func:`read_root_file`.
        LayoutError: as :func:`read_root_file`, and when the file keeps being replaced
            while it is read.
    """
    data, identity = read_root_file_hashing(uri, name, storage_options)
    return data, identity if isinstance(identity, str) else identity.result()


def read_root_file_hashing(
    uri: str, name: str = METADATA_FILENAME, storage_options: Mapping[str, str] | None = None
) -> tuple[bytes, str | PendingDigest]:
    """:func:`read_root_file_with_identity`, but a local file's digest is handed back while
    it is being computed (a :class:`~.digests.PendingDigest`), so that the caller can parse
    the bytes meanwhile.

    Raises:
        RootNotFoundError, LayoutError, HubError, StoreError: as
            :func:`read_root_file_with_identity`.
    """
    path = join_uri(uri, name)
    if is_hub_uri(uri) or is_object_store_uri(uri):
        identity = root_file_identity(uri, name, storage_options)
        for _ in range(3):
            data = _read_remote(uri, name, path, storage_options)
            if identity is None:
                return data, content_digest(data)
            after = root_file_identity(uri, name, storage_options)
            if after == identity:
                return data, identity
            identity = after  # replaced while it was read: read the new one
        raise LayoutError(f"{path} keeps changing while it is read")
    if "://" in uri:
        return (data := _read_remote(uri, name, path, storage_options)), content_digest(data)
    return _local(uri, name, path, lambda: read_with_digest(path))


def _local(uri: str, name: str, path: str, read: Callable[[], T]) -> T:
    """``read()`` of the local file ``path``, its errors named as a root's file."""
    try:
        return read()
    except FileNotFoundError as err:
        raise RootNotFoundError(_not_found(uri, path, name)) from err
    except IsADirectoryError as err:
        raise LayoutError(f"{path} is a directory, expected a JSON file") from err
    except NotADirectoryError as err:
        raise RootNotFoundError(_not_found(uri, path, name)) from err


def _read_remote(
    uri: str, name: str, path: str, storage_options: Mapping[str, str] | None
) -> bytes:
    if is_hub_uri(uri):
        return read_hub_file(path, storage_options)
    if is_object_store_uri(uri):
        try:
            return read_store_file(path, storage_options)
        except FileNotFoundError as err:
            raise RootNotFoundError(_not_found(uri, path, name)) from err
    import fsspec

    try:
        with fsspec.open(path, "rb", **dict(storage_options or {})) as f:
            return f.read()
    except FileNotFoundError as err:
        raise RootNotFoundError(_not_found(uri, path, name)) from err


def root_file_identity(
    uri: str,
    name: str = METADATA_FILENAME,
    storage_options: Mapping[str, str] | None = None,
    *,
    read: bool = True,
) -> str | None:
    """What identifies the content of file ``name`` of a root; ``None`` where nothing
    cheaper than reading the bytes does (then their digest is the identity, see
    :func:`read_root_file_with_identity`).

    For an ``hf://`` root pinned to a commit: the repo, the commit and the path (a commit
    never changes). For an object-store file: its path, size and ETag. For a local (or
    mounted) file: ``sha256:<hex>`` of its bytes (:mod:`.digests`), the same for a copy
    and on every machine that mounts it; read and hashed only when this stat state of
    the file was not hashed before (``read=False``: ``None`` then). A missing local
    file gives ``None``: the read that follows names it.
    """
    path = join_uri(uri, name)
    if is_hub_uri(uri):
        where = parse_hub_uri(path)
        revision = where.revision or (storage_options or {}).get("hf_revision")
        if revision is None or not _SHA_RE.match(revision):
            return None
        return f"hf:{where.repo_id}@{revision}/{where.path_in_repo}"
    if is_object_store_uri(uri):
        try:
            return f"store:{path}:{store_file_identity(path, storage_options)}"
        except FileNotFoundError:
            return None  # the read that follows names it
    if "://" in uri:
        return None
    digest = remembered_digest(path)
    if digest is not None or not read:
        return digest
    try:
        return read_with_digest(path)[1].result()
    except OSError:
        return None


def legacy_file_identity(uri: str, name: str = METADATA_FILENAME) -> str | None:
    """The identity hf_lvf up to 0.x gave a local file (real path, device, inode, size and
    times): only to accept what it recorded while the file is still that one, unchanged,
    on the machine that recorded it. ``None`` for a remote root or a missing file."""
    if "://" in uri:
        return None
    path = join_uri(uri, name)
    try:
        st = os.stat(path)
    except OSError:
        return None
    real = os.path.realpath(path)
    return f"file:{real}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _not_found(uri: str, path: str, name: str) -> str:
    if name == METADATA_FILENAME:
        return (
            f"{uri!r} is not a lance-video-frames root: no {METADATA_FILENAME} at {path!r}."
            + videos_hint(uri)
        )
    return f"root {uri!r} has no file {name!r} ({path!r})"


def root_size_bytes(uri: str, storage_options: Mapping[str, str] | None = None) -> int | None:
    """Bytes of every file of the root at ``uri`` (its size on disk, or in the repo), from one
    listing: a walk of a local folder, the repo's file list at the pinned revision
    (``storage_options["hf_revision"]``) for ``hf://``, fsspec's ``du`` for object stores.
    ``None`` where the listing fails (the size is a description, never a reason to fail).
    """
    options = dict(storage_options or {})
    try:
        if is_hub_uri(uri):
            path = parse_hub_uri(uri)
            sha = path.revision or options.get("hf_revision")
            entries = list_file_entries(path.repo_id, sha or "main", options.get("hf_token"))
            prefix = f"{path.path_in_repo}/" if path.path_in_repo else ""
            return sum(e.size for name, e in entries.items() if name.startswith(prefix))
        if is_object_store_uri(uri):
            return sum(f.size for f in list_store_files(uri, options))
        total = 0
        for folder, _, files in os.walk(uri):
            total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
        return total
    except Exception as err:  # noqa: BLE001  (a description: unknown, never a failure)
        logger.debug("cannot list the files of root %s: %s", uri, err)
        return None


def local_copy(
    uri: str,
    *,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path | None:
    """A local copy of a remote root, made once: an ``hf://`` root in the Hugging Face cache
    (``@rev`` pins it), an object-store root in ``cache_dir`` (per state of its
    ``_metadata.json``). ``None`` for a local root, which needs none."""
    if is_hub_uri(uri):
        return download_root(uri, token=token)
    if is_object_store_uri(uri):
        if cache_dir is None:
            raise ParameterError(f"copying {uri!r} needs a cache_dir")
        return download_store_root(uri, cache_dir, storage_options)
    return None


__all__ = [
    "CACHE_ENV",
    "DIGEST_PREFIX",
    "RACY_NS",
    "cache_dir",
    "content_digest",
    "forget_digests",
    "PendingDigest",
    "read_with_digest",
    "remembered_digest",
]
