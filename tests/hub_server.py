"""A local HTTP server that speaks the part of the Hugging Face Hub API the real clients use.

Tests point ``huggingface_hub``, ``datasets`` and pylance at it with ``HF_ENDPOINT`` (see
``tests/conftest.py``) and then use the *real* clients: nothing is mocked.

What is emulated
----------------
Model, dataset and space repos, each an ordered list of immutable commits (a commit is a mapping
``path -> blob oid``; blobs are stored content-addressed under ``root/blobs``). Revisions are branch
names (``main``, branches created by ``create_branch``, by a commit to an unknown branch or by
``create_pr``, e.g. ``refs/pr/1``) or full 40-hex commit shas. Routes: repo create/delete, repo
info, tree listing (paginated through a ``Link`` header), paths-info, resolve (``HEAD``/``GET``
with ``Range``), preupload (always ``"regular"``: no LFS or Xet), NDJSON commit, commits, refs,
branch create/delete, validate-yaml, whoami-v2. Private and gated repos follow the real Hub's
answers (401 + ``X-Error-Code``), so the clients raise ``RepositoryNotFoundError`` and
``GatedRepoError``. Faults (status codes with ``Retry-After``, a connection dropped mid-body, a
short ``Content-Length``, a stall mid-body, delays) can be injected; ``latency`` adds a fixed
delay before every answer (a far-away Hub); every request is logged with the number of body
bytes served, when it arrived and ended, and how many requests were being served when it
arrived (``in_flight``; ``peak_in_flight`` is the most at once since the log was cleared), so
that tests count requests and their concurrency instead of timing them. ``hold()`` keeps
every answer waiting until it is let go (to count what a client has in flight at once).

Client behaviour observed against this server (huggingface_hub 2.4, pylance 14)
-------------------------------------------------------------------------------
- ``http_backoff`` retries 408/429/500/502/503/504 and connect/timeout/protocol errors, up to 5
  times, sleeping ``Retry-After + 1`` seconds when that header is present (1, 2, 4, 8 s otherwise).
  It is used by tree listings (``list_repo_tree``, ``snapshot_download``, ``HfFileSystem.ls``),
  ``preupload`` and ``HfFileSystem`` reads. ``repo_info``, ``create_repo``, ``paths-info``,
  ``whoami`` and the ``commit`` POST do not retry: a 503 raises ``HfHubHTTPError`` at once.
- ``hf_hub_download``: the metadata ``HEAD`` is made first *without* retries and, on a retryable
  status with no cached copy, again *with* ``http_backoff``: "503 twice" is two failed ``HEAD``,
  one sleep of ``Retry-After + 1`` s, success. The ``GET`` only retries 408/429 (a 503 raises).
  A connection dropped mid-body is retried (5 times, 1 s apart) from the last byte *written*;
  httpx hands the body over in 10 MB chunks, so files under 10 MB start again from 0 and bigger
  ones resume with ``Range: bytes=<n>-``. A body shorter than the ``HEAD`` size raises
  ``OSError`` ("Consistency check failed").
- ``HfFileSystem`` streaming reads (``block_size=0``) reopen once, with ``Range`` from the
  current position, when the stream breaks.
- pylance ``hf://datasets/org/repo/sub`` (OpenDAL): reads ``HF_ENDPOINT`` when a dataset is
  opened, ignores ``@rev`` in the URI and endpoint storage options, pins with
  ``storage_options={"hf_revision": sha}`` (default ``main``) and authenticates with
  ``storage_options={"hf_token": ...}`` or ``HF_TOKEN``. It lists
  ``tree/{rev}/{sub}/_versions?expand=True&recursive=True`` (follows ``Link`` pages; entries need
  ``size``, and ``lastCommit`` if present needs ``date``), then GETs ``resolve`` URLs, with
  ``Range`` for big files. It retries a 503 3-4 times without waiting (``Retry-After`` ignored),
  then raises ``ValueError``/``OSError`` (LanceError(IO)); a dropped or short range read is
  retried; a short whole-file read fails.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

DEFAULT_TOKEN = "hf_test_token"
FAKE_USER = "test-user"
REPO_TYPES = ("model", "dataset", "space")
MAX_BODY = 512 * 1024 * 1024  # refuse larger request bodies
CHUNK = 64 * 1024
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_GITATTRIBUTES = (
    b"*.arrow filter=lfs diff=lfs merge=lfs -text\n*.parquet filter=lfs diff=lfs merge=lfs -text\n"
)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def git_blob_oid(data: bytes) -> str:
    """The git sha1 of a blob: what the Hub uses as oid and ETag of a regular (non-LFS) file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubError(Exception):
    """An error answer: status, message, and the ``X-Error-Code`` the clients dispatch on."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = dict(headers or {})


@dataclass(frozen=True)
class Commit:
    """An immutable snapshot of a repo."""

    oid: str
    parent: str | None
    title: str
    message: str
    date: str
    files: Mapping[str, str]  # path -> blob oid


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    created_at: str
    gated: str | bool = False
    commits: dict[str, Commit] = field(default_factory=dict)  # oid -> commit, in creation order
    branches: dict[str, str] = field(default_factory=dict)  # name (e.g. "main", "refs/pr/1") -> oid
    pr_count: int = 0


@dataclass
class Fault:
    """A fault answered to the next ``times`` requests matching ``method`` and ``path_contains``.

    ``skip`` matching requests are let through first. ``hits`` counts the requests it affected.
    """

    status: int | None = None
    retry_after: int | None = None
    drop_mid_body: bool = False
    wrong_content_length: bool = False
    delay: float = 0.0
    stall: float = 0.0
    times: int = 1
    skip: int = 0
    path_contains: str | None = None
    method: str | None = None
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method.upper() != method:
            return False
        return self.path_contains is None or self.path_contains in path


class RequestRecord(NamedTuple):
    """One served request. ``path`` is the raw request target (path and query string);
    ``started``/``ended`` are ``time.monotonic()`` when it arrived and when it was answered."""

    method: str
    path: str
    range: str | None
    bytes_sent: int  # body bytes only
    status: int
    started: float = 0.0
    ended: float = 0.0
    in_flight: int = 1  # requests being served when this one arrived, itself included


@dataclass
class _Auth:
    token: str | None
    valid: bool


class HubServer:
    """A Hugging Face Hub look-alike on ``127.0.0.1``, served from a daemon thread.

    >>> with HubServer(tmp_path) as hub:
    ...     api = HfApi(endpoint=hub.endpoint, token=hub.token)

    Args:
        root: folder for the blob store (created if missing).
        port: TCP port, 0 for any free one.
        tokens: bearer tokens accepted as the fake user ``test-user`` (who may write everywhere).
        page_size: entries per page of tree and commit listings (the Hub uses 1000).
        autocreate_branches: a commit to an unknown branch name creates it from ``main`` (the real
            Hub answers 404 instead; use ``HfApi.create_branch`` for that behaviour).
        initial_commit: new repos start with an "initial commit" holding ``.gitattributes``, as on
            the Hub; with False they start with an empty commit.
        latency: seconds added before every answer (a round trip to a far-away Hub); also an
            attribute that can be changed while the server runs.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        port: int = 0,
        *,
        tokens: Iterable[str] = (DEFAULT_TOKEN,),
        page_size: int = 1000,
        host: str = "127.0.0.1",
        autocreate_branches: bool = True,
        initial_commit: bool = True,
        latency: float = 0.0,
    ) -> None:
        self.root = Path(root)
        self.latency = latency
        self.tokens = tuple(tokens)
        self.page_size = page_size
        self.autocreate_branches = autocreate_branches
        self.initial_commit = initial_commit
        self._host = host
        self._port = port
        self._lock = threading.RLock()
        self._repos: dict[tuple[str, str], Repo] = {}
        self._blob_sizes: dict[str, int] = {}
        self._faults: list[Fault] = []
        self._requests: list[RequestRecord] = []
        self._in_flight = 0
        self._peak_in_flight = 0
        self._release = threading.Event()
        self._release.set()
        self._uploads: list[tuple[str, str]] = []
        self._connections: set[socket.socket] = set()
        self.errors: list[str] = []  # tracebacks of unexpected server-side exceptions
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> HubServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.hub = self
        self._httpd = httpd
        self._port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="hub-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # wake up handler threads blocked on idle keep-alive connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint(self) -> str:
        return f"http://{self._host}:{self._port}"

    @property
    def token(self) -> str:
        """The first accepted token."""
        return self.tokens[0]

    # ------------------------------------------------------------------ test controls

    def reset(self) -> None:
        """Forget all repos, faults and logged requests, and set ``latency`` to 0 (blobs stay on
        disk; they are immutable)."""
        self.latency = 0.0
        with self._lock:
            self._repos.clear()
            self._faults.clear()
            self._requests.clear()
            self._peak_in_flight = self._in_flight
            self._uploads.clear()
            self.errors.clear()
        self._release.set()

    def inject(
        self,
        status: int | None = None,
        *,
        times: int = 1,
        retry_after: int | None = None,
        path_contains: str | None = None,
        method: str | None = None,
        drop_mid_body: bool = False,
        wrong_content_length: bool = False,
        delay: float = 0.0,
        stall: float = 0.0,
        skip: int = 0,
    ) -> Fault:
        """Answer the next ``times`` matching requests (after ``skip`` good ones) with a fault.

        - ``status``: answer that status with a JSON error (and ``Retry-After`` if given);
        - ``drop_mid_body``: send the real headers (full ``Content-Length``), half of the body,
          then close the connection;
        - ``wrong_content_length``: advertise (and send) only half of the body, as a truncating
          proxy would; the connection stays usable;
        - ``stall``: send the headers and half of the body, then stop sending for that many
          seconds before the rest (a stalled connection; a client with a read timeout gives up);
        - ``delay``: sleep that many seconds before answering (combinable with the others).

        ``path_contains`` is matched against the raw request target, ``method`` exactly.
        Faults are tried in injection order; each request consumes at most one.
        """
        if status is None and not (drop_mid_body or wrong_content_length or delay or stall):
            raise ValueError(
                "inject() needs a status, drop_mid_body, wrong_content_length, stall or delay"
            )
        fault = Fault(
            status=status,
            retry_after=retry_after,
            drop_mid_body=drop_mid_body,
            wrong_content_length=wrong_content_length,
            delay=delay,
            stall=stall,
            times=times,
            skip=skip,
            path_contains=path_contains,
            method=method,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log, oldest first."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        """Empty the request log and start ``peak_in_flight`` again from what is in flight."""
        with self._lock:
            self._requests.clear()
            self._peak_in_flight = self._in_flight

    @property
    def in_flight(self) -> int:
        """Requests being served right now (arrived, not yet answered)."""
        with self._lock:
            return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        """The most requests served at once since the log was last cleared."""
        with self._lock:
            return self._peak_in_flight

    @contextlib.contextmanager
    def hold(self, timeout: float = 60.0) -> Iterator[None]:
        """Within the block, every request waits before it is answered (after ``latency``),
        until the block ends or ``timeout`` seconds pass: what a client sends meanwhile is in
        flight at once, and ``in_flight`` counts it."""
        self._hold_timeout = timeout
        self._release.clear()
        try:
            yield
        finally:
            self._release.set()

    _hold_timeout = 60.0

    def requests_matching(
        self, path_contains: str | None = None, method: str | None = None
    ) -> list[RequestRecord]:
        return [
            r
            for r in self.requests
            if (method is None or r.method == method)
            and (path_contains is None or path_contains in r.path)
        ]

    @property
    def uploads(self) -> list[tuple[str, str]]:
        """``(repo_id, path)`` of every file sent in a commit that was stored, oldest first."""
        with self._lock:
            return list(self._uploads)

    def count(self, path_contains: str | None = None, method: str | None = None) -> int:
        """How many logged requests match."""
        return len(self.requests_matching(path_contains, method))

    def bytes_served(self, path_contains: str | None = None, method: str | None = None) -> int:
        """Total body bytes sent for the matching requests."""
        return sum(r.bytes_sent for r in self.requests_matching(path_contains, method))

    # ------------------------------------------------------------------ direct state access

    def create_repo(
        self,
        repo_id: str,
        repo_type: str = "dataset",
        *,
        private: bool = False,
        exist_ok: bool = False,
    ) -> Repo:
        """Create a repo without going through HTTP."""
        if repo_type not in REPO_TYPES:
            raise ValueError(f"unknown repo type {repo_type!r}")
        if repo_id.count("/") != 1 or not all(repo_id.split("/")):
            raise ValueError(f"repo id must be 'namespace/name', got {repo_id!r}")
        with self._lock:
            key = (repo_type, repo_id)
            if key in self._repos:
                if exist_ok:
                    return self._repos[key]
                raise HubError(409, f"You already created this {repo_type} repo", "RepoExists")
            repo = Repo(repo_type=repo_type, repo_id=repo_id, private=private, created_at=_now())
            files = (
                {".gitattributes": self._store_blob(_GITATTRIBUTES)} if self.initial_commit else {}
            )
            commit = self._new_commit(repo, None, "initial commit", "", files)
            repo.branches["main"] = commit.oid
            self._repos[key] = repo
            return repo

    def set_repo(
        self,
        repo_id: str,
        repo_type: str = "dataset",
        *,
        private: bool | None = None,
        gated: str | bool | None = None,
    ) -> None:
        """Change a repo's visibility or gating (``gated`` is False, ``"auto"`` or ``"manual"``)."""
        with self._lock:
            repo = self._repos[(repo_type, repo_id)]
            if private is not None:
                repo.private = private
            if gated is not None:
                repo.gated = gated

    def commit(
        self,
        repo_id: str,
        files: Mapping[str, bytes] | None = None,
        *,
        repo_type: str = "dataset",
        revision: str = "main",
        deletes: Iterable[str] = (),
        message: str = "Commit from test",
    ) -> str:
        """Commit ``files`` (path -> content) and ``deletes`` to a branch; return the new sha."""
        with self._lock:
            repo = self._repos[(repo_type, repo_id)]
            base = self._branch_head(repo, revision)
            snapshot = dict(repo.commits[base].files)
            for path in deletes:
                snapshot.pop(path, None)
            for path, data in (files or {}).items():
                snapshot[_clean_path(path)] = self._store_blob(data)
            commit = self._new_commit(repo, base, message, "", snapshot)
            repo.branches[revision] = commit.oid
            return commit.oid

    def head(self, repo_id: str, repo_type: str = "dataset", revision: str = "main") -> str:
        """The commit sha a revision currently points to."""
        with self._lock:
            return self._resolve(self._repos[(repo_type, repo_id)], revision).oid

    def read_file(
        self, repo_id: str, path: str, repo_type: str = "dataset", revision: str = "main"
    ) -> bytes:
        with self._lock:
            commit = self._resolve(self._repos[(repo_type, repo_id)], revision)
            oid = commit.files[path]
        return self._blob_path(oid).read_bytes()

    def list_files(
        self, repo_id: str, repo_type: str = "dataset", revision: str = "main"
    ) -> list[str]:
        with self._lock:
            return sorted(self._resolve(self._repos[(repo_type, repo_id)], revision).files)

    # ------------------------------------------------------------------ internals (state)

    def _blob_path(self, oid: str) -> Path:
        return self.root / "blobs" / oid[:2] / oid

    def _store_blob(self, data: bytes) -> str:
        oid = git_blob_oid(data)
        path = self._blob_path(oid)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{oid}.{uuid.uuid4().hex}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        with self._lock:
            self._blob_sizes[oid] = len(data)
        return oid

    def _blob_size(self, oid: str) -> int:
        with self._lock:
            size = self._blob_sizes.get(oid)
        if size is None:
            size = self._blob_path(oid).stat().st_size
        return size

    def _new_commit(
        self, repo: Repo, parent: str | None, title: str, message: str, files: Mapping[str, str]
    ) -> Commit:
        seed = f"{repo.repo_id}:{parent}:{time.time_ns()}:{uuid.uuid4().hex}".encode()
        commit = Commit(
            oid=hashlib.sha1(seed).hexdigest(),
            parent=parent,
            title=title,
            message=message,
            date=_now(),
            files=dict(files),
        )
        repo.commits[commit.oid] = commit
        return commit

    def _branch_head(self, repo: Repo, branch: str) -> str:
        if branch in repo.branches:
            return repo.branches[branch]
        if (
            self.autocreate_branches
            and not branch.startswith("refs/")
            and not _SHA_RE.match(branch)
        ):
            return repo.branches["main"]
        raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")

    def _resolve(self, repo: Repo, revision: str) -> Commit:
        oid = repo.branches.get(revision)
        if oid is None and _SHA_RE.match(revision) and revision in repo.commits:
            oid = revision
        if oid is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return repo.commits[oid]

    def _get_repo(self, repo_type: str, repo_id: str, auth: _Auth, *, files: bool = False) -> Repo:
        """The repo, if ``auth`` may read it; raise the error the real Hub would answer."""
        with self._lock:
            repo = self._repos.get((repo_type, repo_id))
        if repo is None or (repo.private and not auth.valid):
            # The Hub answers 401 to anonymous requests, so that private repos cannot be probed.
            if auth.valid:
                raise HubError(404, "Repository not found", "RepoNotFound")
            raise HubError(401, "Invalid username or password.", "RepoNotFound")
        if files and repo.gated and not auth.valid:
            raise HubError(
                401,
                f"Access to {repo_type} {repo_id} is restricted. You must be authenticated.",
                "GatedRepo",
            )
        return repo

    def _last_commit(self, repo: Repo, commit: Commit, path: str, is_dir: bool) -> dict[str, str]:
        """The most recent commit (from ``commit`` back) that changed ``path``."""

        def state(c: Commit) -> str | None:
            return _tree_oid(c.files, path) if is_dir else c.files.get(path)

        current = commit
        value = state(current)
        while current.parent is not None:
            parent = repo.commits[current.parent]
            if state(parent) != value:
                break
            current = parent
        return {"id": current.oid, "title": current.title, "date": current.date}

    def _entry(
        self, repo: Repo, commit: Commit, path: str, is_dir: bool, expand: bool
    ) -> dict[str, Any]:
        if is_dir:
            entry: dict[str, Any] = {
                "type": "directory",
                "oid": _tree_oid(commit.files, path),
                "size": 0,
                "path": path,
            }
        else:
            oid = commit.files[path]
            entry = {"type": "file", "oid": oid, "size": self._blob_size(oid), "path": path}
        if expand:
            entry["lastCommit"] = self._last_commit(repo, commit, path, is_dir)
        return entry

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._requests.append(record)

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.hits < fault.times and fault.matches(method, path):
                    if fault.skip > 0:
                        fault.skip -= 1
                        return None
                    fault.hits += 1
                    return fault
        return None


def _clean_path(path: str) -> str:
    path = path.strip("/")
    if not path or any(part in ("", ".", "..") for part in path.split("/")):
        raise HubError(400, f"Invalid path in repo: {path!r}")
    return path


def _dirs_of(files: Iterable[str]) -> set[str]:
    dirs: set[str] = set()
    for path in files:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    return dirs


def _tree_oid(files: Mapping[str, str], directory: str) -> str:
    prefix = directory + "/" if directory else ""
    digest = hashlib.sha1(b"tree")
    for path in sorted(p for p in files if p.startswith(prefix)):
        digest.update(f"{path[len(prefix) :]}\0{files[path]}\n".encode())
    return digest.hexdigest()


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes")


def _split_revision(segments: list[str]) -> tuple[str, list[str]]:
    """Split raw path segments into (revision, rest).

    Clients quote revisions (``refs%2Fpr%2F1``) except ``HfFileSystem``, which leaves
    ``refs/pr/N`` and ``refs/convert/X`` unquoted.
    """
    if not segments or not segments[0]:
        raise HubError(400, "Missing revision")
    first = unquote(segments[0])
    if first == "refs" and len(segments) >= 3:
        return "/".join(unquote(s) for s in segments[:3]), segments[3:]
    return first, segments[1:]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64
    hub: HubServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Client disconnects are swallowed in _Handler.handle(); anything else is a bug: keep it.
        self.hub.errors.append(traceback.format_exc())


_API_RE = re.compile(r"^/api/(models|datasets|spaces)/([^/]+)/([^/]+)(?:/(.*))?$")
_RESOLVE_RE = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+)/([^/]+)/resolve/(.+)$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "HubServer/1.0"
    timeout = 30  # idle keep-alive connections are closed after this many seconds
    server: _HTTPServer

    # ------------------------------------------------------------------ plumbing

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: the request log is in HubServer.requests

    def setup(self) -> None:
        super().setup()
        # The last byte of a body goes out in a write of its own (see _send): without
        # TCP_NODELAY, Nagle's algorithm holds it until the client's delayed ACK (~40 ms).
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.hub._lock:
            self.hub._connections.add(self.connection)

    def finish(self) -> None:
        with self.hub._lock:
            self.hub._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # client disconnects, timeouts
            super().handle()

    @property
    def hub(self) -> HubServer:
        return self.server.hub

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024).strip():  # trailers
                        pass
                    return b"".join(parts)
                total += size
                if total > MAX_BODY:
                    raise HubError(413, "Request body too large")
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise HubError(413, "Request body too large")
        return self.rfile.read(length) if length else b""

    def _auth(self) -> _Auth:
        header = self.headers.get("Authorization") or ""
        if not header:
            return _Auth(None, False)
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or token not in self.hub.tokens:
            # What the Hub answers to an unknown token, whatever the route.
            raise HubError(401, "Invalid credentials in Authorization header")
        return _Auth(token, True)

    def _dispatch(self) -> None:
        self._started = time.monotonic()
        self._status = 0
        self._sent = 0
        self._fault: Fault | None = None
        self._logged = False
        method = self.command
        hub = self.hub
        if self.path.startswith("/api/agent-harnesses"):
            # Fetched once a day by huggingface_hub to detect AI agents: neither logged nor faulted.
            self._logged = True
            self._body = self._read_body()
            self._send_json(200, {"standardEnvVars": [], "harnesses": {}})
            return
        counted = not self.path.startswith("/_stand-in/")  # the log's own route is not counted
        with hub._lock:
            hub._in_flight += counted
            self._in_flight = hub._in_flight
            hub._peak_in_flight = max(hub._peak_in_flight, hub._in_flight)
        try:
            self._body = self._read_body()
            if hub.latency > 0:
                time.sleep(hub.latency)
            if counted:
                hub._release.wait(hub._hold_timeout)
            fault = self.hub._take_fault(method, self.path)
            if fault is not None and fault.delay:
                time.sleep(fault.delay)
            if fault is not None and fault.status is not None:
                headers = {}
                if fault.retry_after is not None:
                    headers["Retry-After"] = str(fault.retry_after)
                raise HubError(fault.status, f"Injected fault {fault.status}", headers=headers)
            self._fault = fault
            self._route(method)
        except HubError as err:
            self._send_error(err)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception:  # a bug in this server: answer 500 and keep the traceback
            self.hub.errors.append(traceback.format_exc())
            self._send_error(HubError(500, "Internal error in test HubServer"))
        finally:
            self._log()
            with hub._lock:
                hub._in_flight -= counted

    def _log(self) -> None:
        """Add this request to the log, once.

        ``_send`` calls it just before the last byte of a response goes out, so that a client
        which has its answer always finds its request in the log.
        """
        if not self._logged:
            self._logged = True
            record = RequestRecord(
                self.command,
                self.path,
                self.headers.get("Range"),
                self._sent,
                self._status,
                self._started,
                time.monotonic(),
                getattr(self, "_in_flight", 1),
            )
            self.hub._record(record)

    # ------------------------------------------------------------------ responses

    def _send(
        self,
        status: int,
        headers: Mapping[str, str],
        length: int,
        chunks: Iterable[bytes] = (),
    ) -> None:
        """Send a response of ``length`` body bytes, applying an injected body fault."""
        fault = self._fault
        send_length = length
        if fault is not None and fault.wrong_content_length:
            length = send_length = length // 2
        elif fault is not None and fault.drop_mid_body and self.command != "HEAD":
            send_length = length // 2
        self._status = status
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(length))
        self.send_header("X-Request-Id", uuid.uuid4().hex)
        if self.command == "HEAD" or send_length <= 0:
            self._log()
            self.end_headers()
        else:
            self.end_headers()
            # Hold back the last byte until the request is logged.
            pending = b""
            remaining = send_length
            stall_at = send_length // 2 if fault is not None and fault.stall else None
            for chunk in _split_at(chunks, stall_at):
                if remaining <= 0:
                    break
                if pending:
                    self.wfile.write(pending)
                    self._sent += len(pending)
                    pending = b""
                if chunk is None:  # the injected stall: what was sent reaches the client first
                    self.wfile.flush()
                    time.sleep(fault.stall)  # type: ignore[union-attr]
                    continue
                pending = chunk[:remaining]
                remaining -= len(pending)
            self.wfile.write(pending[:-1])
            self._sent += len(pending)
            self._log()
            self.wfile.write(pending[-1:])
        if send_length < length:  # drop the connection mid-body
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def _send_json(self, status: int, data: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(data).encode()
        self._send(
            status, {"Content-Type": "application/json", **(headers or {})}, len(body), [body]
        )

    def _send_error(self, err: HubError) -> None:
        if self._status:  # a response is already under way: all that can be done is to hang up
            self.close_connection = True
            return
        headers = dict(err.headers)
        headers["X-Error-Message"] = err.message.encode("ascii", "backslashreplace").decode()
        if err.code:
            headers["X-Error-Code"] = err.code
        self._fault = None
        try:
            self._send_json(err.status, {"error": err.message}, headers)
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    # ------------------------------------------------------------------ routing

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        path = url.path
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        auth = self._auth()
        if path == "/_stand-in/requests" and method == "GET":
            return self._stand_in_requests(query)
        if path == "/api/whoami-v2" and method == "GET":
            return self._whoami(auth)
        if path == "/api/validate-yaml" and method == "POST":
            return self._send_json(200, {"errors": [], "warnings": []})
        if path == "/api/repos/create" and method == "POST":
            return self._create_repo(auth)
        if path == "/api/repos/delete" and method == "DELETE":
            return self._delete_repo(auth)
        match = _API_RE.match(path)
        if match:
            repo_type = match.group(1)[:-1]
            repo_id = f"{unquote(match.group(2))}/{unquote(match.group(3))}"
            rest = match.group(4)
            return self._api(method, repo_type, repo_id, rest, query, auth)
        match = _RESOLVE_RE.match(path)
        if match and method in ("GET", "HEAD"):
            repo_type = (match.group(1) or "models")[:-1]
            repo_id = f"{unquote(match.group(2))}/{unquote(match.group(3))}"
            revision, segments = _split_revision(match.group(4).split("/"))
            return self._resolve_file(
                repo_type, repo_id, revision, unquote("/".join(segments)), auth
            )
        raise HubError(404, f"Not found: {method} {path}")

    def _api(
        self,
        method: str,
        repo_type: str,
        repo_id: str,
        rest: str | None,
        query: dict[str, str],
        auth: _Auth,
    ) -> None:
        segments = rest.split("/") if rest else []
        action = segments[0] if segments else ""
        if method == "GET" and action in ("", "revision"):
            revision = _split_revision(segments[1:])[0] if action else "main"
            return self._repo_info(repo_type, repo_id, revision, query, auth)
        if method == "GET" and action == "tree":
            revision, tail = _split_revision(segments[1:])
            return self._tree(repo_type, repo_id, revision, unquote("/".join(tail)), query, auth)
        if method == "GET" and action == "commits":
            revision = _split_revision(segments[1:])[0]
            return self._commits(repo_type, repo_id, revision, query, auth)
        if method == "GET" and action == "refs":
            return self._refs(repo_type, repo_id, query, auth)
        if method == "POST" and action == "paths-info":
            return self._paths_info(repo_type, repo_id, _split_revision(segments[1:])[0], auth)
        if method == "POST" and action == "preupload":
            return self._preupload(repo_type, repo_id, _split_revision(segments[1:])[0], auth)
        if method == "POST" and action == "commit":
            revision = _split_revision(segments[1:])[0]
            return self._commit(repo_type, repo_id, revision, query, auth)
        if method in ("POST", "DELETE") and action == "branch":
            branch = unquote("/".join(segments[1:]))
            return self._branch(method, repo_type, repo_id, branch, auth)
        raise HubError(404, f"Not found: {method} /api/{repo_type}s/{repo_id}/{rest or ''}")

    def _json_body(self) -> Any:
        try:
            return json.loads(self._body or b"{}")
        except ValueError as err:
            raise HubError(400, f"Invalid JSON body: {err}") from None

    def _url_prefix(self, repo_type: str) -> str:
        return "" if repo_type == "model" else f"{repo_type}s/"

    def _base_url(self) -> str:
        host = self.headers.get("Host")
        return f"http://{host}" if host else self.hub.endpoint

    def _require_write(self, auth: _Auth) -> None:
        if not auth.valid:
            raise HubError(401, "Invalid username or password.")

    # ------------------------------------------------------------------ endpoints

    def _stand_in_requests(self, query: dict[str, str]) -> None:
        """Not a Hub route: the request log for a server in another process
        (``?path_contains=...``; ``&clear=1`` empties the log after answering): its size,
        bytes, the most requests in flight at once since it was cleared (``peak_in_flight``)
        and, with ``&log=1``, every request as ``[method, path, range, bytes, status,
        started, ended, in_flight]``."""
        hub = self.hub
        contains = query.get("path_contains") or None
        matching = [r for r in hub.requests if r.path != self.path]
        matching = [r for r in matching if contains is None or contains in r.path]
        out: dict[str, Any] = {
            "count": len(matching),
            "bytes": sum(r.bytes_sent for r in matching),
            "peak_in_flight": hub.peak_in_flight,
        }
        if _truthy(query.get("log")):
            out["log"] = [list(r) for r in matching]
        if _truthy(query.get("clear")):
            hub.clear_requests()
        self._logged = True  # not part of the log it reports
        self._send_json(200, out)

    def _whoami(self, auth: _Auth) -> None:
        if not auth.valid:
            raise HubError(401, "Invalid username or password.")
        self._send_json(
            200,
            {
                "type": "user",
                "id": "0" * 24,
                "name": FAKE_USER,
                "fullname": "Test User",
                "email": "test-user@example.invalid",
                "emailVerified": True,
                "isPro": False,
                "canPay": False,
                "orgs": [],
                "auth": {
                    "type": "access_token",
                    "accessToken": {"displayName": "tests", "role": "write"},
                },
            },
        )

    def _create_repo(self, auth: _Auth) -> None:
        self._require_write(auth)
        payload = self._json_body()
        name = payload.get("name") or ""
        repo_id = f"{payload.get('organization') or FAKE_USER}/{name}"
        repo_type = payload.get("type") or "model"
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        url = f"{self._base_url()}/{self._url_prefix(repo_type)}{repo_id}"
        try:
            self.hub.create_repo(repo_id, repo_type, private=private)
        except ValueError as err:
            raise HubError(400, str(err)) from None
        except HubError as err:
            self._send_json(
                409, {"error": err.message, "url": url}, {"X-Error-Message": err.message}
            )
            return
        self._send_json(200, {"url": url, "name": repo_id, "id": uuid.uuid4().hex[:24]})

    def _delete_repo(self, auth: _Auth) -> None:
        self._require_write(auth)
        payload = self._json_body()
        repo_id = f"{payload.get('organization') or FAKE_USER}/{payload.get('name')}"
        repo_type = payload.get("type") or "model"
        self.hub._get_repo(repo_type, repo_id, auth)
        with self.hub._lock:
            self.hub._repos.pop((repo_type, repo_id), None)
        self._send_json(200, {})

    def _repo_info(
        self, repo_type: str, repo_id: str, revision: str, query: dict[str, str], auth: _Auth
    ) -> None:
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth)
        with hub._lock:
            commit = hub._resolve(repo, revision)
        blobs = _truthy(query.get("blobs"))
        siblings = []
        for path in sorted(commit.files):
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                sibling.update(size=hub._blob_size(commit.files[path]), blobId=commit.files[path])
            siblings.append(sibling)
        info = {
            "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
            "id": repo_id,
            "author": repo_id.split("/")[0],
            "sha": commit.oid,
            "lastModified": commit.date,
            "createdAt": repo.created_at,
            "private": repo.private,
            "gated": repo.gated,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": siblings,
            "usedStorage": sum(hub._blob_size(oid) for oid in set(commit.files.values())),
        }
        if repo_type == "model":
            info["modelId"] = repo_id
        self._send_json(200, info)

    def _paginated(self, items: list[Any], query: dict[str, str]) -> None:
        """Send one page of ``items``, with a ``Link: <next>; rel="next"`` header if more remain."""
        try:
            cursor = max(int(query.get("cursor") or 0), 0)
        except ValueError:
            raise HubError(400, "Invalid cursor") from None
        size = max(self.hub.page_size, 1)
        headers = {}
        if cursor + size < len(items):
            url = urlsplit(self.path)
            params = {**query, "cursor": str(cursor + size)}
            headers["Link"] = f'<{self._base_url()}{url.path}?{urlencode(params)}>; rel="next"'
        self._send_json(200, items[cursor : cursor + size], headers)

    def _tree(
        self,
        repo_type: str,
        repo_id: str,
        revision: str,
        path: str,
        query: dict[str, str],
        auth: _Auth,
    ) -> None:
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth)
        with hub._lock:
            commit = hub._resolve(repo, revision)
        path = path.strip("/")
        dirs = _dirs_of(commit.files)
        if path and path not in dirs:
            headers = {"X-Repo-Commit": commit.oid}
            raise HubError(404, f"{path} does not exist on {revision!r}", "EntryNotFound", headers)
        recursive = _truthy(query.get("recursive"))
        expand = _truthy(query.get("expand"))
        prefix = path + "/" if path else ""

        def wanted(p: str) -> bool:
            return p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :])

        names = [(p, True) for p in dirs if wanted(p)] + [
            (p, False) for p in commit.files if wanted(p)
        ]
        names.sort(key=lambda item: (item[0].split("/"), not item[1]))
        with hub._lock:
            entries = [hub._entry(repo, commit, p, is_dir, expand) for p, is_dir in names]
        self._paginated(entries, query)

    def _paths_info(self, repo_type: str, repo_id: str, revision: str, auth: _Auth) -> None:
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth)
        with hub._lock:
            commit = hub._resolve(repo, revision)
        if "json" in self.headers.get("Content-Type", ""):
            payload = self._json_body()
            paths, expand = payload.get("paths") or [], bool(payload.get("expand"))
        else:
            form = parse_qs(self._body.decode(), keep_blank_values=True)
            paths, expand = form.get("paths", []), _truthy((form.get("expand") or [None])[-1])
        dirs = _dirs_of(commit.files)
        out = []
        with hub._lock:
            for raw in paths:
                p = raw.strip("/")
                if p in commit.files:
                    out.append(hub._entry(repo, commit, p, False, expand))
                elif p in dirs:
                    out.append(hub._entry(repo, commit, p, True, expand))
        self._send_json(200, out)

    def _commits(
        self, repo_type: str, repo_id: str, revision: str, query: dict[str, str], auth: _Auth
    ) -> None:
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth)
        items = []
        with hub._lock:
            commit: Commit | None = hub._resolve(repo, revision)
            while commit is not None:
                items.append(
                    {
                        "id": commit.oid,
                        "title": commit.title,
                        "message": commit.message,
                        "authors": [{"user": FAKE_USER, "avatar": ""}],
                        "date": commit.date,
                    }
                )
                commit = repo.commits[commit.parent] if commit.parent else None
        self._paginated(items, query)

    def _refs(self, repo_type: str, repo_id: str, query: dict[str, str], auth: _Auth) -> None:
        repo = self.hub._get_repo(repo_type, repo_id, auth)
        with self.hub._lock:
            branches = dict(repo.branches)
        heads = [
            {"name": name, "ref": f"refs/heads/{name}", "targetCommit": oid}
            for name, oid in branches.items()
            if not name.startswith("refs/")
        ]
        out: dict[str, Any] = {"branches": heads, "tags": [], "converts": []}
        if _truthy(query.get("include_prs")):
            out["pullRequests"] = [
                {"name": name, "ref": name, "targetCommit": oid}
                for name, oid in branches.items()
                if name.startswith("refs/pr/")
            ]
        self._send_json(200, out)

    def _branch(self, method: str, repo_type: str, repo_id: str, branch: str, auth: _Auth) -> None:
        self._require_write(auth)
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth)
        with hub._lock:
            if method == "DELETE":
                if branch not in repo.branches:
                    raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
                if branch == "main":
                    raise HubError(403, "Cannot delete the main branch")
                del repo.branches[branch]
            else:
                if branch in repo.branches:
                    raise HubError(409, f"Reference already exists: refs/heads/{branch}")
                start = self._json_body().get("startingPoint") or "main"
                repo.branches[branch] = hub._resolve(repo, start).oid
        self._send_json(200, {})

    def _preupload(self, repo_type: str, repo_id: str, revision: str, auth: _Auth) -> None:
        self._require_write(auth)
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth)
        files = self._json_body().get("files") or []
        with hub._lock:
            snapshot = repo.commits[hub._branch_head(repo, revision)].files
        out = []
        for item in files:
            entry = {"path": item["path"], "uploadMode": "regular", "shouldIgnore": False}
            if item["path"] in snapshot:  # lets the client skip unchanged files
                entry["oid"] = snapshot[item["path"]]
            out.append(entry)
        self._send_json(200, {"files": out, "commitOid": None})

    def _commit(
        self, repo_type: str, repo_id: str, revision: str, query: dict[str, str], auth: _Auth
    ) -> None:
        self._require_write(auth)
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth)
        header: dict[str, Any] = {}
        additions: dict[str, bytes] = {}
        deletions: list[tuple[str, bool]] = []
        for line in self._body.splitlines():
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                key, value = item["key"], item["value"]
            except (ValueError, KeyError, TypeError):
                raise HubError(400, f"Invalid NDJSON line: {line[:100]!r}") from None
            if key == "header":
                header = value
            elif key == "file":
                content = value.get("content", "")
                if value.get("encoding", "base64") == "base64":
                    additions[_clean_path(value["path"])] = base64.b64decode(content)
                else:
                    additions[_clean_path(value["path"])] = content.encode()
            elif key in ("deletedFile", "deletedFolder"):
                deletions.append((_clean_path(value["path"]), key == "deletedFolder"))
            elif key == "lfsFile":
                raise HubError(
                    400, "This test server has no LFS storage (preupload says 'regular')"
                )
            else:
                raise HubError(400, f"Unknown commit operation {key!r}")
        create_pr = _truthy(query.get("create_pr"))
        blobs = {path: hub._store_blob(data) for path, data in additions.items()}
        with hub._lock:
            if _SHA_RE.match(revision) and revision not in repo.branches:
                raise HubError(400, f"Cannot commit to a commit sha ({revision}): use a branch")
            parent_commit = header.get("parentCommit")
            base = hub._branch_head(repo, revision)
            if parent_commit:
                if create_pr:
                    matches = [oid for oid in repo.commits if oid.startswith(parent_commit)]
                    if not matches:
                        raise HubError(404, f"Invalid rev id: {parent_commit}", "RevisionNotFound")
                    base = matches[0]
                elif not base.startswith(parent_commit):
                    raise HubError(
                        412, "A commit has happened since. Please refresh and try again."
                    )
            snapshot = dict(repo.commits[base].files)
            for path, is_folder in deletions:
                doomed = [p for p in snapshot if p.startswith(path + "/")] if is_folder else []
                if not is_folder and path in snapshot:
                    doomed = [path]
                if not doomed:
                    kind = "folder" if is_folder else "file"
                    raise HubError(
                        404, f"A {kind} with this name doesn't exist: {path}", "EntryNotFound"
                    )
                for p in doomed:
                    del snapshot[p]
            snapshot.update(blobs)
            title = header.get("summary") or "Commit"
            commit = hub._new_commit(repo, base, title, header.get("description") or "", snapshot)
            branch = revision
            if create_pr:
                repo.pr_count += 1
                branch = f"refs/pr/{repo.pr_count}"
            repo.branches[branch] = commit.oid
            pr_number = repo.pr_count
            hub._uploads.extend((repo_id, path) for path in additions)
        repo_url = f"{self._base_url()}/{self._url_prefix(repo_type)}{repo_id}"
        out: dict[str, Any] = {
            "success": True,
            "commitOid": commit.oid,
            "commitUrl": f"{repo_url}/commit/{commit.oid}",
            "hookOutput": "",
        }
        if create_pr:
            out["pullRequestUrl"] = f"{repo_url}/discussions/{pr_number}"
        self._send_json(200, out)

    def _resolve_file(
        self, repo_type: str, repo_id: str, revision: str, path: str, auth: _Auth
    ) -> None:
        hub = self.hub
        repo = hub._get_repo(repo_type, repo_id, auth, files=True)
        with hub._lock:
            commit = hub._resolve(repo, revision)
        oid = commit.files.get(path)
        base_headers = {"X-Repo-Commit": commit.oid}
        if oid is None:
            raise HubError(404, "Entry not found", "EntryNotFound", base_headers)
        size = hub._blob_size(oid)
        headers = {
            **base_headers,
            "ETag": f'"{oid}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
            "Content-Disposition": f'inline; filename="{quote(path.rsplit("/", 1)[-1])}"',
            "Cache-Control": "no-cache",
        }
        status, start, length = 200, 0, size
        byte_range = _parse_range(self.headers.get("Range"), size)
        if byte_range == "unsatisfiable":
            headers = {**base_headers, "Content-Range": f"bytes */{size}"}
            raise HubError(416, "Requested range not satisfiable", headers=headers)
        if byte_range is not None:
            start, end = byte_range
            status, length = 206, end - start + 1
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        self._send(status, headers, length, _read_chunks(hub._blob_path(oid), start, length))


