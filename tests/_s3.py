"""A real S3-compatible server on 127.0.0.1 for the object-store tests, and a proxy that breaks it.

:class:`S3StandIn` runs ``moto``'s S3 server (``moto.server.ThreadedMotoServer``, a dev
dependency) in a thread, with authentication on: requests must be signed with the access key
of an IAM user it creates, so wrong credentials are refused as AWS refuses them (403). In
front of it listens :class:`FaultProxy`, a small HTTP/1.1 proxy that forwards every request
unchanged (the ``Host`` header too, so signatures stay valid) and can answer the next
matching requests with a fault instead: a ``503 SlowDown`` burst, a connection dropped in the
middle of a body, a stall in the middle of a body, or a delay before every answer. lance and
pyarrow are pointed at the proxy with lance's own storage option names (:meth:`options`);
nothing is mocked. boto3 (moto's own dependency) is the tests' tool for creating buckets and
uploading roots.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

REGION = "us-east-1"
_ALLOW_ALL = (
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'
)
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class ProxiedRequest(NamedTuple):
    """One request through the proxy; ``started``/``ended``: ``time.monotonic()`` when it came
    and when its answer was sent (``None`` while under way, or if it was dropped)."""

    method: str
    path: str
    started: float
    ended: float | None = None


@dataclass
class S3Fault:
    """A fault answered to the next ``times`` requests matching ``method``/``path_contains``
    (after ``skip`` of them went through). ``hits`` counts the requests it affected."""

    status: int | None = None
    drop_mid_body: bool = False
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


class FaultProxy:
    """An HTTP/1.1 proxy to ``upstream`` (``host:port``) with injectable faults and latency."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.latency = 0.0  # seconds added before every answer
        self._faults: list[S3Fault] = []
        self._lock = threading.Lock()
        # S3 decides conditional PUTs (If-None-Match, If-Match) atomically; moto checks the
        # condition and then stores, in two steps that two server threads can interleave.
        # The proxy forwards conditional PUTs one at a time, so moto decides them as S3 does.
        self._conditional = threading.Lock()
        self.requests: list[ProxiedRequest] = []  # every request, in the order they came
        self._server = _ProxyServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def inject(
        self,
        status: int | None = None,
        *,
        drop_mid_body: bool = False,
        stall: float = 0.0,
        times: int = 1,
        skip: int = 0,
        path_contains: str | None = None,
        method: str | None = None,
    ) -> S3Fault:
        """Answer the next ``times`` matching requests with ``status`` (an S3 XML error, the
        request not forwarded), or forward them and then drop the connection halfway through
        the body (``drop_mid_body``), or stop sending halfway for ``stall`` seconds."""
        fault = S3Fault(status, drop_mid_body, stall, times, skip, path_contains, method)
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self.requests.clear()
        self.latency = 0.0

    def count(self, path_contains: str = "", method: str | None = None) -> int:
        with self._lock:
            return sum(
                1
                for r in self.requests
                if path_contains in r.path and (method is None or r.method == method)
            )

    def _ended(self, number: int) -> None:
        with self._lock:
            if number < len(self.requests):
                self.requests[number] = self.requests[number]._replace(ended=time.monotonic())

    def _take_fault(self, method: str, path: str) -> tuple[int, S3Fault | None]:
        with self._lock:
            number = len(self.requests)
            self.requests.append(ProxiedRequest(method, path, time.monotonic()))
            for fault in self._faults:
                if fault.hits >= fault.times or not fault.matches(method, path):
                    continue
                if fault.skip > 0:
                    fault.skip -= 1
                    return number, None
                fault.hits += 1
                return number, fault
        return number, None


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64
    proxy: FaultProxy


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._upstream: http.client.HTTPConnection | None = None

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # clients that go away, dropped connections
            super().handle()

    def finish(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._forward()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raw = b""
            while True:
                line = self.rfile.readline(1024)
                raw += line
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:  # trailers, then the empty line
                        trailer = self.rfile.readline(1024)
                        raw += trailer
                        if not trailer.strip():
                            return raw
                raw += self.rfile.read(size + 2)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self) -> None:
        proxy = self.server.proxy
        body = self._body()
        if self.path.startswith("/_proxy/requests"):  # the log, for a benchmark in another process
            self._answer_log()
            return
        number, fault = proxy._take_fault(self.command, self.path)
        if proxy.latency:
            time.sleep(proxy.latency)
        if fault is not None and fault.status is not None:
            self._answer_error(fault.status)
            proxy._ended(number)
            return
        conditional = self.command == "PUT" and (
            "If-None-Match" in self.headers or "If-Match" in self.headers
        )
        if conditional:
            with proxy._conditional:
                response, data = self._send_upstream(body)
        else:
            response, data = self._send_upstream(body)
        self._answer(number, fault, response, data)

    def _send_upstream(self, body: bytes) -> tuple[http.client.HTTPResponse, bytes]:
        proxy = self.server.proxy
        if self._upstream is None:
            self._upstream = http.client.HTTPConnection(*proxy.upstream, timeout=60)
        upstream = self._upstream
        upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for key, value in self.headers.items():
            upstream.putheader(key, value)
        upstream.endheaders()
        if body:
            upstream.send(body)
        response = upstream.getresponse()
        return response, response.read()

    def _answer(
        self,
        number: int,
        fault: S3Fault | None,
        response: http.client.HTTPResponse,
        data: bytes,
    ) -> None:
        proxy = self.server.proxy
        self.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        if self.command == "HEAD":
            self.send_header("Content-Length", response.getheader("Content-Length") or "0")
            self.end_headers()
            proxy._ended(number)
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        half = len(data) // 2
        if fault is not None and fault.drop_mid_body and data:
            self.wfile.write(data[:half])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and fault.stall and data:
            self.wfile.write(data[:half])
            self.wfile.flush()
            time.sleep(fault.stall)
            self.wfile.write(data[half:])
            proxy._ended(number)
            return
        self.wfile.write(data)
        self.wfile.flush()
        proxy._ended(number)

    def _answer_log(self) -> None:
        """``GET /_proxy/requests?path_contains=...&clear=1``: ``{"count": n}``, then clear."""
        from urllib.parse import parse_qs, urlsplit

        proxy = self.server.proxy
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        body = json.dumps({"count": proxy.count(query.get("path_contains", ""))}).encode()
        if query.get("clear") == "1":
            with proxy._lock:
                proxy.requests.clear()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _answer_error(self, status: int) -> None:
        code = "SlowDown" if status == 503 else "InternalError"
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>injected by the test proxy</Message>"
            f"<RequestId>{uuid.uuid4().hex}</RequestId></Error>"
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer has no body (one would end the connection)
            self.wfile.write(body)


