"""A fake Kubernetes API server on 127.0.0.1 that serves cluster-wide lists in the API's real JSON shapes.

It implements what the exporter relies on: `limit` and opaque `continue` tokens, `Status` error bodies,
bearer-token authentication (a static token, or an EKS token's shape: `eks_token_problem`), TLS with a
self-signed certificate (`self_signed_tls`), and injected faults (403, 500, 410 Gone on a continue, 429 with
Retry-After, slow answers). Builders below make objects shaped like `kubectl get -o json` output.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as dt
import ipaddress
import itertools
import json
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

LOOPBACK = "127.0.0.1"

# list path -> (plural, list kind, apiVersion); the exporter asks for every kind across all namespaces.
LIST_PATHS: Mapping[str, tuple[str, str, str]] = {
    "/api/v1/pods": ("pods", "PodList", "v1"),
    "/apis/apps/v1/deployments": ("deployments", "DeploymentList", "apps/v1"),
    "/apis/apps/v1/statefulsets": ("statefulsets", "StatefulSetList", "apps/v1"),
    "/apis/apps/v1/daemonsets": ("daemonsets", "DaemonSetList", "apps/v1"),
    "/apis/apps/v1/replicasets": ("replicasets", "ReplicaSetList", "apps/v1"),
    "/apis/apps/v1/controllerrevisions": ("controllerrevisions", "ControllerRevisionList", "apps/v1"),
    "/apis/batch/v1/jobs": ("jobs", "JobList", "batch/v1"),
    "/apis/batch/v1/cronjobs": ("cronjobs", "CronJobList", "batch/v1"),
}
API_GROUP = {"pods": "", "jobs": "batch", "cronjobs": "batch"}  # the rest are in apps
RESOURCE_VERSION = "4711"
EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


@dataclass
class Fault:
    """Answer `status` instead of the `page`th page (1-based) of a list, `times` times (None: always)."""

    status: int
    page: int = 1
    times: int | None = 1
    retry_after: str | None = None
    delay_seconds: float = 0.0  # sleep before answering, for read timeouts; status 200 then serves the page


@dataclass
class FakeCluster:
    """The objects the server lists, by plural resource name, in the order the API server keeps them."""

    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, plural: str, *items: dict[str, Any]) -> None:
        self.objects.setdefault(plural, []).extend(items)


class FakeApiServer:
    def __init__(
        self,
        cluster: FakeCluster,
        *,
        token: str = "test-token",
        tls_context: ssl.SSLContext | None = None,
        authenticate: Callable[[str], str | None] | None = None,
    ) -> None:
        """`authenticate(bearer token)` is why a token is refused, or None; without it, only `token` is accepted."""
        self.cluster = cluster
        self.token = token
        self.authenticate = authenticate
        self.presented_tokens: list[str] = []
        self.faults: dict[str, list[Fault]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []  # (plural or path, query) in arrival order
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((LOOPBACK, 0), _handler_for(self))
        self._httpd.daemon_threads = True
        if tls_context is not None:
            self._httpd.socket = tls_context.wrap_socket(self._httpd.socket, server_side=True)
        self._scheme = "https" if tls_context is not None else "http"
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"{self._scheme}://{LOOPBACK}:{self.port}"

    def inject(self, plural: str, fault: Fault) -> None:
        self.faults.setdefault(plural, []).append(dataclasses.replace(fault))  # counts down its own copy

    def requested_pages(self, plural: str) -> list[dict[str, str]]:
        return [query for name, query in self.requests if name == plural]

    def start(self) -> FakeApiServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- answering ---------------------------------------------------------------------------------

    def answer(self, path: str, query: dict[str, str], authorization: str | None) -> tuple[int, dict[str, str], bytes]:
        if not self._authenticated(authorization):
            return _status(HTTPStatus.UNAUTHORIZED, "Unauthorized", "Unauthorized")
        if path not in LIST_PATHS:
            return _status(HTTPStatus.NOT_FOUND, "NotFound", "the server could not find the requested resource")
        plural, list_kind, api_version = LIST_PATHS[path]
        with self._lock:
            self.requests.append((plural, query))
        items = self.cluster.objects.get(plural, [])
        limit = int(query.get("limit", "0")) or len(items) or 1
        start = _decode_continue(query["continue"]) if "continue" in query else 0
        fault = self._take_fault(plural, page=start // limit + 1, continuing="continue" in query)
        if fault is not None:
            time.sleep(fault.delay_seconds)
            if fault.status != HTTPStatus.OK:
                return self._fault_answer(fault, plural, start)
        page = items[start : start + limit]
        metadata: dict[str, Any] = {"resourceVersion": RESOURCE_VERSION}
        if start + limit < len(items):
            metadata["continue"] = _encode_continue(start + limit)
            metadata["remainingItemCount"] = len(items) - start - limit
        body = {"kind": list_kind, "apiVersion": api_version, "metadata": metadata, "items": page}
        return HTTPStatus.OK, {}, json.dumps(body, separators=(",", ":")).encode()

    def _authenticated(self, authorization: str | None) -> bool:
        if self.authenticate is None:
            return authorization is not None and authorization.lower() == f"bearer {self.token}".lower()
        scheme, _, token = (authorization or "").partition(" ")
        with self._lock:
            self.presented_tokens.append(token)
        return scheme == "Bearer" and self.authenticate(token) is None

    def _take_fault(self, plural: str, *, page: int, continuing: bool) -> Fault | None:
        with self._lock:
            for fault in self.faults.get(plural, []):
                if fault.page != page or fault.times == 0:
                    continue
                if fault.status == HTTPStatus.GONE and not continuing:
                    continue
                if fault.times is not None:
                    fault.times -= 1
                return fault
        return None

    def _fault_answer(self, fault: Fault, plural: str, start: int) -> tuple[int, dict[str, str], bytes]:
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        if fault.status == HTTPStatus.FORBIDDEN:
            group = API_GROUP.get(plural, "apps")
            resource = f"{plural}.{group}" if group else plural
            message = (
                f'{resource} is forbidden: User "system:serviceaccount:ecr-retention:ecr-retention-exporter" '
                f'cannot list resource "{plural}" in API group "{group}" at the cluster scope'
            )
            return _status(fault.status, "Forbidden", message, headers)
        if fault.status == HTTPStatus.GONE:
            status, _, body = _status(fault.status, "Expired", EXPIRED_MESSAGE, headers)
            document = json.loads(body)
            document["metadata"] = {"continue": _encode_continue(start)}
            return status, headers, json.dumps(document).encode()
        if fault.status == HTTPStatus.TOO_MANY_REQUESTS:
            return _status(fault.status, "TooManyRequests", "too many requests, please try again later", headers)
        return _status(fault.status, "InternalError", "Internal error occurred: etcdserver: request timed out", headers)


def aws_sts_host(url: SplitResult) -> bool:
    host = url.hostname or ""
    return url.scheme == "https" and host.startswith("sts.") and host.endswith(".amazonaws.com")


def eks_token_problem(token: str, *, sts_endpoint: Callable[[SplitResult], bool] = aws_sts_host) -> str | None:
    """Why `token` is not shaped as EKS takes it, or None: `k8s-aws-v1.` and a base64url (unpadded) presigned STS
    GetCallerIdentity URL on an STS endpoint (AWS's, unless `sts_endpoint` says otherwise: the demo's emulator)
    whose signature covers `x-k8s-aws-id`. The signature itself would need the secret key: EKS checks it by
    replaying the URL against STS."""
    prefix = "k8s-aws-v1."
    if not token.startswith(prefix):
        return "not k8s-aws-v1."
    encoded = token[len(prefix) :]
    if "=" in encoded:
        return "padded"
    try:
        url = urlsplit(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8"))
    except ValueError:
        return "not base64url"
    query = {key: values[-1] for key, values in parse_qs(url.query).items()}
    if not sts_endpoint(url):
        return f"not an STS URL: {url.scheme}://{url.netloc}"
    if query.get("Action") != "GetCallerIdentity":
        return "not GetCallerIdentity"
    if "x-k8s-aws-id" not in query.get("X-Amz-SignedHeaders", "").split(";"):
        return "x-k8s-aws-id not signed"
    if not query.get("X-Amz-Signature"):
        return "not signed"
    return None


def self_signed_tls(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a self-signed certificate for 127.0.0.1 (it is its own CA), and that certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "apiserver.crt", directory / "apiserver.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file


def _handler_for(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real API server; the client reuses connections

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {key: values[-1] for key, values in parse_qs(url.query).items()}
            status, headers, body = server.answer(url.path, query, self.headers.get("Authorization"))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _status(
    code: int, reason: str, message: str, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": int(code),
    }
    return int(code), dict(headers or {}), json.dumps(body).encode()


def _encode_continue(start: int) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": int(RESOURCE_VERSION), "start": start})
    return base64.urlsafe_b64encode(token.encode()).decode()


def _decode_continue(token: str) -> int:
    return int(json.loads(base64.urlsafe_b64decode(token.encode()))["start"])


# -- objects in the shapes the API server returns -------------------------------------------------------

_CREATED = "2026-11-20T08:15:00Z"
_counter = itertools.count(1000)


def _metadata(namespace: str, name: str, *, owner: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{name}")),
        "resourceVersion": str(next(_counter)),
        "creationTimestamp": _CREATED,
        "labels": {"app.kubernetes.io/name": name.split("-")[0]},
    }
    if owner is not None:
        metadata["ownerReferences"] = [dict(owner)]
    metadata.update(extra)
    return metadata


def owner_reference(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    api_version = {"Job": "batch/v1", "CronJob": "batch/v1", "Node": "v1"}.get(kind, "apps/v1")
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{name}")),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def container(name: str, image: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def pod_spec(containers: Sequence[tuple[str, str]], init_containers: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [container(name, image) for name, image in containers],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
    }
    if init_containers:
        spec["initContainers"] = [container(name, image) for name, image in init_containers]
    return spec


def container_status(name: str, image: str, image_id: str) -> dict[str, Any]:
    """A running container; an empty `image_id` is a container still waiting for its image."""
    state: dict[str, Any] = (
        {"running": {"startedAt": _CREATED}} if image_id else {"waiting": {"reason": "ContainerCreating"}}
    )
    return {
        "name": name,
        "image": image,
        "imageID": image_id,
        "ready": bool(image_id),
        "restartCount": 0,
        "started": bool(image_id),
        "state": state,
        "lastState": {},
        "containerID": f"containerd://{uuid.uuid5(uuid.NAMESPACE_URL, name + image_id).hex}" if image_id else "",
    }


def pod(
    namespace: str,
    name: str,
    *,
    containers: Sequence[tuple[str, str, str]],  # (name, image, imageID)
    init_containers: Sequence[tuple[str, str, str]] = (),
    ephemeral_containers: Sequence[tuple[str, str, str]] = (),
    owner: Mapping[str, Any] | None = None,
    phase: str = "Running",
    node: str = "ip-10-0-1-23.eu-west-1.compute.internal",
) -> dict[str, Any]:
    spec = pod_spec([(n, i) for n, i, _ in containers], [(n, i) for n, i, _ in init_containers])
    spec["nodeName"] = node
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}],
        "hostIP": "10.0.1.23",
        "podIP": "10.0.1.57",
        "startTime": _CREATED,
        "containerStatuses": [container_status(*entry) for entry in containers],
    }
    if init_containers:
        status["initContainerStatuses"] = [container_status(*entry) for entry in init_containers]
    if ephemeral_containers:
        spec["ephemeralContainers"] = [
            {**container(n, i), "targetContainerName": containers[0][0]} for n, i, _ in ephemeral_containers
        ]
        status["ephemeralContainerStatuses"] = [container_status(*entry) for entry in ephemeral_containers]
    return {"metadata": _metadata(namespace, name, owner=owner), "spec": spec, "status": status}


def _template(
    name: str, containers: Sequence[tuple[str, str]], init_containers: Sequence[tuple[str, str]] = ()
) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": name}},
        "spec": pod_spec(containers, init_containers),
    }


def deployment(
    namespace: str,
    name: str,
    containers: Sequence[tuple[str, str]],
    init_containers: Sequence[tuple[str, str]] = (),
    *,
    replicas: int = 1,
) -> dict[str, Any]:
    return {
        "metadata": _metadata(namespace, name, generation=3, annotations={"deployment.kubernetes.io/revision": "3"}),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": _template(name, containers, init_containers),
            "strategy": {"type": "RollingUpdate"},
            "revisionHistoryLimit": 10,
        },
        "status": {"replicas": replicas, "readyReplicas": replicas, "observedGeneration": 3},
    }


def replica_set(
    namespace: str,
    name: str,
    deployment_name: str | None,
    containers: Sequence[tuple[str, str]],
    init_containers: Sequence[tuple[str, str]] = (),
    *,
    replicas: int = 1,
    revision: int = 1,
) -> dict[str, Any]:
    owner = owner_reference("Deployment", deployment_name, namespace) if deployment_name else None
    annotations = {"deployment.kubernetes.io/revision": str(revision)}
    return {
        "metadata": _metadata(namespace, name, owner=owner, annotations=annotations),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": _template(name, containers, init_containers),
        },
        "status": {"replicas": replicas, "observedGeneration": 1},
    }


def stateful_set(
    namespace: str, name: str, containers: Sequence[tuple[str, str]], *, replicas: int = 1
) -> dict[str, Any]:
    return {
        "metadata": _metadata(namespace, name),
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": _template(name, containers),
        },
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }


def daemon_set(namespace: str, name: str, containers: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {
        "metadata": _metadata(namespace, name),
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": _template(name, containers),
            "updateStrategy": {"type": "RollingUpdate"},
        },
        "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberReady": 2},
    }


def controller_revision(
    namespace: str,
    owner_kind: str,
    owner_name: str,
    revision_hash: str,
    containers: Sequence[tuple[str, str]],
    *,
    revision: int,
) -> dict[str, Any]:
    """A StatefulSet's or DaemonSet's revision: `data` is a patch that replaces the whole pod template."""
    template: dict[str, Any] = {"$patch": "replace", **_template(owner_name, containers)}
    return {
        "metadata": _metadata(
            namespace,
            f"{owner_name}-{revision_hash}",
            owner=owner_reference(owner_kind, owner_name, namespace),
            labels={"app.kubernetes.io/name": owner_name, "controller-revision-hash": revision_hash},
        ),
        "data": {"spec": {"template": template}},
        "revision": revision,
    }


def job(
    namespace: str, name: str, containers: Sequence[tuple[str, str]], *, cron_job: str | None = None
) -> dict[str, Any]:
    owner = owner_reference("CronJob", cron_job, namespace) if cron_job else None
    template = _template(name, containers)
    template["spec"]["restartPolicy"] = "Never"
    return {
        "metadata": _metadata(namespace, name, owner=owner),
        "spec": {"backoffLimit": 1, "completions": 1, "parallelism": 1, "template": template},
        "status": {"succeeded": 1, "startTime": _CREATED, "completionTime": _CREATED},
    }


def cron_job(namespace: str, name: str, schedule: str, containers: Sequence[tuple[str, str]]) -> dict[str, Any]:
    template = _template(name, containers)
    template["spec"]["restartPolicy"] = "Never"
    return {
        "metadata": _metadata(namespace, name),
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Forbid",
            "suspend": False,
            "jobTemplate": {"metadata": {}, "spec": {"backoffLimit": 1, "template": template}},
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
        },
        "status": {},
    }


def sorted_by_key(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API server returns lists in etcd key order: by namespace, then name."""
    return sorted(items, key=lambda item: (item["metadata"]["namespace"], item["metadata"]["name"]))
