"""Finding the roots of a ``data_dir`` or ``data_files``: split name -> roots, local or hub."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ParameterError, RootNotFoundError
from .hints import video_files_hint, videos_hint
from .hub import list_files, resolve_revision_files
from .paths import METADATA_FILENAME, HubPath, is_hub_uri, parse_hub_uri
from .store import (
    is_object_store_uri,
    list_store_folders,
    parse_store_uri,
    store_file_exists,
    store_file_identity,
)

_GLOB_CHARS = re.compile(r"[*?\[]")
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_SPLIT_ORDER = ("train", "validation", "test")


def pin_data_files(
    data_files: Any,
    *,
    token: str | bool | None = None,
    listings: dict[tuple[str, str], list[str]] | None = None,
) -> Any:
    """``data_files`` of ``load_dataset("hf_lvf", ...)`` with every hub pattern pinned to a commit.

    ``hf://datasets/org/repo[@rev]/...`` patterns get ``@<sha>`` (each repo and revision
    resolved once), so the cache key names the commit and every read uses it. A hub
    pattern without glob characters that names a folder becomes the ``_metadata.json`` of
    the roots in it (the folder itself, or its sub-folders). Other patterns pass unchanged;
    the structure (a string, a list, or a split -> patterns mapping) is kept.

    Raises:
        RootNotFoundError: a hub folder holds no root.
        HubError: see :func:`resolve_revision`.

    ``listings`` (``(repo_id, sha) -> files``) is filled with the repos' files as the Hub
    listed them, for :func:`hub_data_files`.
    """
    shas: dict[tuple[str, str | None], str] = {}
    listings = {} if listings is None else listings

    def pin(pattern: Any) -> list[Any]:
        if not is_hub_uri(pattern):
            return [pattern]
        path = parse_hub_uri(pattern)
        key = (path.repo_id, path.revision)
        if key not in shas:
            sha, files = resolve_revision_files(path.repo_id, path.revision, token=token)
            shas[key] = sha
            if files is not None:  # the same answer listed the files: no listing request
                listings[(path.repo_id, sha)] = files
        pinned = HubPath(path.repo_id, path.path_in_repo, shas[key])
        if _GLOB_CHARS.search(path.path_in_repo) or path.path_in_repo.endswith(METADATA_FILENAME):
            return [pinned.revision_uri]
        files = listings.get((path.repo_id, pinned.revision))  # type: ignore[arg-type]
        if files is None:
            files = list_files(path.repo_id, shas[key], token)
            listings[(path.repo_id, shas[key])] = files
        if path.path_in_repo in files:
            return [pinned.revision_uri]  # a file: datasets will say what it makes of it
        folders = roots_below(files, path.path_in_repo, depth=1)
        if not folders:
            raise RootNotFoundError(
                f"{pattern!r} is not a lance-video-frames root and none of its sub-folders is "
                f"one (no {METADATA_FILENAME} at commit {shas[key]})"
            )
        return [
            HubPath(path.repo_id, f, shas[key]).child(METADATA_FILENAME).revision_uri
            for f in folders
        ]

    def pin_all(patterns: Any) -> Any:
        if isinstance(patterns, (str, os.PathLike)):
            pinned = pin(patterns)
            return pinned[0] if len(pinned) == 1 else pinned
        return [p for item in patterns for p in pin(item)]

    if isinstance(data_files, Mapping):
        return {split: pin_all(patterns) for split, patterns in data_files.items()}
    return pin_all(data_files)


def hub_data_files(
    pinned: Any, listings: Mapping[tuple[str, str], list[str]]
) -> dict[str, list[tuple[str, str]]] | None:
    """Split -> ``(_metadata.json URI, commit sha)`` of pinned ``hf://`` ``data_files`` (as
    :func:`pin_data_files` returns them), their glob patterns matched against ``listings``
    (what the Hub answered when they were pinned): ``datasets`` would list each repo again
    to resolve them (two more requests a repo). ``None`` when a pattern is not a pinned hub
    one, was not listed, or matches no ``_metadata.json``: ``datasets`` resolves those (and
    says what it cannot find)."""
    from fsspec.utils import glob_translate

    splits = pinned if isinstance(pinned, Mapping) else {"train": pinned}
    out: dict[str, list[tuple[str, str]]] = {}
    for split, patterns in splits.items():
        items = [patterns] if isinstance(patterns, (str, os.PathLike)) else list(patterns)
        found: list[tuple[str, str]] = []
        for pattern in items:
            if not is_hub_uri(pattern):
                return None
            path = parse_hub_uri(str(pattern))
            files = listings.get((path.repo_id, path.revision or ""))
            if files is None:
                return None
            wanted = path.path_in_repo
            if _GLOB_CHARS.search(wanted):
                match = re.compile(glob_translate(wanted)).match
                hidden = any(part.startswith((".", "__")) for part in wanted.split("/"))
                names = [
                    f
                    for f in files
                    if f.rsplit("/", 1)[-1] == METADATA_FILENAME
                    and match(f)
                    and (hidden or not any(p.startswith((".", "__")) for p in f.split("/")))
                ]
            elif wanted.rsplit("/", 1)[-1] == METADATA_FILENAME and wanted in files:
                names = [wanted]
            else:
                return None
            if not names:
                return None
            sha = path.revision or ""
            found += [(HubPath(path.repo_id, f, sha).revision_uri, sha) for f in sorted(names)]
        out[str(split)] = list(dict.fromkeys(found))
    return out


def hub_data_dir_files(data_dir: str, *, token: str | bool | None = None) -> dict[str, list[str]]:
    """Split -> pinned ``_metadata.json`` URIs for an ``hf://`` ``data_dir``.

    Like a local ``data_dir``: the folder is a root (split ``train``), or its sub-folders
    are the splits, each a root or a folder of roots. ``datasets`` itself would turn an
    ``hf://`` ``data_dir`` into a local path, so hf_lvf resolves it here.

    Raises:
        RootNotFoundError: the folder holds no root.
        HubError: see :func:`resolve_revision`.
    """
    path = parse_hub_uri(data_dir)
    sha, files = resolve_revision_files(path.repo_id, path.revision, token=token)
    if files is None:
        files = list_files(path.repo_id, sha, token)
    base = path.path_in_repo

    def metadata_uri(folder: str) -> str:
        return HubPath(path.repo_id, folder, sha).child(METADATA_FILENAME).revision_uri

    if base in root_folders(files):
        return {"train": [metadata_uri(base)]}
    prefix = f"{base}/" if base else ""
    splits: dict[str, list[str]] = {}
    for folder in root_folders(files):
        if not folder.startswith(prefix) or folder == base:
            continue
        parts = folder[len(prefix) :].split("/")
        if len(parts) <= 2:  # a split folder that is a root, or holds roots
            splits.setdefault(parts[0], []).append(metadata_uri(folder))
    if not splits:
        raise RootNotFoundError(
            f"data_dir {data_dir!r} is not a lance-video-frames root (no {METADATA_FILENAME} at "
            f"commit {sha}) and none of its sub-folders is one or holds one (train/, test/...)"
        )
    order = {"train": 0, "validation": 1, "test": 2}
    return {s: sorted(splits[s]) for s in sorted(splits, key=lambda s: (order.get(s, 3), s))}


def root_folders(files: Sequence[str]) -> list[str]:
    folders = []
    for f in files:
        head, _, name = f.rpartition("/")
        if name == METADATA_FILENAME:
            folders.append(head)
    return sorted(folders)


def roots_below(files: Sequence[str], folder: str, *, depth: int) -> list[str]:
    """Root folders that are ``folder`` or at most ``depth`` levels below it."""
    folders = root_folders(files)
    if folder in folders:
        return [folder]
    prefix = f"{folder}/" if folder else ""
    return [f for f in folders if f.startswith(prefix) and f[len(prefix) :].count("/") < depth]


# --- local folders ---

# --- finding roots --------------------------------------------------------------------------


def _is_root(folder: Path) -> bool:
    return (folder / METADATA_FILENAME).is_file()


def _sub_roots(folder: Path) -> list[Path]:
    """``folder`` if it is a root, else the roots among its (non-hidden) sub-folders."""
    if _is_root(folder):
        return [folder]
    return sorted(
        p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and _is_root(p)
    )


def find_roots(data_dir: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Split -> ``_metadata.json`` paths of the roots of a local ``data_dir``.

    ``data_dir`` is a root (split ``train``), or a folder whose sub-folders are
    the splits: each a root, or a folder of roots (read in name order).

    Raises:
        RootNotFoundError: ``data_dir`` holds no root.
        ValueError: a split folder's name is not a valid split name.
    """
    folder = Path(data_dir).expanduser().resolve()
    if not folder.is_dir():
        raise RootNotFoundError(
            f"data_dir {str(data_dir)!r} is not a folder." + videos_hint(data_dir)
        )
    if _is_root(folder):
        return {"train": [str(folder / METADATA_FILENAME)]}
    splits: dict[str, list[str]] = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        roots = _sub_roots(sub)
        if not roots:
            continue
        if not _SPLIT_NAME.match(sub.name):
            raise ParameterError(
                f"folder {str(sub)!r} holds roots but its name is not a valid split name "
                f"(letters, digits, '_', dots between words)"
            )
        splits[sub.name] = [str(r / METADATA_FILENAME) for r in roots]
    if not splits:
        raise RootNotFoundError(
            f"data_dir {str(data_dir)!r} is not a lance-video-frames root (no {METADATA_FILENAME}) "
            "and none of its sub-folders is one or holds one (train/, validation/, test/)."
            + videos_hint(data_dir)
        )
    ordered = [s for s in _SPLIT_ORDER if s in splits] + sorted(set(splits) - set(_SPLIT_ORDER))
    return {s: splits[s] for s in ordered}


