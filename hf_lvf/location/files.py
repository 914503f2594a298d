"""Reading one file of a root, wherever the root lives (local, object store, ``hf://``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import LayoutError, RootNotFoundError
from .hub import download_root, read_hub_file
from .paths import METADATA_FILENAME, is_hub_uri
from .store import download_store_root, is_object_store_uri, read_store_file


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
    path = join_uri(uri, name)
    if is_hub_uri(uri):
        return read_hub_file(path, storage_options)
    if is_object_store_uri(uri):
        try:
            return read_store_file(path, storage_options)
        except FileNotFoundError as err:
            raise RootNotFoundError(_not_found(uri, path, name)) from err
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


def _not_found(uri: str, path: str, name: str) -> str:
    if name == METADATA_FILENAME:
        return f"{uri!r} is not a lance-video-frames root: no {METADATA_FILENAME} at {path!r}"
    return f"root {uri!r} has no file {name!r} ({path!r})"


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
            raise ValueError(f"copying {uri!r} needs a cache_dir")
        return download_store_root(uri, cache_dir, storage_options)
    return None
