"""The sentinel: EventBridge delivers each removal or archive of an image (ECR Image Action DELETE, UPDATE_STORAGE_CLASS
to ARCHIVE; a native lifecycle policy's PolicyExecutionEvent) and, with a trail, the API calls PutLifecyclePolicy and
BatchDeleteImage (layout.py's patterns); services.sentinel.watch records, matches, heals and alerts."""

from typing import TYPE_CHECKING, Any, Literal

from ecr_retention.gc_guard import imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.parser import parse
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import Field

    from ecr_retention.domain.sentinel.events import ImageAction, Observed
    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, tracer
    from ecr_retention.handlers.wiring.sentinel import SentinelWiring, sentinel_at_cold_start
    from ecr_retention.layout import is_guard_delivery
    from ecr_retention.services.sentinel import watch

if TYPE_CHECKING:
    from ecr_retention.handlers.sentinel_events import ApiCallEvent, LifecycleActionEvent

IMAGE_ACTION = "ECR Image Action"


class ImageActionEvent(EventBridgeModel):
    source: Literal["aws.ecr"]
    detail_type: Literal["ECR Image Action"] = Field(alias="detail-type")
    detail: ImageAction


def observed_of(event: "ImageActionEvent | LifecycleActionEvent | ApiCallEvent") -> Observed:
    return Observed(event_id=event.id, time=event.time, detail=event.detail, region=event.region, account=event.account)


def observed_in(event: dict[str, Any]) -> Observed:
    """The event as the sentinel acts on it. An ECR Image Action, its common event (one per removed tag), is read by
    its own model, as the union of every event its rules match reads it; any other event, and one that model refuses,
    by that union (handlers/sentinel_events.py, loaded then), which words a refusal as it always has."""
    if isinstance(event, dict) and event.get("detail-type") == IMAGE_ACTION:
        try:
            return observed_of(parse(event=event, model=ImageActionEvent))
        except (TypeError, ValueError):  # pydantic's ValidationError among them
            pass  # refused: worded by the union below, as parse_event words any refusal
    from ecr_retention.handlers.sentinel_events import SentinelEvent

    return parse_event(event, SentinelEvent, "sentinel event").observed()


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(
    event: dict[str, Any], context: LambdaContext, *, wiring: SentinelWiring | None = None
) -> dict[str, Any]:
    wiring = wiring or sentinel_at_cold_start()
    if is_guard_delivery(event):  # the bucket's own guards, the break-glass role (handlers/guard.py)
        # Loaded here: a guard delivery is rare (the bucket's guards changed, the break-glass role used), and a cold
        # start for a removal, the sentinel's daily work, builds none of its models.
        from ecr_retention.handlers.guard import alert_guard_delivery

        return alert_guard_delivery(event, wiring)
    observed = observed_in(event)
    with logger.append_context_keys(correlation_id=observed.event_id):
        watched = watch(observed, config=wiring.config, ports=wiring.ports, now=wiring.clock())
        metrics.add_metric(name="SentinelAlerts", unit=MetricUnit.Count, value=1 if watched.alerted else 0)
        metrics.add_metric(name="InUseImagesRemoved", unit=MetricUnit.Count, value=len(watched.broken))
        metrics.add_metric(name="InUseImagesRestored", unit=MetricUnit.Count, value=watched.restored)
        summary = watched.summary()
        logger.info("removal watched", extra=summary)
        return summary
