"""A whole run: choose the targets, evaluate each repository, report. The CLI runs it in one process;
the Lambdas run the same steps as a Step Functions workflow (targets -> Map(evaluate) -> report)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TypeVar

from ecr_retention.clock import utc_now
from ecr_retention.defects import Defect, contain
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.holds.model import Holds
from ecr_retention.domain.holds.protection import ending_soon
from ecr_retention.domain.inventory.evidence import ManifestEvidence, manifest_evidence
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.planning import managed_in
from ecr_retention.domain.registry.replication import RegistryReplication, ReplicationConfiguration
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.outcomes import Trigger
from ecr_retention.domain.reporting.report import HoldEnding, RepositoryReport, RunFacts, RunReport
from ecr_retention.gc_guard import cyclic_gc_off
from ecr_retention.layout import batch_begun_key, regional_name
from ecr_retention.listed_ahead import listed_ahead
from ecr_retention.ports import (
    Bucket,
    LeaseStore,
    LeaseUnavailable,
    Notifier,
    Registry,
    RepositoriesUnlistable,
    RunBucket,
    StorageUnavailable,
    VersionedBucket,
)
from ecr_retention.registries import PrunedRegistry, Registries
from ecr_retention.run_files import MAX_BATCH_REPORTS_PART_BYTES, HeldReports, RunFiles, StoredReplication
from ecr_retention.services.act import DEADLINE_MARGIN_SECONDS
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.in_use_check import CheckInputs, InUseCheck, check_in_use
from ecr_retention.services.inventory import HeldRepository, holds_changed_since, holds_read_by, read_run_inventory
from ecr_retention.services.memory import update_memory
from ecr_retention.services.replication import read_replication
from ecr_retention.services.report import (
    Renderers,
    ReportOutputs,
    failure_published,
    report_run,
)
from ecr_retention.services.snapshot import BucketManifestCache
from ecr_retention.services.templates import each_registry_templates
from ecr_retention.workflow import BatchMember, RunRecord, WorkBatch, WorkItem, new_run_id, repositories_per_batch

logger = logging.getLogger(__name__)
T = TypeVar("T")
NO_REPORT = (
    "its evaluation stored no report: its invocation crashed or timed out (the evaluate function's log has no "
    '"repository evaluated" line for it in this run; the child execution of its batch in the map run, at its '
    "EvaluateAlone step for this repository, has the invocation's error)"
)
# A repository whose lease this run holds and whose report is not stored: an evaluation of this run took the lease and
# its invocation ended before it released the lease and stored the report. It may have removed images already.
UNFINISHED = (
    "its batch's invocation ended (a timeout, or out of memory) after its evaluation took the repository's lease and "
    "before that evaluation stored its report, so this run did not evaluate it again: what that evaluation deleted or "
    "archived is not in this report (CloudTrail's BatchDeleteImage and UpdateImageStorageClass events of this run's "
    "time tell); the next run takes it up"
)


@dataclass(frozen=True)
class Adapters:
    """What a run works through (ports.py); the wiring builds each function's own (handlers/wiring.py)."""

    registry: Registry  # the home Region's: the functions' own (the CLI's: the standard AWS configuration's)
    bucket: RunBucket
    notifier: Notifier | None = None
    leases: LeaseStore | None = None
    clock: Callable[[], datetime] = utc_now
    # This deployment's sentinel role (SENTINEL_ROLE_ARN, `run --sentinel-role`): the only writer whose records of
    # removals/ the in-use check counts. None: unknown, so it counts none (services/removals.py).
    sentinel_role: str | None = None
    # How the report step renders the page, the sheet and the SNS texts (report_renderers.py, handed in by the
    # wiring and the CLI): no service imports a renderer.
    renderers: Renderers = field(kw_only=True)
    # The registries of the other Regions the deployment prunes (PRUNED_REGIONS; `run --region`), in that order.
    other_registries: tuple[Registry, ...] = field(default=(), kw_only=True)

    @property
    def registries(self) -> Registries:
        """Every registry the run prunes, the home Region's first (registries.py: the one collection of them)."""
        return Registries.of(self.registry, self.other_registries)

    def keyed(self, key: str | None) -> PrunedRegistry:
        """The registry of a work item (its `region` is the registry's key: None for the home Region's). A Region the
        run does not prune is bad input: its repositories would be evaluated with another registry's rules and
        replication."""
        registries = self.registries
        found = registries.home if key is None else registries.in_region(key)
        if found is None:
            raise InputError(f"Region {key} is not one this deployment prunes ({', '.join(registries.regions)})")
        return found


