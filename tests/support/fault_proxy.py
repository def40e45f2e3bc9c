"""A loopback HTTP proxy between the AWS SDK and a moto server that answers chosen requests with faults, so that
the real clients, botocore's real retry logic and the real adapters meet the failures AWS produces:

- `status`: an HTTP error with an empty body (429 and 500 bursts);
- `throttling`: `400 {"__type": "ThrottlingException", "message": "Rate exceeded"}`, as ECR and DynamoDB send it;
- `slow`: moto serves the request and its answer is sent after a delay (tens of milliseconds: botocore's read
  timeout is not hit unless a test lowers it, and then the change happened while the client gave up waiting);
- `drop`: the connection is closed without an answer, before the request reaches moto;
- `drop_after_forward`: moto serves the request (a BatchDeleteImage deletes) and the connection is then closed
  without an answer: the change happened, the client never heard of it;
- `hold`: the request is held until the test releases it, then dropped unforwarded (a process killed while
  its call was in flight).

Each rule matches requests by service (from the request's SigV4 credential scope), operation (X-Amz-Target, the
query protocol's Action, or the S3 method and path), path prefix and a piece of the body. A matching request starts a burst with the
rule's probability (drawn from one RNG seeded by the test, so a run's faults are the same every time); the burst
answers that request and the next `burst - 1` requests of the same operation, and the request after a burst
passes: a `burst` below the clients' MAX_ATTEMPTS is ridden out by the retries, one of MAX_ATTEMPTS outlasts them.

    with FaultProxy(upstream="http://127.0.0.1:5000", seed=7) as proxy:
        proxy.add(FaultRule("throttling", services={"ecr"}, probability=0.2, burst=3))
        boto3.client("ecr", endpoint_url=proxy.endpoint)...

Only stdlib: http.server (threaded) in front, http.client behind. Every exchange is recorded in `exchanges`.
"""

from __future__ import annotations

import contextlib
import http.client
import random
import re
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import parse_qs, urlsplit

FaultKind = Literal["status", "throttling", "slow", "drop", "drop_after_forward", "hold"]

THROTTLING_BODY = b'{"__type":"ThrottlingException","message":"Rate exceeded"}'
JSON_CONTENT_TYPE = "application/x-amz-json-1.1"
# Not relayed from moto's answer: hop-by-hop headers, the length (the proxy sets it), and what send_response adds.
NOT_RELAYED = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        "server",
        "date",
        "expect",
    }
)
CREDENTIAL_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request")
UPSTREAM_TIMEOUT_SECONDS = 30


@dataclass
class FaultRule:
    """Answer matching requests with `kind`. Empty `services` / `operations` match any; `after` skips the first
    matching requests; `limit` caps the number of bursts."""

    kind: FaultKind
    services: frozenset[str] = frozenset()
    operations: frozenset[str] = frozenset()
    path_prefix: str = ""
    body_contains: bytes = b""  # e.g. b'"repositoryName": "app"' for one repository's calls
    probability: float = 1.0
    burst: int = 1
    after: int = 0
    limit: int | None = None
    status: int = 500  # for kind "status"
    delay: float = 0.0  # seconds, for kind "slow"
    # state
    matched: int = 0
    bursts: int = 0
    active: Counter[str] = field(default_factory=Counter)  # operation -> faults left in its current burst
    spared: set[str] = field(default_factory=set)  # operations whose next request passes (a burst just ended)

    def __post_init__(self) -> None:
        self.services = frozenset(self.services)
        self.operations = frozenset(self.operations)

    def matches(self, request: Request) -> bool:
        return (
            (not self.services or request.service in self.services)
            and (not self.operations or request.operation in self.operations)
            and request.path.startswith(self.path_prefix)
            and self.body_contains in request.body
        )


@dataclass(frozen=True)
class Request:
    service: str  # "ecr", "s3", "dynamodb", "sns", "sts", ...
    operation: str  # "BatchDeleteImage", "GetObject", ...
    method: str
    path: str
    body: bytes = field(default=b"", repr=False)


@dataclass(frozen=True)
class Exchange:
    """One request the proxy received and what it did with it."""

    request: Request
    fault: FaultKind | None
    forwarded: bool
    status: int | None  # what the client was answered; None when the connection was dropped


