"""Timestamps as AWS tools write them: ISO 8601 with any UTC offset, or epoch seconds. Held as aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer


def parse_timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, bool):
        raise ValueError(f"invalid timestamp {value!r}")
    elif isinstance(value, int | float):
        try:
            parsed = datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"timestamp {value!r} is out of range") from None
    elif isinstance(value, str):
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise ValueError(f"invalid timestamp {value!r}: expected ISO 8601 or epoch seconds") from None
    else:
        raise ValueError(f"invalid timestamp {value!r}: expected ISO 8601 or epoch seconds")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"timestamp {value!r} has no UTC offset; add one, such as Z or +00:00")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"timestamp {value!r} is out of range") from None


def format_timestamp(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


UtcDatetime = Annotated[
    datetime,
    BeforeValidator(parse_timestamp),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
]
