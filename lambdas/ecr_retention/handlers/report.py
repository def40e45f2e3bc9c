"""Last step of the workflow: gather the repository reports, write the run report, publish the summary and
the run's metrics, with each expected cluster's manifest age."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ecr_retention.handlers.dependencies import runtime
from ecr_retention.handlers.events import RunStarted, parse_event
from ecr_retention.handlers.observability import logger, metrics, record_manifest_ages, record_run_metrics, tracer
from ecr_retention.ports import StorageUnavailable
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.report import publish_failure
from ecr_retention.services.run import RunStart, finish_run


@logger.inject_lambda_context(correlation_id_path="runId")
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    started = parse_event(event, RunStarted, "report input")
    rt = runtime()
    start = RunStart(
        run_id=started.run_id,
        trigger=started.trigger,
        dry_run=started.dry_run,
        started_at=started.started_at,
        targets_key=started.targets_key,
        count=started.count,
    )
    try:
        report = finish_run(rt.deps, start)
    except Exception as error:  # the subscribers hear of a failed run; the workflow still fails
        publish_failure(rt.deps.notifier, started.run_id, started.dry_run, f"{type(error).__name__}: {error}")
        raise
    record_run_metrics(report)
    try:
        inventory = read_inventory_from_bucket(rt.deps.bucket)
    except StorageUnavailable as error:  # the run is reported; a missing age datapoint is not worth failing it
        logger.warning("manifest ages not published", extra={"error": str(error)})
    else:
        record_manifest_ages(inventory.manifests, rt.config.safety.clusters, rt.deps.clock())
    logger.info("run reported", extra={"outcome": report.outcome, "report": report.report_key})
    return {"runId": report.run_id, "outcome": report.outcome, "reportKey": report.report_key}