def report_outputs(config: RetentionConfig, adapters: Adapters) -> ReportOutputs:
    """Where the run's report goes and how it is rendered, at the price its cost figures use."""
    return ReportOutputs(
        adapters.bucket, adapters.notifier, adapters.renderers, storage_price(config, adapters.registry)
    )


def begin_run(
    config: RetentionConfig, adapters: Adapters, trigger: Trigger, force_dry_run: bool
) -> tuple[str, datetime, bool]:
    """A new run: its id, its start by the run's clock, and whether it only reports."""
    started_at = adapters.clock()
    return new_run_id(started_at, trigger), started_at, effective_dry_run(config, force_dry_run)


def sweep_targets(
    config: RetentionConfig,
    registry: Registry,
    *,
    patterns: Sequence[str] | None = None,
    repositories: Sequence[str] | None = None,
) -> list[str]:
    """The repositories a run evaluates: those a policy matches, among the given ones (a push) or all
    of the registry (a schedule), narrowed by the operator's patterns. Never one no policy matches."""
    names = set(repositories) if repositories is not None else set(registry.repository_names())
    return sorted(
        name
        for name in names
        if managed_in(config, name, registry.region) and (not patterns or matches_any(name, tuple(patterns)))
    )


# The repository name a Region's report goes under when its repositories could not be listed: every one of them.
UNLISTED = "*"


@dataclass(frozen=True)
class Listing:
    """One pruned registry as a run reads it before its first mutation: its replication rules and its repositories
    (None: not listed, the pushed ones are given), or why they could not be listed."""

    pruned: PrunedRegistry  # with the replication rules read of it
    replication: RegistryReplication
    names: tuple[str, ...] | None = None
    unlistable: RepositoriesUnlistable | None = None

    @property
    def registry(self) -> Registry:
        return self.pruned.port

    def failed(self) -> RepositoryReport:
        """The Region's failure, in the run's report: none of its repositories was evaluated, nothing removed."""
        return RepositoryReport(
            repository_name=UNLISTED,
            region=self.registry.region,
            outcome="failed",
            error=f"the repositories of {self.registry.region} could not be listed, so none was evaluated and "
            f"nothing was removed there: {self.unlistable}",
        )


def list_registries(adapters: Adapters, *, listed: bool) -> tuple[Listing, ...]:
    """Every pruned registry read before anything is removed, by both doors (the targets step, `run`): its
    replication rules and, when `listed`, its repositories. A Region whose repositories cannot be listed is that
    Region's failure and the others are pruned; when none can be, the run fails as a whole, before it acts (as a run
    of one Region does)."""
    listings = tuple(_listing(pruned, listed=listed) for pruned in adapters.registries)
    first = listings[0].unlistable
    if first is not None and all(listing.unlistable is not None for listing in listings):
        raise first
    return listings


def _listing(pruned: PrunedRegistry, *, listed: bool) -> Listing:
    replication = read_replication(pruned.port)
    read = pruned.reading(replication.replication_configuration)
    if not listed:
        return Listing(read, replication)
    try:
        return Listing(read, replication, tuple(pruned.port.repository_names()))
    except RepositoriesUnlistable as error:
        return Listing(read, replication, unlistable=error)


def _given(listing: Listing, pushed: Sequence[str] | None) -> Sequence[str] | None:
    """The repositories to choose the run's targets among: those listed (a schedule), or the pushed ones."""
    return listing.names if listing.names is not None else pushed


def effective_dry_run(config: RetentionConfig, force_dry_run: bool) -> bool:
    """Whether the run only reports: nothing can force deletion past the rules file's dry_run."""
    return config.dry_run or force_dry_run