class FaultProxy:
    def __init__(self, upstream: str, *, seed: int) -> None:
        parts = urlsplit(upstream)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream must be http://host:port, not {upstream!r}")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.rules: list[FaultRule] = []
        self.exchanges: list[Exchange] = []
        self.held = threading.Event()  # set when a `hold` rule holds a request
        self.release = threading.Event()  # set by the test to let a held request go (dropped, unforwarded)
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *rules: FaultRule) -> FaultProxy:
        with self._lock:
            self.rules.extend(rules)
        return self

    def clear(self) -> None:
        """No more faults (the exchanges stay recorded)."""
        with self._lock:
            self.rules.clear()

    def faults(self, kind: FaultKind | None = None, operation: str | None = None) -> list[Exchange]:
        with self._lock:
            return [
                e
                for e in self.exchanges
                if e.fault is not None
                and (kind is None or e.fault == kind)
                and (operation is None or e.request.operation == operation)
            ]

    def served(self, operation: str) -> list[Exchange]:
        """The requests of this operation that reached moto."""
        with self._lock:
            return [e for e in self.exchanges if e.forwarded and e.request.operation == operation]

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # --- deciding ------------------------------------------------------------------------------

    def _fault_for(self, request: Request) -> FaultRule | None:
        with self._lock:
            for rule in self.rules:
                if not rule.matches(request):
                    continue
                rule.matched += 1
                if rule.active[request.operation] > 0:
                    rule.active[request.operation] -= 1
                    if rule.active[request.operation] == 0:
                        rule.spared.add(request.operation)
                    return rule
                if request.operation in rule.spared:
                    rule.spared.discard(request.operation)
                    continue
                if rule.matched <= rule.after or (rule.limit is not None and rule.bursts >= rule.limit):
                    continue
                if rule.probability >= 1.0 or self._random.random() < rule.probability:
                    rule.bursts += 1
                    rule.active[request.operation] = rule.burst - 1
                    if rule.burst == 1:
                        rule.spared.add(request.operation)
                    return rule
            return None

    def _record(self, request: Request, fault: FaultKind | None, forwarded: bool, status: int | None) -> None:
        with self._lock:
            self.exchanges.append(Exchange(request, fault, forwarded, status))

    # --- serving -------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0 answers close their connection, so no client ever reuses a socket this proxy dropped.
            protocol_version = "HTTP/1.0"

            def setup(self) -> None:
                super().setup()
                _no_delay(self.connection)

            def do_GET(self) -> None:
                proxy._serve(self)

            do_POST = do_PUT = do_DELETE = do_HEAD = do_GET

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: one line per request otherwise."""

        return Handler

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        body = _read_body(handler)
        request = _identify(handler, body)
        rule = self._fault_for(request)
        kind = rule.kind if rule is not None else None
        if rule is None or kind == "slow":
            status, reason, headers, answer = self._forward(handler, body)
            if rule is not None:
                time.sleep(rule.delay)
            _answer(handler, status, reason, headers, answer)
            self._record(request, kind, True, status)
        elif kind == "status":
            _answer(handler, rule.status, "Injected", [("Content-Type", JSON_CONTENT_TYPE)], b"")
            self._record(request, kind, False, rule.status)
        elif kind == "throttling":
            headers = [("Content-Type", JSON_CONTENT_TYPE), ("x-amzn-ErrorType", "ThrottlingException")]
            _answer(handler, 400, "Bad Request", headers, THROTTLING_BODY)
            self._record(request, kind, False, 400)
        elif kind == "drop":
            _drop(handler)
            self._record(request, kind, False, None)
        elif kind == "drop_after_forward":
            self._forward(handler, body)
            _drop(handler)
            self._record(request, kind, True, None)
        else:  # hold
            self.held.set()
            self.release.wait()
            _drop(handler)
            self._record(request, kind, False, None)

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(
            self.upstream_host, self.upstream_port, timeout=UPSTREAM_TIMEOUT_SECONDS
        )
        try:
            connection.connect()
            _no_delay(connection.sock)
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in NOT_RELAYED}
            headers["Content-Length"] = str(len(body))
            connection.request(handler.command, handler.path, body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in NOT_RELAYED]
            if handler.command == "HEAD" and response.getheader("Content-Length") is not None:
                kept.append(("Content-Length", str(response.getheader("Content-Length"))))
            return response.status, response.reason, kept, answer
        finally:
            connection.close()


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Expect", "").lower() == "100-continue":  # S3 PutObject waits a second for it otherwise
        handler.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks: list[bytes] = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _identify(handler: BaseHTTPRequestHandler, body: bytes) -> Request:
    scope = CREDENTIAL_SCOPE.search(handler.headers.get("Authorization", ""))
    service = scope.group(1) if scope else "unknown"
    path = urlsplit(handler.path).path
    target = handler.headers.get("X-Amz-Target")
    if target:
        operation = target.rsplit(".", 1)[-1]
    elif service == "s3":
        operation = _s3_operation(handler.command, handler.path)
    else:
        form = parse_qs(body.decode("utf-8", errors="replace")) if body else parse_qs(urlsplit(handler.path).query)
        operation = form.get("Action", [f"{handler.command} {path}"])[0]
    return Request(service=service, operation=operation, method=handler.command, path=path, body=body)


def _s3_operation(method: str, target: str) -> str:
    """Enough of S3's REST routing for the calls the adapters make (path-style addressing on a loopback host)."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    has_key = parts.path.strip("/").count("/") >= 1
    if method == "GET":
        return "GetObject" if has_key else ("ListObjectsV2" if "list-type" in query else "ListObjects")
    if method == "PUT":
        return "PutObject" if has_key else "CreateBucket"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    if method == "DELETE":
        return "DeleteObject" if has_key else "DeleteBucket"
    return f"{method} {parts.path}"


def _answer(
    handler: BaseHTTPRequestHandler, status: int, reason: str, headers: list[tuple[str, str]], body: bytes
) -> None:
    """The whole answer in one write: headers and body sent apart meet the client's delayed ACK (40 ms each)."""
    lines = [f"{handler.protocol_version} {status} {reason}", *(f"{name}: {value}" for name, value in headers)]
    if handler.command != "HEAD":
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    with contextlib.suppress(OSError):  # the client went away (a killed process, a read timeout): nobody to answer
        handler.wfile.write(head if handler.command == "HEAD" else head + body)


def _no_delay(sock: socket.socket) -> None:
    """Small writes go out at once: Nagle's algorithm meeting the peer's delayed ACK costs 40 ms a request."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _drop(handler: BaseHTTPRequestHandler) -> None:
    """Close the connection without a byte of answer."""
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
