"""What the holds protect in one registry at one time: each held image, by repository and digest, with the hold's
owner, reason and end; the holds that ended (listed once per run, protecting nothing); and why unreadable hold
objects block the run. A hold in a replica this registry's deletions of the repository reach (delete replication)
protects the image here too: deleting it here would delete the held replica (SPEC "Replicated deletions", as for an
in-use reference, domain/registry/coordinates.py InReachedReplica). Pure: the planner (domain/planning/guards.py), the
sentinel and the reports read it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ecr_retention.domain.durations import format_duration, humanize_age
from ecr_retention.domain.holds.model import ENDING_SOON, HeldImage, Holds
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.timestamps import format_timestamp

if TYPE_CHECKING:  # a hold as stored: loaded with the first hold object read (domain/holds/model.py read_holds)
    from ecr_retention.domain.holds.stored import Hold


@dataclass(frozen=True, slots=True)
class LiveHold:
    """A hold in force on one image: the stored hold (None for a malformed object, which names only its image), until
    when it protects (None: until the malformed object is fixed or removed), and what a reason adds about it."""

    image: HeldImage
    hold: Hold | None
    until: datetime | None
    note: str | None = None
    # Held in a replica this registry's deletions reach, not here: a deletion here would remove it there.
    reached: bool = False

    def words(self, now: datetime) -> str:
        """`held by alice until 2027-01-05T00:00:00Z (in 31d): audit INC-42`; a hold in a reached replica says where:
        `held in us-east-1 (a deletion here reaches it) by alice until ...`."""
        held = f"held in {self.image.region} (a deletion here reaches it)" if self.reached else "held"
        if self.hold is None:
            return f"{held} by a malformed hold object ({self.note}); it protects until it is fixed or removed"
        when = f"until {format_timestamp(self.until or self.hold.until)} (in {humanize_age((self.until or now) - now)})"
        note = f"; {self.note}" if self.note else ""
        return f"{held} by {self.hold.owner} {when}: {self.hold.reason}{note}"


@dataclass(frozen=True)
class HoldCheck:
    """The holds of one registry as a run reads them."""

    live: dict[tuple[str, str], list[LiveHold]] = field(default_factory=dict)  # (repository, digest) -> holds
    blocked: tuple[str, ...] = ()
    # By repository: an ended or malformed hold is told once, in the plan of the repository it is of.
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def of(self, repository: str, digest: str) -> list[LiveHold]:
        return self.live.get((repository, digest), [])

    def warnings_of(self, repository: str) -> tuple[str, ...]:
        return self.warnings.get(repository, ())


NO_HOLD_CHECK = HoldCheck()


def held_here(image: HeldImage, registry_id: str | None, registry: RegistryCoordinates) -> bool:
    """Whether a hold's image is of this registry (an unknown account or Region, offline, matches)."""
    same_region = registry.region is None or registry.region == image.region
    return same_region and (registry.registry_id is None or registry_id is None or registry_id == registry.registry_id)


def held_in_reach(image: HeldImage, registry_id: str | None, registry: RegistryCoordinates) -> bool:
    """Whether a hold's image is of a replica that this registry's deletions of its repository reach (the replication
    rules' deletion_reach, as an in-use reference's InReachedReplica): deleting the image here deletes the held copy.
    A hold's account unknown (a malformed object names only its Region) matches any reached replica of that Region."""
    return any(
        replica.region == image.region and (registry_id is None or registry_id == replica.registry_id)
        for replica in registry.replication.deletion_reach(image.repository)
    )


def check_holds(holds: Holds, registry: RegistryCoordinates, now: datetime, max_hold: timedelta) -> HoldCheck:
    """Each hold of this registry in force now (never longer than max_hold after it was placed), each ended one as a
    warning, each malformed one as a warning that still protects, and each unreadable object as a blocker."""
    if not holds:
        return NO_HOLD_CHECK
    live: defaultdict[tuple[str, str], list[LiveHold]] = defaultdict(list)
    warnings: defaultdict[str, list[str]] = defaultdict(list)
    _add_valid(holds, registry, now, max_hold, live, warnings)
    _add_malformed(holds, registry, live, warnings)
    blocked = tuple(
        f"{source}: unreadable hold: {problem}; it may hold any image, so nothing is deleted until it is fixed or "
        "removed (docs/holds.md)"
        for source, problem in sorted(holds.unreadable.items())
    )
    return HoldCheck(
        dict(live), blocked, {repository: tuple(dict.fromkeys(told)) for repository, told in warnings.items()}
    )


def _add_valid(
    holds: Holds,
    registry: RegistryCoordinates,
    now: datetime,
    max_hold: timedelta,
    live: defaultdict[tuple[str, str], list[LiveHold]],
    warnings: defaultdict[str, list[str]],
) -> None:
    for hold in holds.held:
        here = held_here(hold.image, hold.registry_id, registry)
        if not here and not held_in_reach(hold.image, hold.registry_id, registry):
            continue
        until, note = _bounded(hold, max_hold)
        if until > now:
            live[(hold.repository, hold.digest)].append(LiveHold(hold.image, hold, until, note, reached=not here))
        elif here:  # an ended hold of a replica is told by the replica's own plan
            warnings[hold.repository].append(expired_warning(hold, until))


def _add_malformed(
    holds: Holds,
    registry: RegistryCoordinates,
    live: defaultdict[tuple[str, str], list[LiveHold]],
    warnings: defaultdict[str, list[str]],
) -> None:
    for malformed in holds.malformed:
        for image in malformed.images:
            here = held_here(image, None, registry)
            if not here and not held_in_reach(image, None, registry):
                continue
            live[(image.repository, image.digest)].append(
                LiveHold(image, None, None, malformed.problem, reached=not here)
            )
            warnings[image.repository].append(
                f"{malformed.source}: malformed hold: {malformed.problem}; it keeps {image} until it is fixed or "
                "removed (docs/holds.md)"
            )


def _bounded(hold: Hold, max_hold: timedelta) -> tuple[datetime, str | None]:
    """Until when a hold protects: its end, or max_hold after it was placed when that comes first."""
    longest = hold.created_at + max_hold
    if hold.until <= longest:
        return hold.until, None
    return (
        longest,
        f"asked until {format_timestamp(hold.until)}, bounded by safety.max_hold {format_duration(max_hold)}",
    )


def expired_warning(hold: Hold, until: datetime) -> str:
    return (
        f"hold on {hold.placed_on} in {hold.region} by {hold.owner} ended at {format_timestamp(until)} "
        f"({hold.reason}): it protects nothing any more; `ecr-retention hold remove "
        f"{hold.repository}@{hold.digest} --region {hold.region}` removes it"
    )


def ending_soon(holds: Holds, now: datetime, max_hold: timedelta) -> list[tuple[Hold, datetime]]:
    """The holds in force that end within ENDING_SOON, soonest first, each with when it ends."""
    ending = []
    for hold in holds.held:
        until, _ = _bounded(hold, max_hold)
        if now < until <= now + ENDING_SOON:
            ending.append((hold, until))
    return sorted(ending, key=lambda item: (item[1], item[0].image))
