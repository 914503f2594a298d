"""Reading one file of a root, wherever the root lives (local, object store, ``hf://``)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from ..errors import LayoutError, ParameterError, RootNotFoundError
from .digests import PendingDigest, content_digest, read_with_digest, remembered_digest
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

logger = logging.getLogger("hf_lvf.location")
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
