"""The in-use memory (SPEC "The in-use memory"): protection that does not vanish with a manifest.

Every reference a readable manifest names is remembered with the last reading that named it (the manifest's
generatedAt, never later than the run's clock). For safety.in_use_grace after that reading it protects its image as
a current reference would, whatever becomes of the manifest: deleted, emptied, truncated, incomplete, stale, its
cluster gone. A tag reference without a digest is remembered with the digest its tag pointed to when it was seen
(the evaluations resolve it; `resolved` below), so that moving the tag later does not unprotect what ran.

Pure: the report step (services/memory.py) updates the memory once per run; every evaluation reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from ecr_retention.domain.durations import format_duration, humanize_age
from ecr_retention.domain.in_use.index import CLOCK_SKEW
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.inspector import in_use_at, in_use_since
from ecr_retention.domain.inventory.manifest import (
    ClusterManifest,
    ClusterReadings,
    InUseImage,
    InUseManifest,
    InUseMemory,
    Inventory,
    Reading,
    RememberedImage,
)
from ecr_retention.domain.registry.coordinates import InThisRegistry, RegistryCoordinates, reference_into
from ecr_retention.domain.timestamps import format_timestamp


def _when(value: datetime) -> str:
    """A time as people read it in a reason or a warning: to the second."""
    return format_timestamp(value.replace(microsecond=0))


# (Region, repository, tag) -> the digest the tag points to in that Region's registry: what the evaluations found, for
# the tag references they saw (Region None: a registry of unknown Region, as a report that predates it).
ResolvedTags = Mapping[tuple[str | None, str, str], str]
RememberedKey = tuple[str, str, str | None, str, str, str, str]


def protected_until(image: RememberedImage, grace: timedelta) -> datetime:
    return _later(image.last_seen_at, grace)


def _later(moment: datetime, span: timedelta) -> datetime:
    """moment + span, or the calendar's last instant when that falls off it (a reading dated 9999-12-31)."""
    try:
        return moment + span
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def still_protecting(memory: InUseMemory | None, now: datetime, grace: timedelta) -> tuple[RememberedImage, ...]:
    """The remembered references that protect now: last seen no longer than the grace ago (an image last seen
    exactly the grace ago still is; one second later it is not, as every duration here is strictly more)."""
    if memory is None or grace <= timedelta(0):
        return ()
    return tuple(image for image in memory.images if not now - image.last_seen_at > grace)


def seen_at(moment: datetime, now: datetime) -> datetime:
    """A reading's time as the memory counts it: never later than the run's clock."""
    return min(moment, now)


def remembered_note(image: RememberedImage, now: datetime, grace: timedelta) -> str:
    """How a reason says when a remembered reference was seen and until when it protects."""
    if image.last_seen_at > now:
        return (
            f"last seen at {_when(image.last_seen_at)}, after this run's clock, so counted as seen now: "
            f"protected until {_when(_later(now, grace))}"
        )
    return (
        f"last seen {humanize_age(now - image.last_seen_at)} ago, "
        f"protected until {_when(protected_until(image, grace))}"
    )


def remember(
    memory: InUseMemory | None,
    inventory: Inventory,
    now: datetime,
    grace: timedelta,
    *,
    resolved: ResolvedTags,
    registries: Sequence[RegistryCoordinates],
) -> InUseMemory:
    """The memory after this run's reading: every reference of every readable manifest refreshed to its manifest's
    generatedAt (a reading dated in the future counts as now), each cluster's reading recorded, and whatever was
    last seen more than the grace ago forgotten. `registries`: the run's, whose evaluations resolved the tags."""
    images: dict[RememberedKey, RememberedImage] = {}
    for image in still_protecting(memory, now, grace):
        clamped = seen_at(image.last_seen_at, now)  # a memory dated in the future ages from this run, not from then
        images[remembered_key(image)] = image.model_copy(update={"last_seen_at": clamped})
    for read in sorted(inventory.protecting, key=lambda read: read.cluster):
        for image in _seen_in(read, now, grace, resolved, registries):
            key = remembered_key(image)
            known = images.get(key)
            if known is None or known.last_seen_at < image.last_seen_at:
                images[key] = image
    return InUseMemory(
        schema_version=1,
        updated_at=now,
        clusters=recorded_readings(memory, inventory.standing, now, grace),
        images=tuple(sorted(images.values(), key=_in_order)),
    )


