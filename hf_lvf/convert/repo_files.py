"""The files of a dataset to import, in a local folder or a Hub repo pinned to a commit.

Importers list and read only the files they need; a Hub file is fetched into the Hugging
Face cache when first read (with the Hub reads' retries), never the whole repo first.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputNotFoundError
from ..location import HubPath, is_hub_uri, list_files, parse_hub_uri, resolve_revision
from ..location.hub import fetch_hub_file

logger = logging.getLogger(__name__)

# Hub files fetched at once by a prefetch (each one HEAD and one GET of the cache's client).
_FETCHES = 8


@dataclass(frozen=True)
class RepoFiles:
    """A folder of files: local (``folder``) or in a Hub repo at commit ``sha``."""

    folder: str  # a local folder, or hf://datasets/org/repo[/path]
    sha: str | None = None
    token: str | None = field(default=None, repr=False)
    _listing: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def open(cls, location: str | os.PathLike[str], token: str | None = None) -> RepoFiles:
        """Pin an ``hf://`` location to its commit (its ``@revision``, else the default
        branch's head) and list its files once; a local folder as is.

        Raises:
            HubError: the repo or revision cannot be read.
        """
        text = os.fspath(location)
        if not is_hub_uri(text):
            return cls(str(Path(text).absolute()))
        where = parse_hub_uri(text)
        sha = resolve_revision(where.repo_id, where.revision, token=token)
        prefix = f"{where.path_in_repo}/" if where.path_in_repo else ""
        listing = tuple(
            name[len(prefix) :]
            for name in list_files(where.repo_id, sha, token)
            if name.startswith(prefix)
        )
        return cls(HubPath(where.repo_id, where.path_in_repo).uri, sha, token, listing)

    @property
    def names(self) -> tuple[str, ...]:
        """Every file of a Hub repo (below its path), as listed at its commit; ``()`` locally."""
        return self._listing or ()

    @property
    def is_hub(self) -> bool:
        return self.sha is not None

    @property
    def storage_options(self) -> dict[str, str] | None:
        """What a worker needs to fetch :meth:`uri` (``hf_revision``, ``hf_token``)."""
        if not self.is_hub:
            return None
        return {"hf_revision": self.sha, **({"hf_token": self.token} if self.token else {})}

    def exists(self, rel: str) -> bool:
        if self._listing is not None:
            return rel in self._listing
        return (Path(self.folder) / rel).is_file()

    def glob(self, pattern: str) -> list[str]:
        """Relative paths matching ``pattern`` (``fnmatch``, ``*`` crosses no ``/``), sorted."""
        if self._listing is not None:
            depth = pattern.count("/")
            return sorted(
                n for n in self._listing if n.count("/") == depth and fnmatch.fnmatch(n, pattern)
            )
        base = Path(self.folder)
        return sorted(p.relative_to(base).as_posix() for p in base.glob(pattern) if p.is_file())

    def uri(self, rel: str) -> str:
        """What to open: a local path, or the ``hf://`` URI (fetched by :meth:`local`)."""
        return f"{self.folder}/{rel}" if self.is_hub else str(Path(self.folder) / rel)

    def prefetch(self, rels: list[str]) -> None:
        """Fetch Hub files into the cache at once, a few at a time (their round trips
        overlap); nothing locally. Errors surface when :meth:`local` reads them."""
        if not self.is_hub or not rels:
            return
        with ThreadPoolExecutor(_FETCHES) as pool:
            list(pool.map(self._quietly, rels))

    def prefetch_behind(self, rels: list[str]) -> None:
        """Start fetching Hub files on daemon threads and return: the first videos, fetched
        while the worker processes start (a worker reads the cache, or fetches it itself)."""
        if self.is_hub:
            for rel in rels[:_FETCHES]:
                threading.Thread(target=self._quietly, args=(rel,), daemon=True).start()

    def _quietly(self, rel: str) -> None:
        try:
            self.local(rel)
        except OSError as err:  # HubError, a missing file: told where the file is read
            logger.debug("prefetching %s failed: %s", rel, err)

    def local(self, rel: str) -> Path:
        """A local path of ``rel`` (a Hub file fetched into the cache).

        Raises:
            FileNotFoundError: a local file is missing.
            HubError: a Hub file cannot be fetched.
        """
        if self.is_hub:
            return fetch_hub_file(self.uri(rel), self.storage_options)
        path = Path(self.folder) / rel
        if not path.is_file():
            raise InputNotFoundError(f"{rel!r} is missing from {self.folder!r}")
        return path

    def lineage(self, kind: str) -> dict[str, Any]:
        """What ``_metadata.json``'s ``lineage`` records of this source."""
        return {"source": self.folder, "source_format": kind} | (
            {"source_revision": self.sha} if self.sha else {}
        )
