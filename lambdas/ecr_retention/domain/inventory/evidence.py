"""What a run knew of each in-use manifest, for the report's checks: every expected cluster (with or without a
manifest), every other manifest that protected images, and every file under in-use/ that could not be read.

Pure; the blocking reasons are the ones the planner blocks on (domain.in_use.index), worded the same.
"""

from __future__ import annotations

from datetime import datetime

from ecr_retention.domain.config import Safety
from ecr_retention.domain.in_use.index import expected_manifest_problem
from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory, cluster_of_source
from ecr_retention.domain.planning.plan import PlanModel
from ecr_retention.domain.timestamps import UtcDatetime


class ManifestEvidence(PlanModel):
    cluster: str  # the cluster its file stands for (`in-use/<cluster>.json`)
    expected: bool  # listed in safety.clusters: without a fresh, complete manifest the run deletes nothing
    generated_at: UtcDatetime | None = None  # None: no readable manifest
    complete: bool | None = None
    references: int = 0  # image references it lists, each protecting what it names
    problem: str | None = None  # why it blocks the run (an unreadable file blocks it whether expected or not)
    note: str | None = None  # a manifest that declares another cluster than its file name


def manifest_evidence(safety: Safety, inventory: Inventory, now: datetime) -> tuple[ManifestEvidence, ...]:
    """One entry per cluster, by name: each expected cluster, each readable manifest, each unreadable file."""
    entries = _unreadable_files(safety, inventory)
    manifests = {manifest.cluster: manifest for manifest in inventory.manifests}
    for cluster in {*safety.clusters, *manifests} - entries.keys():
        entries[cluster] = _cluster_evidence(safety, inventory, manifests.get(cluster), cluster, now)
    for source, manifest in inventory.misfiled.items():
        name = cluster_of_source(source)
        entries[name] = _with_misfiled(entries.get(name), name, source, manifest)
    return tuple(entries[name] for name in sorted(entries))


def _unreadable_files(safety: Safety, inventory: Inventory) -> dict[str, ManifestEvidence]:
    entries: dict[str, ManifestEvidence] = {}
    for source, problem in inventory.problems.items():
        cluster = cluster_of_source(source)
        entries[cluster] = ManifestEvidence(
            cluster=cluster,
            expected=cluster in safety.clusters,
            problem=f"{source}: unreadable in-use manifest: {problem}",
        )
    return entries


def _cluster_evidence(
    safety: Safety, inventory: Inventory, manifest: InUseManifest | None, cluster: str, now: datetime
) -> ManifestEvidence:
    """A cluster with a readable manifest, or an expected one (with or without)."""
    expected = cluster in safety.clusters
    return ManifestEvidence(
        cluster=cluster,
        expected=expected,
        generated_at=manifest.generated_at if manifest else None,
        complete=manifest.complete if manifest else None,
        references=len(manifest.images) if manifest else 0,
        problem=expected_manifest_problem(safety, inventory, manifest, cluster, now) if expected else None,
    )


def _with_misfiled(known: ManifestEvidence | None, name: str, source: str, manifest: InUseManifest) -> ManifestEvidence:
    """The entry of the cluster a misfiled manifest's file name stands for, with a note of what it declares."""
    note = f"{source} declares cluster {manifest.cluster}; its images still protect"
    if known is None:
        return ManifestEvidence(
            cluster=name,
            expected=False,
            generated_at=manifest.generated_at,
            complete=manifest.complete,
            references=len(manifest.images),
            note=note,
        )
    # the file of an expected cluster, which it does not stand for: its references still count
    return known.model_copy(update={"references": known.references + len(manifest.images), "note": note})
