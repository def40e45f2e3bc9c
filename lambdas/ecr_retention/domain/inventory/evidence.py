"""What a run knew of each in-use manifest, for the report's checks: every expected cluster (with or without a
manifest), every other manifest that protected images, and every file under in-use/ that could not be read.

Pure; the blocking reasons are the ones the planner blocks on (domain.in_use.index), worded the same.
"""

from datetime import datetime

from ecr_retention.domain.config import Safety
from ecr_retention.domain.in_use.index import expected_manifest_problem
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory
from ecr_retention.domain.planning.plan_model import PlanModel
from ecr_retention.domain.timestamps import UtcDatetime


class ManifestEvidence(PlanModel):
    # the cluster its file stands for, as people read it: `prod` (in-use/prod.json), `210987654321/prod` (a spoke's)
    cluster: str
    expected: bool  # listed in safety.clusters: without a fresh, complete manifest the run deletes nothing
    generated_at: UtcDatetime | None = None  # None: no readable manifest
    complete: bool | None = None
    references: int = 0  # image references it lists, each protecting what it names
    problem: str | None = None  # why it blocks the run (an unreadable file blocks it whether expected or not)
    note: str | None = None  # a manifest that declares another cluster than its file name


def manifest_evidence(safety: Safety, inventory: Inventory, now: datetime) -> tuple[ManifestEvidence, ...]:
    """One entry per cluster, by account and name: each expected cluster, each readable manifest, each unreadable
    file."""
    entries = _unreadable_files(safety, inventory)
    manifests = inventory.standing
    for cluster in {*safety.clusters, *manifests} - entries.keys():
        entries[cluster] = _cluster_evidence(safety, inventory, manifests.get(cluster), cluster, now)
    for source, manifest in inventory.misfiled.items():
        name = inventory.cluster_of(source)
        entries[name] = _with_misfiled(entries.get(name), name, source, manifest)
    return tuple(entries[cluster] for cluster in sorted(entries))


def _unreadable_files(safety: Safety, inventory: Inventory) -> dict[ClusterId, ManifestEvidence]:
    entries: dict[ClusterId, ManifestEvidence] = {}
    for source, problem in inventory.problems.items():
        cluster = inventory.cluster_of(source)
        blocks = cluster.of_this_account or cluster in safety.listed
        what = f"{source}: unreadable in-use manifest: {problem}"
        entries[cluster] = ManifestEvidence(
            cluster=str(cluster),
            expected=cluster in safety.clusters,
            problem=what if blocks else None,
            note=None if blocks else f"{what} (a spoke's cluster neither safety list names: blocks nothing)",
        )
    return entries


def _cluster_evidence(
    safety: Safety, inventory: Inventory, manifest: InUseManifest | None, cluster: ClusterId, now: datetime
) -> ManifestEvidence:
    """A cluster with a readable manifest, or an expected one (with or without)."""
    expected = cluster in safety.clusters
    return ManifestEvidence(
        cluster=str(cluster),
        expected=expected,
        generated_at=manifest.generated_at if manifest else None,
        complete=manifest.complete if manifest else None,
        references=len(manifest.images) if manifest else 0,
        problem=expected_manifest_problem(safety, inventory, manifest, cluster, now) if expected else None,
    )


def _with_misfiled(
    known: ManifestEvidence | None, name: ClusterId, source: str, manifest: InUseManifest
) -> ManifestEvidence:
    """The entry of the cluster a misfiled manifest's file name stands for, with a note of what it declares."""
    note = f"{source} declares cluster {manifest.cluster}; its images still protect"
    if known is None:
        return ManifestEvidence(
            cluster=str(name),
            expected=False,
            generated_at=manifest.generated_at,
            complete=manifest.complete,
            references=len(manifest.images),
            note=note,
        )
    # the file of an expected cluster, which it does not stand for: its references still count
    return known.model_copy(update={"references": known.references + len(manifest.images), "note": note})
