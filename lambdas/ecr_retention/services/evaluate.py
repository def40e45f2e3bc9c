"""Evaluate one repository: snapshot it, plan it, re-check the candidates, then delete or archive them
(nothing mutating in dry run, in a blocked run, or in a skipped repository), and report what happened.

The one code path that deletes: the evaluate Lambda and `ecr-retention run` both call
`evaluate_repository`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.doctor import Finding, diagnose_repository
from ecr_retention.domain.inventory import Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.plan import Decision, RepositoryPlan
from ecr_retention.domain.planner import (
    build_run_context,
    cosign_subject,
    first_matching_policy,
    plan_repository,
    short,
    tag_sources,
)
from ecr_retention.domain.registry import ImageDetail, RepositorySnapshot
from ecr_retention.domain.replication import RegistryReplication, ReplicationConfiguration
from ecr_retention.domain.report import ImageEntry, RepositoryReport
from ecr_retention.ports import BatchOutcome, LeaseStore, Registry, RepositoryGone
from ecr_retention.services.snapshot import ManifestCache, repository_tags, snapshot_repository

logger = logging.getLogger(__name__)

GLOB_CHARACTERS = frozenset("*?[")
# Long enough for the largest repository's evaluation; an expired lease only lets a later run start.
DEFAULT_LEASE_SECONDS = 15 * 60
# No removal call starts with less time than this left: one BatchDeleteImage with all its retries takes
# at most about 70 s (aws/clients.py), and the worker must still store its report.
DEADLINE_MARGIN_SECONDS = 90.0
REMOVAL_BATCH = 100  # BatchDeleteImage's limit; the deadline is checked between batches
GONE_SINCE_PLAN = "no longer in the repository: removed by someone else since the plan"
UNCONFIRMED = (
    "NotConfirmed",
    "gone, but not confirmed deleted by this run: ECR answered ImageNotFound to a retry of the call, whose earlier "
    "attempt may have deleted it before its answer was lost",
)


def utc_now() -> datetime:
    return datetime.now(UTC)


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


@dataclass
class Execution:
    """What the registry did with the candidates, digest by digest."""

    deleted: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    cancelled: dict[str, str] = field(default_factory=dict)  # digest -> why (tag-changed)
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # digest -> (error code, detail)
    # action -> (code, why), set when a call of that action failed after its retries (nothing further of it
    # is attempted in this run), or for both actions when time ran out.
    stopped: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Candidates known to be absent from the repository, whoever removed them: such an index or subject holds
    # nothing any more, so the children and referrers planned to go with it still go.
    gone: set[str] = field(default_factory=set)


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
    """`seconds_left` (a Lambda's remaining time): no removal starts when less than DEADLINE_MARGIN_SECONDS
    remain; what was not attempted is reported failed (DeadlineReached) and the next run takes it up.

    A lease table that cannot be reached fails this repository alone, untouched; one that cannot release the
    lease after the evaluation leaves the report of what was done intact, with a warning (the lease expires)."""
    if leases is not None:
        try:
            acquired = leases.acquire(repository, evaluation.run_id, lease_seconds)
        except Exception as error:  # nothing was read or changed: the repository waits for the next run
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
    try:
        report = _evaluate(
            repository, evaluation, registry=registry, cache=cache, clock=clock, seconds_left=seconds_left
        )
    except RepositoryGone:
        report = RepositoryReport(repository_name=repository, outcome="gone", error="the repository no longer exists")
    except Exception as error:  # one repository's failure must not stop a sweep; it is reported, not hidden
        logger.exception("evaluating %s failed", repository)
        report = RepositoryReport(
            repository_name=repository, outcome="failed", error=f"{type(error).__name__}: {error}"
        )
    if leases is not None:
        try:
            leases.release(repository, evaluation.run_id)
        except Exception as error:  # what was deleted must still be reported; an unreleased lease only expires
            logger.exception("releasing the lease of %s failed", repository)
            warning = (
                f"its lease could not be released ({type(error).__name__}: {error}); it expires in "
                f"{lease_seconds} s, until then other runs report this repository busy"
            )
            report = report.model_copy(update={"warnings": (*report.warnings, warning)})
    return report


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
    base = RepositoryReport(
        repository_name=repository,
        outcome="ok",
        policy=plan.policy,
        deletion_replicates_to=plan.deletion_replicates_to,
        evaluated_at=now,
        images=len(plan.images),
        kept=sum(1 for d in plan.images if d.action == "keep"),
        protected_in_use=sum(1 for d in plan.images if any(r.kind == "in-use" for r in d.reasons)),
        lifecycle_findings=findings,
        warnings=tuple(warnings),
    )
    if run.blocked:
        return base.model_copy(update={"outcome": "blocked", "blocked": tuple(run.blocked)})
    if plan.skipped:
        return base.model_copy(update={"outcome": "skipped", "skipped": plan.skipped})
    candidates = [d for d in plan.images if d.action != "keep"]
    if evaluation.dry_run or not candidates:
        return with_actions(
            base,
            candidates,
            Execution(
                deleted=[d.image_digest for d in candidates if d.action == "delete"],
                archived=[d.image_digest for d in candidates if d.action == "archive"],
            ),
        )
    execution = execute(registry, snapshot, plan, candidates, seconds_left=seconds_left)
    return with_actions(base, candidates, execution)


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
    try:
        diagnosis = diagnose_repository(
            policy_text,
            snapshot,
            now=now,
            inventory=inventory,
            plan=plan,
            registry_id=registry.registry_id,
            region=registry.region,
            replication=replication,
        )
    except Exception as error:  # a doctor defect must not stop pruning; it is logged and reported
        logger.exception("diagnosing the lifecycle policy of %s failed", repository)
        return (), (f"{repository}: the native lifecycle policy could not be diagnosed: {type(error).__name__}",)
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


def dependencies(snapshot: RepositorySnapshot) -> dict[str, set[str]]:
    """digest -> the digests it lives and dies with: the indexes that list it, the subject it refers to. An
    orphaned OCI referrer (its subject gone) has no parent here, so it goes in the first wave."""
    parents: dict[str, set[str]] = defaultdict(set)
    present = {image.image_digest for image in snapshot.image_details}
    for image in snapshot.image_details:
        for child in snapshot.children_of(image.image_digest) or ():
            if child in present and child != image.image_digest:
                parents[child].add(image.image_digest)
        subject = image.subject_manifest_digest or cosign_subject(image.image_tags)
        if subject and subject in present and subject != image.image_digest:
            parents[image.image_digest].add(subject)
    return parents


def recheck(registry: Registry, repository: str, candidates: Sequence[Decision]) -> dict[str, str]:
    """Re-read the candidates right before acting: an image whose tags changed since the plan (or that is
    gone, or being restored) is not touched in this run. Returns digest -> why it is cancelled."""
    current = registry.describe_image_ids(repository, [d.image_digest for d in candidates])
    cancelled = {}
    for decision in candidates:
        image: ImageDetail | None = current.get(decision.image_digest)
        if image is None:
            cancelled[decision.image_digest] = GONE_SINCE_PLAN
        elif set(image.image_tags) != set(decision.image_tags):
            before = ", ".join(decision.image_tags) or "<untagged>"
            after = ", ".join(sorted(image.image_tags)) or "<untagged>"
            cancelled[decision.image_digest] = f"tags changed since the plan ({before} -> {after}); kept this run"
        elif image.image_status == "ACTIVATING":
            cancelled[decision.image_digest] = "being restored from archive since the plan; kept this run"
    return cancelled


def execute(
    registry: Registry,
    snapshot: RepositorySnapshot,
    plan: RepositoryPlan,
    candidates: Sequence[Decision],
    *,
    seconds_left: Callable[[], float] | None = None,
) -> Execution:
    """Delete or archive in waves: indexes before their children and subjects before their referrers, so
    that nothing a kept image needs is removed when its parent's removal was cancelled or failed (a parent that
    is gone, whoever removed it, holds nothing back)."""
    repository = plan.repository_name
    execution = Execution(cancelled=recheck(registry, repository, candidates))
    execution.gone = {digest for digest, why in execution.cancelled.items() if why == GONE_SINCE_PLAN}
    by_digest = {d.image_digest: d for d in candidates}
    parents = {digest: ps & by_digest.keys() for digest, ps in dependencies(snapshot).items() if digest in by_digest}
    remaining = [d.image_digest for d in candidates]
    while remaining:
        pending = {d for d in remaining if d not in execution.cancelled and d not in execution.failed}
        wave, later = [], []
        for digest in remaining:
            if digest in execution.cancelled or digest in execution.failed:
                continue
            stayed = [
                p
                for p in parents.get(digest, ())
                if (p in execution.cancelled or p in execution.failed) and p not in execution.gone
            ]
            if stayed:
                execution.failed[digest] = (
                    "ParentNotRemoved",
                    f"{short(stayed[0])} was not removed, so this image stays with it",
                )
            elif any(p in pending for p in parents.get(digest, ())):
                later.append(digest)
            else:
                wave.append(digest)
        if not wave:
            for digest in later:  # only cycles left; a real registry has none, and keeping is the safe answer
                execution.failed[digest] = ("DependencyCycle", "manifest references form a cycle; kept")
            break
        for action in ("delete", "archive"):
            chosen = [d for d in wave if by_digest[d].action == action]
            for start in range(0, len(chosen), REMOVAL_BATCH):
                batch = chosen[start : start + REMOVAL_BATCH]
                if seconds_left is not None and seconds_left() < DEADLINE_MARGIN_SECONDS:
                    out_of_time = (
                        "DeadlineReached",
                        "not attempted: the evaluation ran out of time; the next run takes it up",
                    )
                    execution.stopped.update(delete=out_of_time, archive=out_of_time)
                if action in execution.stopped:
                    execution.failed.update(dict.fromkeys(batch, execution.stopped[action]))
                else:
                    try:
                        apply_wave(registry, repository, batch, execution, action)
                    except Exception as error:  # keep what was done on record; this batch's fate is unknown
                        logger.exception("removing images of %s failed", repository)
                        unknown = (type(error).__name__, "the call failed; whether it removed them is unknown")
                        execution.failed.update(dict.fromkeys(batch, unknown))
                        execution.stopped.update(delete=unknown, archive=unknown)
        remaining = later
    return execution


def apply_wave(registry: Registry, repository: str, digests: list[str], execution: Execution, action: str) -> None:
    if not digests:
        return
    outcome: BatchOutcome = (
        registry.delete_images(repository, digests)
        if action == "delete"
        else registry.archive_images(repository, digests)
    )
    (execution.deleted if action == "delete" else execution.archived).extend(outcome.done)
    for digest in outcome.already_gone:
        execution.cancelled[digest] = "already gone when the registry was asked to remove it"
    for digest in outcome.unconfirmed:
        execution.failed[digest] = UNCONFIRMED
    execution.gone.update(outcome.already_gone, outcome.unconfirmed)
    for failure in outcome.failed:
        execution.failed[failure.image_digest] = (failure.code, failure.message)
    if outcome.stopped and action not in execution.stopped:
        code = next((f.code for f in outcome.failed if f.code != "NotAttempted"), "NotAttempted")
        execution.stopped[action] = ("NotAttempted", f"not attempted: an earlier {action} call failed with {code}")
    answered = {*outcome.done, *outcome.already_gone, *outcome.unconfirmed, *(f.image_digest for f in outcome.failed)}
    for digest in digests:  # an adapter that forgets an image must not make it look done
        if digest not in answered:
            execution.failed[digest] = ("NoAnswer", "the registry's answer did not mention this image")


def with_actions(base: RepositoryReport, candidates: Sequence[Decision], execution: Execution) -> RepositoryReport:
    by_digest: Mapping[str, Decision] = {d.image_digest: d for d in candidates}
    deleted = tuple(ImageEntry.from_decision(by_digest[d]) for d in execution.deleted)
    archived = tuple(ImageEntry.from_decision(by_digest[d]) for d in execution.archived)
    cancelled = tuple(
        ImageEntry.from_decision(by_digest[d], kind="tag-changed", detail=why)
        for d, why in sorted(execution.cancelled.items())
        if d in by_digest
    )
    failed = tuple(
        ImageEntry.from_decision(by_digest[d], kind="delete-failed", detail=detail, error_code=code)
        for d, (code, detail) in sorted(execution.failed.items())
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