def _parse_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """Parse a single ``bytes=`` range into inclusive (start, end); None means the whole file."""
    if not header:
        return None
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None  # multi-range or other units: ignored, the whole file is sent (RFC 9110)
    first, _, last = spec.strip().partition("-")
    try:
        if not first:  # suffix range: the last N bytes
            suffix = int(last)
            if suffix <= 0:
                return "unsatisfiable"
            return max(size - suffix, 0), size - 1
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    if start >= size or end < start:
        return "unsatisfiable"
    return start, min(end, size - 1)


def _read_chunks(path: Path, start: int, length: int) -> Iterator[bytes]:
    with path.open("rb") as f:
        f.seek(start)
        while length > 0:
            chunk = f.read(min(CHUNK, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


def _split_at(chunks: Iterable[bytes], at: int | None) -> Iterator[bytes | None]:
    """``chunks``, with ``None`` inserted after the first ``at`` bytes (none if ``at`` is None)."""
    done = 0
    for chunk in chunks:
        if at is not None and done <= at < done + len(chunk):
            yield chunk[: at - done]
            yield None
            chunk, at = chunk[at - done :], None
        done += len(chunk)
        yield chunk


def client_environment(endpoint: str, hf_home: str | os.PathLike[str]) -> dict[str, str]:
    """The environment that points the real clients at a stand-in at ``endpoint`` and keeps
    them off the internet and off the user's cache; set it before they are imported (pop the
    ``HF_TOKEN`` family and ``HF_HUB_CACHE`` too)."""
    return {
        "HF_ENDPOINT": endpoint,
        "HF_HUB_OFFLINE": "0",
        "HF_DATASETS_OFFLINE": "0",
        "HF_UPDATE_DOWNLOAD_COUNTS": "0",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HOME": str(hf_home),
        "HF_DATASETS_CACHE": os.path.join(hf_home, "datasets"),
    }


CLIENT_ENV_DROPPED = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now (for servers that must know their port in advance)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, 0))
        return s.getsockname()[1]


def _serve(argv: list[str] | None = None) -> None:
    """``python tests/hub_server.py --root DIR --folder ROOT --repo org/name [--latency S]``:
    serve ``ROOT`` (a folder) as the top of a dataset repo until killed; prints the endpoint
    and the commit sha on one line. For benchmarks, which keep the server off their cores'
    Python interpreter."""
    import argparse

    parser = argparse.ArgumentParser(description=_serve.__doc__)
    parser.add_argument("--root", required=True, help="folder for the blob store")
    parser.add_argument("--folder", required=True, help="files to commit to the repo")
    parser.add_argument("--repo", default="org/clips")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    files = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    server = HubServer(args.root, port=args.port, latency=args.latency)
    server.create_repo(args.repo)
    sha = server.commit(args.repo, files)
    server.start()
    print(server.endpoint, sha, flush=True)
    try:
        threading.Event().wait()
    finally:
        server.stop()


if __name__ == "__main__":
    _serve()
