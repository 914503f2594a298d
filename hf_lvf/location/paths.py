"""Where a root lives, from its URI alone: ``hf://datasets/...`` locations parsed, object-store
URLs (``s3://``, ``gs://``, ``az://``), what lance opens and with which storage options.

No network here. A hub root is ``hf://datasets/<namespace>/<name>[@<revision>][/<path>]``;
an object store's settings are lance's names, mapped to pyarrow's filesystem arguments
(see the object-store section below).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

from ..errors import ParameterError

# ================================================================================================
# Where a root lives: ``hf://datasets/...`` locations, parsed, and what lance opens.
#
# No network here. A hub root is ``hf://datasets/<namespace>/<name>[@<revision>][/<path>]``.
# ================================================================================================


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


# ================================================================================================
# Object stores (``s3://``, ``gs://``, ``az://``): their URLs, and lance's storage options as
# pyarrow's filesystem arguments.
#
# lance names a store's settings its own way (``aws_endpoint``, ``aws_access_key_id``,
# ``aws_secret_access_key``, ``aws_region``, ``allow_http``, ...; object_store's names, with
# their aliases); :func:`store_filesystem` maps them to pyarrow's ``S3FileSystem`` (endpoint ->
# ``endpoint_override`` and ``scheme``, keys -> ``access_key``/``secret_key``/
# ``session_token``, ...), ``GcsFileSystem`` and ``AzureFileSystem``. Explicit options win over
# the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``), read as lance reads it, when a
# filesystem is made: credentials from the environment never enter a ``storage_options`` dict
# (nor a pickle). :func:`secret_values` and :func:`redact` keep credentials out of messages.
# ================================================================================================


STORE_SCHEMES = ("s3", "gs", "az")


_ENV_PREFIXES = {"s3": "AWS_", "gs": "GOOGLE_", "az": "AZURE_"}


CALL_TIMEOUT_S = 60.0  # a try of any call to a store


# lance's (object_store's) names for one setting, first the canonical one.
S3_NAMES = {
    "access_key": ("aws_access_key_id", "access_key_id"),
    "secret_key": ("aws_secret_access_key", "secret_access_key"),
    "session_token": ("aws_session_token", "aws_token", "session_token", "token"),
    "region": ("aws_region", "region", "aws_default_region", "default_region"),
    "endpoint": ("aws_endpoint", "aws_endpoint_url", "endpoint", "endpoint_url"),
    "virtual_hosted": ("aws_virtual_hosted_style_request", "virtual_hosted_style_request"),
    "skip_signature": ("aws_skip_signature", "skip_signature"),
}


AZ_NAMES = {
    "account_name": ("azure_storage_account_name", "account_name"),
    "account_key": ("azure_storage_account_key", "account_key", "access_key"),
    "sas_token": ("azure_storage_sas_key", "azure_storage_sas_token", "sas_key", "sas_token"),
    "client_id": ("azure_client_id", "client_id"),
    "client_secret": ("azure_client_secret", "client_secret"),
    "tenant_id": ("azure_tenant_id", "tenant_id"),
    "endpoint": ("azure_storage_endpoint", "azure_endpoint", "endpoint"),
    "use_emulator": ("azure_storage_use_emulator", "object_store_use_emulator", "use_emulator"),
}


# Azurite's fixed account and key (published by Microsoft, the same for every Azurite), and
# where object_store looks for it, as lance takes them with ``azure_storage_use_emulator``.
AZURITE_ACCOUNT = "devstoreaccount1"


AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


_AZURITE_URL = "http://127.0.0.1:10000"


# lance (object_store) has no endpoint option for GCS: a service account key (inline or a
# file) may carry one, ``gcs_base_url``, and ``disable_oauth`` for a server that takes no
# token (an emulator). hf_lvf reads the same key for pyarrow's filesystem.
GS_NAMES = {
    "endpoint": ("google_endpoint", "endpoint"),
    "service_account_key": ("google_service_account_key", "service_account_key"),
    "service_account": (
        "google_service_account",
        "service_account",
        "google_service_account_path",
        "service_account_path",
        "google_application_credentials",
    ),
}


# Option names whose values are credentials: masked in every message.
_SECRET_WORDS = ("key", "secret", "token", "password", "sas", "credential", "signature")


_filesystems: dict[tuple, Any] = {}


_filesystems_lock = threading.Lock()


def is_object_store_uri(uri: object) -> bool:
    """Whether ``uri`` is an ``s3://``, ``gs://`` or ``az://`` URL."""
    return isinstance(uri, str) and uri.split("://", 1)[0] in STORE_SCHEMES and "://" in uri


