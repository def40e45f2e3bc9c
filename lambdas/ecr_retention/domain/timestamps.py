"""Timestamps as AWS tools write them: ISO 8601 with any UTC offset, or epoch seconds. Held as aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer
from pydantic_core import CoreSchema, core_schema

from ecr_retention.domain.aws_shape import Lean


def parse_timestamp(value: Any) -> datetime:
    parsed = value if isinstance(value, datetime) else _read_timestamp(value)
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"timestamp {value!r} has no UTC offset; add one, such as Z or +00:00")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"timestamp {value!r} is out of range") from None


def _read_timestamp(value: Any) -> datetime:
    if isinstance(value, bool):  # a bool is an int to Python, but no tool writes a time as true or false
        raise ValueError(f"invalid timestamp {value!r}")
    if isinstance(value, int | float):
        return _from_epoch_seconds(value)
    if isinstance(value, str):
        return _from_iso_8601(value)
    raise ValueError(f"invalid timestamp {value!r}: expected ISO 8601 or epoch seconds")


def _from_epoch_seconds(value: float) -> datetime:
    try:
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"timestamp {value!r} is out of range") from None


def _from_iso_8601(value: str) -> datetime:
    """ISO 8601 as fromisoformat reads it, and a `Z` (either case) for UTC."""
    text = value.strip()
    try:
        return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise ValueError(f"invalid timestamp {value!r}: expected ISO 8601 or epoch seconds") from None


def format_timestamp(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


UtcDatetime = Annotated[
    datetime,
    BeforeValidator(parse_timestamp),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
]

# ISO 8601 in UTC as `ecr-retention snapshot` writes it (and the AWS CLI, in UTC): no space, lowercase or other offset.
_CANONICAL_UTC = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|\+00:00)$"


def _canonical_first(checked: CoreSchema) -> CoreSchema:
    """A canonical UTC string is read by datetime.fromisoformat, called by pydantic with no Python in between, as
    parse_timestamp reads it (fromisoformat too, a Z read as +00:00): aware in datetime.UTC, which astimezone(UTC)
    keeps. Anything else goes to parse_timestamp (`checked`): epoch seconds, other offsets, datetimes, and what it
    refuses. Not pydantic's own datetime parsing: it reads numbers and some strings otherwise, and holds a TzInfo
    of its own, not datetime.UTC, which makes each comparison with another aware datetime (the plan's now) ten times
    slower."""
    canonical = core_schema.chain_schema(
        [
            core_schema.str_schema(strict=True, pattern=_CANONICAL_UTC),  # strict: bytes are no timestamp
            core_schema.no_info_plain_validator_function(datetime.fromisoformat),
        ]
    )
    return core_schema.union_schema(
        [canonical, checked], mode="left_to_right", serialization=checked.get("serialization")
    )


def _canonical_first_in_json(checked: CoreSchema) -> CoreSchema:
    """JSON read as _canonical_first reads it; Python objects by `checked` itself: the datetimes a report is built
    from go straight to it, and a refusal of the JSON, read again from its parsed objects (loading.validate_as), is
    worded by it alone (a lean refusal names both ways of reading)."""
    return core_schema.json_or_python_schema(json_schema=_canonical_first(checked), python_schema=checked)


PushedAt = Annotated[datetime, BeforeValidator(parse_timestamp)]
"""UtcDatetime as pydantic writes a datetime itself: for an aware datetime in UTC (what parse_timestamp returns) its
text is format_timestamp's (`2026-11-30T06:00:00Z`, microseconds when there are any), written without a Python call."""
LeanUtcDatetime = Annotated[PushedAt, Lean(_canonical_first)]
"""UtcDatetime for the images of a snapshot: the same values and refusals, the common form parsed without Python, and
written as PushedAt is, without a Python call (a snapshot's JSON holds a time or more for each of its images; each
image's times are aware in UTC, what both ways of reading return)."""
LeanPushedAt = Annotated[PushedAt, Lean(_canonical_first_in_json)]
"""PushedAt, read from JSON as LeanUtcDatetime reads it (without a Python call either), from Python objects as
UtcDatetime is: a report's per-image push time (domain/reporting/report.py ImageEntry), of which a large run report
reads and writes 100,000."""
