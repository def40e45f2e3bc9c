"""The workflow's report step (handlers/report.py): gather what the evaluations stored and end the run (finish_run);
and a run's one end, which the CLI's run (services/run.py) ends through too (end_run)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.holds.protection import ending_soon
from ecr_retention.domain.inventory.evidence import ManifestEvidence, manifest_evidence
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.outcomes import Trigger
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.domain.reporting.run_report import HoldEnding, RunFacts, RunReport
from ecr_retention.gc_guard import cyclic_gc_off
from ecr_retention.ports import Bucket, Registry, StorageUnavailable
from ecr_retention.registries import Registries
from ecr_retention.run_files import RunFiles, StoredReplication
from ecr_retention.run_records import RunRecord
from ecr_retention.services.in_use_check import CheckInputs, InUseCheck, check_in_use
from ecr_retention.services.inventory import read_run_inventory
from ecr_retention.services.memory import update_memory
from ecr_retention.services.report import ReportOutputs, failure_published, report_run
from ecr_retention.services.templates import each_registry_templates

if TYPE_CHECKING:
    from ecr_retention.run_adapters import Adapters

NO_REPORT = (
    "its evaluation stored no report: its invocation crashed or timed out (the evaluate function's log has no "
    '"repository evaluated" line for it in this run; the child execution of its batch in the map run, at its '
    "EvaluateAlone step for this repository, has the invocation's error)"
)


def report_outputs(config: RetentionConfig, adapters: Adapters) -> ReportOutputs:
    """Where the run's report goes and how it is rendered, at the price its cost figures use."""
    if adapters.renderers is None:  # a defect: the wiring of a step that reports nothing
        raise TypeError("a run's report needs its renderers (Adapters.renderers), and these adapters have none")
    return ReportOutputs(
        adapters.bucket, adapters.notifier, adapters.renderers, storage_price(config, adapters.registry)
    )


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
