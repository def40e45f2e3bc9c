"""The Map's worker: evaluate one repository (one invocation each, so any sweep fits Lambda's limits)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ecr_retention.handlers.dependencies import runtime
from ecr_retention.handlers.events import WorkItem, parse_event
from ecr_retention.handlers.observability import logger, metrics, tracer
from ecr_retention.services.run import evaluate_target


@logger.inject_lambda_context(correlation_id_path="runId")
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    item = parse_event(event, WorkItem, "work item")
    rt = runtime()
    report = evaluate_target(
        rt.config,
        rt.deps,
        run_id=item.run_id,
        repository=item.repository,
        dry_run=item.dry_run,
        seconds_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    logger.info("repository evaluated", extra={"repository": item.repository, "outcome": report.outcome})
    return {
        "repository": report.repository_name,
        "outcome": report.outcome,
        "deleted": len(report.deleted),
        "failed": len(report.failed),
    }
