"""The workflow's first step, the targets step (handlers/targets.py): choose the run's repositories and write them for
the Map to read; and what the CLI's run (services/run.py) shares with it: a run's beginning and its listings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ecr_retention.domain.config import RetentionConfig, effective_dry_run
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.planning import managed_in
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.ports import Registry, RepositoriesUnlistable
from ecr_retention.registries import PrunedRegistry
from ecr_retention.run_files import RunFiles
from ecr_retention.run_records import RunRecord
from ecr_retention.services.replication import read_replication
from ecr_retention.workflow import WorkItem, new_run_id, repositories_per_batch
from ecr_retention.workflow_batches import WorkBatch

if TYPE_CHECKING:
    from ecr_retention.domain.reporting.outcomes import Trigger
    from ecr_retention.domain.reporting.report import RepositoryReport
    from ecr_retention.run_adapters import Adapters


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
        # The report's models load here, on this path only: the targets step builds no other report.
        from ecr_retention.domain.reporting.report import RepositoryReport

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
