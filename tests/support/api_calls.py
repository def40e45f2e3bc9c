"""Which AWS API calls a piece of code made, recorded through botocore's event hooks on the client.

    recorder = ApiCallRecorder()
    ecr = recorder.attach(boto3.client("ecr"))            # or ClientFactory(on_create=recorder.attach)
    ...
    assert recorder.counts("ecr")["DescribeImages"] == 3
    assert recorder.mutating("ecr") == []                 # a dry run changes nothing

One record per API call (a paginator makes one per page); `attempts` counts botocore's retries of it.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

from botocore.retries.standard import ExponentialBackoff

# Operations that only read. Anything else counts as mutating, so an operation nobody listed errs on the safe side
# of "a dry run makes no mutating call".
READ_ONLY_PREFIXES = ("Describe", "List", "Get", "BatchGet", "BatchCheck", "Head", "Query", "Scan", "Select")

_CONTEXT_KEY = "ecr_retention_test_call"


def is_mutating(operation: str) -> bool:
    return not operation.startswith(READ_ONLY_PREFIXES)


@dataclass
class ApiCall:
    service: str  # botocore's service name: "ecr", "s3", "sns", ...
    operation: str  # "BatchDeleteImage"
    params: dict[str, Any]  # as the caller passed them
    attempts: int | None = None  # 1 + botocore's retries; None when the call ended in a transport error
    error_code: str | None = None  # the final error code (after retries), None on success

    @property
    def mutating(self) -> bool:
        return is_mutating(self.operation)


class ApiCallRecorder:
    def __init__(self) -> None:
        self.calls: list[ApiCall] = []
        self._lock = threading.Lock()

    def attach(self, client: Any) -> Any:
        """Record every call this client makes from now on; returns the client."""
        events = client.meta.events
        events.register("before-parameter-build", self._keep_params)
        events.register("before-call", self._before_call)
        events.register("after-call", self._after_call)
        events.register("after-call-error", self._after_call_error)
        return client

    def counts(self, service: str | None = None) -> Counter[str]:
        return Counter(call.operation for call in self._of_service(service))

    def of(self, operation: str) -> list[ApiCall]:
        with self._lock:
            return [call for call in self.calls if call.operation == operation]

    def mutating(self, service: str | None = None) -> list[ApiCall]:
        return [call for call in self._of_service(service) if call.mutating]

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    def _of_service(self, service: str | None) -> list[ApiCall]:
        with self._lock:
            return [call for call in self.calls if service is None or call.service == service]

    def _keep_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[_CONTEXT_KEY + "_params"] = copy.deepcopy(params)

    def _before_call(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        call = ApiCall(model.service_model.service_name, model.name, context.get(_CONTEXT_KEY + "_params", {}))
        context[_CONTEXT_KEY] = call
        with self._lock:
            self.calls.append(call)

    def _after_call(self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        call: ApiCall | None = context.get(_CONTEXT_KEY)
        if call is None:
            return
        call.attempts = int(parsed.get("ResponseMetadata", {}).get("RetryAttempts", 0)) + 1
        if http_response.status_code >= 300:
            call.error_code = parsed.get("Error", {}).get("Code", "Unknown")

    def _after_call_error(self, exception: BaseException, context: dict[str, Any], **_: Any) -> None:
        call: ApiCall | None = context.get(_CONTEXT_KEY)
        if call is not None:
            call.error_code = type(exception).__name__


@contextmanager
def instant_retries() -> Iterator[list[float]]:
    """botocore's standard retry mode without its back-off sleeps (up to 20 s a retry), so that tests can retry
    for real at full speed. Yields the delays botocore wanted, in order."""
    wanted: list[float] = []
    original = ExponentialBackoff.delay_amount

    def no_delay(self: ExponentialBackoff, context: Any) -> float:
        wanted.append(original(self, context))
        return 0.0

    with mock.patch.object(ExponentialBackoff, "delay_amount", no_delay):
        yield wanted