def start_run(
    config: RetentionConfig,
    adapters: Adapters,
    *,
    trigger: Trigger,
    repositories: Sequence[str] | None = None,
    key: str | None = None,
    force_dry_run: bool = False,
    workers: int | None = None,
) -> RunRecord:
    """The targets step: one JSON list of work items in the bucket, for the workflow's Map to read: every pruned
    registry's repositories a policy matches (a schedule), or the pushed ones of the registry of that key (the
    request's `region`: PrunedRegistry.key). Every pruned registry's replication is stored, for the evaluations and
    the run's end. With `workers` (the workflow's Map concurrency), the work items in batches too, for its Map
    (WorkBatch, of workflow.repositories_per_batch)."""
    run_id, started_at, dry_run = begin_run(config, adapters, trigger, force_dry_run)
    pushed_to = _pushed_to(adapters, repositories, key)
    items: list[WorkItem] = []
    listings, files = list_registries(adapters, listed=repositories is None), RunFiles(adapters.bucket, run_id)
    files.store_replication({listing.pruned.region: listing.replication for listing in listings})
    for listing in listings:
        if listing.unlistable is not None:  # the report step finds it with the evaluations' reports
            files.store_report(listing.failed(), listing.pruned.key)
        elif pushed_to is None or listing.pruned.region == pushed_to:
            items.extend(
                WorkItem(run_id=run_id, repository=name, trigger=trigger, dry_run=dry_run, region=listing.pruned.key)
                for name in sweep_targets(config, listing.registry, repositories=_given(listing, repositories))
            )
    return RunRecord(
        run_id=run_id,
        trigger=trigger,
        dry_run=dry_run,
        started_at=started_at,
        targets_key=files.write_targets(items),
        count=len(items),
        bucket=adapters.bucket.name,
        batches_key=None
        if workers is None
        else files.write_batches(WorkBatch.of(items, repositories_per_batch(len(items), workers))),
    )


def _pushed_to(adapters: Adapters, repositories: Sequence[str] | None, key: str | None) -> str | None:
    """The Region of a push's registry (by its key); None for a schedule, which targets every registry."""
    return None if repositories is None else adapters.keyed(key).region


def run_work_item(
    config: RetentionConfig,
    adapters: Adapters,
    *,
    run_id: str,
    repository: str,
    dry_run: bool,
    key: str | None = None,
    seconds_left: Callable[[], float] | None = None,
    stored: StoredReplication | None = None,
    inventory: BatchInventory | None = None,
    held: list[RepositoryReport] | None = None,
) -> RepositoryReport:
    """The worker step: evaluate one repository (of the registry of that key: the work item's `region`,
    PrunedRegistry.key) with the inventory as it is now, and store its report. `stored`: the run's replication
    record, when the caller read it already (a batch reads it once); `inventory`: the batch's reading of the
    inventory (BatchInventory), read now otherwise; `held`: a batch's reports to store together at its end, where a
    report of an evaluation that changed nothing goes instead of an object of its own (changed_nothing)."""
    pruned, files = adapters.keyed(key), RunFiles(adapters.bucket, run_id)
    stored = stored if stored is not None else files.load_replication()
    replication = stored.of(pruned.region)
    held_of = holds_read_by(pruned.region, repository, replication.replication_configuration)
    reading, recheck_holds = _inventory_of(adapters.bucket, inventory, held_of)
    inputs = RunInputs(
        run_id=run_id,
        config=config,
        inventory=reading,
        dry_run=effective_dry_run(config, dry_run),
        replication=replication,
        snapshots=adapters.bucket,
        key=pruned.key,
        others=tuple(
            other.reading(stored.of(other.region).replication_configuration)
            for other in adapters.registries.elsewhere(pruned)
        ),
        run_files=files,
        recheck_holds=recheck_holds,
    )
    stored_under_lease: list[RepositoryReport] = []

    def store_under_lease(report: RepositoryReport) -> None:
        files.store_report(report, pruned.key)
        stored_under_lease.append(report)

    report = evaluate_repository(
        repository,
        inputs,
        registry=pruned.port,
        cache=BucketManifestCache(adapters.bucket),
        leases=adapters.leases,
        clock=adapters.clock,
        seconds_left=seconds_left,
        store_before_release=store_under_lease,
    )
    if stored_under_lease:  # the report it returns is the last it stored
        return report
    if held is not None and (inputs.dry_run or changed_nothing(report)):
        held.append(report)
    else:
        files.store_report(report, pruned.key)
    return report


def _inventory_of(
    bucket: VersionedBucket, batch: BatchInventory | None, held_of: Collection[HeldRepository]
) -> tuple[Inventory, Callable[[Holds], Holds | None] | None]:
    """The inventory one evaluation decides on (read now, or its batch's reading), and how its holds are read again
    before it removes: a batch's reading made for an earlier repository is minutes old by then."""
    if batch is None:
        return read_run_inventory(bucket, of=held_of), None
    reading = batch()
    return reading, partial(holds_changed_since, bucket, held_of) if batch.earlier else None