@dataclass(frozen=True)
class StoreURL:
    """A place in an object store: ``{scheme}://{bucket}/{key}`` (``key`` without slashes at
    either end; ``""`` for the bucket's top)."""

    scheme: str
    bucket: str
    key: str

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.bucket}" + (f"/{self.key}" if self.key else "")

    @property
    def path(self) -> str:
        """What pyarrow's filesystem calls it: ``bucket/key``."""
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    def child(self, name: str) -> StoreURL:
        return StoreURL(self.scheme, self.bucket, f"{self.key}/{name}" if self.key else name)


def parse_store_uri(uri: str) -> StoreURL:
    """Split ``s3://bucket/key`` (or ``gs://``, ``az://``).

    Raises:
        ValueError: not an object-store URL, no bucket, or ``.``/``..``/empty segments.
    """
    if not is_object_store_uri(uri):
        raise ParameterError(f"not an object-store URL (s3://, gs://, az://): {uri!r}")
    scheme, rest = uri.split("://", 1)
    bucket, _, key = rest.partition("/")
    key = key.strip("/")
    if not bucket or (key and any(p in ("", ".", "..") for p in key.split("/"))):
        raise ParameterError(f"an object-store URL must be {scheme}://<bucket>/<key>, got {uri!r}")
    return StoreURL(scheme, bucket, key)


def secret_values(storage_options: Mapping[str, Any] | None) -> list[str]:
    """The values of ``storage_options`` (and of the environment's store variables) that
    are credentials, longest first."""
    items = list((storage_options or {}).items())
    items += [(k, v) for k, v in os.environ.items() if k.startswith(tuple(_ENV_PREFIXES.values()))]
    values = {
        str(v)
        for k, v in items
        if any(word in k.lower() for word in _SECRET_WORDS) and len(str(v)) >= 4
    }
    return sorted(values, key=len, reverse=True)


def redact(text: str, hide: Iterable[str]) -> str:
    """``text`` with every value of ``hide`` replaced by ``***``."""
    for value in hide:
        if value:
            text = text.replace(value, "***")
    return text


def lance_options(storage_options: Mapping[str, Any] | None) -> dict[str, str]:
    """``storage_options`` as lance takes them: string values (``True`` -> ``"true"``); nested
    mappings, such as the ``{"hf": {...}}`` that ``datasets.load_dataset`` adds to the dict
    it is given, are dropped."""
    return {
        str(k): (str(v).lower() if isinstance(v, bool) else str(v))
        for k, v in (storage_options or {}).items()
        if _is_scalar(v)
    }


