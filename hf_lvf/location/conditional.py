"""Conditional writes on S3: an object created only if absent, or replaced only if unchanged.

S3 (since 2024) and S3-compatible servers (moto, MinIO, R2, ...) take ``If-None-Match: *``
(create only if no object has the key) and ``If-Match: <ETag>`` (replace only the object
with that ETag) on a PUT, and answer ``412 Precondition Failed`` (or ``409`` for two
conditional PUTs at the same moment) to the loser: of writers racing on one key, exactly one
succeeds. pyarrow's filesystem cannot send these headers, so :func:`put_if` sends the PUT
itself, signed with AWS Signature Version 4 from the credentials the options (or the
``AWS_*`` environment) give. lance commits its own versions the same way (object_store's
``PutMode::Create``).

Where a conditional PUT cannot be sent (``gs://`` and ``az://``, which have their own
preconditions that pyarrow does not expose either, or an S3 root whose credentials come from
somewhere pyarrow finds itself: an instance profile, SSO, a config file), :func:`put_if`
returns ``None`` and the caller falls back to checks made before an ordinary PUT.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from ..errors import RootBusyError, StoreError
from ._calls import retry_transient
from .paths import (
    CALL_TIMEOUT_S,
    S3_NAMES,
    parse_store_uri,
    pick,
    redact,
    secret_values,
    store_options,
)

logger = logging.getLogger("hf_lvf.location")
ABSENT = "*"  # put_if(match=ABSENT): create only if there is no object
_RETRY_BUDGET_S = 120.0
_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
_LOST = (409, 412)  # ConditionalRequestConflict, PreconditionFailed
_ignoring: set[tuple[str | None, str]] = set()  # (endpoint, bucket) that ignore the headers


class PreconditionFailed(RootBusyError):
    """The object was not what a conditional PUT required: another writer changed it."""


class _Transient(OSError):
    pass


def etag_of(identity: str) -> str:
    """The ETag in :func:`~.store.store_file_identity`'s ``"<size>-<ETag>"``."""
    return identity.partition("-")[2]


def _can_sign(options: Mapping[str, str]) -> bool:
    anonymous = str(pick(options, S3_NAMES["skip_signature"])).lower() in ("1", "true", "yes")
    keys = pick(options, S3_NAMES["access_key"]) and pick(options, S3_NAMES["secret_key"])
    return anonymous or bool(keys)


def _store_key(uri: str, storage_options: Mapping[str, Any] | None) -> tuple[str | None, str]:
    options = store_options("s3", storage_options)
    return pick(options, S3_NAMES["endpoint"]), parse_store_uri(uri).bucket


def conditional_puts(uri: str, storage_options: Mapping[str, Any] | None) -> bool:
    """Whether :func:`put_if` can send a conditional PUT for the object at ``uri``."""
    url = parse_store_uri(uri)
    if url.scheme != "s3" or _store_key(uri, storage_options) in _ignoring:
        return False
    return _can_sign(store_options("s3", storage_options))


def ignore_conditions(uri: str, storage_options: Mapping[str, Any] | None) -> None:
    """Send no more conditional PUTs to the bucket of ``uri`` (found to ignore them)."""
    _ignoring.add(_store_key(uri, storage_options))


