"""The run's in-use check (SPEC "The sentinel", finding `in-use-missing`): every in-use reference into this registry
against what the registry holds. Each evaluation checks its managed repository against the snapshot it read
(services/evaluate.py); the report step checks the other repositories here, by image id (DescribeImages, 100 ids a
call, the referenced images only), and reads what the sentinel recorded of the removals (`removals/`) to say when and
by what a missing image went.

It only informs: it never blocks a run, never changes its outcome and never deletes. A lookup that fails after its
retries, and a removal record that cannot be read, are warnings.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from ecr_retention.defects import Defect, contain
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.in_use.references import (
    MissingReference,
    PulledReference,
    Removal,
    by_repository,
    missing_references,
    pulled_references,
)
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.reporting.outcomes import Trigger
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.layout import regional_name
from ecr_retention.ports import Bucket, ImagesUnreadable, Registry, RepositoryGone, StorageUnavailable
from ecr_retention.registries import PrunedRegistry

if TYPE_CHECKING:
    from ecr_retention.services.removals import RemovalsRead

logger = logging.getLogger(__name__)

# Outcomes of a repository whose references an evaluation checks: planned from a snapshot (checked already), or busy
# (the run that holds its lease checks it; this run reads nothing of a busy repository).
CHECKED_OUTCOMES = frozenset({"ok", "blocked", "skipped", "partial", "busy"})
LOOKUP_THREADS = 8


@dataclass(frozen=True)
class InUseCheck:
    """The check's result: the evaluated repositories' reports with their findings told when and by what, the
    findings in the repositories no evaluation checked, and the warnings of whatever could not be checked or read."""

    repositories: tuple[RepositoryReport, ...]
    others: tuple[MissingReference, ...] = ()
    warnings: tuple[str, ...] = ()

    @classmethod
    def joined(cls, checks: Sequence[InUseCheck]) -> InUseCheck:
        """The checks of several registries as one run's."""
        return cls(
            repositories=tuple(report for check in checks for report in check.repositories),
            others=tuple(found for check in checks for found in check.others),
            warnings=tuple(warning for check in checks for warning in check.warnings),
        )


@dataclass(frozen=True)
class CheckInputs:
    """What the report step checks with: the inventory it read, the run's replication rules, its trigger, and this
    deployment's sentinel role (whose records of removals/ alone count; None: unknown, so none do)."""

    config: RetentionConfig
    inventory: Inventory
    trigger: Trigger
    now: datetime
    sentinel: str | None = None
    # The (account, Region) of the run's other registries, each checked on its own: a reference into one of them is
    # its check's, even where this registry's deletions replicate there.
    checked_elsewhere: frozenset[tuple[str, str]] = frozenset()


def check_in_use(
    registry: PrunedRegistry, bucket: Bucket, inputs: CheckInputs, reports: Sequence[RepositoryReport]
) -> InUseCheck:
    """The check, contained: whatever goes wrong in it is a warning of the run, never its failure."""
    checked = contain(
        partial(_check, registry, bucket, inputs, reports), log=logger, what="checking the in-use references"
    )
    if isinstance(checked, Defect):
        where = f"{registry.named}: " if registry.named is not None else ""
        return InUseCheck(tuple(reports), warnings=(f"{where}the in-use references could not be checked: {checked}",))
    return checked


def _check(
    registry: PrunedRegistry, bucket: Bucket, inputs: CheckInputs, reports: Sequence[RepositoryReport]
) -> InUseCheck:
    """Schedule and CLI runs check every referenced repository the evaluations did not (unmanaged ones, ones the
    run did not target, gone or failed ones; a busy one is the business of the run holding its lease); a push run
    only the pushed repositories it evaluated, so a push costs no lookups in the rest of the registry (the next
    sweep checks them)."""
    references = pulled_references(
        inputs.inventory,
        now=inputs.now,
        safety=inputs.config.safety,
        registry=registry.coordinates,
        checked_elsewhere=inputs.checked_elsewhere,
    )
    checked = {report.repository_name for report in reports if report.outcome in CHECKED_OUTCOMES}
    unchecked = unchecked_references(references, reports, checked, inputs.trigger)
    others, lookup_warnings = look_up(registry.port, unchecked, registry.named)
    findings = [
        found.model_copy(update={"region": registry.named})
        for found in (*(found for report in reports for found in report.in_use_missing), *others)
    ]
    told, removal_warnings = told_by_removals(bucket, findings, inputs.sentinel, registry.key, registry.named)
    return InUseCheck(
        repositories=tuple(_with_findings(report, told) for report in reports),
        others=_found_elsewhere(told, checked),
        warnings=(*lookup_warnings, *removal_warnings),
    )


def _found_elsewhere(told: Mapping[str, Sequence[MissingReference]], checked: set[str]) -> tuple[MissingReference, ...]:
    """The findings in the repositories no evaluation checked."""
    return tuple(found for repository, found_here in told.items() if repository not in checked for found in found_here)


