"""The sentinel: EventBridge delivers each removal or archive of an image (ECR Image Action DELETE, UPDATE_STORAGE_CLASS
to ARCHIVE; a native lifecycle policy's PolicyExecutionEvent) and, with a trail, the API calls PutLifecyclePolicy and
BatchDeleteImage (layout.py's patterns); services.sentinel.watch records, matches, heals and alerts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ecr_retention.gc_guard import imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import Field, RootModel

    from ecr_retention.domain.sentinel.events import ApiCallDetail, ImageAction, Observed, PolicyExecution
    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, tracer
    from ecr_retention.handlers.wiring.sentinel import SentinelWiring, sentinel_at_cold_start
    from ecr_retention.layout import is_guard_delivery
    from ecr_retention.services.sentinel import watch


class ImageActionEvent(EventBridgeModel):
    source: Literal["aws.ecr"]
    detail_type: Literal["ECR Image Action"] = Field(alias="detail-type")
    detail: ImageAction


class LifecycleActionEvent(EventBridgeModel):
    source: Literal["aws.ecr"]
    detail_type: Literal["AWS Service Event via CloudTrail"] = Field(alias="detail-type")
    detail: PolicyExecution


class ApiCallEvent(EventBridgeModel):
    source: Literal["aws.ecr"]
    detail_type: Literal["AWS API Call via CloudTrail"] = Field(alias="detail-type")
    detail: ApiCallDetail


class SentinelEvent(
    RootModel[Annotated[ImageActionEvent | LifecycleActionEvent | ApiCallEvent, Field(discriminator="detail_type")]]
):
    """Any event the sentinel's rules match, told apart by its detail-type (and within it, by action or call)."""

    def observed(self) -> Observed:
        event = self.root
        return Observed(
            event_id=event.id, time=event.time, detail=event.detail, region=event.region, account=event.account
        )


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
    observed = parse_event(event, SentinelEvent, "sentinel event").observed()
    with logger.append_context_keys(correlation_id=observed.event_id):
        watched = watch(observed, config=wiring.config, ports=wiring.ports, now=wiring.clock())
        metrics.add_metric(name="SentinelAlerts", unit=MetricUnit.Count, value=1 if watched.alerted else 0)
        metrics.add_metric(name="InUseImagesRemoved", unit=MetricUnit.Count, value=len(watched.broken))
        metrics.add_metric(name="InUseImagesRestored", unit=MetricUnit.Count, value=watched.restored)
        summary = watched.summary()
        logger.info("removal watched", extra=summary)
        return summary