class S3StandIn:
    """moto's S3 server with authentication on, behind a :class:`FaultProxy`.

    Attributes:
        access_key_id, secret_access_key: the credentials of an IAM user allowed everything.
        proxy: the proxy every client goes through (``proxy.endpoint``).
    """

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.access_key_id = ""
        self.secret_access_key = ""
        self.proxy: FaultProxy

    def start(self) -> S3StandIn:
        import boto3

        self._server.start()
        host, port = self._server.get_host_and_port()
        self.direct_endpoint = f"http://{host}:{port}"
        iam = boto3.client(
            "iam",
            endpoint_url=self.direct_endpoint,
            aws_access_key_id="bootstrap",
            aws_secret_access_key="bootstrap",
            region_name=REGION,
        )
        iam.create_user(UserName="hf-lvf-tests")
        iam.put_user_policy(UserName="hf-lvf-tests", PolicyName="all", PolicyDocument=_ALLOW_ALL)
        key = iam.create_access_key(UserName="hf-lvf-tests")["AccessKey"]
        self.access_key_id, self.secret_access_key = key["AccessKeyId"], key["SecretAccessKey"]
        # From here on every request must be signed by a known key (moto counts 3 more first).
        request = http.client.HTTPConnection(host, port, timeout=10)
        request.request("POST", "/moto-api/reset-auth", body=b"0")
        assert request.getresponse().status == 200
        request.close()
        self.proxy = FaultProxy((host, port)).start()
        return self

    def stop(self) -> None:
        self.proxy.stop()
        self._server.stop()

    def __enter__(self) -> S3StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def options(self, **changes: str) -> dict[str, str]:
        """Storage options with lance's names, through the proxy."""
        options = {
            "aws_endpoint": self.proxy.endpoint,
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
            "aws_region": REGION,
            "allow_http": "true",
        }
        options.update(changes)
        return options

    def client(self) -> Any:
        """A boto3 S3 client (straight to the server, past the proxy's faults)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.direct_endpoint,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=REGION,
        )

    def new_bucket(self) -> str:
        name = f"b-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def upload(self, folder: str | Path, bucket: str, prefix: str) -> str:
        """Upload every file of ``folder`` under ``prefix``; returns ``s3://bucket/prefix``."""
        client = self.client()
        folder = Path(folder)
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                key = f"{prefix}/{path.relative_to(folder).as_posix()}"
                client.upload_file(str(path), bucket, key)
        return f"s3://{bucket}/{prefix}"

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        client = self.client()
        keys: list[str] = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys += [item["Key"] for item in page.get("Contents", [])]
        return sorted(keys)


@contextlib.contextmanager
def s3_stand_in() -> Iterator[S3StandIn]:
    with S3StandIn() as stand_in:
        yield stand_in


def _serve(argv: list[str] | None = None) -> None:
    """``python tests/_s3.py --folder ROOT [--latency S]``: serve ROOT from a new bucket (for
    the benchmarks); print one JSON line (``uri`` and lance's ``options``), then serve until
    stdin closes."""
    import logging

    parser = argparse.ArgumentParser(description=_serve.__doc__)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with S3StandIn() as stand_in:
        uri = stand_in.upload(args.folder, stand_in.new_bucket(), "root")
        stand_in.proxy.latency = args.latency
        print(json.dumps({"uri": uri, "options": stand_in.options()}), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    _serve()