def roots_of_files(files: Sequence[str], split: str) -> tuple[str, ...]:
    roots = sorted(
        {f.rsplit("/", 1)[0] for f in files if f.rsplit("/", 1)[-1] == METADATA_FILENAME}
    )
    if not roots:
        shown = ", ".join(repr(f) for f in list(files)[:3])
        raise RootNotFoundError(
            f"the data files of split {split!r} ({shown}{', ...' if len(files) > 3 else ''}) hold "
            f"no {METADATA_FILENAME}: give roots (folders) or their {METADATA_FILENAME}"
            + video_files_hint(files)
        )
    return tuple(roots)


def expand_data_files(data_files: Any, base: Path) -> Any:
    """Local folders in ``data_files`` -> the ``_metadata.json`` of the roots in them."""

    def expand(pattern: Any) -> list[Any]:
        if isinstance(pattern, (str, os.PathLike)) and not str(pattern).strip():
            raise ParameterError(
                f"data_files holds an empty path {pattern!r}: give roots (folders) or their "
                f"{METADATA_FILENAME}, never '' (that would be the working directory)"
            )
        if not isinstance(pattern, (str, os.PathLike)) or "://" in str(pattern):
            return [pattern]
        path = Path(pattern).expanduser()
        path = path if path.is_absolute() else base / path
        if path.is_dir():
            roots = _sub_roots(path)
            if roots:
                return [str(r / METADATA_FILENAME) for r in roots]
            hint = videos_hint(path)
            if hint:  # datasets would say "Unable to find" the folder
                raise RootNotFoundError(
                    f"data_files entry {str(pattern)!r} is not a lance-video-frames root and "
                    "none of its sub-folders is one." + hint
                )
        return [pattern]

    def expand_all(patterns: Any) -> list[Any]:
        items = [patterns] if isinstance(patterns, (str, os.PathLike)) else list(patterns)
        return [p for item in items for p in expand(item)]

    if isinstance(data_files, Mapping):
        return {split: expand_all(patterns) for split, patterns in data_files.items()}
    return expand_all(data_files)