def changed_nothing(report: RepositoryReport) -> bool:
    """Whether an evaluation left its registry as it found it: nothing deleted, archived, restored, cancelled or
    failed on the way. Its report may wait for its batch's end (HeldReports: a part object for many): were the batch's
    invocation to crash first, the workflow evaluates the repository again, as a new evaluation of the registry as it
    is then. A report of an evaluation that changed something is stored before the next repository starts, as before
    batches. An evaluation that acted (it took the lease to) and whose invocation ended before it released the lease is
    not evaluated again in the run (its lease names the run: unfinished), and the run's report says so of it."""
    return report.outcome != "failed" and not (
        report.deleted
        or report.archived
        or report.cancelled
        or report.failed
        or report.restored
        or report.restore_failed
    )


class BatchOutOfTime(Exception):
    """A batch's invocation stopped before its time ran out: the workflow evaluates the repositories it left (and any
    without a report) each in an invocation of its own."""


# A batch starts a repository only while more than DEADLINE_MARGIN_SECONDS (when a repository's evaluation stops its
# calls: services.act) plus a margin is left of its invocation, the margin being this, or BATCH_MARGIN_FACTOR times the
# longest evaluation of the batch so far when that is more. A repository slower than the margin still stops its calls at
# DEADLINE_MARGIN_SECONDS and leaves the rest to the next run; the batch leaves the repositories it has not started to
# invocations of their own.
MIN_BATCH_MARGIN_SECONDS = 180.0
BATCH_MARGIN_FACTOR = 3.0
BATCH_RESERVE_SECONDS = DEADLINE_MARGIN_SECONDS + MIN_BATCH_MARGIN_SECONDS  # the least reserve: 270 s


@dataclass
class BatchReserve:
    """What a batch keeps of its invocation: DEADLINE_MARGIN_SECONDS plus a margin learned from its evaluations, each
    measured by the invocation's own remaining time (no clock of its own)."""

    longest: float = 0.0

    def seconds(self) -> float:
        return DEADLINE_MARGIN_SECONDS + max(MIN_BATCH_MARGIN_SECONDS, BATCH_MARGIN_FACTOR * self.longest)

    def spent(self, seconds_left: Callable[[], float] | None) -> bool:
        return seconds_left is not None and seconds_left() < self.seconds()

    def timed(self, seconds_left: Callable[[], float] | None, evaluate: Callable[[], T]) -> T:
        before = None if seconds_left is None else seconds_left()
        try:
            return evaluate()
        finally:
            if seconds_left is not None and before is not None:
                self.longest = max(self.longest, before - seconds_left())


class BatchInventory:
    """The in-use inventory (manifests, memory, and the holds of the batch's repositories, of the replicas their
    deletions reach, and every hold whose key names no image) as one batch's invocation reads it: once, on its first
    repository's evaluation, and shared by the others of the batch, as `ecr-retention run` shares one reading (of
    every hold) among all of a run's repositories: a hold protects its own repository's image, and the image of the
    source whose deletions reach it, only (domain/holds/protection.py). A batch runs within minutes
    (its BatchReserve before the function's timeout at most), and the inventory's own freshness checks
    (safety.inventory_max_age, a manifest's generatedAt) judge the reading as they judge one made a second earlier;
    a hold placed meanwhile is not missed: a repository whose plan removes reads its holds again before it acts
    (RunInputs.recheck_holds). A read that fails is not kept: that repository fails alone (its guard) and the next
    one reads again. Never shared across invocations or runs."""

    def __init__(self, bucket: VersionedBucket, of: Collection[HeldRepository]) -> None:
        self._bucket = bucket
        self._of = of
        self._read: Inventory | None = None
        # Whether the last call returned a reading made for an earlier repository of the batch.
        self.earlier = False

    def __call__(self) -> Inventory:
        self.earlier = self._read is not None
        if self._read is None:
            self._read = read_run_inventory(self._bucket, of=self._of)
        return self._read


