"""Whether the cyclic garbage collector was on when a function was called (ecr_retention.gc_guard's tests)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any


def watched(seen: list[tuple[str, bool]], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, recording (name, whether the collector was on) into `seen` at each call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        seen.append((name, gc.isenabled()))
        return function(*args, **kwargs)

    return call
