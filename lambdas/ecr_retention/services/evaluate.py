"""Evaluate one repository: snapshot it and plan it; when the plan changes the registry, take its lease, snapshot and
plan it again under the lease; have services/act.py act on the plan (nothing in dry run; restores only in a blocked
run or a skipped repository, since restoring deletes nothing), and report what happened
(domain/reporting/report.py `repository_report`, from the plan and the act's ledger).

The one code path that deletes: the evaluate Lambda and `ecr-retention run` both call `evaluate_repository`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from ecr_retention.clock import utc_now
from ecr_retention.defects import Defect, contain
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.doctor.models import Finding
from ecr_retention.domain.holds.model import Holds
from ecr_retention.domain.in_use.references import (
    MissingReference,
    PulledReference,
    by_repository,
    missing_references,
    pulled_references,
)
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import (
    PlannedRepository,
    RunContext,
    build_run_context,
    managed_in,
    plan_repository,
)
from ecr_retention.domain.planning.ledger import Ledger
from ecr_retention.domain.planning.plan import REMOVALS, RepositoryPlan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import RepositorySnapshot
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.domain.reporting.outcomes import RepositoryOutcome
from ecr_retention.domain.reporting.report import RepositoryReport, repository_report
from ecr_retention.layout import regional_name
from ecr_retention.ports import Bucket, LeaseStore, LeaseUnavailable, ManifestCache, Registry, RepositoryGone
from ecr_retention.registries import PrunedRegistry
from ecr_retention.run_files import RunFiles
from ecr_retention.services.act import SecondsLeft, act
from ecr_retention.services.replicas import decided_by_sources, tell_deletions
from ecr_retention.services.snapshot import referenced_tags, snapshot_repository
from ecr_retention.services.swept import as_left, keep_snapshot

logger = logging.getLogger(__name__)

# Long enough for the largest repository's evaluation; an expired lease only lets a later run start.
DEFAULT_LEASE_SECONDS = 15 * 60
# How a repository reads its holds again right before it acts, given its name and the holds its evaluation decided
# on: None when they agree (services/inventory.py holds_read_again).
HoldsReadAgain = Callable[[str, Holds], Holds | None]


@dataclass
class PulledOnce:
    """What RunInputs collects at its first use and keeps (the inputs themselves are frozen)."""

    by_repository: dict[str, tuple[PulledReference, ...]] | None = None


@dataclass(frozen=True)
class RunInputs:
    """What every repository of one run is evaluated with."""

    run_id: str
    config: RetentionConfig
    inventory: Inventory
    dry_run: bool  # the rules file's dry_run, or forced by the caller; never weaker than the file
    replication: RegistryReplication  # read once per run; unreadable blocks every repository
    # Every repository of the registry, when the caller has listed them already (the CLI run): spares a
    # DescribeRepositories per repository whose policy names tag_in_repositories with a glob.
    repository_names: tuple[str, ...] | None = None
    # Where each repository's snapshot is kept for reviews (services/swept.py); None keeps none.
    snapshots: Bucket | None = None
    # The registry's key (registries.PrunedRegistry.key; None: the home Region's): names the repository's lease and its
    # kept snapshot (layout.regional_name), apart from another pruned Region's repository of the same name.
    key: str | None = None
    # The run's other registries: a repository replicated here from one of them with its deletions is decided by
    # that source's rules (services/replicas.py), planned there with this registry's in-use protection.
    others: tuple[PrunedRegistry, ...] = ()
    # The run's own files (runs/<runId>/), where a source tells the destinations it replicates to what it deletes.
    run_files: RunFiles | None = None
    # A batch's or a CLI run's inventory is minutes old when a later repository acts: given a repository and the holds
    # it decided on, its holds (and those of the replicas its deletions reach) read again right before a plan that
    # removes acts, or None when they agree (services/inventory.py holds_read_again). None: the inventory was read for
    # this evaluation.
    recheck_holds: HoldsReadAgain | None = None
    # The run's pulled references by repository, collected at the first evaluation that asks (pulled_into).
    _pulled: PulledOnce = field(default_factory=PulledOnce, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.config.dry_run and not self.dry_run:
            raise ValueError("a run cannot delete when the rules file says dry_run: true")

    @property
    def checked_elsewhere(self) -> frozenset[tuple[str, str]]:
        """The (account, Region) of the run's other registries."""
        return frozenset(other.located for other in self.others)

    def pulled_into(
        self, repository: str, *, now: datetime, registry: RegistryCoordinates
    ) -> tuple[PulledReference, ...]:
        """The in-use references into this repository (SPEC "The sentinel"). Every reference of the inventory is
        collected once per run's inputs, not once per repository: a CLI sweep of 10,000 repositories stays linear."""
        if self._pulled.by_repository is None:
            self._pulled.by_repository = by_repository(
                pulled_references(
                    self.inventory,
                    now=now,
                    safety=self.config.safety,
                    registry=registry,
                    checked_elsewhere=self.checked_elsewhere,
                )
            )
        return self._pulled.by_repository.get(repository, ())