def run_work_batch(
    config: RetentionConfig,
    adapters: Adapters,
    batch: WorkBatch,
    *,
    seconds_left: Callable[[], float] | None = None,
    part_bytes: int = MAX_BATCH_REPORTS_PART_BYTES,
) -> list[RepositoryReport]:
    """The worker step for a batch: each repository evaluated as run_work_item does, in its own guard: one that raises
    gets a failed report naming the error (when it can be stored) and the others go on. A repository whose own report
    is stored already (one listing at the batch's start), or whose lease this run holds without a report (unfinished),
    is not evaluated again: the leases are read only when this is not the batch's first invocation (first_invocation;
    Step Functions runs a task once unless it retries it, and this one does not, so that is a guard). The reports of those that changed nothing are stored together, in parts of about
    `part_bytes` (HeldReports; changed_nothing). Raises BatchOutOfTime, naming the repositories not started, when less
    than its BatchReserve remains, after storing the held reports each in its own object, where the evaluations of the
    rest in invocations of their own look (run_batch_member). Returns the reports without their kept images."""
    reports: list[RepositoryReport] = []
    files = RunFiles(adapters.bucket, batch.run_id)
    held = HeldReports(files, batch.repositories[0], batch.region, max_bytes=part_bytes)
    # The run's replication record is the run's, whatever the repository: read once, and so is the inventory
    # (BatchInventory: its first repository reads it).
    region = adapters.keyed(batch.region).region
    stored = files.load_replication()
    reach = stored.of(region).replication_configuration
    inventory = BatchInventory(
        adapters.bucket,
        set[HeldRepository]().union(*(holds_read_by(region, name, reach) for name in batch.repositories)),
    )
    evaluate = partial(
        _evaluate_in_batch, config, adapters, batch, files=files, seconds_left=seconds_left, held=held.pending,
        stored=stored, inventory=inventory, begun_before=not first_invocation(adapters.bucket, batch),
    )  # fmt: skip
    reported, reserve = files.reported(batch.repositories, batch.region), BatchReserve()
    for index, repository in enumerate(batch.repositories):
        if reserve.spent(seconds_left):
            held.store_each()
            rest = ", ".join(batch.repositories[index:])
            raise BatchOutOfTime(
                f"{len(batch.repositories) - index} repositories left to their own invocations: {rest}"
            )
        if repository not in reported:
            # Returned without the kept images (the stored report has them): a batch's memory stays bounded.
            evaluated = reserve.timed(seconds_left, partial(evaluate, repository))
            reports.extend(report.model_copy(update={"kept_images": ()}) for report in evaluated)
            held.take()
    held.store()
    return reports


def _evaluate_in_batch(
    config: RetentionConfig,
    adapters: Adapters,
    batch: WorkBatch,
    repository: str,
    *,
    files: RunFiles,
    seconds_left: Callable[[], float] | None,
    stored: StoredReplication,
    inventory: BatchInventory,
    held: list[RepositoryReport],
    begun_before: bool,
) -> list[RepositoryReport]:
    """One repository of a batch: its report, or its failed report when its evaluation in this run began before
    (unfinished: asked only when an invocation of the batch `begun_before`) or raised (none when that cannot be
    stored)."""
    left = unfinished(adapters, files, repository, batch.region) if begun_before else None
    if left is not None:
        return [left]
    evaluated = contain(
        partial(
            run_work_item, config, adapters, run_id=batch.run_id, repository=repository, dry_run=batch.dry_run,
            key=batch.region, seconds_left=seconds_left, stored=stored, inventory=inventory, held=held,
        ),
        log=logger,
        what=f"evaluating {repository} (in a batch)",
    )  # fmt: skip
    if not isinstance(evaluated, Defect):
        return [evaluated]
    return _raised_in_batch(adapters, files, repository, batch.region, evaluated)


def _raised_in_batch(
    adapters: Adapters, files: RunFiles, repository: str, key: str | None, defect: Defect
) -> list[RepositoryReport]:
    """The failed report of a repository whose evaluation raised, stored so that the run's report names the error
    and the fallback does not evaluate it again; none when it cannot be stored (the report step lists it NO_REPORT)."""
    report = RepositoryReport(
        repository_name=repository,
        region=adapters.keyed(key).region,
        outcome="failed",
        error=f"its evaluation raised {defect} before its report was stored, so this report lists nothing it did: "
        "what it deleted or archived, if anything, is not in it (CloudTrail's BatchDeleteImage and "
        "UpdateImageStorageClass events of this run's time tell); the next run takes it up",
    )
    stored = contain(
        partial(files.store_report, report, key), log=logger, what=f"storing the failed report of {repository}"
    )
    return [] if isinstance(stored, Defect) else [report]


