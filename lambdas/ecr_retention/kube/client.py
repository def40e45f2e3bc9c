"""Listing objects from the Kubernetes API server with the official client's configuration and transport.

The `kubernetes` package does what must not be hand-written: kubeconfig merging and contexts, exec
credential plugins (`aws eks get-token`), client certificates, the in-cluster service account token
(re-read as it rotates) and CA, TLS, proxies, and client-go's Retry-After handling for throttled requests.
Responses are decoded here from the raw JSON instead of into the client's generated models: the exporter
needs a handful of fields per object, and the models cost seconds of import and far more memory per pod.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.incluster_config import (
    SERVICE_HOST_ENV_NAME,
    SERVICE_PORT_ENV_NAME,
    InClusterConfigLoader,
)

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.kubernetes import Resource
from ecr_retention.domain.limits import KUBECONFIG
from ecr_retention.kube.errors import ExportFailed

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_KUBECONFIG = "~/.kube/config"
DEFAULT_PAGE_SIZE = 500  # kubectl's chunk size: small responses for the API server, few round trips for us
DEFAULT_REQUEST_TIMEOUT = (10.0, 60.0)  # seconds to connect, seconds to wait for each page
# An expired continue token restarts that list; a list that keeps expiring is reported, not looped on.
MAX_LIST_RESTARTS = 3
HTTP_GONE = 410

_CONNECTION_POOL_PREFIX = re.compile(r"^HTTPS?Connection(?:Pool)?\([^)]*\): ")

Item = TypeVar("Item")


class ContinueExpired(Exception):
    """The API server no longer holds the snapshot a continue token points into (410 Gone)."""


def connect(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> Any:
    """An `ApiClient` for the cluster: an explicit or `KUBECONFIG` kubeconfig first, then the pod's service
    account when running in a cluster, then `~/.kube/config`."""
    environ = os.environ if environ is None else environ
    configuration = client.Configuration()
    # Retry 429 and 5xx answers that carry Retry-After, as kubectl does under API priority and fairness;
    # any other failed request fails the export.
    configuration.client_go_retries = True
    kubeconfig = kubeconfig or environ.get("KUBECONFIG") or None
    if kubeconfig is None and context is None and in_cluster(environ):
        _load_service_account(configuration, environ, service_account_dir)
    else:
        _load_kubeconfig(configuration, kubeconfig or DEFAULT_KUBECONFIG, context)
    return client.ApiClient(configuration)


def connect_with_token(host: str, ca_pem: str, token: BearerToken) -> Any:
    """An `ApiClient` for an API server reached from outside the cluster (the AWS inventory collector and an EKS
    cluster's endpoint): TLS verified against the cluster's own CA, and `token` asked for the bearer token before
    every request, so that it can sign a new one before the current one expires."""
    configuration = client.Configuration()
    configuration.client_go_retries = True
    configuration.host = host
    configuration.ca_cert_data = ca_pem  # verified: the client's verify_ssl stays True
    token.refresh(configuration)  # the client authenticates only requests whose key is already set
    configuration.refresh_api_key_hook = token.refresh  # type: ignore[assignment]  # annotated as None only
    return client.ApiClient(configuration)


class BearerToken(Protocol):
    def refresh(self, configuration: Any) -> None:
        """Put the current token in `configuration.api_key["authorization"]` (and its "Bearer" prefix)."""
        ...


def _load_service_account(configuration: Any, environ: Mapping[str, str], directory: Path) -> None:
    # The client's loaders are untyped; they fill `configuration` in place.
    loader = InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=str(directory / "token"),
        cert_filename=str(directory / "ca.crt"),
        environ=environ,
    )
    try:
        loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as error:
        raise InputError(f"in-cluster service account ({directory}): {_one_line(str(error))}") from None


def _load_kubeconfig(configuration: Any, path: str, context: str | None) -> None:
    _check_kubeconfig_files(path)
    # The client only logs (on the root logger) an exec plugin that fails, and goes on without credentials.
    exec_errors = _ErrorRecords()
    root_logger = logging.getLogger()
    root_logger.addHandler(exec_errors)
    try:
        # A path list (`a:b`) is merged as kubectl does; the client expands `~` in each path.
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path,
            context=context,
            client_configuration=configuration,
            persist_config=False,  # never rewrite the user's kubeconfig
        )
    except (config.ConfigException, OSError, ValueError, yaml.YAMLError) as error:
        raise InputError(f"kubeconfig {path}: {_one_line(str(error))}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise InputError(f"kubeconfig {path}: YAML nested too deeply to read") from None
    except (TypeError, AttributeError):  # the client indexes into whatever YAML it was given
        raise InputError(f"kubeconfig {path}: not a kubeconfig: an entry has the wrong type") from None
    finally:
        root_logger.removeHandler(exec_errors)
    if exec_errors.messages:
        raise InputError(f"kubeconfig {path}: exec plugin failed: {_one_line(exec_errors.messages[0])}")


def _check_kubeconfig_files(path: str) -> None:
    """Refuse, before the client opens them, kubeconfig files it would block on (a FIFO) or read without
    end (`/dev/zero`), and files over the kubeconfig size limit. The client reads the files itself (it
    merges path lists and resolves certificate paths against each file), so the limit is checked by
    size; a local kubeconfig growing between this check and the client's read is not a threat we guard.
    """
    present = sum(_readable_kubeconfig(Path(part).expanduser()) for part in path.split(os.pathsep) if part)
    if not present:
        raise InputError(f"kubeconfig {path}: no such file")


def _readable_kubeconfig(candidate: Path) -> bool:
    """Whether the file is there (refused unless it is a regular file within the limit)."""
    try:
        status = candidate.stat()
    except FileNotFoundError:
        return False  # kubectl skips the missing files of a path list, and so does the client
    except OSError as error:
        raise InputError(f"kubeconfig {candidate}: cannot read: {error.strerror or error}") from None
    if not stat.S_ISREG(status.st_mode):
        raise InputError(f"kubeconfig {candidate}: not a regular file")
    if status.st_size > KUBECONFIG.max_bytes:
        raise InputError(f"kubeconfig {candidate}: {KUBECONFIG.too_large(status.st_size)}")
    return True


class _ErrorRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def in_cluster(environ: Mapping[str, str]) -> bool:
    return bool(environ.get(SERVICE_HOST_ENV_NAME) and environ.get(SERVICE_PORT_ENV_NAME))


class ClusterLister:
    """Lists every object of a kind, page by page, keeping only what `read` extracts from each item."""

    def __init__(
        self,
        api_client: Any,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        request_timeout: tuple[float, float] | None = None,
    ) -> None:
        self._api_client = api_client
        self._page_size = page_size
        self._request_timeout = request_timeout or DEFAULT_REQUEST_TIMEOUT

    def list_all(self, resource: Resource, read: Callable[[Mapping[str, Any]], Item | None]) -> list[Item]:
        """Everything `read` returns for the objects of one kind, across all namespaces.

        Items are read page by page and dropped, so memory holds one page plus the results. When a
        continue token has expired, the results of the interrupted pass are discarded and the list starts
        over, so that no object is counted twice or missed.
        """
        for _ in range(MAX_LIST_RESTARTS + 1):
            try:
                return self._one_pass(resource, read)
            except ContinueExpired:
                continue
        raise ExportFailed(
            f"listing {resource.plural} failed: the continue token expired {MAX_LIST_RESTARTS + 1} times "
            "(410 Gone); the list changes faster than it can be read"
        )

    def _one_pass(self, resource: Resource, read: Callable[[Mapping[str, Any]], Item | None]) -> list[Item]:
        results: list[Item] = []
        continue_token: str | None = None
        while True:
            page = self._get_page(resource, continue_token)
            for item in page["items"]:
                result = read(item)
                if result is not None:
                    results.append(result)
            continue_token = (page.get("metadata") or {}).get("continue") or None
            if continue_token is None:
                return results

    def _get_page(self, resource: Resource, continue_token: str | None) -> dict[str, Any]:
        response, body = self._request_page(resource, continue_token)
        if response.status == HTTP_GONE and continue_token is not None:
            raise ContinueExpired
        if response.status != 200:
            detail = _status_message(body)
            raise ExportFailed(
                f"listing {resource.plural} failed: {response.status} {response.reason}"
                + (f": {detail}" if detail else "")
            )
        return _list_page(resource, body)

    def _request_page(self, resource: Resource, continue_token: str | None) -> tuple[Any, bytes]:
        """The response to one list request and its body; a request that got no answer is ExportFailed."""
        query: list[tuple[str, Any]] = [("limit", self._page_size)]
        if continue_token is not None:
            query.append(("continue", continue_token))
        request = self._api_client.param_serialize(
            "GET",
            resource.list_path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        try:
            response = self._api_client.call_api(*request, _request_timeout=self._request_timeout)
            return response, response.read()
        except ApiException as error:  # TLS failures, and throttling that outlasted its Retry-After budget
            raise ExportFailed(f"listing {resource.plural} failed: {_describe_api_exception(error)}") from None
        except urllib3.exceptions.HTTPError as error:  # refused connection, timeout, broken response
            raise ExportFailed(
                f"listing {resource.plural} failed: API server {self._api_client.configuration.host}: "
                f"{_describe_transport_error(error)}"
            ) from None


def _list_page(resource: Resource, body: bytes) -> dict[str, Any]:
    """The page a 200 answer holds, its `items` a list; anything else is ExportFailed."""
    try:
        page: Any = json.loads(body)
    except ValueError as error:
        raise ExportFailed(f"listing {resource.plural} failed: the response is not JSON: {error}") from None
    # An empty list may come as null; an answer without `items` is not a list at all.
    items = page.get("items") or [] if isinstance(page, dict) and "items" in page else None
    if not isinstance(items, list):
        raise ExportFailed(f"listing {resource.plural} failed: the response is not a {resource.kind}List")
    return {**page, "items": items}


def _status_message(body: bytes) -> str:
    """The `message` of a Kubernetes `Status` error body, or the start of whatever else came back."""
    try:
        status = json.loads(body)
    except ValueError:
        return _one_line(body[:200].decode("utf-8", errors="replace"))
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        return _one_line(status["message"])
    return ""


def _describe_api_exception(error: ApiException) -> str:
    if error.status:
        detail = _status_message(error.body.encode() if isinstance(error.body, str) else error.body or b"")
        return f"{error.status} {error.reason}" + (f": {detail}" if detail else "")
    return _one_line(str(error.reason))


def _describe_transport_error(error: urllib3.exceptions.HTTPError) -> str:
    """The cause, without urllib3's connection-pool preamble: "Read timed out. (read timeout=60.0)"."""
    reason = error.reason if isinstance(error, urllib3.exceptions.MaxRetryError) and error.reason else error
    return _one_line(_CONNECTION_POOL_PREFIX.sub("", str(reason)))


def _one_line(text: str) -> str:
    return " ".join(text.split())
