"""Evaluate one repository: take its lease, snapshot it, plan it, restore the in-use images found archived (in a
blocked run and a skipped repository too: restoring deletes nothing; never in dry run), have services/removal.py
re-check the candidates and delete or archive them (nothing mutating in dry run, in a blocked run, or in a skipped
repository), and report what happened.

The one code path that deletes: the evaluate Lambda and `ecr-retention run` both call
`evaluate_repository`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from ecr_retention.clock import utc_now
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.doctor import Finding, diagnose_repository
from ecr_retention.domain.inventory import Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.plan import Decision, RepositoryPlan
from ecr_retention.domain.planner import build_run_context, first_matching_policy, plan_repository, tag_sources
from ecr_retention.domain.registry import RepositorySnapshot
from ecr_retention.domain.replication import RegistryReplication, ReplicationConfiguration
from ecr_retention.domain.report import ImageEntry, RepositoryReport, repository_report_of_plan
from ecr_retention.ports import LeaseStore, LeaseUnavailable, ManifestCache, Registry, RepositoryGone
from ecr_retention.services.defects import Defect, contain
from ecr_retention.services.removal import OUT_OF_TIME, RemovalOutcome, out_of_time, remove_candidates
from ecr_retention.services.snapshot import repository_tags, snapshot_repository

logger = logging.getLogger(__name__)
# UpdateImageStorageClass takes one image per call: the deadline is checked every this many restores.
RESTORE_BATCH = 10

GLOB_CHARACTERS = frozenset("*?[")
# Long enough for the largest repository's evaluation; an expired lease only lets a later run start.
DEFAULT_LEASE_SECONDS = 15 * 60


@dataclass(frozen=True)
class Evaluation:
    """What every repository of one run is evaluated with."""

    run_id: str
    config: RetentionConfig
    inventory: Inventory
    dry_run: bool  # the rules file's dry_run, or forced by the caller; never weaker than the file
    replication: RegistryReplication  # read once per run; unreadable blocks every repository
    # Every repository of the registry, when the caller has listed them already (the CLI run): spares a
    # DescribeRepositories per repository whose policy names tag_in_repositories with a glob.
    repository_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.config.dry_run and not self.dry_run:
            raise ValueError("a run cannot delete when the rules file says dry_run: true")


def evaluate_repository(
    repository: str,
    evaluation: Evaluation,
    *,
    registry: Registry,
    cache: ManifestCache,
    leases: LeaseStore | None = None,
    clock: Callable[[], datetime] = utc_now,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    seconds_left: Callable[[], float] | None = None,
) -> RepositoryReport:
    """`seconds_left` (a Lambda's remaining time): no removal starts when less than
    services.removal.DEADLINE_MARGIN_SECONDS remain; what was not attempted is reported failed (DeadlineReached)
    and the next run takes it up.

    A lease table that cannot be reached fails this repository alone, untouched; one that cannot release the
    lease after the evaluation leaves the report of what was done intact, with a warning (the lease expires).
    Any other failure fails this repository alone too (services/defects.py): a sweep goes on."""
    if leases is not None:
        try:
            acquired = leases.acquire(repository, evaluation.run_id, lease_seconds)
        except LeaseUnavailable as error:  # nothing was read or changed: the repository waits for the next run
            logger.exception("taking the lease of %s failed", repository)
            return RepositoryReport(
                repository_name=repository,
                outcome="failed",
                error=f"its lease could not be taken, so nothing was done: {type(error).__name__}: {error}",
            )
        if not acquired:
            return RepositoryReport(
                repository_name=repository,
                outcome="busy",
                error="another evaluation holds this repository's lease; it is evaluated by that run",
            )
    evaluated = contain(
        partial(
            _evaluate_unless_gone,
            repository,
            evaluation,
            registry=registry,
            cache=cache,
            clock=clock,
            seconds_left=seconds_left,
        ),
        log=logger,
        what=f"evaluating {repository}",
    )
    report = (
        RepositoryReport(repository_name=repository, outcome="failed", error=str(evaluated))
        if isinstance(evaluated, Defect)
        else evaluated
    )
    if leases is not None:
        # Whatever stops the release (the table, or a defect), what was deleted must still be reported: an unreleased
        # lease only expires.
        released = contain(
            partial(leases.release, repository, evaluation.run_id),
            log=logger,
            what=f"releasing the lease of {repository}",
        )
        if isinstance(released, Defect):
            warning = (
                f"its lease could not be released ({released}); it expires in "
                f"{lease_seconds} s, until then other runs report this repository busy"
            )
            report = report.model_copy(update={"warnings": (*report.warnings, warning)})
    return report


def _evaluate_unless_gone(
    repository: str,
    evaluation: Evaluation,
    *,
    registry: Registry,
    cache: ManifestCache,
    clock: Callable[[], datetime],
    seconds_left: Callable[[], float] | None,
) -> RepositoryReport:
    try:
        return _evaluate(repository, evaluation, registry=registry, cache=cache, clock=clock, seconds_left=seconds_left)
    except RepositoryGone:
        return RepositoryReport(repository_name=repository, outcome="gone", error="the repository no longer exists")


def _evaluate(
    repository: str,
    evaluation: Evaluation,
    *,
    registry: Registry,
    cache: ManifestCache,
    clock: Callable[[], datetime],
    seconds_left: Callable[[], float] | None,
) -> RepositoryReport:
    config = evaluation.config
    if first_matching_policy(config.policies, repository) is None:
        return RepositoryReport(repository_name=repository, outcome="unmanaged")
    snapshot = snapshot_repository(registry, repository, cache)
    tags = referenced_tags(registry, config, repository, evaluation.repository_names)
    now = clock()
    run = build_run_context(
        config,
        evaluation.inventory,
        now,
        registry_id=registry.registry_id,
        region=registry.region,
        tags_by_repository=tags,
        replication=evaluation.replication,
    )
    planned = plan_repository(snapshot, run)
    plan, warnings = planned.plan, (*run.warnings, *planned.warnings)
    findings, diagnosis_warnings = lifecycle_findings(
        registry, snapshot, evaluation.inventory, plan, now, evaluation.replication.replication_configuration
    )
    warnings = (*warnings, *diagnosis_warnings)
    base = repository_report_of_plan(plan, now, run.blocked).model_copy(
        update={"lifecycle_findings": findings, "warnings": tuple(warnings)}
    )
    restores = [d for d in plan.images if d.action == "restore"]
    if restores and not evaluation.dry_run:
        outcome = restore_in_use_images(registry, repository, restores, seconds_left=seconds_left)
        base = with_restores(base, restores, outcome)
    if base.outcome in ("blocked", "skipped"):
        return base
    candidates = [d for d in plan.images if d.removes]
    if evaluation.dry_run or not candidates:  # every removal as planned: the plan's report is what a dry run did
        return base
    removals = remove_candidates(registry, snapshot, plan, candidates, seconds_left=seconds_left)
    return with_removals(base, candidates, removals)


def lifecycle_findings(
    registry: Registry,
    snapshot: RepositorySnapshot,
    inventory: Inventory,
    plan: RepositoryPlan,
    now: datetime,
    replication: ReplicationConfiguration,
) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """The doctor's findings on the repository's native lifecycle policy, for the report. The diagnosis only
    informs: when it fails, the run goes on and the report says so."""
    repository = snapshot.repository_name
    policy_text = registry.lifecycle_policy(repository)
    if policy_text is None:
        return (), ()
    diagnosis = contain(  # a doctor defect must not stop pruning: it is logged and reported
        lambda: diagnose_repository(
            policy_text,
            snapshot,
            now=now,
            inventory=inventory,
            plan=plan,
            registry_id=registry.registry_id,
            region=registry.region,
            replication=replication,
        ),
        log=logger,
        what=f"diagnosing the lifecycle policy of {repository}",
    )
    if isinstance(diagnosis, Defect):
        return (), (f"{repository}: the native lifecycle policy could not be diagnosed: {diagnosis.kind}",)
    return diagnosis.findings, ()


def referenced_tags(
    registry: Registry, config: RetentionConfig, repository: str, all_names: Sequence[str] | None = None
) -> dict[str, frozenset[str]]:
    """The tags of the other repositories that the policy's tag_in_repositories name. A name that does not
    exist stays out of the mapping, which the planner reads as "unknown" (keep rules keep, deletes select none)."""
    patterns = tag_sources(config, repository)
    if not patterns:
        return {}
    if all(GLOB_CHARACTERS.isdisjoint(pattern) for pattern in patterns):
        names = sorted(set(patterns))
    else:
        listed = registry.repository_names() if all_names is None else all_names
        names = [name for name in listed if matches_any(name, patterns)]
    tags = {}
    for name in names:
        if name == repository:
            continue
        try:
            tags[name] = repository_tags(registry, name)
        except RepositoryGone:
            continue
    return tags


@dataclass(frozen=True)
class RestoreOutcome:
    """What became of the planned restores: done (ACTIVATING, or ACTIVE already) or failed (code, detail)."""

    failed: Mapping[str, tuple[str, str]]


def restore_in_use_images(
    registry: Registry,
    repository: str,
    restores: Sequence[Decision],
    *,
    seconds_left: Callable[[], float] | None = None,
) -> RestoreOutcome:
    """Ask ECR to restore the in-use images found archived, RESTORE_BATCH images (one call each) between checks of
    the deadline, as removals do. A restore that fails, or that the deadline leaves unasked (DeadlineReached), is
    reported, never raised: it fails neither the evaluation nor its deletions (the image stays kept), and the next
    run asks again."""
    digests = [d.image_digest for d in restores]
    failed: dict[str, tuple[str, str]] = {}
    for start in range(0, len(digests), RESTORE_BATCH):
        if out_of_time(seconds_left):
            failed.update(dict.fromkeys(digests[start:], OUT_OF_TIME))
            break
        failed.update(_restore_batch(registry, repository, digests[start : start + RESTORE_BATCH]))
    return RestoreOutcome(failed=failed)


def _restore_batch(registry: Registry, repository: str, digests: Sequence[str]) -> dict[str, tuple[str, str]]:
    answer = contain(
        partial(registry.restore_images, repository, digests), log=logger, what=f"restoring in {repository}"
    )
    if isinstance(answer, Defect):
        return dict.fromkeys(digests, ("RestoreFailed", str(answer)))
    failed = {f.image_digest: (f.code, f.message) for f in answer.failed}
    for digest in answer.already_gone:
        failed[digest] = ("ImageNotFound", "no longer in the repository: it could not be restored")
    for digest in answer.unconfirmed:
        failed.setdefault(digest, ("NotConfirmed", "the registry did not confirm the restore"))
    answered = {*answer.done, *answer.already, *failed}
    for digest in digests:
        if digest not in answered:
            failed[digest] = ("NoAnswer", "the registry's answer did not mention this image")
    return failed


def with_restores(base: RepositoryReport, restores: Sequence[Decision], outcome: RestoreOutcome) -> RepositoryReport:
    """The report with the restores ECR refused moved from `restored` to `restore_failed`, each named in a warning."""
    if not outcome.failed:
        return base
    by_digest = {d.image_digest: d for d in restores}
    failed = tuple(
        ImageEntry.from_decision(by_digest[d], kind="restore-failed", detail=detail, error_code=code)
        for d, (code, detail) in sorted(outcome.failed.items())
        if d in by_digest
    )
    warnings = tuple(
        f"{base.repository_name}: in-use image {entry.image_digest} could not be restored from archive "
        f"({entry.error_code}: {entry.detail}); it stays kept, restore it with ecr-retention restore"
        for entry in failed
    )
    return base.model_copy(
        update={
            "restored": tuple(entry for entry in base.restored if entry.image_digest not in outcome.failed),
            "restore_failed": failed,
            "warnings": (*base.warnings, *warnings),
        }
    )


def with_removals(base: RepositoryReport, candidates: Sequence[Decision], removals: RemovalOutcome) -> RepositoryReport:
    """The report with what became of each candidate: deleted, archived, cancelled or failed (the rest is kept)."""
    by_digest: Mapping[str, Decision] = {d.image_digest: d for d in candidates}
    deleted = tuple(ImageEntry.from_decision(by_digest[d]) for d in removals.deleted)
    archived = tuple(ImageEntry.from_decision(by_digest[d]) for d in removals.archived)
    cancelled = tuple(
        ImageEntry.from_decision(by_digest[d], kind="tag-changed", detail=why)
        for d, why in sorted(removals.cancelled.items())
        if d in by_digest
    )
    failed = tuple(
        ImageEntry.from_decision(by_digest[d], kind="delete-failed", detail=detail, error_code=code)
        for d, (code, detail) in sorted(removals.failed.items())
        if d in by_digest
    )
    outcome = "partial" if failed else "ok"
    untouched = len(by_digest) - len(deleted) - len(archived)
    return base.model_copy(
        update={
            "outcome": outcome,
            "kept": base.kept + untouched,
            "deleted": deleted,
            "archived": archived,
            "cancelled": cancelled,
            "failed": failed,
            "bytes_reclaimed": sum(entry.image_size_in_bytes or 0 for entry in deleted),
        }
    )
