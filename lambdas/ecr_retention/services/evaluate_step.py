"""The workflow's evaluate step (handlers/evaluate.py, the Map's worker): a batch of repositories, each evaluated in
its own guard (run_work_batch), a repository a batch left to an invocation of its own (run_batch_member), or one work
item (run_work_item), each report stored under the run's files."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from ecr_retention.defects import Defect, contain
from ecr_retention.domain.config import RetentionConfig, effective_dry_run
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.layout import batch_begun_key, regional_name
from ecr_retention.ports import LeaseUnavailable, RunBucket, VersionedBucket
from ecr_retention.run_files import MAX_BATCH_REPORTS_PART_BYTES, HeldReports, RunFiles, StoredReplication
from ecr_retention.services.act import DEADLINE_MARGIN_SECONDS
from ecr_retention.services.evaluate import HoldsReadAgain, RunInputs, evaluate_repository
from ecr_retention.services.inventory import HeldRepository, holds_read_again, holds_read_by, read_run_inventory
from ecr_retention.services.snapshot import BucketManifestCache
from ecr_retention.workflow_batches import BatchMember, WorkBatch

if TYPE_CHECKING:
    from ecr_retention.domain.inventory.manifest import Inventory
    from ecr_retention.run_adapters import Adapters

logger = logging.getLogger(__name__)
T = TypeVar("T")
# A repository whose lease this run holds and whose report is not stored: an evaluation of this run took the lease and
# its invocation ended before it released the lease and stored the report. It may have removed images already.
UNFINISHED = (
    "its batch's invocation ended (a timeout, or out of memory) after its evaluation took the repository's lease and "
    "before that evaluation stored its report, so this run did not evaluate it again: what that evaluation deleted or "
    "archived is not in this report (CloudTrail's BatchDeleteImage and UpdateImageStorageClass events of this run's "
    "time tell); the next run takes it up"
)


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
    lease_first: bool = False,
) -> RepositoryReport:
    """The worker step: evaluate one repository (of the registry of that key: the work item's `region`,
    PrunedRegistry.key) with the inventory as it is now, and store its report. `stored`: the run's replication
    record, when the caller read it already (a batch reads it once); `inventory`: the batch's reading of the
    inventory (BatchInventory), read now otherwise; `held`: a batch's reports to store together at its end, where a
    report of an evaluation that changed nothing goes instead of an object of its own (changed_nothing);
    `lease_first`: the repository is expected to act (ActingStreak), so its lease is taken before it is read."""
    pruned, files = adapters.keyed(key), RunFiles(adapters.bucket, run_id)
    stored = stored if stored is not None else files.load_replication()
    replication = stored.of(pruned.region)
    held_of = holds_read_by(pruned.region, repository, replication.replication_configuration)
    read_again = holds_read_again(adapters.bucket, pruned.region, replication.replication_configuration)
    reading, recheck_holds = _inventory_of(adapters.bucket, inventory, held_of, read_again)
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
        lease_first=lease_first,
    )
    if stored_under_lease:  # the report it returns is the last it stored
        return report
    if held is not None and (inputs.dry_run or changed_nothing(report)):
        held.append(report)
    else:
        files.store_report(report, pruned.key)
    return report


def _inventory_of(
    bucket: VersionedBucket,
    batch: BatchInventory | None,
    held_of: Collection[HeldRepository],
    read_again: HoldsReadAgain,
) -> tuple[Inventory, HoldsReadAgain | None]:
    """The inventory one evaluation decides on (read now, or its batch's reading), and how its holds are read again
    before it removes: a batch's reading made for an earlier repository is minutes old by then."""
    if batch is None:
        return read_run_inventory(bucket, of=held_of), None
    reading = batch()
    return reading, read_again if batch.earlier else None


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


# A batch's evaluations that changed their registry in a row after which the next is expected to act too.
LEASE_FIRST_AFTER = 3


@dataclass
class ActingStreak:
    """How many of a batch's last evaluations in a row changed their registry (deleted, archived or restored). After
    LEASE_FIRST_AFTER of them the next one is expected to act too, and takes its lease before it reads its repository
    (evaluate_repository's lease_first): its one reading is then under the lease, and the second reading of a plan made
    without it is spared (a sweep where every repository changes: a tenth of its calls). Where one repository in ten
    acts (a daily sweep), the next rarely follows three that acted, and a lease taken for a plan that changes nothing
    costs only its two DynamoDB writes. Either way what acts is planned from a reading under the lease (safety.md 12)."""

    in_a_row: int = 0

    def lease_first(self) -> bool:
        return self.in_a_row >= LEASE_FIRST_AFTER

    def saw(self, reports: Sequence[RepositoryReport]) -> None:
        acted = any(report.deleted or report.archived or report.restored for report in reports)
        self.in_a_row = self.in_a_row + 1 if acted else 0


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
    reported, reserve, streak = files.reported(batch.repositories, batch.region), BatchReserve(), ActingStreak()
    for index, repository in enumerate(batch.repositories):
        if reserve.spent(seconds_left):
            held.store_each()
            rest = ", ".join(batch.repositories[index:])
            raise BatchOutOfTime(
                f"{len(batch.repositories) - index} repositories left to their own invocations: {rest}"
            )
        if repository not in reported:
            # Returned without the kept images (the stored report has them): a batch's memory stays bounded.
            evaluated = reserve.timed(seconds_left, partial(evaluate, repository, lease_first=streak.lease_first()))
            streak.saw(evaluated)
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
    lease_first: bool,
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
            lease_first=lease_first,
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
