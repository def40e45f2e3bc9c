"""Durations as the rules file writes them: `90m`, `6h`, `30d`, `2w`."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION = re.compile(r"(\d+)([smhdw])")


def parse_duration(text: object) -> timedelta:
    """Parse `<positive integer><unit>`; units s, m, h, d, w. Rejects zero and anything else."""
    if isinstance(text, timedelta):
        value = text
    elif isinstance(text, str) and (match := _DURATION.fullmatch(text.strip())):
        value = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    else:
        raise ValueError(
            f"invalid duration {text!r}: write a whole number and a unit (s, m, h, d, w), such as 90m, 6h or 30d"
        )
    if value <= timedelta(0):
        raise ValueError(f"duration {text!r} must be longer than zero")
    return value


def format_duration(value: timedelta) -> str:
    """The shortest exact form: 30d, 6h, 90m."""
    seconds = int(value.total_seconds())
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _serialize(value: timedelta) -> str:
    return format_duration(value)


def _validate(value: Any) -> timedelta:
    return parse_duration(value)


Duration = Annotated[timedelta, BeforeValidator(_validate), PlainSerializer(_serialize, return_type=str)]


def humanize_age(age: timedelta) -> str:
    """A short age for tables: 45s, 12m, 5h, 3d, 14mo, 2y."""
    seconds = max(0, int(age.total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h"
    days = seconds // 86400
    if days < 365:
        return f"{days}d"
    return f"{days // 365}y{(days % 365) // 30}mo" if days % 365 >= 30 else f"{days // 365}y"
