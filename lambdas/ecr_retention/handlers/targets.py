"""First step of the workflow: choose the repositories of this run and write them for the Map to read."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ecr_retention.handlers.dependencies import runtime
from ecr_retention.handlers.events import RunRequest, parse_event
from ecr_retention.handlers.observability import logger, metrics, tracer
from ecr_retention.services.run import start_run


@logger.inject_lambda_context(log_event=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    request = parse_event(event, RunRequest, "targets input")
    rt = runtime()
    start = start_run(rt.config, rt.deps, trigger=request.trigger, repositories=request.repositories)
    logger.info("run started", extra={"run_id": start.run_id, "targets": start.count, "dry_run": start.dry_run})
    return {**start.to_json_dict(), "bucket": rt.settings.bucket_name}
