"""The one place in the services that catches an exception no port declares.

The ports declare what their adapters raise (ports.py), and the services catch those errors by type. Anything
else is a defect: a bug here, or an answer no adapter anticipated. Even then, three promises hold:
- a sweep goes on with the next repository, and the failed one is reported `failed`;
- what was removed before the defect stays on record, and the batch it broke is reported failed;
- subscribers hear of a run that died before its report, and the exception still reaches the caller.
So the callers use `contain` and turn a Defect into a report entry, a warning or a failure message. Nothing is
hidden: the Defect carries the exception and is logged with its traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Defect:
    """The exception a contained call raised."""

    error: Exception

    @property
    def kind(self) -> str:
        return type(self.error).__name__

    def __str__(self) -> str:
        return f"{self.kind}: {self.error}"


def contain(call: Callable[[], T], *, log: logging.Logger | None, what: str) -> T | Defect:
    """call(), or the Defect it raised, logged as "<what> failed" with its traceback (unless `log` is None:
    the caller re-raises it)."""
    try:
        return call()
    except Exception as error:  # the one broad catch of services/: see the module docstring
        if log is not None:
            log.exception("%s failed", what)
        return Defect(error)