# --- object stores --------------------------------------------------------------------------


def store_data_files(
    data_dir: str | None, data_files: Any, storage_options: Mapping[str, Any] | None
) -> dict[str, list[tuple[str, str]]]:
    """Split -> ``(_metadata.json URI, its identity)`` of the roots of an object-store
    ``data_dir`` (as :func:`find_roots` reads a local one), or of ``data_files`` naming
    object-store roots, folders of roots or ``_metadata.json`` files (no glob patterns). The
    identity (size and ETag) makes the cache key change when a root does.

    Raises:
        RootNotFoundError: a folder holds no root.
        ValueError: a glob pattern, a local path among object-store ones, or a bad split name.
        StoreError: see :func:`~.store.read_store_file`.
    """

    def meta(folder: str) -> tuple[str, str]:
        uri = f"{folder}/{METADATA_FILENAME}"
        return uri, store_file_identity(uri, storage_options)

    def is_root(folder: str) -> bool:
        return store_file_exists(f"{folder}/{METADATA_FILENAME}", storage_options)

    def sub_roots(folder: str) -> list[str]:
        if is_root(folder):
            return [folder]
        subs = [f"{folder}/{n}" for n in list_store_folders(folder, storage_options)]
        return [f for f in subs if not f.rsplit("/", 1)[1].startswith(".") and is_root(f)]

    if data_files is None:
        folder = parse_store_uri(str(data_dir)).uri
        if is_root(folder):
            return {"train": [meta(folder)]}
        splits: dict[str, list[tuple[str, str]]] = {}
        for name in list_store_folders(folder, storage_options):
            roots = [] if name.startswith(".") else sub_roots(f"{folder}/{name}")
            if roots and not _SPLIT_NAME.match(name):
                raise ParameterError(
                    f"folder {folder}/{name} holds roots but its name is not a valid split name "
                    "(letters, digits, '_', dots between words)"
                )
            if roots:
                splits[name] = [meta(r) for r in roots]
        if not splits:
            raise RootNotFoundError(
                f"data_dir {data_dir!r} is not a lance-video-frames root (no "
                f"{METADATA_FILENAME}) and none of its sub-folders is one or holds one"
            )
        ordered = [s for s in _SPLIT_ORDER if s in splits] + sorted(set(splits) - {*_SPLIT_ORDER})
        return {s: splits[s] for s in ordered}

    def resolve(pattern: Any) -> list[tuple[str, str]]:
        text = str(pattern)
        if not is_object_store_uri(text) or _GLOB_CHARS.search(text):
            raise ParameterError(
                f"data_files on an object store must all be s3://, gs:// or az:// roots, folders "
                f"of roots or {METADATA_FILENAME} files, without glob patterns; got {text!r}"
            )
        url = parse_store_uri(text)
        if url.key.endswith(METADATA_FILENAME):
            return [meta(url.uri.rsplit("/", 1)[0])]
        roots = sub_roots(url.uri)
        if not roots:
            raise RootNotFoundError(
                f"{text!r} is not a lance-video-frames root and none of its sub-folders is one"
            )
        return [meta(r) for r in roots]

    if not isinstance(data_files, Mapping):
        data_files = {"train": data_files}
    return {
        str(split): [m for p in ([ps] if isinstance(ps, str) else ps) for m in resolve(p)]
        for split, ps in data_files.items()
    }


def is_store_data(data_dir: Any, data_files: Any) -> bool:
    """Whether ``data_dir`` or any of ``data_files`` is an object-store URL."""
    if data_files is None:
        return is_object_store_uri(str(data_dir))
    values = data_files.values() if isinstance(data_files, Mapping) else [data_files]
    flat = [v for vs in values for v in ([vs] if isinstance(vs, (str, os.PathLike)) else vs)]
    return any(is_object_store_uri(str(v)) for v in flat)