def unchecked_references(
    references: Sequence[PulledReference], reports: Sequence[RepositoryReport], checked: set[str], trigger: Trigger
) -> dict[str, tuple[PulledReference, ...]]:
    """The references the report step looks up, by repository: those no evaluation checked (of the evaluated
    repositories only, in a push run)."""
    evaluated = {report.repository_name for report in reports}
    return {
        repository: pulled
        for repository, pulled in by_repository(references).items()
        if repository not in checked and (trigger != "push" or repository in evaluated)
    }


def look_up(
    registry: Registry, references: Mapping[str, Sequence[PulledReference]], region: str | None = None
) -> tuple[tuple[MissingReference, ...], tuple[str, ...]]:
    """Each repository's references against DescribeImages by image id, a few repositories at a time; a warning
    names the repository with `region` (PrunedRegistry.named: the run prunes several Regions)."""
    with ThreadPoolExecutor(max_workers=LOOKUP_THREADS) as pool:
        answers = list(
            pool.map(lambda item: _look_up_one(registry, item[0], item[1], region), sorted(references.items()))
        )
    return (
        tuple(found for missing, _ in answers for found in missing),
        tuple(warning for _, warning in answers if warning is not None),
    )


def _look_up_one(
    registry: Registry, repository: str, references: Sequence[PulledReference], region: str | None
) -> tuple[tuple[MissingReference, ...], str | None]:
    try:
        images = registry.describe_images_by_id(repository, [reference.image_id for reference in references])
    except RepositoryGone:
        return missing_references(references, None), None
    except ImagesUnreadable as error:
        logger.warning("the in-use check of %s failed: %s", repository, error)
        return (), (
            f"{regional_name(repository, region)}: {len(references)} in-use reference(s) could not be checked against the "
            f"registry (whether the next pull finds them is unknown): {error}"
        )
    return missing_references(references, images), None


def told_by_removals(
    bucket: Bucket,
    findings: Iterable[MissingReference],
    sentinel: str | None,
    key: str | None = None,
    region: str | None = None,
) -> tuple[dict[str, tuple[MissingReference, ...]], tuple[str, ...]]:
    """The findings by repository, each with the latest removal this deployment's sentinel recorded that names it, in
    the registry of that key (registries.PrunedRegistry.key); `region` names the repository in the warnings when the
    run prunes several Regions (PrunedRegistry.named). Removals are read only for the repositories that have a finding."""
    grouped: dict[str, list[MissingReference]] = defaultdict(list)
    for found in findings:
        grouped[found.repository_name].append(found)
    told: dict[str, tuple[MissingReference, ...]] = {}
    warnings: list[str] = []
    for repository, found_here in sorted(grouped.items()):
        removals, problem = recorded_removals(bucket, repository, sentinel, key, region)
        told[repository] = tuple(finding.told_by(removals) for finding in found_here)
        warnings.extend(problem)
    return told, tuple(warnings)


def recorded_removals(
    bucket: Bucket, repository: str, sentinel: str | None, key: str | None = None, region: str | None = None
) -> tuple[tuple[Removal, ...], tuple[str, ...]]:
    """The removals this deployment's sentinel recorded for one repository of the registry of that key (None: the
    home Region's), newest first, and the warnings that name those that could not be listed or read, and those it did not
    write (ignored). The warnings name the repository with `region` when the run prunes several Regions
    (`eu-west-1:app`), else another Region's by its regional name (`us-east-1:app`)."""
    # Loaded here, for a repository with an in-use reference the next pull cannot get: a run without one (most) builds
    # none of the sentinel's records and claims (services/removals.py) at its cold start or after it.
    from ecr_retention.services.removals import read_removals

    named = regional_name(repository, region if region is not None else key)
    try:
        read = read_removals(bucket, repository, sentinel=sentinel, key=key)
    except StorageUnavailable as error:
        return (), (
            f"{named}: the recorded removals could not be listed, so the in-use-missing findings do not "
            f"say what removed the images: {error}",
        )
    warnings = []
    if read.unreadable:
        warnings.append(
            f"{named}: {len(read.unreadable)} recorded removal(s) could not be read and were left out, "
            f"the first s3://{bucket.name}/{read.unreadable[0]}"
        )
    if read.ignored:
        warnings.append(ignored_warning(bucket, named, read, sentinel))
    return read.removals, tuple(warnings)


def ignored_warning(bucket: Bucket, repository: str, read: RemovalsRead, sentinel: str | None) -> str:
    """The records under removals/ that this deployment's sentinel did not write, or all of them when the run does
    not know its sentinel: they say nothing of what removed an image."""
    if sentinel is None:
        return (
            f"{repository}: {len(read.ignored)} recorded removal(s) left out: this run does not know the "
            "deployment's sentinel role, whose records alone count (ecr-retention run --sentinel-role)"
        )
    return (
        f"{repository}: {len(read.ignored)} recorded removal(s) not written by this deployment's sentinel were "
        f"ignored, the first s3://{bucket.name}/{read.ignored[0].told}"
    )


def _with_findings(report: RepositoryReport, told: Mapping[str, tuple[MissingReference, ...]]) -> RepositoryReport:
    if not report.in_use_missing:
        return report
    return report.model_copy(update={"in_use_missing": told.get(report.repository_name, report.in_use_missing)})
