"""Last step of the workflow: gather the repository reports, write the run report, publish the summary and
the run's metrics, with each expected cluster's manifest age."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ecr_retention.gc_guard import cyclic_gc_off, imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, record_manifest_ages, record_run_metrics, tracer
    from ecr_retention.handlers.wiring import RunWiring
    from ecr_retention.handlers.wiring.report import report_at_cold_start
    from ecr_retention.run_records import RunRecord, RunReported
    from ecr_retention.services.report_step import finish_run

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext  # an annotation: the runtime passes its own


@logger.inject_lambda_context(correlation_id_path="runId")
@metrics.log_metrics
@tracer.capture_lambda_handler
@cyclic_gc_off()
def lambda_handler(event: dict[str, Any], context: LambdaContext, *, wiring: RunWiring | None = None) -> dict[str, Any]:
    wiring = wiring or report_at_cold_start()
    record = parse_event(event, RunRecord, "report input")
    adapters = wiring.adapters
    # Whatever fails, the subscribers hear of the failed run (finish_run), and the workflow still fails.
    report = finish_run(adapters, record, wiring.config)
    record_run_metrics(report)
    # The manifests as the report step read them (finish_run): read once, for the report's evidence and these ages.
    written = {m.cluster: m.generated_at for m in report.manifests if m.generated_at is not None}
    record_manifest_ages(written, map(str, wiring.config.safety.clusters), adapters.clock())
    logger.info("run reported", extra={"outcome": report.outcome, "report": report.report_url})
    return RunReported(run_id=report.run_id, outcome=report.outcome, report_url=report.report_url).to_wire()
