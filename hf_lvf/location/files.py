"""Reading one file of a root, wherever the root lives (local, object store, ``hf://``)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import LayoutError, RootNotFoundError
from .hints import videos_hint
from .hub import read_hub_file
from .paths import METADATA_FILENAME, is_hub_uri


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


def _not_found(uri: str, path: str, name: str) -> str:
    if name == METADATA_FILENAME:
        return (
            f"{uri!r} is not a lance-video-frames root: no {METADATA_FILENAME} at {path!r}."
            + videos_hint(uri)
        )
    return f"root {uri!r} has no file {name!r} ({path!r})"
