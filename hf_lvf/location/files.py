"""Reading one file of a root, wherever the root lives (local, object store, ``hf://``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ..errors import LayoutError, RootNotFoundError
from .hub import read_hub_file
from .paths import METADATA_FILENAME, is_hub_uri, parse_hub_uri

_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


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
    """
    path = join_uri(uri, name)
    if is_hub_uri(uri):
        return read_hub_file(path, storage_options)
    if "://" in uri:
        import fsspec

        try:
            with fsspec.open(path, "rb", **dict(storage_options or {})) as f:
                return f.read()
        except FileNotFoundError as err:
            raise RootNotFoundError(_not_found(uri, path, name)) from err
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError as err:
        raise RootNotFoundError(_not_found(uri, path, name)) from err
    except IsADirectoryError as err:
        raise LayoutError(f"{path} is a directory, expected a JSON file") from err
    except NotADirectoryError as err:
        raise RootNotFoundError(_not_found(uri, path, name)) from err


def root_file_identity(
    uri: str, name: str = METADATA_FILENAME, storage_options: Mapping[str, str] | None = None
) -> str | None:
    """What identifies the content of file ``name`` of a root, without reading it; ``None``
    where nothing cheaper than the bytes does (then a digest of them is the identity).

    For an ``hf://`` root pinned to a commit: the repo, the commit and the path (a commit
    never changes). For a local file: its real path, device, inode, size and modification
    and change times, which change whenever it is written or replaced (hf_lvf replaces
    ``_metadata.json`` by a rename, a new inode). A missing local file gives ``None``: the
    read that follows names it.
    """
    path = join_uri(uri, name)
    if is_hub_uri(uri):
        where = parse_hub_uri(path)
        revision = where.revision or (storage_options or {}).get("hf_revision")
        if revision is None or not _SHA_RE.match(revision):
            return None
        return f"hf:{where.repo_id}@{revision}/{where.path_in_repo}"
    if "://" in uri:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    real = os.path.realpath(path)
    return f"file:{real}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _not_found(uri: str, path: str, name: str) -> str:
    if name == METADATA_FILENAME:
        return f"{uri!r} is not a lance-video-frames root: no {METADATA_FILENAME} at {path!r}"
    return f"root {uri!r} has no file {name!r} ({path!r})"