def first_invocation(bucket: RunBucket, batch: WorkBatch) -> bool:
    """Whether this is the batch's first invocation: a conditional write of its marker (layout.batch_begun_key), which
    only the first one makes. A later one (were the task ever run again) reads each repository's lease before
    evaluating it (unfinished). A write that fails raises: the batch's invocation fails, and the workflow evaluates
    each of its repositories in an invocation of its own, each reading its lease."""
    marker = {"runId": batch.run_id, "region": batch.region, "repositories": len(batch.repositories)}
    return bucket.create(
        batch_begun_key(batch.run_id, batch.repositories[0], batch.region), json.dumps(marker).encode()
    )


def unfinished(adapters: Adapters, files: RunFiles, repository: str, key: str | None) -> RepositoryReport | None:
    """The stored failed report of a repository this run began evaluating in an invocation that ended before the
    evaluation stored its report: the repository's lease names this run (an evaluation releases it as it ends).
    Evaluating it again could act again, and what the first evaluation did would still be missing from the run's
    report. A lease table that cannot be read leaves it unevaluated too (whether it was begun cannot be told). None
    when the lease does not name this run, or there is no lease table (the CLI, which runs no batches)."""
    if adapters.leases is None:
        return None
    pruned = adapters.keyed(key)
    try:
        holder = adapters.leases.holder(regional_name(repository, pruned.key))
    except LeaseUnavailable as error:
        logger.exception("reading the lease of %s failed", repository)
        why = (
            "its lease could not be read, so whether an earlier invocation of this run began evaluating it cannot be "
            f"told and it was not evaluated; the next run takes it up: {type(error).__name__}: {error}"
        )
    else:
        if holder != files.run_id:
            return None
        why = UNFINISHED
    report = RepositoryReport(repository_name=repository, region=pruned.region, outcome="failed", error=why)
    files.store_report(report, pruned.key)
    return report


def run_batch_member(
    config: RetentionConfig,
    adapters: Adapters,
    member: BatchMember,
    *,
    seconds_left: Callable[[], float] | None = None,
) -> RepositoryReport | None:
    """A repository of a batch that ended early, in an invocation of its own: evaluated unless its batch stored its
    report already (None then), or its batch's invocation ended during its evaluation (the failed report that says so
    then: unfinished): an evaluation of this run that may have acted is never followed by another."""
    files = RunFiles(adapters.bucket, member.run_id)
    if files.has_report(member.repository, member.region):
        return None
    left = unfinished(adapters, files, member.repository, member.region)
    if left is not None:
        return left
    return run_work_item(
        config, adapters, run_id=member.run_id, repository=member.repository, dry_run=member.dry_run,
        key=member.region, seconds_left=seconds_left,
    )  # fmt: skip


def unreported_targets(
    bucket: Bucket, start: RunRecord, reports: Sequence[RepositoryReport], home_region: str
) -> list[RepositoryReport]:
    """The run's targets that no worker stored a report for, each as a failed repository: a worker records its
    own failures, so a target without a report is an invocation that crashed or timed out, and the run report
    must say so rather than leave the repository out."""
    items = RunFiles(bucket, start.run_id).read_targets(start.targets_key)
    reported = {(report.region or home_region, report.repository_name) for report in reports}
    targeted = {(item.region or home_region, item.repository) for item in items}
    return [
        RepositoryReport(repository_name=name, region=region, outcome="failed", error=NO_REPORT)
        for region, name in sorted(targeted)
        if (region, name) not in reported
    ]


@dataclass(frozen=True)
class Evaluated:
    """What a run's evaluations leave for its end: the run, each repository's report, and how to read the inventory
    and the replication rules the end checks and remembers (the report step reads them again; the CLI holds them),
    and the targets that stored no report (read after the check)."""

    run_id: str
    trigger: Trigger
    dry_run: bool
    started_at: datetime
    reports: Sequence[RepositoryReport]
    inventory: Callable[[], Inventory]
    # Each pruned registry's replication rules, by its Region.
    replication: Callable[[], Mapping[str, ReplicationConfiguration]]
    unreported: Callable[[], Sequence[RepositoryReport]] = tuple


