"""Sending a root's files: only what the repo lacks, in commits small enough to resume.

A push compares every file of the root with the repo's file of the same path (size, then
the sha256 of an LFS file or the git blob id of a regular one) and sends only new or
changed files. When those fit in one commit (:data:`MAX_COMMIT_FILES` files and
:data:`MAX_COMMIT_BYTES` bytes), root and card go up in one commit. Otherwise the Lance
data files go first, in commits of at most that size, and a last commit adds the
manifests (``_versions/``), ``_metadata.json`` and the card and deletes stale files.

Every revision this leaves on the branch is consistent: until the last commit, readers see
the previous root (Lance data files have unique names and are only read through a manifest,
so unreferenced new ones change nothing), after it the new one. An interrupted push is
resumed by running it again: what earlier commits stored is in the repo, so it is not sent
again. The commits themselves are :meth:`huggingface_hub.HfApi.create_commit` calls, which
upload (LFS / Xet) and skip unchanged files on their own.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HubError
from ..location import METADATA_FILENAME, RemoteFile
from ..location._calls import hub_errors, with_retries

if TYPE_CHECKING:
    from huggingface_hub import CommitInfo, HfApi

logger = logging.getLogger("hf_lvf.publish")

# One commit holds at most this many new or changed files / bytes; a push bigger than that
# goes up in several commits (see the module docstring).
MAX_COMMIT_FILES = 1000
MAX_COMMIT_BYTES = 1 << 30

_CHUNK = 8 << 20


@dataclass
class UploadPlan:
    """What a push sends: ``data`` first (possibly in parts), then ``head`` with the card.

    Attributes:
        data: new or changed files a manifest refers to, as (path in repo, local path, size).
        head: new or changed manifests (``_versions/``) and ``_metadata.json``.
        unchanged: paths in the repo that already hold the local file's content.
    """

    data: list[tuple[str, Path, int]] = field(default_factory=list)
    head: list[tuple[str, Path, int]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def num_bytes(self) -> int:
        return sum(size for _, _, size in self.data + self.head)

    def data_parts(self) -> list[list[tuple[str, Path, int]]]:
        """``data`` cut into commits within ``MAX_COMMIT_FILES`` and ``MAX_COMMIT_BYTES``."""
        parts: list[list[tuple[str, Path, int]]] = []
        size = 0
        for item in self.data:
            if not parts or len(parts[-1]) >= MAX_COMMIT_FILES or size + item[2] > MAX_COMMIT_BYTES:
                parts.append([])
                size = 0
            parts[-1].append(item)
            size += item[2]
        return parts

    @property
    def fits_one_commit(self) -> bool:
        count = len(self.data) + len(self.head)
        return count <= MAX_COMMIT_FILES and self.num_bytes <= MAX_COMMIT_BYTES


def plan_upload(
    files: Mapping[str, Path], remote: Mapping[str, RemoteFile], prefix: str
) -> UploadPlan:
    """Sort the root's ``files`` (path in repo -> local path): what to send, what is there."""
    plan = UploadPlan()
    for name, path in sorted(files.items()):
        size = path.stat().st_size
        entry = remote.get(name)
        if entry is not None and _same_content(path, size, entry):
            plan.unchanged.append(name)
            continue
        rel = name[len(prefix) :]
        is_head = rel == METADATA_FILENAME or rel.startswith("_versions/")
        (plan.head if is_head else plan.data).append((name, path, size))
    return plan


def send(
    api: HfApi,
    repo_id: str,
    plan: UploadPlan,
    last: Sequence[Any],
    *,
    parent: str,
    revision: str | None,
    token: str | None,
    message: str,
    repo_type: str,
) -> tuple[CommitInfo, int]:
    """Commit the plan and the ``last`` operations (card, deletions); return the last commit.

    Returns:
        The last commit and the number of commits made.

    Raises:
        HubError: a commit failed; the message says how far the push got and how to resume.
    """
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub.utils import tqdm

    def adds(items: list[tuple[str, Path, int]]) -> list[Any]:
        return [CommitOperationAdd(path_in_repo=n, path_or_fileobj=str(p)) for n, p, _ in items]

    if plan.fits_one_commit:
        parts = [adds(plan.data + plan.head) + list(last)]
        sizes = [plan.num_bytes]
    else:
        data = plan.data_parts()
        parts = [adds(items) for items in data] + [adds(plan.head) + list(last)]
        sizes = [sum(s for _, _, s in items) for items in data]
        sizes.append(sum(s for _, _, s in plan.head))
    total = len(parts)
    where = f"dataset repo {repo_id!r}"
    commit = None
    with tqdm(total=plan.num_bytes, unit="B", unit_scale=True, desc=f"Pushing to {repo_id}") as bar:
        for i, (operations, size) in enumerate(zip(parts, sizes, strict=True), start=1):
            title = message if i == total else f"{message} (part {i} of {total}: Lance data files)"
            try:
                commit = _commit(
                    api, repo_id, operations, title, parent, revision, token, repo_type
                )
            except HubError as err:
                if i == 1:
                    raise
                raise HubError(
                    f"{str(err).rstrip('.')}. The push stopped after {i - 1} of {total} commits; "
                    "run it again to resume (files already in the repo are not sent again)."
                ) from err
            parent = commit.oid
            bar.update(size)
            if total > 1:
                logger.info("%s: commit %d of %d: %s", where, i, total, commit.oid)
    assert commit is not None
    return commit, total


def _commit(
    api: HfApi,
    repo_id: str,
    operations: list[Any],
    title: str,
    parent: str,
    revision: str | None,
    token: str | None,
    repo_type: str,
) -> CommitInfo:
    where = f"dataset repo {repo_id!r}"
    call: Callable[[], CommitInfo] = lambda: api.create_commit(  # noqa: E731
        repo_id,
        operations,
        commit_message=title,
        repo_type=repo_type,
        revision=revision,
        token=token,
        parent_commit=parent,
    )
    with hub_errors(repo_id, revision=revision, what=where, writing=True):
        return with_retries(call, what=f"committing to {where}", statuses=frozenset({429, 503}))


def _same_content(path: Path, size: int, entry: RemoteFile) -> bool:
    if entry.size != size:
        return False
    if entry.sha256 is not None:
        return _digest(path, hashlib.sha256()) == entry.sha256
    return _digest(path, hashlib.sha1(f"blob {size}\0".encode())) == entry.blob_id


def _digest(path: Path, hasher: Any) -> str:
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()
