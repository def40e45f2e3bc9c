"""ECR pushes, debounced: the SQS queue delays each push event, and one batch starts one workflow run for
the distinct repositories pushed to (a burst of pushes to one repository = one evaluation)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from ecr_retention.domain.errors import parse_json
from ecr_retention.handlers.dependencies import runtime
from ecr_retention.handlers.events import EcrPushEvent, parse_event
from ecr_retention.handlers.observability import logger, metrics, tracer

processor = BatchProcessor(event_type=EventType.SQS)


def pushed_repository(record: SQSRecord) -> str:
    """A malformed message fails alone (partial batch response); after its retries it lands in the DLQ."""
    event = parse_event(parse_json(record.body, f"SQS message {record.message_id}"), EcrPushEvent, "ECR push event")
    return event.detail.repository_name


def execution_name(repositories: list[str], message_ids: list[str]) -> str:
    """Deterministic per batch, so that a retried batch does not start a second run."""
    digest = hashlib.sha256(json.dumps([sorted(repositories), sorted(message_ids)]).encode()).hexdigest()
    return f"push-{digest[:40]}"


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    response = process_partial_response(
        event=event, record_handler=pushed_repository, processor=processor, context=context
    )
    repositories = sorted({result for status, result, _ in processor.success_messages if status == "success"})
    if repositories:
        message_ids = [record.message_id for record in processor.records]
        arn = (
            runtime()
            .starter()
            .start(execution_name(repositories, message_ids), {"trigger": "push", "repositories": repositories})
        )
        logger.info("run started for pushes", extra={"repositories": repositories, "execution": arn})
    return response