def finish_run(adapters: Adapters, start: RunRecord, config: RetentionConfig) -> RunReport:
    """The report step: gather what the workers stored and end the run (end_run). The manifests' evidence is read
    now, after the evaluations (each read the inventory as it was when it started). Whatever fails, the subscribers
    hear of the failed run, and the caller still fails."""

    def end() -> RunReport:
        files = RunFiles(adapters.bucket, start.run_id)
        reports = files.load_reports()
        evaluated = Evaluated(
            run_id=start.run_id,
            trigger=start.trigger,
            dry_run=start.dry_run,
            started_at=start.started_at,
            reports=reports,
            inventory=lambda: read_run_inventory(adapters.bucket),
            replication=lambda: _replication_of(adapters, files.load_replication()),
            unreported=lambda: unreported_targets(adapters.bucket, start, reports, adapters.registry.region),
        )
        return end_run(config, adapters, evaluated)

    return failure_published(report_outputs(config, adapters), start.run_id, start.dry_run, end)


def _replication_of(adapters: Adapters, stored: StoredReplication) -> dict[str, ReplicationConfiguration]:
    return {pruned.region: stored.of(pruned.region).replication_configuration for pruned in adapters.registries}


def end_run(config: RetentionConfig, adapters: Adapters, evaluated: Evaluated) -> RunReport:
    """A run's one end, for the report step and the CLI alike: each pruned registry's creation templates' findings,
    one reading of the clock (the run's end), the in-use memory updated and the manifests' evidence at that end, the
    in-use check, and the run report written and published."""
    templates = each_registry_templates(adapters.registries)
    finished_at = adapters.clock()
    reading = remember_inventory(adapters, config, evaluated, finished_at)
    checked = check_each_registry(adapters, config, evaluated, reading, finished_at)
    facts = RunFacts(
        run_id=evaluated.run_id,
        trigger=evaluated.trigger,
        dry_run=evaluated.dry_run,
        started_at=evaluated.started_at,
        finished_at=finished_at,
        repositories=[*checked.repositories, *evaluated.unreported()],
        registry=reading.registries.home.coordinates,
        warnings=[*templates.warnings, *reading.warnings, *checked.warnings],
        template_findings=templates.findings,
        manifests=reading.manifests,
        other_in_use_missing=checked.others,
        holds_ending=holds_ending(config, reading, finished_at),
    )
    with cyclic_gc_off():  # as the report step runs (its handler's), and the CLI's run alike
        return report_run(facts, report_outputs(config, adapters))


def holds_ending(config: RetentionConfig, reading: InventoryReading, now: datetime) -> tuple[HoldEnding, ...]:
    """The holds of the pruned registries that end within 7 days, for the summary and the page."""
    if reading.inventory is None:
        return ()
    regions = {pruned.region for pruned in reading.registries}
    return tuple(
        HoldEnding.of(hold, until)
        for hold, until in ending_soon(reading.inventory.holds, now, config.safety.max_hold)
        if hold.region in regions
    )


def check_each_registry(
    adapters: Adapters, config: RetentionConfig, evaluated: Evaluated, reading: InventoryReading, now: datetime
) -> InUseCheck:
    """The in-use check of every pruned registry, each with its own Region's reports and replication rules."""
    inventory, registries = reading.inventory, reading.registries
    if inventory is None:
        return InUseCheck(repositories=tuple(evaluated.reports))
    checks = []
    for pruned in registries:
        inputs = CheckInputs(
            config,
            inventory,
            evaluated.trigger,
            now,
            adapters.sentinel_role,
            checked_elsewhere=registries.located_elsewhere(pruned),
        )
        reports = [report for report in evaluated.reports if (report.region or registries.home.region) == pruned.region]
        checks.append(check_in_use(pruned, adapters.bucket, inputs, reports))
    return checks[0] if len(checks) == 1 else InUseCheck.joined(checks)


@dataclass(frozen=True)
class InventoryReading:
    """The run end's one reading of the inventory: each manifest's evidence, the warnings of the memory's update,
    the pruned registries with the replication rules the run read of each (none when the inventory could not be
    read), and the inventory itself for the in-use check (None when it could not be read)."""

    manifests: tuple[ManifestEvidence, ...]
    warnings: tuple[str, ...]
    registries: Registries
    inventory: Inventory | None = None


