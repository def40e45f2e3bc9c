"""Faults injected into a real (moto-backed) boto3 client through botocore's event hooks, for the errors moto
cannot produce on demand (AccessDenied, throttling after retries, a dropped connection)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from botocore.exceptions import EndpointConnectionError


class _Status:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}


def fail_with(client: Any, operation: str, code: str, *, status: int = 400, message: str = "injected") -> None:
    """Every call of `operation` answers this AWS error (a before-call handler's answer replaces the request)."""

    def answer(**_: Any) -> tuple[_Status, dict[str, Any]]:
        return _Status(status), {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
        }

    client.meta.events.register(f"before-call.{_event_service(client)}.{operation}", answer)


def disconnect(client: Any, operation: str) -> None:
    """Every call of `operation` fails as if the endpoint could not be reached."""

    def refuse(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://unreachable.example")

    client.meta.events.register(f"before-call.{_event_service(client)}.{operation}", refuse)


def count_calls(client: Any) -> Counter[str]:
    """Operation name -> number of requests the client sent (each page of a paginator is one)."""
    calls: Counter[str] = Counter()

    def record(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    client.meta.events.register("before-call", record)
    return calls


def _event_service(client: Any) -> str:
    """The service's name in botocore event names (sfn, s3, dynamodb...)."""
    return str(client.meta.service_model.service_id.hyphenize())


def record_requests(client: Any, operation: str) -> list[dict[str, Any]]:
    """The parameters of every `operation` call, as the caller passed them to boto3."""
    requests: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        requests.append(dict(params))

    client.meta.events.register(f"provide-client-params.{_event_service(client)}.{operation}", record)
    return requests