def store_options(scheme: str, storage_options: Mapping[str, Any] | None) -> dict[str, str]:
    """The options in effect for ``scheme``: the environment's (``AWS_X`` -> ``aws_x``) under
    the explicit ones, values as strings (nested mappings, such as ``datasets``' fsspec
    settings, are not options of a store and are left out)."""
    prefix = _ENV_PREFIXES[scheme]
    options = {k.lower(): v for k, v in os.environ.items() if k.startswith(prefix)}
    options.update(lance_options(storage_options))
    return options


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def pick(options: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((options[n] for n in names if options.get(n) not in (None, "")), None)


def _truthy(value: str | None) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _endpoint(value: str | None) -> tuple[str | None, str | None]:
    """``(scheme, host[:port])`` of an endpoint URL (``None`` for each part not given)."""
    if not value:
        return None, None
    scheme, sep, rest = value.partition("://")
    return (scheme, rest.rstrip("/")) if sep else (None, value.rstrip("/"))


def _google_key(options: Mapping[str, str]) -> dict[str, Any]:
    """The service account key the options name (inline JSON, or a file's), ``{}`` if none or
    unreadable: lance reports a bad key itself."""
    import json

    text = pick(options, GS_NAMES["service_account_key"])
    if text is None and (path := pick(options, GS_NAMES["service_account"])):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return {}
    try:
        key = json.loads(text) if text else {}
    except ValueError:
        return {}
    return key if isinstance(key, dict) else {}


def _azure_endpoint(options: Mapping[str, str]) -> str | None:
    if _truthy(pick(options, AZ_NAMES["use_emulator"])):
        url = os.environ.get("AZURITE_BLOB_STORAGE_URL") or _AZURITE_URL
        account = pick(options, AZ_NAMES["account_name"]) or AZURITE_ACCOUNT
        return f"{url.rstrip('/')}/{account}"
    return pick(options, AZ_NAMES["endpoint"])


def store_endpoint(scheme: str, options: Mapping[str, str]) -> str | None:
    """The endpoint these options (:func:`store_options`) point ``scheme``'s calls at, as a
    URL; ``None`` for the store's own."""
    if scheme == "s3":
        return pick(options, S3_NAMES["endpoint"])
    if scheme == "az":
        return _azure_endpoint(options)
    base = _google_key(options).get("gcs_base_url")
    return pick(options, GS_NAMES["endpoint"]) or (base if isinstance(base, str) else None)


def _azure_authorities(endpoint: str | None, account: str | None) -> dict[str, str | None]:
    """pyarrow's ``blob_storage_*`` and ``dfs_storage_*`` arguments for an endpoint URL as lance
    takes it: ``http://127.0.0.1:10000/devstoreaccount1`` (the account in the path, as
    Azurite serves it) or ``https://account.blob.core.windows.net``. pyarrow puts the account
    in the path after an authority ``host[:port]``, and before one that starts with a dot."""
    url_scheme, rest = _endpoint(endpoint)
    if rest is None:
        return {}
    host, _, path = rest.partition("/")
    if not path and account and host.startswith(f"{account}."):
        host = host[len(account) :]
    dfs = host.replace(".blob.", ".dfs.", 1)
    return {
        "blob_storage_authority": host,
        "blob_storage_scheme": url_scheme,
        "dfs_storage_authority": dfs,
        "dfs_storage_scheme": url_scheme,
    }


def _make_filesystem(scheme: str, options: Mapping[str, str]) -> Any:
    from pyarrow import fs

    if scheme == "s3":
        get = {name: pick(options, names) for name, names in S3_NAMES.items()}
        url_scheme, host = _endpoint(get["endpoint"])
        return fs.S3FileSystem(
            access_key=get["access_key"],
            secret_key=get["secret_key"],
            session_token=get["session_token"],
            anonymous=_truthy(get["skip_signature"]),
            region=get["region"],
            endpoint_override=host,
            scheme=url_scheme or "https",
            force_virtual_addressing=_truthy(get["virtual_hosted"]),
            connect_timeout=10.0,
            request_timeout=CALL_TIMEOUT_S,
            allow_delayed_open=True,  # a small file goes up in one PUT
        )
    if scheme == "gs":  # credentials: Google's defaults (GOOGLE_APPLICATION_CREDENTIALS)
        url_scheme, host = _endpoint(store_endpoint(scheme, options))
        no_token = _google_key(options).get("disable_oauth") is True
        return fs.GcsFileSystem(
            anonymous=no_token or _truthy(options.get("google_skip_signature")),
            endpoint_override=host,
            scheme=url_scheme,
            retry_time_limit=timedelta(seconds=CALL_TIMEOUT_S),
        )
    get = {name: pick(options, names) for name, names in AZ_NAMES.items()}
    account, key = get["account_name"], get["account_key"]
    if _truthy(get["use_emulator"]):  # as object_store fills them in
        account = account or AZURITE_ACCOUNT
        if not (key or get["sas_token"]):
            key = AZURITE_KEY
    return fs.AzureFileSystem(
        account,
        account_key=key,
        sas_token=get["sas_token"],
        client_id=get["client_id"],
        client_secret=get["client_secret"],
        tenant_id=get["tenant_id"],
        **_azure_authorities(_azure_endpoint(options), account),
    )


def store_filesystem(scheme: str, storage_options: Mapping[str, Any] | None) -> Any:
    """pyarrow's filesystem for ``scheme`` with these options (one per process and options)."""
    options = store_options(scheme, storage_options)
    key = (os.getpid(), scheme, tuple(sorted(options.items())))
    with _filesystems_lock:
        if key not in _filesystems:
            _filesystems[key] = _make_filesystem(scheme, options)
        return _filesystems[key]
