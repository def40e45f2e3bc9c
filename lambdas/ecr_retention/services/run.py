"""A whole run in one process, the CLI's (`ecr-retention run`): the workflow's three steps (targets -> Map(evaluate)
-> report) through the same services, each of which a Lambda runs alone (services/targets_step.py,
evaluate_step.py, report_step.py)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.reporting.outcomes import Trigger
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.gc_guard import cyclic_gc_off
from ecr_retention.listed_ahead import as_listed, listed_ahead
from ecr_retention.run_files import RunFiles
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.inventory import holds_read_again, read_run_inventory
from ecr_retention.services.report import failure_published
from ecr_retention.services.report_step import Evaluated, end_run, report_outputs
from ecr_retention.services.snapshot import BucketManifestCache
from ecr_retention.services.targets_step import Listing, begin_run, list_registries, sweep_targets

if TYPE_CHECKING:
    from ecr_retention.run_adapters import Adapters


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
    and listing, and the other registries. The inventory is read once, at the run's start, minutes before a later
    repository acts: each repository whose plan removes reads its holds again first, as a batch's later ones do."""
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
        recheck_holds=holds_read_again(
            adapters.bucket, listing.pruned.region, listing.replication.replication_configuration
        ),
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
    reports = {}
    names = sweep_targets(config, listing.registry, patterns=patterns, repositories=listing.names)
    with listed_ahead(listing.registry, names, dry_run=inputs.dry_run) as registry:
        # A dry run evaluates its repositories as their listings end; the reports stay in the sweep's order.
        for name in as_listed(registry, names):
            with cyclic_gc_off():  # each evaluation and the report run as their Lambda steps run them
                reports[name] = evaluate_repository(
                    name, inputs, registry=registry, cache=cache, leases=adapters.leases, clock=adapters.clock
                )
    return [reports[name] for name in names]