def put_if(
    uri: str, data: bytes, storage_options: Mapping[str, Any] | None, *, match: str
) -> str | None:
    """PUT ``data`` as the object at ``uri`` only if it is absent (``match=ABSENT``) or its
    ETag is ``match``; return the new object's ETag, ``None`` if this store takes no
    conditional PUT from hf_lvf (see the module docstring: write it another way).

    A try whose answer was lost is tried again; if the retry finds the object changed and
    holding ``data``, that change was this call's own and it succeeded.

    Raises:
        PreconditionFailed: the object was not as required (another writer changed it).
        StoreError: refused credentials, or no answer within the budget.
    """
    if not conditional_puts(uri, storage_options):
        return None
    url = parse_store_uri(uri)
    options = store_options("s3", storage_options)
    hide = secret_values(storage_options)
    tries = 0

    def put() -> tuple[int, str, bytes]:
        nonlocal tries
        tries += 1
        status, headers, body = _signed_put(url.bucket, url.key, data, options, match)
        if status in (500, 502, 503, 504) or (status == 409 and b"OperationAborted" in body):
            raise _Transient(f"HTTP status {status}: {body[:200]!r}")
        return status, headers.get("etag", ""), body

    def give_up(err: BaseException, n: int, elapsed: float) -> BaseException:
        summary = redact(" ".join(str(err).split()), hide)[:300]
        return StoreError(
            f"writing key {url.key!r} of bucket {url.bucket!r} failed ({n} tries in "
            f"{elapsed:.1f} s): {summary}; the store is unreachable, busy or too slow"
        )

    status, etag, body = retry_transient(
        put,
        timeout_s=CALL_TIMEOUT_S,
        budget_s=_RETRY_BUDGET_S,
        backoff_s=_BACKOFF_S,
        is_permanent=lambda err: not isinstance(err, (_Transient, OSError)),
        give_up=give_up,
        on_retry=lambda err, wait: logger.warning(
            "a conditional PUT of %s failed (%s); trying again in %.2f s",
            uri,
            redact(str(err), hide)[:200],
            wait,
        ),
    )
    if status in _LOST:
        if tries > 1 and _holds(uri, data, storage_options):
            return _current_etag(uri, storage_options)  # an earlier try of ours landed
        raise PreconditionFailed(
            f"another writer changed {uri!r} first (the store answered {status} to a PUT "
            f"{'if absent' if match == ABSENT else 'if unchanged'})"
        )
    if status == 501 or (status == 400 and b"NotImplemented" in body):
        logger.warning("the store of %s takes no conditional PUT: %s", uri, body[:200])
        ignore_conditions(uri, storage_options)
        return None
    if status in (401, 403):
        raise StoreError(
            f"the object store refused writing key {url.key!r} of bucket {url.bucket!r} "
            f"(HTTP {status}): check the credentials in storage_options"
        )
    if status == 404:
        raise StoreError(f"bucket {url.bucket!r} does not exist (writing key {url.key!r})")
    if not 200 <= status < 300:
        raise StoreError(
            f"writing key {url.key!r} of bucket {url.bucket!r} failed: HTTP {status} "
            f"{redact(body[:300].decode(errors='replace'), hide)}"
        )
    return etag.strip('"')


def _holds(uri: str, data: bytes, storage_options: Mapping[str, Any] | None) -> bool:
    from .store import read_store_file

    return read_store_file(uri, storage_options, missing_ok=True) == data


def _current_etag(uri: str, storage_options: Mapping[str, Any] | None) -> str:
    from .store import store_file_identity

    return etag_of(store_file_identity(uri, storage_options))


def _signed_put(
    bucket: str, key: str, data: bytes, options: Mapping[str, str], match: str
) -> tuple[int, dict[str, str], bytes]:
    """One PUT of ``data`` at ``bucket``/``key`` with ``If-None-Match: *`` or ``If-Match``,
    signed (AWS Signature Version 4) unless ``skip_signature``; the answer's status, headers
    (lower-case names) and body."""
    region = pick(options, S3_NAMES["region"]) or "us-east-1"
    endpoint = pick(options, S3_NAMES["endpoint"])
    virtual = str(pick(options, S3_NAMES["virtual_hosted"])).lower() in ("1", "true", "yes")
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        if not host:
            scheme, host = "https", endpoint
        host = host.rstrip("/")
    else:
        scheme, host, virtual = "https", f"s3.{region}.amazonaws.com", True
    path = "/" + quote(key, safe="/-_.~")
    if virtual:
        host = f"{bucket}.{host}"
    else:
        path = f"/{quote(bucket, safe='-_.~')}{path}"
    payload = hashlib.sha256(data).hexdigest()
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    condition = ("if-none-match", "*") if match == ABSENT else ("if-match", f'"{match}"')
    headers = {
        "host": host,
        condition[0]: condition[1],
        "x-amz-content-sha256": payload,
        "x-amz-date": stamp,
    }
    token = pick(options, S3_NAMES["session_token"])
    if token:
        headers["x-amz-security-token"] = token
    access, secret = pick(options, S3_NAMES["access_key"]), pick(options, S3_NAMES["secret_key"])
    if access and secret:
        names = sorted(headers)
        signed = ";".join(names)
        canonical = "\n".join(
            ["PUT", path, "", *(f"{n}:{headers[n].strip()}" for n in names), "", signed, payload]
        )
        scope = f"{day}/{region}/s3/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        signing = f"AWS4{secret}".encode()
        for part in (day, region, "s3", "aws4_request"):
            signing = hmac.new(signing, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={access}/{scope}, SignedHeaders={signed}, "
            f"Signature={signature}"
        )
    connect = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    connection = connect(host, timeout=CALL_TIMEOUT_S)
    try:
        headers["content-length"] = str(len(data))
        connection.request("PUT", path, body=data, headers=headers)
        response = connection.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        connection.close()
