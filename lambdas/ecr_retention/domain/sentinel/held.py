"""The sentinel and the holds (SPEC "Holds"): a removal or an archive of an image a hold keeps is told at once,
naming the hold (owner, reason, until), whether or not a workload runs it. Pure: the service (services/sentinel.py)
reads the holds with the manifests and hands them here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ecr_retention.domain.holds.model import Holds
from ecr_retention.domain.holds.protection import LiveHold, check_holds
from ecr_retention.domain.in_use.references import Removal
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.sentinel.alert import ALERT_SUBJECT_PREFIX, removed_image

# How a removal's record (Removal.alerted) says that its alert named a held image, beside the in-use images it named.
HELD_MARK = "hold:"


@dataclass(frozen=True, slots=True)
class HeldRemoval:
    """A removal of an image a hold in force keeps."""

    removal: Removal
    held: LiveHold

    @property
    def mark(self) -> str:
        return f"{HELD_MARK}{self.held.image.key}"

    def line(self, now: datetime) -> str:
        return f"{removed_image(self.removal)}: {self.removal.told}; {self.held.words(now)} ({self.held.image.key})."


def held_removals(
    holds: Holds,
    removals: Sequence[Removal],
    registry: RegistryCoordinates,
    now: datetime,
    max_hold: timedelta,
) -> tuple[HeldRemoval, ...]:
    """Each removal of a held image of this registry (by its digest: a removal that names only tags took the tags,
    and the hold keeps the image they pointed to, which is still there)."""
    check = check_holds(holds, registry, now, max_hold)
    if not check.live:
        return ()
    return tuple(
        HeldRemoval(removal, held)
        for removal in removals
        if removal.image_digest is not None
        for held in check.of(removal.repository_name, removal.image_digest)
    )


def held_subject(held: Sequence[HeldRemoval], region: str | None = None) -> str:
    """`ecr-retention sentinel: held image app@sha256:1a2b3c4d5e6f deleted (held by alice until ...)`."""
    first = held[0]
    more = f" (and {len(held) - 1} more)" if len(held) > 1 else ""
    where = f" in {region}" if region is not None else ""
    owner = first.held.hold.owner if first.held.hold is not None else "a malformed hold"
    return f"{ALERT_SUBJECT_PREFIX}: held image {removed_image(first.removal)} {first.removal.action}{where}, held by {owner}{more}"


def held_lines(held: Sequence[HeldRemoval], now: datetime) -> list[str]:
    if not held:
        return []
    return ["", "Held images were just removed or archived (docs/holds.md):", *(item.line(now) for item in held)]


def held_body(held: Sequence[HeldRemoval], notes: Sequence[str], now: datetime, region: str | None = None) -> str:
    where = f"the registry of {region}" if region is not None else "this registry"
    lines = [f"Images that holds keep were just removed or archived in {where}.", *held_lines(held, now)[2:]]
    lines += ["", *notes] if notes else []
    if any(item.removal.action == "deleted" for item in held):
        lines += [
            "",
            "A deleted image cannot be brought back by ecr-retention: push it again (the same build gives "
            "the same digest). Find what removed it, and stop it (a native lifecycle policy: `ecr-retention "
            "doctor`).",
        ]
    return "\n".join(lines)