def _seen_in(
    read: ClusterManifest,
    now: datetime,
    grace: timedelta,
    resolved: ResolvedTags,
    registries: Sequence[RegistryCoordinates],
) -> list[RememberedImage]:
    """The references of one manifest as the memory records them: seen at the manifest's reading, or an Inspector
    entry from when Inspector last saw it in use, and one not in use now not at all."""
    seen: list[RememberedImage] = []
    for entry in read.manifest.images:
        since = in_use_since(entry, read.manifest.generated_at)
        if since is None or not in_use_at(entry, read.manifest.generated_at, now, grace):
            continue  # an Inspector entry not in use now: nothing to remember
        digest = entry.digest or resolved_digest(entry, resolved, registries)
        seen.append(
            RememberedImage(
                **entry.model_dump(exclude={"digest"}),
                digest=digest,
                cluster=str(read.cluster),
                last_seen_at=seen_at(since, now),
            )
        )
    return seen


def remembered_key(image: RememberedImage) -> RememberedKey:
    return (image.cluster, image.image, image.digest, image.namespace, image.workload, image.container, image.source)


def _in_order(image: RememberedImage) -> tuple[str, ...]:
    """A stable order for the stored memory (a reference without a digest sorts before one with)."""
    cluster, reference, digest, *rest = remembered_key(image)
    return (cluster, reference, digest or "", *rest)


def resolved_digest(entry: InUseImage, resolved: ResolvedTags, registries: Sequence[RegistryCoordinates]) -> str | None:
    """The digest a tag reference into one of the run's registries (or a destination their deletions reach) pointed
    to when the evaluations read its repository, the registry its host names first; None for anything else, which is
    remembered as the manifest named it."""
    readings = ((registry, reference_into(entry.image, registry)) for registry in registries)
    found = [(registry, here) for registry, here in readings if here is not None and here.reference.tag is not None]
    for registry, here in sorted(found, key=lambda pair: not isinstance(pair[1], InThisRegistry)):
        digest = resolved.get((registry.region, here.reference.repository, here.reference.tag or ""))
        if digest is not None:
            return digest
    return None


def distinct_references(manifest: InUseManifest) -> int:
    """How many references a reading names: each image string and digest once, whatever runs it."""
    return len({(entry.image, entry.digest) for entry in manifest.images})


def recorded_readings(
    memory: InUseMemory | None, manifests: Mapping[ClusterId, InUseManifest], now: datetime, grace: timedelta
) -> dict[str, ClusterReadings]:
    """Each cluster's last two readings, the new one first, by the cluster's text (`prod`, `210987654321/prod`); a
    cluster not read within the grace is forgotten. A reading dated in the future counts as read now (it would never
    be forgotten, and its warnings would say so). A manifest whose content changed under the same generatedAt (a
    collector that emptied it and kept the date) is a new reading: what it names now is what counts."""
    readings = {
        cluster: _clamped(known, now)
        for cluster, known in (memory.clusters.items() if memory is not None else ())
        if not now - known.last.generated_at > grace
    }
    for cluster, manifest in manifests.items():
        reading = reading_of(manifest, now)
        known = readings.get(str(cluster))
        if known is None:
            readings[str(cluster)] = ClusterReadings(last=reading)
        elif known.last != reading:
            readings[str(cluster)] = ClusterReadings(last=reading, previous=known.last)
    return dict(sorted(readings.items()))


def reading_of(manifest: InUseManifest, now: datetime) -> Reading:
    """A manifest as the memory records its reading: when (never later than the run's clock) and how many
    references it named."""
    return Reading(generated_at=seen_at(manifest.generated_at, now), references=distinct_references(manifest))


def _clamped(known: ClusterReadings, now: datetime) -> ClusterReadings:
    def at_most_now(reading: Reading) -> Reading:
        return reading.model_copy(update={"generated_at": seen_at(reading.generated_at, now)})

    previous = at_most_now(known.previous) if known.previous is not None else None
    return ClusterReadings(last=at_most_now(known.last), previous=previous)


def reading_warnings(
    memory: InUseMemory | None, inventory: Inventory, now: datetime, grace: timedelta
) -> tuple[str, ...]:
    """A reading dated after the run's clock (beyond the skew two clocks may have), counted as read now; a cluster
    whose reading names fewer than half the references of its previous one (or none), and a remembered cluster without
    a readable manifest now: its dropped references stay protected through the memory, for the grace; someone should
    look before it ends."""
    if grace <= timedelta(0):
        return ()
    return (
        *future_reading_warnings(memory, inventory, now, grace),
        *_dropped_reading_warnings(memory, inventory, now, grace),
    )


