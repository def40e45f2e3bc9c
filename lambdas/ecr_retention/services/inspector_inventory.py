"""Amazon Inspector's in-use reading (inspectorInUse, docs/aws-inventory.md): for this account, in each collected
region, the ECR images Inspector's enhanced scanning saw run in ECS tasks and EKS pods, stored as one more in-use
manifest, `in-use/inspector-<account>-<region>.json`, which every reader of manifests (run, sentinel, memory, diff,
doctor) reads like any other.

Fail closed as the AWS inventory is (services/aws_inventory.py): a coverage that cannot be read is stored as an
incomplete manifest that carries over what the previous one named, never as an empty one that would drop protection.
Every coverage gap (Inspector off, enhanced scanning off, repositories it does not monitor) is written into the
manifest (`coverageGaps`), so that the run's report names it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from ecr_retention.clock import utc_now
from ecr_retention.domain.inventory.inspector_manifest import build_inspector_manifest, coverage_gaps, inspector_name
from ecr_retention.ports import CoverageReader, ManifestStore, ReadFailed
from ecr_retention.services.aws_inventory import ManifestCollection, stored_collection

# A ListCoverage that fails is, first of all, a gap of Inspector's view: said so, with what AWS answered.
NOT_READ_HINT = "is Inspector enabled, and may the collector's role call inspector2:ListCoverage?"


def collect_inspector_coverage(
    reader: CoverageReader, account: str, region: str, *, generated_at: datetime
) -> ManifestCollection:
    """Read Inspector's coverage of one account and region. Never raises for AWS failures: a failed read is an
    incomplete manifest, and its gap."""
    name = inspector_name(account, region)
    try:
        coverage = reader.coverage(account)
    except ReadFailed as error:
        gap = f"{error}; {NOT_READ_HINT}"  # "Inspector in <account> <region>: ListCoverage failed: ..."
        manifest, _ = build_inspector_manifest(name, generated_at, (), complete=False)
        return ManifestCollection(manifest=manifest.model_copy(update={"coverage_gaps": (gap,)}), problems=(gap,))
    manifest, problems = build_inspector_manifest(name, generated_at, coverage.images, complete=True)
    gaps = coverage_gaps(coverage, account, region)
    manifest = manifest.model_copy(update={"complete": not problems, "coverage_gaps": tuple(gaps) or None})
    counts = {"images covered": len(coverage.images), "repositories covered": len(coverage.repositories)}
    return ManifestCollection(manifest=manifest, problems=tuple(problems), counts=counts)


def export_inspector_coverage(
    coverage: Callable[[str, str], CoverageReader],
    account: str,
    regions: Sequence[str],
    store: ManifestStore,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> list[ManifestCollection]:
    """Collect and store one Inspector manifest per region of the account (the registry's), each whole in one write;
    a manifest that cannot be stored is reported in its collection (`store_error`), as the AWS inventory's."""
    collections = []
    for region in regions:
        generated_at = clock()  # before the read: the manifest never claims to be fresher than its data
        collection = collect_inspector_coverage(coverage(account, region), account, region, generated_at=generated_at)
        collections.append(stored_collection(collection, store))
    return collections
