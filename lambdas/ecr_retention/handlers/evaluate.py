"""The Map's worker: evaluate a batch of repositories, each in its own guard (services.evaluate_step.run_work_batch), or one
repository: a batch's that ended early (BatchMember), or a work item as the workflow sent them before batches."""

from collections.abc import Callable
from typing import Any

from ecr_retention.gc_guard import cyclic_gc_off, imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import NonNegativeInt

    from ecr_retention.domain.reporting.outcomes import RepositoryOutcome
    from ecr_retention.domain.reporting.report import RepositoryReport
    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, tracer
    from ecr_retention.handlers.wiring import RunWiring
    from ecr_retention.handlers.wiring.evaluate import evaluate_at_cold_start
    from ecr_retention.services.evaluate_step import run_batch_member, run_work_batch, run_work_item
    from ecr_retention.workflow import WireRecord, WorkItem
    from ecr_retention.workflow_batches import BatchMember, WorkBatch


# What the step returns, defined here as the other functions' outputs are in their handler modules (the Map writes them
# to its results): no other function builds them.
class RepositoryEvaluated(WireRecord):
    """What the evaluate step returns for its repository (the Map writes it to its results)."""

    repository: str
    outcome: RepositoryOutcome
    deleted: NonNegativeInt
    failed: NonNegativeInt


class BatchEvaluated(WireRecord):
    """What the evaluate step returns for a batch: each repository it evaluated (the others stored no report)."""

    repositories: list[RepositoryEvaluated]


@logger.inject_lambda_context(correlation_id_path="runId")
@metrics.log_metrics
@tracer.capture_lambda_handler
@cyclic_gc_off()
def lambda_handler(event: dict[str, Any], context: LambdaContext, *, wiring: RunWiring | None = None) -> dict[str, Any]:
    wiring = wiring or evaluate_at_cold_start()

    def seconds_left() -> float:
        return context.get_remaining_time_in_millis() / 1000

    if isinstance(event, dict) and "repositories" in event:
        return evaluate_batch(event, wiring, seconds_left)
    if isinstance(event, dict) and "afterBatch" in event:
        return evaluate_member(event, wiring, seconds_left)
    item = parse_event(event, WorkItem, "work item")
    report = run_work_item(
        wiring.config,
        wiring.adapters,
        run_id=item.run_id,
        repository=item.repository,
        dry_run=item.dry_run,
        key=item.region,
        seconds_left=seconds_left,
    )
    log_evaluated(report)
    return evaluated(report).to_wire()


def evaluate_batch(event: dict[str, Any], wiring: RunWiring, seconds_left: Callable[[], float]) -> dict[str, Any]:
    batch = parse_event(event, WorkBatch, "batch of work items")
    reports = run_work_batch(wiring.config, wiring.adapters, batch, seconds_left=seconds_left)
    for report in reports:
        log_evaluated(report)
    return BatchEvaluated(repositories=[evaluated(report) for report in reports]).to_wire()


def evaluate_member(event: dict[str, Any], wiring: RunWiring, seconds_left: Callable[[], float]) -> dict[str, Any]:
    member = parse_event(event, BatchMember, "repository of a batch")
    report = run_batch_member(wiring.config, wiring.adapters, member, seconds_left=seconds_left)
    if report is None:
        logger.info("repository reported by its batch", extra={"repository": member.repository})
        return BatchEvaluated(repositories=[]).to_wire()
    log_evaluated(report)
    return evaluated(report).to_wire()


def log_evaluated(report: RepositoryReport) -> None:
    logger.info(
        "repository evaluated",
        extra={"repository": report.repository_name, "region": report.region, "outcome": report.outcome},
    )


def evaluated(report: RepositoryReport) -> RepositoryEvaluated:
    return RepositoryEvaluated(
        repository=report.repository_name,
        outcome=report.outcome,
        deleted=len(report.deleted),
        failed=len(report.failed),
    )