def future_reading_warnings(
    memory: InUseMemory | None, inventory: Inventory, now: datetime, grace: timedelta
) -> tuple[str, ...]:
    """Each cluster whose manifest, or whose references in the memory, are dated after the run's clock: remembered as
    seen now, so that they protect for the grace from this run, not until a time that has not come (and are not said
    to be "last seen 0s ago"). Up to CLOCK_SKEW ahead is two clocks' ordinary difference, clamped without a word (AWS
    refuses a signed request whose clock is 5 minutes off); further ahead is a wrong clock or a local time written as
    UTC."""
    manifests = (
        (
            f"cluster {cluster}: its in-use manifest says it was generated at {_when(manifest.generated_at)}, "
            f"after this run's clock ({_when(now)}): the in-use memory remembers its references as seen now, "
            "not then; check the clock (and time zone) of what writes it"
        )
        for cluster, manifest in sorted(inventory.standing.items())
        if manifest.generated_at - now > CLOCK_SKEW
    )
    latest: dict[str, datetime] = {}  # cluster -> the latest time its remembered references claim
    for image in memory.images if memory is not None else ():
        if image.last_seen_at - now > CLOCK_SKEW:
            latest[image.cluster] = max(latest.get(image.cluster, image.last_seen_at), image.last_seen_at)
    remembered = (
        (
            f"cluster {cluster}: the in-use memory holds references last seen at {_when(moment)}, after this run's "
            f"clock ({_when(now)}): counted as seen now, they protect until {_when(_later(now, grace))}, not "
            f"{_when(_later(moment, grace))}"
        )
        for cluster, moment in sorted(latest.items())
    )
    return (*manifests, *remembered)


def _dropped_reading_warnings(
    memory: InUseMemory | None, inventory: Inventory, now: datetime, grace: timedelta
) -> tuple[str, ...]:
    if memory is None:
        return ()
    manifests = inventory.standing
    warnings = (
        _reading_warning(cluster, _clamped(known, now), manifests.get(cluster), inventory, grace)
        for cluster, known in sorted((ClusterId.parse(text), known) for text, known in memory.clusters.items())
        if not now - known.last.generated_at > grace
    )
    return tuple(warning for warning in warnings if warning is not None)


def _reading_warning(
    cluster: ClusterId, known: ClusterReadings, manifest: InUseManifest | None, inventory: Inventory, grace: timedelta
) -> str | None:
    if manifest is None:
        return _no_manifest_warning(cluster, known.last, inventory, grace)
    return _fewer_references_warning(cluster, known, manifest, grace)


def _no_manifest_warning(cluster: ClusterId, last: Reading, inventory: Inventory, grace: timedelta) -> str | None:
    """A cluster that reported images and has no manifest now (an unreadable one blocks the run instead)."""
    if not last.references or _unreadable(inventory, cluster):
        return None
    return (
        f"cluster {cluster}: no in-use manifest now, it reported {_images(last.references)} at "
        f"{_when(last.generated_at)}; {_kept(last, grace)}"
    )


def _fewer_references_warning(
    cluster: ClusterId, known: ClusterReadings, manifest: InUseManifest, grace: timedelta
) -> str | None:
    """A reading that names fewer than half the references of the one before it (the memory may hold this one)."""
    before = dropped_from(known, manifest)
    if before is None:
        return None
    count = distinct_references(manifest)
    return (
        f"cluster {cluster}: now reports {_images(count)}, it reported {_images(before.references)} at "
        f"{_when(before.generated_at)}; {_kept(before, grace)}"
    )


def dropped_from(known: ClusterReadings, manifest: InUseManifest) -> Reading | None:
    """The reading before this manifest's when the manifest names fewer than half of its references (or none), else
    None: the one rule by which a reading is suspect of having lost what runs, for the report's warning and for what
    the sentinel and the run's in-use check count as running (domain/in_use/suspect_readings.py). The memory may already
    hold this manifest as its last reading (the same generatedAt and the same count of references: a manifest emptied
    under its old generatedAt is a new reading); the one before it is then the previous."""
    count = distinct_references(manifest)
    already = known.last.generated_at == manifest.generated_at and known.last.references == count
    before = known.previous if already else known.last
    if before is None or not before.references or count * 2 >= before.references:
        return None
    return before


def _unreadable(inventory: Inventory, cluster: ClusterId) -> bool:
    return any(inventory.cluster_of(source) == cluster for source in inventory.problems)


def _images(count: int) -> str:
    return "1 image" if count == 1 else f"{count} images"


def _kept(reading: Reading, grace: timedelta) -> str:
    return (
        "the references it dropped stay protected through the in-use memory until "
        f"{_when(_later(reading.generated_at, grace))} (safety.in_use_grace {format_duration(grace)})"
    )
