"""A whole run: choose the targets, evaluate each repository, report. The CLI runs it in one process;
the Lambdas run the same steps as a Step Functions workflow (targets -> Map(evaluate) -> report)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.cost import StoragePrice
from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.manifest_evidence import ManifestEvidence, manifest_evidence
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.planner import first_matching_policy
from ecr_retention.domain.report import RepositoryReport, RunReport, Trigger
from ecr_retention.ports import Bucket, LeaseStore, Notifier, Registry, StorageUnavailable
from ecr_retention.services.defects import Defect, contain
from ecr_retention.services.evaluate import Evaluation, evaluate_repository, utc_now
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.memory import update_memory
from ecr_retention.services.replication import load_replication, read_replication, store_replication
from ecr_retention.services.report import (
    load_repository_reports,
    publish_failure,
    report_run,
    run_prefix,
    store_repository_report,
)
from ecr_retention.services.snapshot import BucketManifestCache
from ecr_retention.services.templates import creation_template_findings
from ecr_retention.workflow import RunRecord, WorkItem

# A run's work items: 10,000 repositories are about 1.5 MB.
MAX_TARGETS_BYTES = 64 * 1024 * 1024
NO_REPORT = (
    "its evaluation stored no report: the invocation crashed or timed out "
    "(the workflow's map run lists the failed item and its error)"
)


@dataclass(frozen=True)
class Dependencies:
    registry: Registry
    bucket: Bucket
    notifier: Notifier | None = None
    leases: LeaseStore | None = None
    clock: Callable[[], datetime] = utc_now


def new_run_id(started_at: datetime, trigger: Trigger) -> str:
    return f"{started_at:%Y%m%dT%H%M%SZ}-{trigger}-{uuid.uuid4().hex[:8]}"


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
        if first_matching_policy(config.policies, name) is not None
        and (not patterns or matches_any(name, tuple(patterns)))
    )


def effective_dry_run(config: RetentionConfig, force_dry_run: bool) -> bool:
    """Whether the run only reports: nothing can force deletion past the rules file's dry_run."""
    return config.dry_run or force_dry_run


def start_run(
    config: RetentionConfig,
    deps: Dependencies,
    *,
    trigger: Trigger,
    repositories: Sequence[str] | None = None,
    force_dry_run: bool = False,
) -> RunRecord:
    """The targets step: one JSON list of work items in the bucket, for the workflow's Map to read."""
    started_at = deps.clock()
    run_id = new_run_id(started_at, trigger)
    dry_run = effective_dry_run(config, force_dry_run)
    targets = sweep_targets(config, deps.registry, repositories=repositories)
    store_replication(deps.bucket, run_id, read_replication(deps.registry))
    items = [WorkItem(run_id=run_id, repository=name, trigger=trigger, dry_run=dry_run).to_wire() for name in targets]
    key = f"{run_prefix(run_id)}targets.json"
    deps.bucket.write(key, json.dumps(items).encode())
    return RunRecord(
        run_id=run_id,
        trigger=trigger,
        dry_run=dry_run,
        started_at=started_at,
        targets_key=key,
        count=len(targets),
        bucket=deps.bucket.name,
    )


def evaluate_target(
    config: RetentionConfig,
    deps: Dependencies,
    *,
    run_id: str,
    repository: str,
    dry_run: bool,
    seconds_left: Callable[[], float] | None = None,
) -> RepositoryReport:
    """The worker step: evaluate one repository with the inventory as it is now, and store its report."""
    evaluation = Evaluation(
        run_id=run_id,
        config=config,
        inventory=read_inventory_from_bucket(deps.bucket),
        dry_run=effective_dry_run(config, dry_run),
        replication=load_replication(deps.bucket, run_id),
    )
    report = evaluate_repository(
        repository,
        evaluation,
        registry=deps.registry,
        cache=BucketManifestCache(deps.bucket),
        leases=deps.leases,
        clock=deps.clock,
        seconds_left=seconds_left,
    )
    store_repository_report(deps.bucket, run_id, report)
    return report


def unreported_targets(bucket: Bucket, start: RunRecord, reports: Sequence[RepositoryReport]) -> list[RepositoryReport]:
    """The run's targets that no worker stored a report for, each as a failed repository: a worker records its
    own failures, so a target without a report is an invocation that crashed or timed out, and the run report
    must say so rather than leave the repository out."""
    source = f"s3://{bucket.name}/{start.targets_key}"
    body = bucket.read(start.targets_key, max_bytes=MAX_TARGETS_BYTES)
    if body is None:
        raise InputError(f"{source}: the run's targets are missing")
    items = parse_json(body.decode("utf-8", errors="replace"), source)
    if not isinstance(items, list) or not all(
        isinstance(item, dict) and isinstance(item.get("repository"), str) for item in items
    ):
        raise InputError(f"{source}: not a list of work items with a repository each")
    reported = {report.repository_name for report in reports}
    return [
        RepositoryReport(repository_name=name, outcome="failed", error=NO_REPORT)
        for name in sorted({item["repository"] for item in items} - reported)
    ]


