"""Holds as `ecr-retention hold add` stores them, for the tests of holds (domain/holds/)."""

from __future__ import annotations

from datetime import datetime, timedelta

from ecr_retention.domain.holds.stored import Hold, hold_json
from support.builders import ACCOUNT, NOW, REGION, digest


def a_hold(
    repository: str,
    seed: str,
    *,
    tag: str | None = None,
    owner: str = "alice@example.com",
    reason: str = "audit INC-42",
    until: timedelta = timedelta(days=30),
    placed: timedelta = timedelta(days=1),
    region: str = REGION,
    now: datetime = NOW,
) -> Hold:
    """A hold on the image of `seed`, placed `placed` before now and ending `until` after now."""
    return Hold(
        schema_version=1,
        registry_id=ACCOUNT,
        region=region,
        repository=repository,
        digest=digest(seed),
        tag=tag,
        owner=owner,
        reason=reason,
        created_at=now - placed,
        until=now + until,
    )


def stored(*holds: Hold) -> list[tuple[str, str, bytes]]:
    """The holds as documents of the bucket: (source, key, bytes)."""
    return [(f"s3://bucket/{hold.image.key}", hold.image.key, hold_json(hold)) for hold in holds]
