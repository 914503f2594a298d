"""Publishing: a root and its dataset card to a dataset repo on the Hub.

The only package of hf_lvf that writes to the Hub (reads go through
:mod:`hf_lvf.location`). ``push_to_hub`` puts a root, the card describing every
root of the repo and the root's preview picture on a branch, sending only the files the
repo lacks, in one commit or, for a big push, in several that a re-run resumes
(:mod:`._upload`); ``push_card`` regenerates only the card.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..card import (
    CARD_FILENAME,
    PREVIEW_STEM,
    CardRoot,
    card_for_roots,
    clean_path_in_repo,
    preview_filename,
    render_preview,
    split_name,
)
from ..errors import LayoutError, ParameterError, RootNotFoundError
from ..frames import FrameReader
from ..layout import RootLayout, read_layout
from ..location import (
    LANCE_DIRS,
    METADATA_FILENAME,
    REPO_TYPE,
    HubPath,
    download_store_root,
    is_object_store_uri,
    list_file_entries,
    list_files,
    read_text,
    resolve_revision,
    root_folders,
)
from ..location._calls import hub_errors, with_retries
from ._upload import plan_upload, send

if TYPE_CHECKING:
    from huggingface_hub import CommitInfo

logger = logging.getLogger(__name__)

_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


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
    storage_options: Mapping[str, str] | None = None,
) -> CommitInfo:
    """Publish a root to a dataset repo, with its dataset card.

    Creates the repo if needed. The push puts the root's files (``_metadata.json`` and the
    Lance folders) under ``path_in_repo``, deletes the Lance files a previous push left
    there, and writes the repo's ``README.md`` (the card, describing every root of the repo,
    its user-written sections kept) and the root's preview picture beside it.

    Only files the repo does not hold with the same content are sent. Up to 1000 such
    files and 1 GiB it is one commit;
    beyond, the Lance data files go first in commits of at most that size, then one commit
    adds the manifests, ``_metadata.json`` and the card, so that every revision of the
    branch holds a consistent root. An interrupted push resumes when run again.

    Args:
        root: a local root folder, or a root on an object store (``s3://...``), which is
            first copied into a temporary folder (with ``storage_options``, lance's options).
        repo_id: ``"namespace/name"`` of the dataset repo.
        path_in_repo: the folder to put the root in (default: the repo's top), e.g. ``"train"``.
        revision: the branch to commit to (created from the default branch if missing).
        private: visibility of a repo this creates (an existing repo keeps its own).
        token: a token with write access; default: the library's (``HF_TOKEN``, ``hf auth login``).
        commit_message: default ``"Upload lance-video-frames root <path> with hf_lvf"``.
        card_options: :class:`~hf_lvf.card.CardOptions` fields for the card (``license``,
            ``pretty_name``, ``window_length``...).

    Returns:
        The (last) commit (``.oid`` is its sha, ``.commit_url`` its page).

    Raises:
        ValueError: a bad argument (``root`` not a local folder, bad ``repo_id`` or path).
        RootNotFoundError, LayoutError: ``root`` is not a valid lance-video-frames root.
        HubError: the Hub refused or failed (no write access, ...); after some commits of a
            big push, the message says so: run the push again to resume.

    Examples:
        >>> push_to_hub("clips/", "me/clips", card_options={"license": "mit"})  # doctest: +SKIP
        CommitInfo(commit_url='https://huggingface.co/datasets/me/clips/commit/...', ...)
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    if is_object_store_uri(os.fspath(root)):
        with tempfile.TemporaryDirectory(prefix="hf_lvf-push-") as tmp:
            local = download_store_root(os.fspath(root), tmp, storage_options)
            arguments = {"path_in_repo": path_in_repo, "revision": revision, "private": private}
            arguments.update(token=token, commit_message=commit_message, card_options=card_options)
            return push_to_hub(local, repo_id, **arguments)
    local, layout = _check_local_root(root)
    _check_repo_id(repo_id)
    path_in_repo = clean_path_in_repo(path_in_repo)
    if revision is not None and _SHA_RE.match(revision):
        raise ParameterError(
            f"revision must be a branch to commit to, got the commit sha {revision!r}"
        )
    api = HfApi()
    where = f"dataset repo {repo_id!r}"
    with hub_errors(repo_id, revision=revision, what=where, writing=True):
        with_retries(
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
    remote = list_file_entries(repo_id, parent, token)
    existing_files = sorted(remote)

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
    for folder in root_folders(existing_files):
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
                storage_options=options,
            )
        )
    existing_card = (
        read_text(repo_id, CARD_FILENAME, parent, token)
        if CARD_FILENAME in existing_files
        else None
    )
    card = card_for_roots(
        entries, {**dict(card_options or {}), "repo_id": repo_id}, existing=existing_card
    )
    picture = render_preview(layout)

    plan = plan_upload(uploads, remote, prefix)
    last: list[Any] = [
        CommitOperationAdd(path_in_repo=CARD_FILENAME, path_or_fileobj=str(card).encode()),
        CommitOperationAdd(path_in_repo=preview_name, path_or_fileobj=picture),
    ]
    stale = [
        f
        for f in existing_files
        if f not in uploads and any(f.startswith(f"{prefix}{d}/") for d in LANCE_DIRS)
    ]
    last += [CommitOperationDelete(path_in_repo=f) for f in stale]
    message = commit_message or (
        f"Upload lance-video-frames root {path_in_repo or '(repo top)'} with hf_lvf"
    )
    commit, num_commits = send(
        api,
        repo_id,
        plan,
        last,
        parent=parent,
        revision=revision,
        token=token,
        message=message,
        repo_type=REPO_TYPE,
    )
    logger.info(
        "pushed %s to %s (%d files sent, %d already there, %d deleted; %d commits): %s",
        local,
        HubPath(repo_id, path_in_repo).uri,
        len(plan.data) + len(plan.head),
        len(plan.unchanged),
        len(stale),
        num_commits,
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

    _check_repo_id(repo_id)
    sha = resolve_revision(repo_id, revision, token=token)
    files = list_files(repo_id, sha, token)
    folders = root_folders(files)
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
            storage_options=options,
        )
        for folder in folders
    ]
    existing = read_text(repo_id, CARD_FILENAME, sha, token) if CARD_FILENAME in files else None
    card = card_for_roots(
        entries, {**dict(card_options or {}), "repo_id": repo_id}, existing=existing
    )
    with hub_errors(repo_id, revision=revision, what=f"dataset repo {repo_id!r}", writing=True):
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
        raise ParameterError(f"repo_id must be 'namespace/name', got {repo_id!r}")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ParameterError(f"repo_id {repo_id!r} is not a valid repo id: {err}") from err


def _check_local_root(root: str | os.PathLike[str]) -> tuple[Path, RootLayout]:
    """A local root, validated like a reader would: metadata, then the Lance table."""
    text = os.fspath(root)
    if "://" in text:
        raise ParameterError(
            f"root must be a local folder to push (or an s3://, gs://, az:// URL), got {text!r}"
        )
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

    for path in sorted(local.rglob("*")):
        rel = path.relative_to(local)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        if len(rel.parts) == 1 and (rel.name == CARD_FILENAME or rel.name.startswith(PREVIEW_STEM)):
            continue  # a card written beside the root: the push makes a fresh one
        yield rel.as_posix(), path


__all__ = ["push_card", "push_to_hub"]
