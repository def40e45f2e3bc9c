"""The Map's worker: evaluate one repository (one invocation each, so any sweep fits Lambda's limits)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ecr_retention.gc_guard import cyclic_gc_off
from ecr_retention.handlers.events import parse_event
from ecr_retention.handlers.observability import logger, metrics, tracer
from ecr_retention.handlers.wiring import RunWiring, evaluate_at_cold_start
from ecr_retention.services.run import run_work_item
from ecr_retention.workflow import RepositoryEvaluated, WorkItem


@logger.inject_lambda_context(correlation_id_path="runId")
@metrics.log_metrics
@tracer.capture_lambda_handler
@cyclic_gc_off()
def lambda_handler(event: dict[str, Any], context: LambdaContext, *, wiring: RunWiring | None = None) -> dict[str, Any]:
    wiring = wiring or evaluate_at_cold_start()
    item = parse_event(event, WorkItem, "work item")
    report = run_work_item(
        wiring.config,
        wiring.adapters,
        run_id=item.run_id,
        repository=item.repository,
        dry_run=item.dry_run,
        key=item.region,
        seconds_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    logger.info(
        "repository evaluated",
        extra={"repository": item.repository, "region": report.region, "outcome": report.outcome},
    )
    return RepositoryEvaluated(
        repository=report.repository_name,
        outcome=report.outcome,
        deleted=len(report.deleted),
        failed=len(report.failed),
    ).to_wire()