def evaluate_repository(
    repository: str,
    inputs: RunInputs,
    *,
    registry: Registry,
    cache: ManifestCache,
    leases: LeaseStore | None = None,
    clock: Callable[[], datetime] = utc_now,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    seconds_left: SecondsLeft = None,
    store_before_release: Callable[[RepositoryReport], object] | None = None,
    lease_first: bool = False,
) -> RepositoryReport:
    """`seconds_left` (a Lambda's remaining time): no call starts when less than
    services.act.DEADLINE_MARGIN_SECONDS remain; what was not attempted is reported failed (DeadlineReached)
    and the next run takes it up.

    With `leases`, the repository is read and planned without its lease; a plan that changes the registry (LeaseNeeded)
    takes the lease and is read and planned again under it before acting, and one whose lease another run holds is
    reported busy, changed in nothing (docs/safety.md 12). `lease_first`: the evaluation is expected to act (a batch's
    last evaluations did: services.evaluate_step.ActingStreak), so it takes the lease before its first reading, which
    then is the one under the lease (no second one); when the lease cannot be taken it goes on as without it. A lease
    table that cannot be reached fails this repository alone, unchanged; one that cannot release the lease after the
    evaluation leaves the report of what was done intact, with a warning (the lease expires). `store_before_release`:
    where the report of an evaluation that took the lease is stored before the lease is released (and again with the
    warning when it cannot be). Any other failure fails this repository alone too (defects.py): a sweep goes on."""
    evaluate = partial(_plan_and_act, repository, inputs, registry, cache, clock, seconds_left)
    leased = regional_name(repository, inputs.key)
    under_lease = partial(
        _under_lease, repository, leased, inputs, registry, evaluate, lease_seconds, store_before_release
    )
    if leases is not None and lease_first:
        early = _take_lease(leases, repository, leased, inputs.run_id, lease_seconds)
        if early is None:
            return under_lease(leases)
    first = _contained(repository, partial(evaluate, unleased=leases is not None))
    if not isinstance(first, LeaseNeeded) or leases is None:
        return first.report().model_copy(update={"region": registry.region})
    # The plan changes the registry: the lease first, then a new reading and plan under it, which sees what another
    # run did meanwhile, and acts (safety.md 12).
    refused = _take_lease(leases, repository, leased, inputs.run_id, lease_seconds)
    if refused is not None:
        return refused.model_copy(update={"region": registry.region})
    return under_lease(leases)


def _under_lease(
    repository: str,
    leased: str,
    inputs: RunInputs,
    registry: Registry,
    evaluate: Callable[[], Evaluation],
    lease_seconds: int,
    store_before_release: Callable[[RepositoryReport], object] | None,
    leases: LeaseStore,
) -> RepositoryReport:
    """Read, plan and act while this run holds the repository's lease, then release it; the report of what was done is
    stored before the lease is released (`store_before_release`); `leased`: the lease's name (layout.regional_name)."""
    acted = _contained(repository, evaluate)
    report = acted.report().model_copy(update={"region": registry.region})
    if store_before_release is not None:
        # Stored while the lease is held: an invocation that ends after this leaves the report of what was done, one
        # that ends before leaves the lease naming the run (services.evaluate_step.unfinished); none leaves neither.
        store_before_release(report)
    released = _release_lease(leases, leased, inputs.run_id, lease_seconds)
    if not released:
        return report
    report = acted.report(*released).model_copy(update={"region": registry.region})
    if store_before_release is not None:
        store_before_release(report)  # with the warning that the lease expires instead
    return report


