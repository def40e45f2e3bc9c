"""The sentinel function's door for the guard rules (layout.py `GUARD_DELIVERY_KEY`): a change of the inventory bucket's
own guards or a use of the break-glass role, delivered as `{"guard": <the EventBridge event>}`, becomes one alert
(services/guard_alerts.py). handlers/sentinel.py routes such a delivery here (layout.is_guard_delivery), and imports
this module only then: the guards change and the break-glass role is used rarely, so that a cold start for a removal
builds none of the guard events' models."""

from typing import Any, Literal

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, ConfigDict, Field

from ecr_retention.domain.provenance import foreign_event
from ecr_retention.domain.sentinel.guard_events import GuardCall
from ecr_retention.handlers.events import parse_event
from ecr_retention.handlers.observability import logger, metrics
from ecr_retention.handlers.wiring.sentinel import SentinelWiring
from ecr_retention.layout import GUARD_DELIVERY_KEY
from ecr_retention.services.guard_alerts import alert_guard_call


class GuardEvent(EventBridgeModel):
    detail_type: Literal["AWS API Call via CloudTrail"] = Field(alias="detail-type")
    detail: GuardCall


class GuardDelivery(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    guard: GuardEvent = Field(alias=GUARD_DELIVERY_KEY)


def alert_guard_delivery(event: dict[str, Any], wiring: SentinelWiring) -> dict[str, Any]:
    delivered = parse_event(event, GuardDelivery, "sentinel guard event").guard
    foreign = foreign_event("guard event", delivered.id, delivered.account, wiring.ports.registry.registry_id)
    if foreign is not None:  # another account's bucket or role: not ours to alert on (domain/provenance.py)
        logger.warning(foreign)
        return {"alerted": False, "ignored": foreign}
    with logger.append_context_keys(correlation_id=delivered.id):
        alerted = alert_guard_call(delivered.detail, notifier=wiring.ports.notifier)
        metrics.add_metric(name="GuardAlerts", unit=MetricUnit.Count, value=1)
        summary = alerted.summary()
        logger.info("guard event alerted", extra=summary)
        return summary
