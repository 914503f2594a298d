"""Reading hub roots: revisions pinned to a commit sha, single files, whole-root downloads.

Every read uses the sha a revision was resolved to once: lance through
``storage_options={"hf_revision": sha}`` (it does not parse ``@revision`` in a URI),
``_metadata.json`` through ``hf_hub_download(revision=sha)``. The endpoint is the
library's (``HF_ENDPOINT``, read by ``huggingface_hub`` when it is imported).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import HubError, ParameterError, RootNotFoundError
from ._calls import hub_errors, is_entry_not_found, with_retries
from .paths import METADATA_FILENAME, REPO_TYPE, HubPath, parse_hub_uri

logger = logging.getLogger("hf_lvf.location")

# Folders of a Lance dataset (what a download of a root fetches).
LANCE_DIRS = ("_versions", "_transactions", "data", "_indices", "_deletions")


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
    return resolve_revision_files(repo_id, revision, repo_type=repo_type, token=token)[0]


def resolve_revision_files(
    repo_id: str,
    revision: str | None = None,
    *,
    repo_type: str = REPO_TYPE,
    token: str | bool | None = None,
) -> tuple[str, list[str] | None]:
    """The commit sha ``revision`` points to and the repo's files at it, from one answer of
    the Hub (its repo info lists the files: no tree listing is needed); ``None`` for the
    files if the answer had no list.

    Raises:
        HubError: as :func:`resolve_revision`.
    """
    from huggingface_hub import HfApi

    api = HfApi()
    what = f"{repo_type} repo {repo_id!r}"
    with hub_errors(repo_id, revision=revision, what=what):
        info = with_retries(
            lambda: api.repo_info(repo_id, repo_type=repo_type, revision=revision, token=token),
            what=f"resolving revision {revision or 'main'!r} of {what}",
            read=True,
        )
    if not info.sha:
        raise HubError(f"the Hub gave no commit sha for revision {revision!r} of {what}")
    siblings = getattr(info, "siblings", None)
    files = None if siblings is None else [s.rfilename for s in siblings]
    return info.sha, files


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
            raise ParameterError(
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
    return fetch_hub_file(path, storage_options).read_bytes()


def fetch_hub_file(path: str, storage_options: Mapping[str, str] | None = None) -> Path:
    """:func:`read_hub_file`, returning the file's path in the Hugging Face cache instead of
    its bytes (for large files, read as a stream)."""
    from huggingface_hub import hf_hub_download

    where = parse_hub_uri(path)
    options = dict(storage_options or {})
    revision = where.revision or options.get("hf_revision")
    token = options.get("hf_token")
    folder, _, filename = where.path_in_repo.rpartition("/")
    if not filename:
        raise ParameterError(f"{path!r} names no file in the repo")
    root = HubPath(where.repo_id, folder, revision)
    try:
        what = f"{path!r} at revision {revision or 'main'!r}"
        with hub_errors(where.repo_id, revision=revision, what=what):
            local = with_retries(
                lambda: hf_hub_download(
                    where.repo_id,
                    where.path_in_repo,
                    repo_type=REPO_TYPE,
                    revision=revision,
                    token=token,
                ),
                what=f"reading {what}",
                read=True,
            )
    except HubError as err:
        if filename == METADATA_FILENAME and is_entry_not_found(err.__cause__):
            raise RootNotFoundError(
                f"{root.uri!r} is not a lance-video-frames root at revision "
                f"{revision or 'main'!r}: no {METADATA_FILENAME} there; check the path in the repo"
            ) from err.__cause__
        raise
    return Path(local)


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
    patterns = [f"{prefix}{METADATA_FILENAME}", *(f"{prefix}{d}/*" for d in LANCE_DIRS)]
    with hub_errors(path.repo_id, revision=pinned.sha, what=f"{path.uri!r}"):
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


@dataclass(frozen=True)
class RemoteFile:
    """A file of a repo at one commit, as its tree listing describes it.

    Attributes:
        size: bytes.
        blob_id: the git blob sha1 of its content (of the LFS pointer for an LFS file).
        sha256: the sha256 of the content of an LFS file, ``None`` for a regular one.
    """

    size: int
    blob_id: str
    sha256: str | None = None


def list_file_entries(repo_id: str, sha: str, token: str | bool | None) -> dict[str, RemoteFile]:
    """Every file of a dataset repo at commit ``sha``: path -> size and content hashes."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi()

    def listing() -> dict[str, RemoteFile]:
        tree = api.list_repo_tree(
            repo_id, repo_type=REPO_TYPE, revision=sha, recursive=True, token=token
        )
        return {
            entry.path: RemoteFile(
                entry.size, entry.blob_id, entry.lfs.sha256 if entry.lfs else None
            )
            for entry in tree
            if isinstance(entry, RepoFile)
        }

    with hub_errors(repo_id, revision=sha, what=f"dataset repo {repo_id!r}"):
        return with_retries(
            listing, what=f"listing dataset repo {repo_id!r} at revision {sha!r}", read=True
        )


def list_files(repo_id: str, sha: str, token: str | bool | None) -> list[str]:
    from huggingface_hub import HfApi

    api = HfApi()
    with hub_errors(repo_id, revision=sha, what=f"dataset repo {repo_id!r}"):
        return with_retries(
            lambda: api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=sha, token=token),
            what=f"listing dataset repo {repo_id!r} at revision {sha!r}",
            read=True,
        )


def read_text(repo_id: str, filename: str, sha: str, token: str | None) -> str:
    options = {"hf_revision": sha, **({"hf_token": token} if token else {})}
    return read_hub_file(HubPath(repo_id, filename).uri, options).decode("utf-8")
