"""ECR pushes, debounced: the SQS queue delays each push event, and one batch starts one workflow run for
the distinct repositories pushed to (a burst of pushes to one repository = one evaluation)."""

from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

from ecr_retention.gc_guard import imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel, SqsModel, SqsRecordModel
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import BaseModel, ConfigDict, Field, Json

    from ecr_retention.domain.planning.managed import managed_in
    from ecr_retention.domain.provenance import account_of_arn, foreign_event
    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, tracer
    from ecr_retention.handlers.wiring.push import PushWiring, push_at_cold_start
    from ecr_retention.run_request import RunRequest
    from ecr_retention.workflow import RepositoryName, batch_execution_name


class EcrPushDetail(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    result: Literal["SUCCESS"]
    action_type: Literal["PUSH"] = Field(alias="action-type")
    repository_name: RepositoryName = Field(alias="repository-name")
    image_digest: str | None = Field(default=None, alias="image-digest")
    image_tag: str | None = Field(default=None, alias="image-tag")


class EcrPushEvent(EventBridgeModel):
    """A push in the home Region's registry or, forwarded to the home event bus, in another pruned Region's (the
    event keeps the Region it happened in)."""

    source: Literal["aws.ecr"]
    detail_type: Literal["ECR Image Action"] = Field(alias="detail-type")
    detail: EcrPushDetail


class EcrPushRecord(SqsRecordModel):
    """One message of the push queue: an ECR push event, as EventBridge delivered it, in its body."""

    body: Json[EcrPushEvent]  # SqsRecordModel says str: the raw body, parsed here


# A batch whose messages all fail is answered like any other partial failure (each message retried, then the DLQ),
# rather than raised as one multi-line error with every message's traceback.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


class Pushed(NamedTuple):
    """One push as the batch reads it: EventBridge's event id, the account and Region it happened in, the repository."""

    event_id: str
    account: str
    region: str
    repository: str


def pushed_repository(record: SQSRecord) -> Pushed:
    """The push a message tells. A malformed message fails alone (partial batch response), refused in one line naming
    the field; after its retries it lands in the DLQ. Parsed here rather than by the processor's `model=`, whose
    refusals are pydantic's multi-line errors."""
    message = parse_event(record.raw_event, EcrPushRecord, f"SQS message {record.message_id}")
    event = message.body
    return Pushed(event.id, event.account, event.region, event.detail.repository_name)


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(
    event: dict[str, Any], context: LambdaContext, *, wiring: PushWiring | None = None
) -> dict[str, Any]:
    # Built before the batch is read: a function that cannot start runs fails whatever its messages are.
    wiring = wiring or push_at_cold_start()
    # An event that is no SQS batch at all (a wrong subscription, a hand-made test event) is refused whole, in one
    # line; within a batch, each malformed message fails alone.
    parse_event(event, SqsModel, "SQS event")
    with processor(records=event["Records"], handler=pushed_repository, lambda_context=context):
        processed = processor.process()
    for status, problem, record in processed:
        if status == "fail":
            logger.warning("push message refused", extra={"messageId": record.get("messageId"), "problem": problem})
    pushes = (result for status, result, _ in processed if status == "success")
    pushed = managed_only(wiring, by_region(pushes, account_of_arn(context.invoked_function_arn)))
    start_runs(wiring, [record["messageId"] for record in event["Records"]], pushed)
    return dict(processor.response())


def managed_only(wiring: PushWiring, pushed: dict[str, set[str]]) -> dict[str, set[str]]:
    """The pushed repositories that a policy manages in the Region pushed to. The push rule's pattern may take in
    more (a prefix, or every repository: infra.repository_scope.coarsened_matchers); those start no run."""
    managed: dict[str, set[str]] = {}
    for region, names in pushed.items():
        kept = {name for name in names if managed_in(wiring.config, name, region)}
        if names - kept:
            logger.info("pushes to unmanaged repositories ignored", extra={"repositories": sorted(names - kept)})
        if kept:
            managed[region] = kept
    return managed


def by_region(pushes: Iterable[Pushed], own_account: str) -> dict[str, set[str]]:
    """The repositories pushed to, by Region. A push of another account than the function's (domain/provenance.py)
    starts nothing: one warning line, and its message succeeds (a retry would only repeat it)."""
    pushed: dict[str, set[str]] = {}
    for push in pushes:
        foreign = foreign_event("push event", push.event_id, push.account, own_account)
        if foreign is not None:
            logger.warning(foreign)
            continue
        pushed.setdefault(push.region, set()).add(push.repository)
    return pushed


def start_runs(wiring: PushWiring, batch: list[str], pushed: dict[str, set[str]]) -> None:
    """One run per Region pushed to, named after the batch's messages (and the Region, when the batch has several),
    so that a retried batch does not start a second run."""
    for region, names in sorted(pushed.items()):
        name = batch_execution_name("push", batch if len(pushed) == 1 else [*batch, region])
        repositories = sorted(names)
        home = region == wiring.region
        request = RunRequest(trigger="push", repositories=tuple(repositories), region=None if home else region)
        arn = wiring.starter.start(name, request.to_wire())
        logger.info("run started for pushes", extra={"repositories": repositories, "region": region, "execution": arn})
