"""The clock every service defaults to: the current time, always in UTC. Services take a clock as a parameter
(tests and the demo hand in their own); this is the one they fall back on."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