def finish_run(deps: Dependencies, start: RunRecord, config: RetentionConfig) -> RunReport:
    """The report step: gather what the workers stored, write the run report (JSON, page, sheet), publish the summary.
    The manifests' evidence is read now, after the evaluations (each read the inventory as it was when it started)."""
    reports = load_repository_reports(deps.bucket, start.run_id)
    templates = creation_template_findings(deps.registry)
    finished_at = deps.clock()
    manifests, inventory_warnings = remember_inventory(deps, start, config, reports, finished_at)
    warnings = [*templates.warnings, *inventory_warnings]
    return report_run(
        run_id=start.run_id,
        trigger=start.trigger,
        dry_run=start.dry_run,
        started_at=start.started_at,
        finished_at=finished_at,
        repositories=[*reports, *unreported_targets(deps.bucket, start, reports)],
        bucket=deps.bucket,
        notifier=deps.notifier,
        price=storage_price(config, deps.registry),
        registry_id=deps.registry.registry_id,
        region=deps.registry.region,
        run_warnings=warnings,
        template_findings=templates.findings,
        manifests=manifests,
    )


def remember_inventory(
    deps: Dependencies, start: RunRecord, config: RetentionConfig, reports: Sequence[RepositoryReport], now: datetime
) -> tuple[tuple[ManifestEvidence, ...], tuple[str, ...]]:
    """The report step's one reading of the inventory: each manifest's evidence for the report, and the in-use memory
    updated from it (with its warnings)."""
    try:
        inventory = read_inventory_from_bucket(deps.bucket)
    except StorageUnavailable as error:  # the evaluations read it; the report is not worth losing over its evidence
        return (), (
            "the in-use manifests could not be read when the run was reported, so it lists none and the in-use "
            f"memory was not updated: {error}",
        )
    warnings = update_memory(
        deps.bucket,
        config.safety,
        inventory,
        reports,
        now,
        registry_id=deps.registry.registry_id,
        region=deps.registry.region,
        replication=load_replication(deps.bucket, start.run_id).replication_configuration,
    )
    return manifest_evidence(config.safety, inventory, now), warnings


def storage_price(config: RetentionConfig, registry: Registry) -> StoragePrice:
    """The price the report's cost figures use: the rules file's, or the registry's region's list price."""
    return StoragePrice.for_region(registry.region, config.report.storage_price_per_gb_month)


def run_pipeline(
    config: RetentionConfig,
    deps: Dependencies,
    *,
    trigger: Trigger = "cli",
    patterns: Sequence[str] | None = None,
    force_dry_run: bool = False,
) -> RunReport:
    """One whole run in this process, through the same services as the workflow."""
    started_at = deps.clock()
    run_id = new_run_id(started_at, trigger)
    dry_run = effective_dry_run(config, force_dry_run)

    def evaluate_all() -> tuple[Evaluation, list[RepositoryReport]]:
        names = tuple(deps.registry.repository_names())
        evaluation = Evaluation(
            run_id=run_id,
            config=config,
            inventory=read_inventory_from_bucket(deps.bucket),
            dry_run=dry_run,
            replication=read_replication(deps.registry),
            repository_names=names,
        )
        cache = BucketManifestCache(deps.bucket)
        reports = [
            evaluate_repository(
                name, evaluation, registry=deps.registry, cache=cache, leases=deps.leases, clock=deps.clock
            )
            for name in sweep_targets(config, deps.registry, patterns=patterns, repositories=names)
        ]
        return evaluation, reports

    evaluated = contain(evaluate_all, log=None, what="the run")
    if isinstance(evaluated, Defect):  # subscribers hear of a run that died before its report; the caller still fails
        publish_failure(deps.notifier, run_id, dry_run, str(evaluated))
        raise evaluated.error
    evaluation, reports = evaluated
    templates = creation_template_findings(deps.registry)
    memory_warnings = update_memory(
        deps.bucket,
        config.safety,
        evaluation.inventory,
        reports,
        deps.clock(),
        registry_id=deps.registry.registry_id,
        region=deps.registry.region,
        replication=evaluation.replication.replication_configuration,
    )
    return report_run(
        run_id=run_id,
        trigger=trigger,
        dry_run=evaluation.dry_run,
        started_at=started_at,
        finished_at=deps.clock(),
        repositories=reports,
        bucket=deps.bucket,
        notifier=deps.notifier,
        price=storage_price(config, deps.registry),
        registry_id=deps.registry.registry_id,
        region=deps.registry.region,
        run_warnings=(*templates.warnings, *memory_warnings),
        template_findings=templates.findings,
        manifests=manifest_evidence(config.safety, evaluation.inventory, started_at),
    )