@dataclass(frozen=True)
class LeaseNeeded:
    """A reading without the repository's lease whose plan changes the registry: it stops before acting, and the
    evaluation starts again under the lease (evaluate_repository)."""

    repository: str

    def report(self, *more_warnings: str) -> RepositoryReport:
        # Never reported by evaluate_repository, which takes the lease instead: were it, nothing was done.
        return Unplanned(self.repository, "failed", "its plan acts and it held no lease: nothing was done").report(
            *more_warnings
        )


def _contained(repository: str, evaluate: Callable[[], Evaluation]) -> Evaluation:
    """A defect is this repository's outcome, never the sweep's (defects.py)."""
    outcome = contain(evaluate, log=logger, what=f"evaluating {repository}")
    return Unplanned(repository, "failed", str(outcome)) if isinstance(outcome, Defect) else outcome


def _plan_and_act(
    repository: str,
    inputs: RunInputs,
    registry: Registry,
    cache: ManifestCache,
    clock: Callable[[], datetime],
    seconds_left: SecondsLeft,
    *,
    unleased: bool = False,
) -> Evaluation:
    """Managed? Snapshot, plan, findings, act unless a dry run (removing unless blocked or skipped). `unleased`: read
    without the repository's lease, so LeaseNeeded, before anything is written, when the plan changes the registry."""
    config = inputs.config
    if not managed_in(config, repository, registry.region):
        return Unplanned(repository, "unmanaged")
    # The registry's coordinates, with the run's replication rules: what the plan, the doctor, the pulls, the kept
    # snapshot and the choice of the sources that decide its replicas all read the registry as.
    coordinates = RegistryCoordinates.of(registry, inputs.replication.replication_configuration)
    replicated, cycle = decided_by_sources(config, inputs.others, coordinates, repository, inputs.run_files)
    try:
        snapshot = snapshot_repository(registry, repository, cache)
        if unleased:
            run, planned = _plan(registry, coordinates, snapshot, inputs, clock, replicated)
            if changes_registry(inputs, run, planned.plan):
                return LeaseNeeded(repository)
        else:
            run, planned = _plan_before_acting(registry, coordinates, snapshot, inputs, clock, replicated)
        plan, now = planned.plan, run.now
        findings, diagnosis_warnings = lifecycle_findings(registry, coordinates, snapshot, inputs.inventory, plan, now)
        # Read before acting: what the pulls cannot get now, not what this run's own actions leave (the planner never
        # removes an in-use image, so the two agree, but the finding is about what others removed).
        missing = missing_references(
            inputs.pulled_into(repository, now=now, registry=coordinates), snapshot.image_details
        )
        removing = not run.blocked and plan.skipped is None
        ledger, told = _act(inputs, registry, snapshot, plan, removing, seconds_left)
        kept = _keep_snapshot(inputs, coordinates, as_left(snapshot, ledger, now), now)
        last_read_at = now if inputs.snapshots is not None and not kept else None  # kept for reviews
    except RepositoryGone:
        return Unplanned(repository, "gone", "the repository no longer exists")
    warnings = (*run.warnings, *cycle, *planned.warnings, *diagnosis_warnings, *told, *kept)
    return Acted(plan, now, run.blocked, ledger, findings, warnings, missing, last_read_at)


