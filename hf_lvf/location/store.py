"""Object stores (``s3://``, ``gs://``, ``az://``): every file of a root that is not Lance's.

lance reads and writes a root's Lance table itself, with the ``storage_options`` it is given,
under lance's own names (``aws_endpoint``, ``aws_access_key_id``, ``aws_secret_access_key``,
``aws_region``, ``allow_http``, ...). Every other file (``_metadata.json``, a writer's lock,
a conversion's progress notes) goes through pyarrow's filesystem for that store, built from
the *same* options (:mod:`.store_options`), so one set of options opens every file of a root.

Every call has a deadline and retries within a budget (:func:`._calls.retry_transient`, the
loop of the Hub path and of Lance reads). A missing object is a ``FileNotFoundError``; a
refused call (credentials), a missing bucket, or a store that stays unreachable is a
:class:`~hf_lvf.errors.StoreError` naming the bucket and the key. Credentials are masked in
every message (:func:`redact`). No network at import. Tested against local servers: S3
(moto), Azure (Azurite) and GCS (fake-gcs-server; reading only, as it takes no upload of
lance's).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ._calls import retry_transient
from .paths import (
    CALL_TIMEOUT_S,
    StoreURL,
    is_object_store_uri,
    parse_store_uri,
    redact,
    secret_values,
    store_endpoint,
    store_filesystem,
    store_options,
)

logger = logging.getLogger("hf_lvf.location")
_CALL_TIMEOUT_S = CALL_TIMEOUT_S
_RETRY_BUDGET_S = 120.0
_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
_AWS_CODE_RE = re.compile(r"AWS Error (\w+)")
# The HTTP status in pyarrow's messages: S3's "HTTP status 403", Azure's "Azure Error:
# [AuthorizationFailure] 403 ...".
_HTTP_STATUS_RE = re.compile(r"HTTP status (\d{3})|Azure Error: \[\w*\] (\d{3})")
_REFUSED_CODES = ("ACCESS_DENIED", "INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH")
_PERMANENT_CODES = (*_REFUSED_CODES, "NO_SUCH_BUCKET", "NO_SUCH_KEY", "INVALID_PARAMETER")
_REFUSED_WORDS = ("forbidden", "denied", "unauthorized", "unauthenticated")
_PERMANENT_WORDS = (*_REFUSED_WORDS, "not found", "notfound", "no such")
_CREDENTIALS = {  # where a store's credentials come from, for a refusal's message
    "s3": "(lance's names: aws_access_key_id, aws_secret_access_key, ...) or in the "
    "environment (AWS_ACCESS_KEY_ID, ...)",
    "az": "(lance's names: azure_storage_account_name, azure_storage_account_key, "
    "azure_storage_sas_key, ...) or in the environment (AZURE_STORAGE_ACCOUNT_KEY, ...)",
    "gs": "(lance's names: google_service_account_key, google_service_account, ...) and "
    "Google's default credentials (GOOGLE_APPLICATION_CREDENTIALS), which pyarrow reads",
}


# --- calls ----------------------------------------------------------------------------------


def _call(url: StoreURL, doing: str, call: Any, storage_options: Mapping[str, Any] | None) -> Any:
    """``call(filesystem)``, patiently; errors as described in the module docstring."""
    filesystem = store_filesystem(url.scheme, storage_options)
    hide = secret_values(storage_options)
    endpoint = store_endpoint(url.scheme, store_options(url.scheme, storage_options))
    where = f"key {url.key!r} of bucket {url.bucket!r}" + (f" at {endpoint}" if endpoint else "")

    def give_up(err: BaseException, tries: int, elapsed: float) -> BaseException:
        summary = redact(" ".join(str(err).split()), hide)[:300]
        code = _error_code(err)
        if isinstance(err, FileNotFoundError):
            return FileNotFoundError(f"{url.uri!r} does not exist ({where})")
        if code == "NO_SUCH_BUCKET":
            return StoreError(f"bucket {url.bucket!r} does not exist ({doing} {where})")
        if _is_refusal(err):
            return StoreError(
                f"the object store refused {doing} {where} ({code or summary}): check the "
                f"credentials in storage_options {_CREDENTIALS[url.scheme]}"
            )
        return StoreError(
            f"{doing} {where} failed ({tries} tries in {elapsed:.1f} s): {summary}; the store "
            "is unreachable, busy or too slow, or the request is wrong: check the endpoint and "
            "try again later"
        )

    def on_retry(err: BaseException, wait: float) -> None:
        summary = redact(" ".join(str(err).split()), hide)[:200]
        logger.warning("%s %s failed (%s); trying again in %.2f s", doing, where, summary, wait)

    return retry_transient(
        lambda: call(filesystem),
        timeout_s=_CALL_TIMEOUT_S,
        budget_s=_RETRY_BUDGET_S,
        backoff_s=_BACKOFF_S,
        is_permanent=_is_permanent,
        give_up=give_up,
        on_retry=on_retry,
    )


def _error_code(err: BaseException) -> str | None:
    match = _AWS_CODE_RE.search(str(err))
    return match.group(1) if match else None


def _http_status(err: BaseException) -> int | None:
    match = _HTTP_STATUS_RE.search(str(err))
    return int(match.group(1) or match.group(2)) if match else None


def _is_refusal(err: BaseException) -> bool:
    code = _error_code(err)
    if code is not None and code != "UNKNOWN":
        return code in _REFUSED_CODES
    status = _http_status(err)
    if status is not None:
        return status in (401, 403)
    return any(word in str(err).lower() for word in _REFUSED_WORDS)


def _is_permanent(err: BaseException) -> bool:
    if isinstance(err, FileNotFoundError):
        return True
    code = _error_code(err)
    if code is not None and code != "UNKNOWN":
        return code in _PERMANENT_CODES
    status = _http_status(err)
    if status is not None:
        return status in (400, 401, 403, 404)
    return any(word in str(err).lower() for word in _PERMANENT_WORDS)


def read_store_file(
    uri: str, storage_options: Mapping[str, Any] | None = None, *, missing_ok: bool = False
) -> bytes | None:
    """The bytes of the object at ``uri`` (``None`` if there is none and ``missing_ok``).

    Raises:
        FileNotFoundError: there is no such object (its bucket exists).
        StoreError: a missing bucket, refused credentials, or no answer within the budget.
    """
    url = parse_store_uri(uri)

    def read(filesystem: Any) -> bytes:
        with filesystem.open_input_stream(url.path) as f:
            return f.read()

    try:
        return _call(url, "reading", read, storage_options)
    except FileNotFoundError:
        if missing_ok:
            return None
        _check_bucket(url, storage_options)
        raise


def _check_bucket(url: StoreURL, storage_options: Mapping[str, Any] | None) -> None:
    """Raise :class:`StoreError` if ``url``'s bucket does not exist (a missing object or an
    empty prefix in a missing bucket and in an existing one look the same to a read)."""
    from pyarrow import fs

    bucket = StoreURL(url.scheme, url.bucket, "")
    info = _call(bucket, "looking up", lambda f: f.get_file_info(url.bucket), storage_options)
    if info.type == fs.FileType.NotFound:
        raise StoreError(f"bucket {url.bucket!r} does not exist (looking for key {url.key!r})")


def write_store_file(uri: str, data: bytes, storage_options: Mapping[str, Any] | None = None):
    """Write ``data`` as the object at ``uri`` in one PUT: readers see the old object or the
    new one, never a part.

    Raises:
        StoreError: a missing bucket, refused credentials, or no answer within the budget.
    """
    url = parse_store_uri(uri)

    def write(filesystem: Any) -> None:
        with filesystem.open_output_stream(url.path) as f:
            f.write(data)

    _call(url, "writing", write, storage_options)


def delete_store_file(uri: str, storage_options: Mapping[str, Any] | None = None) -> None:
    """Delete the object at ``uri``; one that is already gone is fine."""
    url = parse_store_uri(uri)
    with contextlib.suppress(FileNotFoundError):
        _call(url, "deleting", lambda f: f.delete_file(url.path), storage_options)


def store_has_table(uri: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``uri`` is on an object store and a Lance dataset (``_versions/``) is there."""
    return is_object_store_uri(uri) and bool(list_store_files(f"{uri}/_versions", storage_options))


