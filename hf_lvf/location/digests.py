"""What a local file holds, as a digest of its bytes: the identity of a local root.

A root is identified by the content of its ``_metadata.json`` (which names the Lance
version), never by where the bytes sit: a copy (``cp -a``, ``rsync -a``, tar, a backup
restore) and the same file seen by another machine (an NFS client numbers the mount
with a ``st_dev`` of its own) are the same root; a file rewritten in place, even at the
same size with its modification time put back, is another.

The identity is ``sha256:<hex>`` of the bytes (of a root's ``_metadata.json``, followed by
the names of its Lance transaction files: see :func:`_table_marker`). Hashing a 1M-video
``_metadata.json`` (~155 MB) takes ~0.2 s, too much for every open, so the digest of a file
is remembered against its *stat state* (real path, device, inode, size, modification and
change times), in this process and as a small file in the cache folder
(``$HF_LVF_CACHE/digests``): a later open whose ``stat`` is the same reads the digest back
instead of the bytes. The stat state only decides whether the bytes must be hashed again; it
is never the identity, so a state not seen before (a copy, another machine, a rewrite) costs
one hash and gives the digest of what the file holds now. That hash runs on a thread while
the file is parsed; only where a file at this path with this size and modification time was
hashed before (a copy put back, another machine: likely a table is cached already) does the
open wait for it first, to map that table instead of parsing. A state is remembered only
once its times are :data:`RACY_NS` old, so that a rewrite within one tick of the file
system's clock (the same times) cannot be mistaken for the file that was hashed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path

logger = logging.getLogger(__name__)

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