def _act(
    inputs: RunInputs,
    registry: Registry,
    snapshot: RepositorySnapshot,
    plan: RepositoryPlan,
    removing: bool,
    seconds_left: SecondsLeft,
) -> tuple[Ledger | None, tuple[str, ...]]:
    """Nothing in a dry run; otherwise the destinations this run also prunes told what the plan deletes (when it
    removes), then the act, and the warnings of the telling."""
    if inputs.dry_run:
        return None, ()
    told = tell_deletions(inputs.run_files, plan, inputs.others, inputs.key) if removing else ()
    return act(registry, snapshot, plan, removing=removing, seconds_left=seconds_left), told


def _keep_snapshot(
    inputs: RunInputs, registry: RegistryCoordinates, snapshot: RepositorySnapshot, now: datetime
) -> tuple[str, ...]:
    """The snapshot kept for reviews, after the repository was acted on: whatever goes wrong in keeping it (even a
    defect) is a warning, never the loss of the report of what was deleted."""
    if inputs.snapshots is None:
        return ()
    kept = contain(
        partial(
            keep_snapshot,
            inputs.snapshots,
            inputs.run_id,
            snapshot,
            now,
            registry=registry,
            replication_problem=inputs.replication.problem,
            key=inputs.key,
        ),
        log=logger,
        what=f"keeping the snapshot of {snapshot.repository_name}",
    )
    if isinstance(kept, Defect):
        return (f"its snapshot could not be kept for reviews (plan --bucket, diff --bucket): {kept}",)
    return kept


def _plan(
    registry: Registry,
    coordinates: RegistryCoordinates,
    snapshot: RepositorySnapshot,
    inputs: RunInputs,
    clock: Callable[[], datetime],
    replicated: Mapping[str, str],
) -> tuple[RunContext, PlannedRepository]:
    """The repository's plan, with the tags of the repositories its policy's tag_in_repositories names."""
    config = inputs.config
    tags = referenced_tags(registry, config, snapshot.repository_name, inputs.repository_names)
    run = build_run_context(
        config,
        inputs.inventory,
        clock(),
        registry=coordinates,
        tags_by_repository=tags,
        replication_problem=inputs.replication.problem,
        other_registries=inputs.checked_elsewhere,
    )
    return run, plan_repository(snapshot, run, replicated)


def _plan_before_acting(
    registry: Registry,
    coordinates: RegistryCoordinates,
    snapshot: RepositorySnapshot,
    inputs: RunInputs,
    clock: Callable[[], datetime],
    replicated: Mapping[str, str],
) -> tuple[RunContext, PlannedRepository]:
    """The plan, and (when it removes and the run acts) the plan again with the holds read again now, if they changed
    since the inventory was read (SPEC "Re-check before delete", for holds): a hold placed meanwhile keeps its image.
    A reading that fails raises: the repository fails alone, nothing acted on."""
    run, planned = _plan(registry, coordinates, snapshot, inputs, clock, replicated)
    if inputs.recheck_holds is None or inputs.dry_run or not removes(run, planned.plan):
        return run, planned
    fresh = inputs.recheck_holds(snapshot.repository_name, inputs.inventory.holds)
    if fresh is None:
        return run, planned
    again = replace(inputs, inventory=replace(inputs.inventory, holds=fresh))
    return _plan(registry, coordinates, snapshot, again, clock, replicated)


def changes_registry(inputs: RunInputs, run: RunContext, plan: RepositoryPlan) -> bool:
    """Whether acting on the plan (_act) calls anything that changes the registry: a restore (in a blocked run and a
    skipped repository too), a deletion or an archive. Nothing in a dry run."""
    return not inputs.dry_run and (any(image.action == "restore" for image in plan.images) or removes(run, plan))


def removes(run: RunContext, plan: RepositoryPlan) -> bool:
    """Whether acting on the plan deletes or archives an image."""
    return not run.blocked and plan.skipped is None and any(image.action in REMOVALS for image in plan.images)


