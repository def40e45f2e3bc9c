"""Faults served by moto's ECR: `throttle`/`fail` answer chosen attempts of an operation with an error response
(botocore then retries for real; `fail(served=True)` serves the request first, so the change happens and its answer
is lost), `before` runs an action right before a chosen call is served (a repository deleted mid-run, a tag moved
between plan and delete), `refuse_delete` makes BatchDeleteImage report a per-image failure (KmsError, ...).

These are served by moto rather than raised from a botocore `before-send` hook on the client: botocore calls every
`before-send` handler, so moto's in-process stubber would still execute a call that the hook answered with a
throttle (a "throttled" BatchDeleteImage would delete).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Fault:
    operation: str
    code: str
    message: str
    status: int
    first: int  # 1-based number of the first attempt answered with the fault
    last: int
    served: bool = False  # the request is served (its change made) before the error answers it

    def applies_to(self, operation: str, number: int) -> bool:
        return self.operation == operation and self.first <= number <= self.last

    def response(self) -> tuple[int, dict[str, str], str]:
        """The error response, as moto's ECR answers one: status, headers, JSON body."""
        body = json.dumps({"__type": self.code, "message": self.message})
        return self.status, {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": self.code}, body


@dataclass
class _Hook:
    operation: str
    call: int
    action: Callable[[], object]
    done: bool = False

    def due(self, operation: str, number: int) -> bool:
        return self.operation == operation and self.call == number and not self.done


@dataclass
class FaultInjection:
    """The faults and hooks asked for, and `served`: the requests moto answered per operation, retries and
    injected faults included (count API calls on the client side with `support.api_calls.ApiCallRecorder`)."""

    served: Counter[str] = field(default_factory=Counter)
    _faults: list[_Fault] = field(default_factory=list)
    _hooks: list[_Hook] = field(default_factory=list)
    _refusals: dict[str, tuple[str, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def throttle(self, operation: str, *, times: int = 1, after: int = 0) -> None:
        """Answer `times` requests of the operation, after the first `after` ones, with a ThrottlingException."""
        self.fail(operation, "ThrottlingException", times=times, after=after, message="Rate exceeded")

    def fail(
        self,
        operation: str,
        code: str,
        *,
        times: int = 1,
        after: int = 0,
        status: int = 400,
        message: str = "",
        served: bool = False,
    ) -> None:
        """Answer `times` requests of the operation (counted from now, after the first `after`) with an error.
        `served`: moto serves each of them first, so the change happens and the client hears an error (an answer
        lost on the way back, as a 500 or a dropped connection after ECR acted)."""
        with self._lock:
            start = self.served[operation] + after + 1
            self._faults.append(_Fault(operation, code, message or code, status, start, start + times - 1, served))

    def before(self, operation: str, action: Callable[[], object], *, call: int = 1) -> None:
        """Run `action` right before moto serves the `call`-th request of the operation from now."""
        with self._lock:
            self._hooks.append(_Hook(operation, self.served[operation] + call, action))

    def refuse_delete(self, digest: str, code: str, reason: str = "") -> None:
        """BatchDeleteImage reports this failure for the digest (and keeps the image)."""
        self._refusals[digest] = (code, reason or f"refused: {code}")

    def serve(self, operation: str, original: Callable[[], Any]) -> Any:
        """One request of the operation: counted, its due hooks run, then answered by `original` or by its fault."""
        with self._lock:
            self.served[operation] += 1
            number = self.served[operation]
            due = self._take_due_hooks(operation, number)
            fault = next((f for f in self._faults if f.applies_to(operation, number)), None)
        for hook in due:
            hook.action()
        if fault is None:
            return original()
        if fault.served:
            original()
        return fault.response()

    def _take_due_hooks(self, operation: str, number: int) -> list[_Hook]:
        """The hooks due before the `number`-th request of the operation, marked done (under the lock)."""
        due = [hook for hook in self._hooks if hook.due(operation, number)]
        for hook in due:
            hook.done = True
        return due
