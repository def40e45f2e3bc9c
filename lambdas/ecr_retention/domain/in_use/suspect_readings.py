"""Which clusters' current readings are not believed about what runs (SPEC "The sentinel"): for these the in-use
memory speaks, for the sentinel and for the run's in-use check alike.

A reading is suspect when the cluster's manifest is missing, unreadable, incomplete, stale (older than
safety.inventory_max_age), empty, or names fewer than half the references of its last reading (the report's
warning, domain/in_use/memory.py `dropped_from`: one rule, not a copy). A healthy reading is believed whole: a
reference it dropped is a workload that moved on, and the memory's record of it is not counted as running.

Pure. Each suspicion is worded for the reader of an alert or a finding: why the memory speaks, and when it saw the
image run ("dev's manifest now reports 0 images; by the in-use memory dev ran it 2h ago").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from ecr_retention.domain.durations import format_duration, humanize_age
from ecr_retention.domain.in_use.memory import distinct_references, dropped_from
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory, RememberedImage


@dataclass(frozen=True, slots=True)
class Suspicion:
    """Why one cluster's current reading is not believed: `dev's manifest now reports 0 images`."""

    cluster: ClusterId
    why: str

    def note(self, image: RememberedImage, now: datetime) -> str:
        """How a workload the memory names reads in an alert or a finding."""
        return f"{self.why}; by the in-use memory {self.cluster} ran it {humanize_age(now - image.last_seen_at)} ago"


def suspect_readings(
    inventory: Inventory, clusters: Iterable[ClusterId], now: datetime, max_age: timedelta
) -> dict[ClusterId, Suspicion]:
    """The suspicion of each of these clusters (those the memory remembers) whose current reading is suspect. A
    cluster is its account and its name: only its own manifest speaks for it, never another account's cluster of the
    same name, nor a misfiled manifest that declares its name (a misfiled manifest stands for nobody)."""
    readings: Mapping[ClusterId, InUseManifest] = inventory.standing
    found = {cluster: _suspicion(inventory, cluster, readings.get(cluster), now, max_age) for cluster in clusters}
    return {cluster: suspicion for cluster, suspicion in found.items() if suspicion is not None}


def _suspicion(
    inventory: Inventory, cluster: ClusterId, manifest: InUseManifest | None, now: datetime, max_age: timedelta
) -> Suspicion | None:
    if any(inventory.cluster_of(source) == cluster for source in inventory.problems):
        return Suspicion(cluster, f"{cluster}'s manifest cannot be read")
    if manifest is None:
        return Suspicion(cluster, f"{cluster}'s manifest is missing")
    why = _doubt(cluster, manifest, inventory, now, max_age)
    return None if why is None else Suspicion(cluster, why)


def _doubt(
    cluster: ClusterId, manifest: InUseManifest, inventory: Inventory, now: datetime, max_age: timedelta
) -> str | None:
    """Why a readable manifest is not believed whole, or None when it is."""
    if not manifest.complete:
        return f"{cluster}'s manifest is incomplete (complete: false)"
    if now - manifest.generated_at > max_age:
        age = humanize_age(now - manifest.generated_at)
        return f"{cluster}'s manifest is {age} old, older than inventory_max_age {format_duration(max_age)}"
    count = distinct_references(manifest)
    if count == 0:
        return f"{cluster}'s manifest now reports 0 images"
    known = inventory.memory.clusters.get(str(cluster)) if inventory.memory is not None else None
    before = dropped_from(known, manifest) if known is not None else None
    if before is not None:
        return f"{cluster}'s manifest now names {count} of its last {before.references} references"
    return None