@dataclass(frozen=True)
class Acted:
    """A repository planned, and (unless a dry run) acted on: its report is built once, from the plan and the ledger."""

    plan: RepositoryPlan
    evaluated_at: datetime
    blocked: Sequence[str]
    ledger: Ledger | None
    findings: Sequence[Finding]
    warnings: Sequence[str]
    in_use_missing: Sequence[MissingReference] = ()
    last_read_at: datetime | None = None  # when its snapshot was kept for reviews (services/swept.py)

    def report(self, *more_warnings: str) -> RepositoryReport:
        report = repository_report(
            self.plan,
            self.evaluated_at,
            self.blocked,
            self.ledger,
            lifecycle_findings=self.findings,
            warnings=(*self.warnings, *more_warnings),
            in_use_missing=self.in_use_missing,
        )
        return report.model_copy(update={"last_read_at": self.last_read_at}) if self.last_read_at else report


@dataclass(frozen=True)
class Unplanned:
    """A repository with no plan: unmanaged, gone, failed."""

    repository: str
    outcome: RepositoryOutcome
    error: str | None = None

    def report(self, *more_warnings: str) -> RepositoryReport:
        return RepositoryReport(
            repository_name=self.repository, outcome=self.outcome, error=self.error, warnings=more_warnings
        )


# What an evaluation comes to: acted on (or planned), not planned, or stopped to take the lease.
Evaluation = Acted | Unplanned | LeaseNeeded


def _take_lease(
    leases: LeaseStore, repository: str, leased: str, run_id: str, lease_seconds: int
) -> RepositoryReport | None:
    """None when this run holds the repository's lease (named `leased` across Regions) now; otherwise the report of a
    repository left untouched."""
    try:
        acquired = leases.acquire(leased, run_id, lease_seconds)
    except LeaseUnavailable as error:  # nothing was read or changed: the repository waits for the next run
        logger.exception("taking the lease of %s failed", repository)
        return RepositoryReport(
            repository_name=repository,
            outcome="failed",
            error=f"its lease could not be taken, so nothing was done: {type(error).__name__}: {error}",
        )
    if acquired:
        return None
    return RepositoryReport(
        repository_name=repository,
        outcome="busy",
        error="another evaluation holds this repository's lease; it is evaluated by that run",
    )


def _release_lease(leases: LeaseStore, repository: str, run_id: str, lease_seconds: int) -> tuple[str, ...]:
    """Whatever stops the release (the table, or a defect), what was deleted must still be reported: an unreleased
    lease only expires. Returns the warning that says so, if any."""
    problem = contain(
        partial(_release, leases, repository, run_id), log=logger, what=f"releasing the lease of {repository}"
    )
    if problem is None:
        return ()
    return (
        f"its lease could not be released ({problem}); it expires in "
        f"{lease_seconds} s, until then other runs report this repository busy",
    )


def _release(leases: LeaseStore, repository: str, run_id: str) -> str | None:
    """Why the table could not release the lease, or None once it has."""
    try:
        leases.release(repository, run_id)
    except LeaseUnavailable as error:
        logger.exception("releasing the lease of %s failed", repository)
        return f"{type(error).__name__}: {error}"
    return None


def lifecycle_findings(
    registry: Registry,
    coordinates: RegistryCoordinates,
    snapshot: RepositorySnapshot,
    inventory: Inventory,
    plan: RepositoryPlan,
    now: datetime,
) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """The doctor's findings on the repository's native lifecycle policy, for the report. The diagnosis only
    informs: when it fails, the run goes on and the report says so."""
    repository = snapshot.repository_name
    policy_text = registry.lifecycle_policy(repository)
    if policy_text is None:
        return (), ()
    # Imported here, when a repository has a native policy: the doctor's checks are a fifth of the evaluate function's
    # own import, which every cold start would pay for repositories that have none.
    from ecr_retention.domain.doctor.diagnosis import diagnose_repository

    diagnosis = contain(  # a doctor defect must not stop pruning: it is logged and reported
        lambda: diagnose_repository(
            policy_text,
            snapshot,
            now=now,
            inventory=inventory,
            plan=plan,
            registry=coordinates,
        ),
        log=logger,
        what=f"diagnosing the lifecycle policy of {repository}",
    )
    if isinstance(diagnosis, Defect):
        return (), (f"{repository}: the native lifecycle policy could not be diagnosed: {diagnosis.kind}",)
    return diagnosis.findings, ()