def remember_inventory(
    adapters: Adapters, config: RetentionConfig, evaluated: Evaluated, now: datetime
) -> InventoryReading:
    """The run end's one reading of the inventory: each manifest's evidence for the report, and the in-use memory
    updated from it (with its warnings)."""
    try:
        inventory = evaluated.inventory()
    except StorageUnavailable as error:  # the evaluations read it; the report is not worth losing over its evidence
        return InventoryReading(
            (),
            (
                "the in-use manifests could not be read when the run was reported, so it lists none, the in-use "
                f"memory was not updated and the in-use references were checked only by the evaluations: {error}",
            ),
            adapters.registries,
        )
    registries = adapters.registries.reading(evaluated.replication())
    warnings = update_memory(
        adapters.bucket,
        config.safety,
        inventory,
        evaluated.reports,
        now,
        registries=[pruned.coordinates for pruned in registries],
    )
    return InventoryReading(manifest_evidence(config.safety, inventory, now), warnings, registries, inventory)


def storage_price(config: RetentionConfig, registry: Registry) -> StoragePrice:
    """The price the report's cost figures use: the rules file's, or the registry's region's list price."""
    return StoragePrice.for_region(registry.region, config.report.storage_price_per_gb_month)


def run_pipeline(
    config: RetentionConfig,
    adapters: Adapters,
    *,
    trigger: Trigger = "cli",
    patterns: Sequence[str] | None = None,
    force_dry_run: bool = False,
) -> RunReport:
    """One whole run in this process, through the same services as the workflow: every pruned registry listed first,
    as the targets step lists them (a Region that cannot be listed is that Region's failure, never an exception after
    something was removed), then its repositories evaluated, the home Region's first, with one reading of the
    inventory."""
    run_id, started_at, dry_run = begin_run(config, adapters, trigger, force_dry_run)

    def evaluate_all() -> tuple[list[RunInputs], list[RepositoryReport]]:
        inventory = read_run_inventory(adapters.bucket)
        listings = list_registries(adapters, listed=True)
        each = [_cli_inputs(config, adapters, run_id, dry_run, inventory, listing, listings) for listing in listings]
        evaluate = partial(_evaluate_registry, config, adapters, BucketManifestCache(adapters.bucket), patterns)
        return each, [
            report for listing, inputs in zip(listings, each, strict=True) for report in evaluate(listing, inputs)
        ]

    each, reports = failure_published(report_outputs(config, adapters), run_id, dry_run, evaluate_all)
    evaluated = Evaluated(
        run_id=run_id,
        trigger=trigger,
        dry_run=dry_run,
        started_at=started_at,
        reports=reports,
        inventory=lambda: each[0].inventory,
        replication=lambda: {
            pruned.region: inputs.replication.replication_configuration
            for pruned, inputs in zip(adapters.registries, each, strict=True)
        },
    )
    return end_run(config, adapters, evaluated)


def _cli_inputs(
    config: RetentionConfig,
    adapters: Adapters,
    run_id: str,
    dry_run: bool,
    inventory: Inventory,
    listing: Listing,
    listings: Sequence[Listing],
) -> RunInputs:
    """What `run` evaluates one registry's repositories with: the run's inventory, the registry's replication rules
    and listing, and the other registries."""
    return RunInputs(
        run_id=run_id,
        config=config,
        inventory=inventory,
        dry_run=dry_run,
        replication=listing.replication,
        repository_names=listing.names,
        snapshots=adapters.bucket,
        key=listing.pruned.key,
        others=tuple(other.pruned for other in listings if other is not listing),
        run_files=RunFiles(adapters.bucket, run_id),
    )


def _evaluate_registry(
    config: RetentionConfig,
    adapters: Adapters,
    cache: BucketManifestCache,
    patterns: Sequence[str] | None,
    listing: Listing,
    inputs: RunInputs,
) -> list[RepositoryReport]:
    """The reports of one registry's repositories: each evaluated, or the Region's failure when it was not listed."""
    if listing.names is None:
        return [listing.failed()]
    reports = []
    names = sweep_targets(config, listing.registry, patterns=patterns, repositories=listing.names)
    with listed_ahead(listing.registry, names, dry_run=inputs.dry_run) as registry:
        for name in names:
            with cyclic_gc_off():  # each evaluation and the report run as their Lambda steps run them
                reports.append(
                    evaluate_repository(
                        name, inputs, registry=registry, cache=cache, leases=adapters.leases, clock=adapters.clock
                    )
                )
    return reports
