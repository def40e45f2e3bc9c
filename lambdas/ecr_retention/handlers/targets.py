"""First step of the workflow: choose the repositories of this run and write them for the Map to read."""

from __future__ import annotations

from typing import Any

from ecr_retention.gc_guard import imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, tracer
    from ecr_retention.handlers.wiring.targets import TargetsWiring, targets_at_cold_start
    from ecr_retention.run_request import RunRequest
    from ecr_retention.services.targets_step import start_run


@logger.inject_lambda_context(log_event=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(
    event: dict[str, Any], context: LambdaContext, *, wiring: TargetsWiring | None = None
) -> dict[str, Any]:
    wiring = wiring or targets_at_cold_start()
    request = parse_event(event, RunRequest, "targets input")
    record = start_run(
        wiring.config,
        wiring.adapters,
        trigger=request.trigger,
        repositories=request.repositories,
        key=request.region,
        workers=wiring.workers,
    )
    # The run id exists from here on; the other steps take it from their input (correlation_id_path).
    with logger.append_context_keys(correlation_id=record.run_id):
        logger.info("run started", extra={"targets": record.count, "dryRun": record.dry_run})
    return record.to_wire()
