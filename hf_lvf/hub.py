"""The Hugging Face Hub: hub-hosted roots pinned to a commit, downloads, and publishing.

The only module of hf_lvf that talks to the network, always through ``huggingface_hub``
(pylance reads ``hf://`` roots itself, with the storage options made here). The endpoint
is the library's (``HF_ENDPOINT``, read by ``huggingface_hub`` when it is imported).

A hub root is ``hf://datasets/<namespace>/<name>[@<revision>][/<path in repo>]``. Its
revision (a branch, tag or commit) is resolved once to a commit sha, and every later read
uses that sha: lance through ``storage_options={"hf_revision": sha}`` (it does not parse
``@revision`` in a URI), ``_metadata.json`` through ``hf_hub_download(revision=sha)``.

Errors of ``huggingface_hub`` are raised as :class:`~hf_lvf.errors.HubError` (or
:class:`~hf_lvf.errors.RootNotFoundError` for a folder without ``_metadata.json``) with a
one-line message that says what to do; the original is chained.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from .errors import HubError, LayoutError, RootNotFoundError
from .layout import METADATA_FILENAME, RootLayout, read_layout

if TYPE_CHECKING:
    from huggingface_hub import CommitInfo

logger = logging.getLogger(__name__)

REPO_TYPE = "dataset"
_URI_PREFIX = "hf://datasets/"
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
# Revisions that contain a "/" and are written unquoted in a URI.
_SPECIAL_REF_RE = re.compile(r"^(refs/pr/\d+|refs/convert/[\w.-]+)(?:/|$)")
# Folders of a Lance dataset; files in them that a new push does not bring are deleted.
_LANCE_DIRS = ("_versions", "_transactions", "data", "_indices", "_deletions")
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_MAX_ATTEMPTS = 5
_MAX_RETRY_WAIT_S = 30.0
_LOGIN_HINT = "pass token= (or set HF_TOKEN, or run `hf auth login`)"
_T = TypeVar("_T")


@dataclass(frozen=True)
class HubPath:
    """A location in a dataset repo: ``hf://datasets/{repo_id}[@{revision}][/{path_in_repo}]``.

    Attributes:
        repo_id: ``"namespace/name"``.
        path_in_repo: folder or file in the repo, ``""`` for its top.
        revision: branch, tag or commit sha; ``None`` for the default branch.
    """

    repo_id: str
    path_in_repo: str = ""
    revision: str | None = None

    @property
    def uri(self) -> str:
        """The URI without the revision: what lance opens (with ``hf_revision``)."""
        sub = f"/{self.path_in_repo}" if self.path_in_repo else ""
        return f"{_URI_PREFIX}{self.repo_id}{sub}"

    @property
    def revision_uri(self) -> str:
        """The URI with ``@revision`` (what ``datasets`` and ``HfFileSystem`` parse)."""
        if self.revision is None:
            return self.uri
        revision = self.revision
        if "/" in revision and not _SPECIAL_REF_RE.match(revision):
            revision = revision.replace("/", "%2F")
        sub = f"/{self.path_in_repo}" if self.path_in_repo else ""
        return f"{_URI_PREFIX}{self.repo_id}@{revision}{sub}"

    def child(self, name: str) -> HubPath:
        path = f"{self.path_in_repo}/{name}" if self.path_in_repo else name
        return HubPath(self.repo_id, path, self.revision)


@dataclass(frozen=True)
class PinnedRoot:
    """A hub root with its revision resolved to a commit.

    Attributes:
        path: where it is; ``path.revision`` is the commit sha.
        requested_revision: what the caller asked for (``None``: the default branch).
        storage_options: for lance and :func:`~hf_lvf.read_layout`: the caller's, plus
            ``hf_revision`` (the sha) and ``hf_token`` when a token was given.
    """

    path: HubPath
    requested_revision: str | None
    storage_options: dict[str, str]

    @property
    def uri(self) -> str:
        return self.path.uri

    @property
    def sha(self) -> str:
        return self.path.revision  # type: ignore[return-value]  # always set once pinned


def is_hub_uri(uri: object) -> bool:
    return isinstance(uri, str) and uri.startswith("hf://")


def parse_hub_uri(uri: str) -> HubPath:
    """Split ``hf://datasets/{namespace}/{name}[@{revision}][/{path}]``.

    Raises:
        ValueError: ``uri`` is not of that form (only dataset repos hold roots).
    """
    if not isinstance(uri, str) or not uri.startswith(_URI_PREFIX):
        raise ValueError(
            f"a hub root must look like 'hf://datasets/<namespace>/<name>[@<revision>][/<path>]', "
            f"got {uri!r}"
        )
    parts = uri[len(_URI_PREFIX) :].split("/")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise ValueError(
            f"a hub root must name a repo: 'hf://datasets/<namespace>/<name>[/<path>]', got {uri!r}"
        )
    namespace, name, rest = parts[0], parts[1], parts[2:]
    revision = None
    if "@" in name:
        name, _, revision = name.partition("@")
        tail = "/".join([revision, *rest])
        special = _SPECIAL_REF_RE.match(tail)
        if special:
            revision = special.group(1)
            rest = (
                [p for p in tail[special.end() :].split("/")] if special.end() < len(tail) else []
            )
        revision = unquote(revision)
        if not revision or not name:
            raise ValueError(f"empty repo name or revision in hub root {uri!r}")
    path = "/".join(rest).strip("/")
    if path and any(p in ("", ".", "..") for p in path.split("/")):
        raise ValueError(f"the path in hub root {uri!r} has empty, '.' or '..' segments")
    return HubPath(f"{namespace}/{name}", path, revision)


# --- resolving revisions ---


def resolve_revision(
    repo_id: str,
    revision: str | None = None,
    *,
    repo_type: str = REPO_TYPE,
    token: str | bool | None = None,
) -> str:
    """The commit sha ``revision`` (a branch, tag or sha; default: the default branch) points to.

    Raises:
        HubError: the repo or revision does not exist, is private or gated, or the Hub
            cannot be reached.
    """
    from huggingface_hub import HfApi

    api = HfApi()
    what = f"{repo_type} repo {repo_id!r}"
    with _hub_errors(repo_id, revision=revision, what=what):
        info = _with_retries(
            lambda: api.repo_info(repo_id, repo_type=repo_type, revision=revision, token=token),
            what=f"resolving revision {revision or 'main'!r} of {what}",
        )
    if not info.sha:
        raise HubError(f"the Hub gave no commit sha for revision {revision!r} of {what}")
    return info.sha


def pin_root(
    uri: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> PinnedRoot:
    """Resolve the revision of a hub root once and return what every read of it should use.

    The revision comes from ``revision``, else ``@revision`` in ``uri``, else
    ``storage_options["hf_revision"]``, else the default branch.

    Raises:
        ValueError: ``uri`` is malformed, or two revisions disagree.
        HubError: see :func:`resolve_revision`.
    """
    return pin_roots([uri], revision=revision, token=token, storage_options=storage_options)[0]


def pin_roots(
    uris: Sequence[str],
    *,
    revision: str | None = None,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> list[PinnedRoot]:
    """:func:`pin_root` for several roots, resolving each repo and revision once.

    Roots of one repo at one revision (the splits of a dataset) are pinned to the same
    commit even if the repo changes while they are resolved.
    """
    base = dict(storage_options or {})
    if token is None:
        token = base.get("hf_token")
    resolved: dict[tuple[str, str | None], str] = {}
    pinned = []
    for uri in uris:
        path = parse_hub_uri(uri)
        asked = [r for r in (revision, path.revision, base.get("hf_revision")) if r is not None]
        if len(set(asked)) > 1:
            raise ValueError(
                f"conflicting revisions for {uri!r}: revision={revision!r}, '@' in the URI "
                f"{path.revision!r}, storage_options['hf_revision']={base.get('hf_revision')!r}; "
                "give one"
            )
        requested = asked[0] if asked else None
        key = (path.repo_id, requested)
        if key not in resolved:
            resolved[key] = resolve_revision(path.repo_id, requested, token=token)
            logger.info("resolved %s@%s to commit %s", path.uri, requested or "main", resolved[key])
        options = {**base, "hf_revision": resolved[key]}
        if token:
            options["hf_token"] = token
        where = HubPath(path.repo_id, path.path_in_repo, resolved[key])
        pinned.append(PinnedRoot(where, requested, options))
    return pinned


# --- reading ---


def read_hub_file(path: str, storage_options: Mapping[str, str] | None = None) -> bytes:
    """The bytes of one file of a dataset repo (``hf://datasets/org/repo[@rev]/file``).

    The revision is ``@rev`` in ``path``, else ``storage_options["hf_revision"]``, else the
    default branch; the token ``storage_options["hf_token"]``, else the library's default.
    The file goes through the Hugging Face cache, so a file of a pinned commit is fetched once.

    Raises:
        RootNotFoundError: the file is ``_metadata.json`` and it does not exist there.
        HubError: the repo, revision or file is missing or not accessible, or the Hub fails.
    """
    from huggingface_hub import hf_hub_download

    where = parse_hub_uri(path)
    options = dict(storage_options or {})
    revision = where.revision or options.get("hf_revision")
    token = options.get("hf_token")
    folder, _, filename = where.path_in_repo.rpartition("/")
    if not filename:
        raise ValueError(f"{path!r} names no file in the repo")
    root = HubPath(where.repo_id, folder, revision)
    try:
        with _hub_errors(where.repo_id, revision=revision, what=f"{path!r}"):
            local = hf_hub_download(
                where.repo_id,
                where.path_in_repo,
                repo_type=REPO_TYPE,
                revision=revision,
                token=token,
            )
    except HubError as err:
        if filename == METADATA_FILENAME and _is_entry_not_found(err.__cause__):
            raise RootNotFoundError(
                f"{root.uri!r} is not a lance-video-frames root at revision "
                f"{revision or 'main'!r}: no {METADATA_FILENAME} there; check the path in the repo"
            ) from err.__cause__
        raise
    return Path(local).read_bytes()


def download_root(
    uri: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Download a hub root into the Hugging Face cache (once per commit) and return its folder.

    Only the root's files are fetched (``_metadata.json`` and the Lance folders), not the
    rest of the repo.

    Raises:
        RootNotFoundError: there is no ``_metadata.json`` at that path and revision.
        HubError: see :func:`resolve_revision`, or a download failed.
    """
    pinned = pin_root(uri, revision=revision, token=token)
    return _download_pinned(pinned, cache_dir=cache_dir)


def _download_pinned(
    pinned: PinnedRoot, *, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """:func:`download_root` for an already pinned root."""
    from huggingface_hub import snapshot_download

    path = pinned.path
    prefix = f"{path.path_in_repo}/" if path.path_in_repo else ""
    patterns = [f"{prefix}{METADATA_FILENAME}", *(f"{prefix}{d}/*" for d in _LANCE_DIRS)]
    with _hub_errors(path.repo_id, revision=pinned.sha, what=f"{path.uri!r}"):
        snapshot = snapshot_download(
            path.repo_id,
            repo_type=REPO_TYPE,
            revision=pinned.sha,
            allow_patterns=patterns,
            token=pinned.storage_options.get("hf_token"),
            cache_dir=cache_dir,
        )
    local = Path(snapshot) / path.path_in_repo if path.path_in_repo else Path(snapshot)
    if not (local / METADATA_FILENAME).is_file():
        raise RootNotFoundError(
            f"{path.uri!r} is not a lance-video-frames root at commit {pinned.sha}: no "
            f"{METADATA_FILENAME} there; check the path in the repo"
        )
    logger.info("downloaded %s@%s to %s", path.uri, pinned.sha, local)
    return local


def lance_location(uri: str, storage_options: Mapping[str, str] | None) -> tuple[str, dict]:
    """What lance opens for a root: an ``hf://...@rev/sub`` URI becomes the URI without
    ``@rev`` and ``hf_revision=rev`` (lance ignores ``@rev``). No network; other URIs pass."""
    options = dict(storage_options or {})
    if not is_hub_uri(uri):
        return uri, options
    try:
        path = parse_hub_uri(uri)
    except ValueError:  # not a dataset repo: lance's business
        return uri, options
    if path.revision is None:
        return uri, options
    if options.get("hf_revision", path.revision) != path.revision:
        raise ValueError(
            f"conflicting revisions for {uri!r}: storage_options['hf_revision']="
            f"{options['hf_revision']!r}"
        )
    options["hf_revision"] = path.revision
    return path.uri, options


# --- the datasets front end ---

_GLOB_CHARS = re.compile(r"[*?\[]")


def pin_data_files(data_files: Any, *, token: str | bool | None = None) -> Any:
    """``data_files`` of ``load_dataset("hf_lvf", ...)`` with every hub pattern pinned to a commit.

    ``hf://datasets/org/repo[@rev]/...`` patterns get ``@<sha>`` (each repo and revision
    resolved once), so the cache key names the commit and every read uses it. A hub
    pattern without glob characters that names a folder becomes the ``_metadata.json`` of
    the roots in it (the folder itself, or its sub-folders). Other patterns pass unchanged;
    the structure (a string, a list, or a split -> patterns mapping) is kept.

    Raises:
        RootNotFoundError: a hub folder holds no root.
        HubError: see :func:`resolve_revision`.
    """
    shas: dict[tuple[str, str | None], str] = {}
    listings: dict[tuple[str, str], list[str]] = {}

    def pin(pattern: Any) -> list[Any]:
        if not is_hub_uri(pattern):
            return [pattern]
        path = parse_hub_uri(pattern)
        key = (path.repo_id, path.revision)
        if key not in shas:
            shas[key] = resolve_revision(path.repo_id, path.revision, token=token)
        pinned = HubPath(path.repo_id, path.path_in_repo, shas[key])
        if _GLOB_CHARS.search(path.path_in_repo) or path.path_in_repo.endswith(METADATA_FILENAME):
            return [pinned.revision_uri]
        files = listings.get((path.repo_id, pinned.revision))  # type: ignore[arg-type]
        if files is None:
            files = _list_files(path.repo_id, shas[key], token)
            listings[(path.repo_id, shas[key])] = files
        if path.path_in_repo in files:
            return [pinned.revision_uri]  # a file: datasets will say what it makes of it
        folders = _roots_below(files, path.path_in_repo, depth=1)
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
    sha = resolve_revision(path.repo_id, path.revision, token=token)
    files = _list_files(path.repo_id, sha, token)
    base = path.path_in_repo

    def metadata_uri(folder: str) -> str:
        return HubPath(path.repo_id, folder, sha).child(METADATA_FILENAME).revision_uri

    if base in _root_folders(files):
        return {"train": [metadata_uri(base)]}
    prefix = f"{base}/" if base else ""
    splits: dict[str, list[str]] = {}
    for folder in _root_folders(files):
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


def download_layouts(
    layouts: Sequence[RootLayout], *, token: str | bool | None = None
) -> tuple[RootLayout, ...]:
    """The layouts of hub roots as layouts of their copies in the Hugging Face cache.

    What the non-streaming ``datasets`` builder reads: each hub root is downloaded once (per
    commit; ``@rev`` in its URI pins it) and read locally. Local roots pass unchanged.

    Raises:
        RootNotFoundError, HubError: see :func:`download_root`.
    """
    import dataclasses

    out = []
    for layout in layouts:
        if not is_hub_uri(layout.uri):
            out.append(layout)
            continue
        local = download_root(layout.uri, token=token if isinstance(token, str) else None)
        out.append(dataclasses.replace(layout, uri=str(local)))
    return tuple(out)


# --- publishing ---


def push_to_hub(
    root: str | os.PathLike[str],
    repo_id: str,
    *,
    path_in_repo: str | None = None,
    revision: str | None = None,
    private: bool | None = None,
    token: str | None = None,
    commit_message: str | None = None,
    card_options: Mapping[str, Any] | None = None,
) -> CommitInfo:
    """Publish a root to a dataset repo, with its dataset card, in one commit.

    Creates the repo if needed. The commit holds the root's files (``_metadata.json`` and
    the Lance folders) under ``path_in_repo``, deletes the Lance files a previous push left
    there, and writes the repo's ``README.md`` (the card, describing every root of the repo,
    its user-written sections kept) and the root's preview picture beside it.

    Args:
        root: a local root folder.
        repo_id: ``"namespace/name"`` of the dataset repo.
        path_in_repo: the folder to put the root in (default: the repo's top), e.g. ``"train"``.
        revision: the branch to commit to (created from the default branch if missing).
        private: visibility of a repo this creates (an existing repo keeps its own).
        token: a token with write access; default: the library's (``HF_TOKEN``, ``hf auth login``).
        commit_message: default ``"Upload lance-video-frames root <path> with hf_lvf"``.
        card_options: :class:`~hf_lvf.card.CardOptions` fields for the card (``license``,
            ``pretty_name``, ``window_length``...).

    Returns:
        The commit (``.oid`` is its sha, ``.commit_url`` its page).

    Raises:
        ValueError: a bad argument (``root`` not a local folder, bad ``repo_id`` or path).
        RootNotFoundError, LayoutError: ``root`` is not a valid lance-video-frames root.
        HubError: the Hub refused or failed (no write access, ...).

    Example:
        >>> push_to_hub("clips/", "me/clips", card_options={"license": "mit"})  # doctest: +SKIP
        CommitInfo(commit_url='https://huggingface.co/datasets/me/clips/commit/...', ...)
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    from .card import (
        CARD_FILENAME,
        CardRoot,
        card_for_roots,
        clean_path_in_repo,
        preview_filename,
        render_preview,
        split_name,
    )

    local, layout = _check_local_root(root)
    _check_repo_id(repo_id)
    path_in_repo = clean_path_in_repo(path_in_repo)
    if revision is not None and _SHA_RE.match(revision):
        raise ValueError(f"revision must be a branch to commit to, got the commit sha {revision!r}")
    api = HfApi()
    where = f"dataset repo {repo_id!r}"
    with _hub_errors(repo_id, revision=revision, what=where, writing=True):
        _with_retries(
            lambda: api.create_repo(
                repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True, token=token
            ),
            what=f"creating {where}",
        )
        if revision is not None and revision != "main":
            api.create_branch(
                repo_id, branch=revision, repo_type=REPO_TYPE, exist_ok=True, token=token
            )
    parent = resolve_revision(repo_id, revision, token=token)
    existing_files = _list_files(repo_id, parent, token)

    prefix = f"{path_in_repo}/" if path_in_repo else ""
    uploads = {f"{prefix}{rel}": path for rel, path in _root_files(local)}
    preview_name = preview_filename(path_in_repo)
    entries = [
        CardRoot(
            layout=layout,
            path_in_repo=path_in_repo,
            split=split_name(path_in_repo),
            preview=preview_name,
        )
    ]
    for folder in _root_folders(existing_files):
        if folder == path_in_repo:
            continue
        other = HubPath(repo_id, folder, parent)
        options = {"hf_revision": parent, **({"hf_token": token} if token else {})}
        try:
            other_layout = read_layout(other.uri, storage_options=options)
        except (LayoutError, RootNotFoundError) as err:
            logger.warning("the card leaves out %s: %s", other.uri, err)
            continue
        entries.append(
            CardRoot(
                layout=other_layout,
                path_in_repo=folder,
                split=split_name(folder),
                preview=preview_filename(folder)
                if preview_filename(folder) in existing_files
                else None,
            )
        )
    existing_card = (
        _read_text(repo_id, CARD_FILENAME, parent, token)
        if CARD_FILENAME in existing_files
        else None
    )
    card = card_for_roots(
        entries, {**dict(card_options or {}), "repo_id": repo_id}, existing=existing_card
    )
    picture = render_preview(layout)

    operations: list[Any] = [
        CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(path))
        for name, path in sorted(uploads.items())
    ]
    operations.append(
        CommitOperationAdd(path_in_repo=CARD_FILENAME, path_or_fileobj=str(card).encode())
    )
    operations.append(CommitOperationAdd(path_in_repo=preview_name, path_or_fileobj=picture))
    stale = [
        f
        for f in existing_files
        if f not in uploads and any(f.startswith(f"{prefix}{d}/") for d in _LANCE_DIRS)
    ]
    operations += [CommitOperationDelete(path_in_repo=f) for f in stale]
    message = commit_message or (
        f"Upload lance-video-frames root {path_in_repo or '(repo top)'} with hf_lvf"
    )
    with _hub_errors(repo_id, revision=revision, what=where, writing=True):
        commit = _with_retries(
            lambda: api.create_commit(
                repo_id,
                operations,
                commit_message=message,
                repo_type=REPO_TYPE,
                revision=revision,
                token=token,
                parent_commit=parent,
            ),
            what=f"committing to {where}",
            statuses=frozenset({429, 503}),
        )
    logger.info(
        "pushed %s to %s (%d files, %d deleted): %s",
        local,
        HubPath(repo_id, path_in_repo).uri,
        len(uploads),
        len(stale),
        commit.oid,
    )
    return commit


def push_card(
    repo_id: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    commit_message: str | None = None,
    card_options: Mapping[str, Any] | None = None,
) -> str:
    """Regenerate the card of a dataset repo from the roots it holds and push only the card.

    Statistics come from the roots' ``_metadata.json`` on the Hub; user-written sections
    and the window parameters of the current card are kept; preview pictures already in the
    repo are referenced. The card goes up with :meth:`huggingface_hub.DatasetCard.push_to_hub`.

    Returns:
        The URL of the commit.

    Raises:
        RootNotFoundError: the repo holds no root at that revision.
        HubError: see :func:`resolve_revision`, or the push failed.
    """
    from .card import CARD_FILENAME, CardRoot, card_for_roots, preview_filename, split_name

    _check_repo_id(repo_id)
    sha = resolve_revision(repo_id, revision, token=token)
    files = _list_files(repo_id, sha, token)
    folders = _root_folders(files)
    if not folders:
        raise RootNotFoundError(
            f"dataset repo {repo_id!r} holds no lance-video-frames root at revision "
            f"{revision or 'main'!r}; publish one with hf_lvf.push_to_hub first"
        )
    options = {"hf_revision": sha, **({"hf_token": token} if token else {})}
    entries = [
        CardRoot(
            layout=read_layout(HubPath(repo_id, folder).uri, storage_options=options),
            path_in_repo=folder,
            split=split_name(folder),
            preview=preview_filename(folder) if preview_filename(folder) in files else None,
        )
        for folder in folders
    ]
    existing = _read_text(repo_id, CARD_FILENAME, sha, token) if CARD_FILENAME in files else None
    card = card_for_roots(
        entries, {**dict(card_options or {}), "repo_id": repo_id}, existing=existing
    )
    with _hub_errors(repo_id, revision=revision, what=f"dataset repo {repo_id!r}", writing=True):
        return card.push_to_hub(
            repo_id,
            token=token,
            repo_type=REPO_TYPE,
            commit_message=commit_message or "Update the dataset card with hf_lvf",
            revision=revision,
            parent_commit=sha,
        )


# --- internals ---


def _check_repo_id(repo_id: object) -> None:
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise ValueError(f"repo_id must be 'namespace/name', got {repo_id!r}")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ValueError(f"repo_id {repo_id!r} is not a valid repo id: {err}") from err


def _check_local_root(root: str | os.PathLike[str]) -> tuple[Path, RootLayout]:
    """A local root, validated like a reader would: metadata, then the Lance table."""
    from .frames import FrameReader

    text = os.fspath(root)
    if "://" in text:
        raise ValueError(f"root must be a local folder to push, got {text!r}")
    local = Path(text).absolute()
    if not local.is_dir():
        raise RootNotFoundError(f"{text!r} is not a folder, so not a lance-video-frames root")
    layout = read_layout(str(local))
    if not (local / "_versions").is_dir():
        raise LayoutError(
            f"{text!r} has a {METADATA_FILENAME} but no Lance table (_versions/ is missing): "
            "it is not a complete lance-video-frames root"
        )
    _ = FrameReader(layout).dataset  # opening the table checks its schema and row count
    return local, layout


def _root_files(local: Path) -> Iterator[tuple[str, Path]]:
    """The files of a root to upload, as (relative posix path, path); hidden ones are left out."""
    from .card import CARD_FILENAME, PREVIEW_STEM

    for path in sorted(local.rglob("*")):
        rel = path.relative_to(local)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        if len(rel.parts) == 1 and (rel.name == CARD_FILENAME or rel.name.startswith(PREVIEW_STEM)):
            continue  # a card written beside the root: the push makes a fresh one
        yield rel.as_posix(), path


def _root_folders(files: Sequence[str]) -> list[str]:
    folders = []
    for f in files:
        head, _, name = f.rpartition("/")
        if name == METADATA_FILENAME:
            folders.append(head)
    return sorted(folders)


def _roots_below(files: Sequence[str], folder: str, *, depth: int) -> list[str]:
    """Root folders that are ``folder`` or at most ``depth`` levels below it."""
    folders = _root_folders(files)
    if folder in folders:
        return [folder]
    prefix = f"{folder}/" if folder else ""
    return [f for f in folders if f.startswith(prefix) and f[len(prefix) :].count("/") < depth]


def _list_files(repo_id: str, sha: str, token: str | bool | None) -> list[str]:
    from huggingface_hub import HfApi

    api = HfApi()
    with _hub_errors(repo_id, revision=sha, what=f"dataset repo {repo_id!r}"):
        return _with_retries(
            lambda: api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=sha, token=token),
            what=f"listing dataset repo {repo_id!r}",
        )


def _read_text(repo_id: str, filename: str, sha: str, token: str | None) -> str:
    options = {"hf_revision": sha, **({"hf_token": token} if token else {})}
    return read_hub_file(HubPath(repo_id, filename).uri, options).decode("utf-8")


def _with_retries(
    call: Callable[[], _T],
    *,
    what: str,
    statuses: frozenset[int] = _RETRY_STATUSES,
) -> _T:
    """``call()``, again after a wait when the Hub answers a retryable status (``Retry-After``)."""
    from huggingface_hub.errors import HfHubHTTPError

    for attempt in range(1, _MAX_ATTEMPTS + 1):
        try:
            return call()
        except HfHubHTTPError as err:
            response = getattr(err, "response", None)
            status = getattr(response, "status_code", None)
            if status not in statuses or attempt == _MAX_ATTEMPTS:
                raise
            wait = _retry_after(response, attempt)
            logger.warning(
                "the Hub answered %s while %s; retrying in %.1f s (attempt %d of %d)",
                status,
                what,
                wait,
                attempt + 1,
                _MAX_ATTEMPTS,
            )
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _retry_after(response: Any, attempt: int) -> float:
    value = (getattr(response, "headers", None) or {}).get("Retry-After")
    try:
        wait = float(value) if value is not None else float(2 ** (attempt - 1))
    except ValueError:  # an HTTP date: not worth parsing, back off instead
        wait = float(2 ** (attempt - 1))
    return min(max(wait, 0.0), _MAX_RETRY_WAIT_S)


def _is_entry_not_found(err: BaseException | None) -> bool:
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    return isinstance(err, EntryNotFoundError) and not isinstance(err, LocalEntryNotFoundError)


def _is_transport_error(err: BaseException) -> bool:
    if isinstance(err, (ConnectionError, TimeoutError)):
        return True
    names = {cls.__name__ for cls in type(err).__mro__}
    return bool(names & {"TransportError", "TimeoutException", "ConnectError", "RequestError"})


@contextlib.contextmanager
def _hub_errors(
    repo_id: str, *, revision: str | None, what: str, writing: bool = False
) -> Iterator[None]:
    """Raise ``huggingface_hub``'s errors as :class:`HubError`, with a message saying what to do."""
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        DisabledRepoError,
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    url = f"{constants.ENDPOINT}/datasets/{repo_id}"
    try:
        yield
    except HubError:
        raise
    except GatedRepoError as err:
        raise HubError(
            f"dataset repo {repo_id!r} is gated: accept its conditions at {url} and {_LOGIN_HINT}"
        ) from err
    except RepositoryNotFoundError as err:
        raise HubError(
            f"dataset repo {repo_id!r} was not found at {constants.ENDPOINT}, or it is private: "
            f"check the repo id, or {_LOGIN_HINT} with a token that can read it"
        ) from err
    except RevisionNotFoundError as err:
        raise HubError(
            f"revision {revision!r} does not exist in dataset repo {repo_id!r}: pass a branch, "
            "tag or commit sha of that repo"
        ) from err
    except DisabledRepoError as err:
        raise HubError(f"dataset repo {repo_id!r} is disabled on the Hub") from err
    except OfflineModeIsEnabled as err:
        raise HubError(
            f"cannot read {what}: HF_HUB_OFFLINE is set; unset it to use the Hub"
        ) from err
    except LocalEntryNotFoundError as err:
        raise HubError(
            f"cannot read {what}: the Hub at {constants.ENDPOINT} could not be reached and the "
            "file is not in the local cache; check the connection (and HF_ENDPOINT)"
        ) from err
    except EntryNotFoundError as err:
        raise HubError(
            f"{what} does not exist at revision {revision or 'main'!r} of dataset repo "
            f"{repo_id!r}: check the path in the repo"
        ) from err
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        server = getattr(err, "server_message", None) or str(err).splitlines()[0]
        if status in (401, 403) and writing:
            hint = f"{_LOGIN_HINT} with a token that has write access to {repo_id!r}"
        elif status in (401, 403):
            hint = _LOGIN_HINT
        elif status is not None and status >= 500 or status == 429:
            hint = "the Hub is busy or down; try again later"
        else:
            hint = "see the message above"
        raise HubError(f"the Hub answered {status} for {what}: {server.strip()}; {hint}") from err
    except Exception as err:
        if _is_transport_error(err):
            raise HubError(
                f"cannot reach the Hub at {constants.ENDPOINT} for {what}: {err}; check the "
                "connection (and HF_ENDPOINT)"
            ) from err
        raise


__all__ = [
    "HubPath",
    "PinnedRoot",
    "download_layouts",
    "download_root",
    "hub_data_dir_files",
    "is_hub_uri",
    "lance_location",
    "parse_hub_uri",
    "pin_data_files",
    "pin_root",
    "pin_roots",
    "push_card",
    "push_to_hub",
    "read_hub_file",
    "resolve_revision",
]
