"""Where a root lives: ``hf://datasets/...`` locations, parsed, and what lance opens.

No network here. A hub root is ``hf://datasets/<namespace>/<name>[@<revision>][/<path>]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from ..errors import ParameterError

REPO_TYPE = "dataset"
# The file that makes a folder a root (FORMAT.md); everything else is Lance's.
METADATA_FILENAME = "_metadata.json"
_URI_PREFIX = "hf://datasets/"
# Revisions that contain a "/" and are written unquoted in a URI.
_SPECIAL_REF_RE = re.compile(r"^(refs/pr/\d+|refs/convert/[\w.-]+)(?:/|$)")


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


def is_hub_uri(uri: object) -> bool:
    return isinstance(uri, str) and uri.startswith("hf://")


def parse_hub_uri(uri: str) -> HubPath:
    """Split ``hf://datasets/{namespace}/{name}[@{revision}][/{path}]``.

    Raises:
        ValueError: ``uri`` is not of that form (only dataset repos hold roots).
    """
    if not isinstance(uri, str) or not uri.startswith(_URI_PREFIX):
        raise ParameterError(
            f"a hub root must look like 'hf://datasets/<namespace>/<name>[@<revision>][/<path>]', "
            f"got {uri!r}"
        )
    parts = uri[len(_URI_PREFIX) :].split("/")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise ParameterError(
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
            raise ParameterError(f"empty repo name or revision in hub root {uri!r}")
    path = "/".join(rest).strip("/")
    if path and any(p in ("", ".", "..") for p in path.split("/")):
        raise ParameterError(f"the path in hub root {uri!r} has empty, '.' or '..' segments")
    return HubPath(f"{namespace}/{name}", path, revision)


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
        raise ParameterError(
            f"conflicting revisions for {uri!r}: storage_options['hf_revision']="
            f"{options['hf_revision']!r}"
        )
    options["hf_revision"] = path.revision
    return path.uri, options