def store_file_exists(uri: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    from pyarrow import fs

    url = parse_store_uri(uri)
    info = _call(url, "looking up", lambda f: f.get_file_info(url.path), storage_options)
    return info.type == fs.FileType.File


@dataclass(frozen=True)
class StoreFile:
    """An object below a prefix: ``name`` relative to it (``data/x.lance``), ``size`` in bytes,
    ``mtime`` seconds since the epoch (the store's clock)."""

    name: str
    size: int
    mtime: float


def list_store_files(
    uri: str, storage_options: Mapping[str, Any] | None = None, *, recursive: bool = True
) -> list[StoreFile]:
    """Every object below ``uri`` (or, without ``recursive``, right below it), by name; none
    for a prefix with none."""
    from pyarrow import fs

    url = parse_store_uri(uri)
    selector = fs.FileSelector(url.path, recursive=recursive, allow_not_found=True)
    infos = _call(url, "listing", lambda f: f.get_file_info(selector), storage_options)
    if not infos:  # an empty prefix, or a missing bucket: tell them apart
        _check_bucket(url, storage_options)
    start = len(url.path) + 1
    files = [
        StoreFile(info.path[start:], info.size or 0, info.mtime.timestamp() if info.mtime else 0.0)
        for info in infos
        if info.type == fs.FileType.File
    ]
    return sorted(files, key=lambda f: f.name)


def list_store_folders(uri: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The names of the "folders" (common prefixes) right below ``uri``, sorted."""
    from pyarrow import fs

    url = parse_store_uri(uri)
    selector = fs.FileSelector(url.path, recursive=False, allow_not_found=True)
    infos = _call(url, "listing", lambda f: f.get_file_info(selector), storage_options)
    if not infos:
        _check_bucket(url, storage_options)
    return sorted(i.base_name for i in infos if i.type == fs.FileType.Directory)


def object_identity(size: int, etag: str) -> str:
    """:func:`store_file_identity` of an object of ``size`` bytes whose ETag is ``etag``."""
    return f"{size}-{etag.strip(chr(34))}"


def store_file_identity(uri: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """A string that changes whenever the file at ``uri`` changes: ``"<size>-<ETag>"`` for an
    object (one HEAD request), ``"<size>-<mtime_ns>"`` for a local file. For keying caches of
    what a root's ``_metadata.json`` says, wherever the root lives.

    Raises:
        FileNotFoundError: no such file.
        StoreError: see :func:`read_store_file`.
    """
    if not is_object_store_uri(uri):
        stat = os.stat(uri)
        return f"{stat.st_size}-{stat.st_mtime_ns}"
    url = parse_store_uri(uri)

    def head(filesystem: Any) -> str:
        handle = filesystem.open_input_file(url.path)
        try:
            meta = {_text(k).lower(): _text(v) for k, v in (handle.metadata() or {}).items()}
            tag = meta.get("etag") or meta.get("last-modified") or ""
            return object_identity(handle.size(), tag)
        finally:
            handle.close()

    try:
        return _call(url, "looking up", head, storage_options)
    except FileNotFoundError:
        _check_bucket(url, storage_options)
        raise


def _text(value: str | bytes) -> str:
    """A metadata key or value: bytes from pyarrow's S3 and GCS files, str from its Azure's."""
    return value.decode() if isinstance(value, bytes) else value


def _copy_to_local(url: StoreURL, target: Path, storage_options: Mapping[str, Any] | None) -> None:
    from pyarrow import fs

    def copy(filesystem: Any) -> None:
        fs.copy_files(
            url.path,
            str(target),
            source_filesystem=filesystem,
            destination_filesystem=fs.LocalFileSystem(),
        )

    _call(url, "downloading", copy, storage_options)


def download_store_file(
    uri: str, target: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> Path:
    """Copy one object (``s3://bucket/key``) to the local file ``target``, with the retries of
    every store call; returns ``target``.

    Raises:
        StoreError: the object is missing or the store refuses or fails.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _copy_to_local(parse_store_uri(uri), target, storage_options)
    return target


def download_store_root(
    uri: str,
    cache_dir: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
) -> Path:
    """Copy the root at ``uri`` into ``cache_dir`` once per state of its ``_metadata.json``
    (a root that grew is copied again) and return the copy's folder.

    Copied: every object of the root except hidden ones (a writer's lock, progress notes).
    The copy is made beside its folder and renamed into place when complete, so a copy
    that exists is whole. Credentials are not written anywhere.
    """
    import hashlib

    url = parse_store_uri(uri)
    identity = store_file_identity(url.child("_metadata.json").uri, storage_options)
    digest = hashlib.sha256(f"{url.uri}\n{identity}".encode()).hexdigest()[:16]
    dest = Path(cache_dir) / "hf_lvf-roots" / f"{url.bucket}-{digest}"
    if dest.is_dir():
        return dest
    files = [
        f
        for f in list_store_files(uri, storage_options)
        if not any(part.startswith(".") for part in f.name.split("/"))
    ]
    scratch = dest.with_name(f".{dest.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        for item in files:
            target = scratch / item.name
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy_to_local(url.child(item.name), target, storage_options)
        try:
            scratch.rename(dest)
        except OSError:  # another process made the same copy first
            if not dest.is_dir():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    logger.info("copied %s (%d files) to %s", uri, len(files), dest)
    return dest
