"""Durations as the rules file writes them: `90m`, `6h`, `30d`, `2w`."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

from ecr_retention.domain.errors import quoted

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# [0-9], not \d: Python's \d and int() also read other scripts' digits, so `min_age: ٣d` (Arabic-Indic 3) would
# pass for 3 days; a guard's number is written in ASCII digits or it is an error.
_DURATION = re.compile(r"([0-9]+)([smhdw])")
_ZERO = re.compile(r"0+[smhdw]")
# No retention window is longer than a century; a larger number is a typo, and one beyond timedelta's
# range (999999999 days) would fail as an OverflowError. The planner compares ages (`now - pushed_at`)
# with durations and never computes `now - duration`, which could fall before year 1 with an old --now.
MAX_DURATION = timedelta(days=36500)
_MAX_DIGITS = len(str(int(MAX_DURATION.total_seconds())))  # more digits than this is too long in any unit


def parse_duration(text: object) -> timedelta:
    """Parse `<positive integer><unit>`; units s, m, h, d, w. Rejects zero, more than MAX_DURATION
    (100 years) and anything else."""
    value = text if isinstance(text, timedelta) else _read_duration(text)
    if value <= timedelta(0):
        raise ValueError(f"duration {quoted(text)} must be longer than zero")
    if value > MAX_DURATION:
        raise ValueError(
            f"duration {quoted(text)} is longer than the maximum of 100 years ({format_duration(MAX_DURATION)})"
        )
    return value


def _read_duration(text: object) -> timedelta:
    """The duration a string writes; timedelta.max for one too long to hold, which the range check refuses."""
    match = _DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(_unreadable_duration(text))
    number, unit = match.groups()
    if len(number.lstrip("0")) > _MAX_DIGITS:  # checked first: int() refuses numbers of 4,300+ digits
        return timedelta.max
    seconds = int(number) * _UNIT_SECONDS[unit]
    return timedelta.max if seconds > MAX_DURATION.total_seconds() else timedelta(seconds=seconds)


def _unreadable_duration(text: object) -> str:
    if isinstance(text, str) and any(char.isdigit() and not char.isascii() for char in text):
        return f"invalid duration {quoted(text)}: write its number in the digits 0-9, such as 90m, 6h or 30d"
    return f"invalid duration {quoted(text)}: write a whole number and a unit (s, m, h, d, w), such as 90m, 6h or 30d"


def format_duration(value: timedelta) -> str:
    """The shortest exact form: 30d, 6h, 90m."""
    seconds = int(value.total_seconds())
    if seconds == 0:
        return "0s"
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _serialize(value: timedelta) -> str:
    return format_duration(value)


def _validate(value: Any) -> timedelta:
    return parse_duration(value)


Duration = Annotated[timedelta, BeforeValidator(_validate), PlainSerializer(_serialize, return_type=str)]


def _validate_grace(value: Any) -> timedelta:
    """A duration, or zero written with a unit (`0s`, `0d`): a window that may be switched off."""
    if isinstance(value, str) and _ZERO.fullmatch(value.strip()):
        return timedelta(0)
    return parse_duration(value)


# A duration that may be zero (written `0s`): safety.in_use_grace.
GraceDuration = Annotated[timedelta, BeforeValidator(_validate_grace), PlainSerializer(_serialize, return_type=str)]


def humanize_age(age: timedelta) -> str:
    """A short age for tables: 45s, 12m, 5h, 3d, 14mo, 2y."""
    return humanize_seconds(max(0, int(age.total_seconds())))


def humanize_seconds(seconds: int) -> str:
    """humanize_age of an age in whole seconds (none below 0), for a caller that has them already."""
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
