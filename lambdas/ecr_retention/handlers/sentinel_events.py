"""Every event the sentinel's rules match, as one discriminated union (SentinelEvent): the ECR Image Action
(handlers/sentinel.py's ImageActionEvent) and the two that come through CloudTrail, a native lifecycle policy's
PolicyExecutionEvent and, with a trail, an API call. The sentinel reads its common event, an ECR Image Action, by its
own model (handlers/sentinel.py observed_in) and loads this module for any other event, or for one that model refuses,
whose refusal the union words as it always has: a removal of an image builds none of these models."""

from typing import Annotated, Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import Field, RootModel

from ecr_retention.domain.sentinel.events import Observed
from ecr_retention.domain.sentinel.trail_events import ApiCallDetail, PolicyExecution
from ecr_retention.handlers.sentinel import ImageActionEvent, observed_of


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
        return observed_of(self.root)
