"""The events the functions accept, as Powertools parser models, and what the tagger and the collector return:
an event of any other shape is refused with one line naming the field, and nothing is done. The workflow's own
records (its input, work items, run record, step outputs) are in ecr_retention.workflow."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel, SqsRecordModel
from pydantic import BaseModel, ConfigDict, Field, Json, NonNegativeInt, ValidationError

from ecr_retention.domain.errors import InputError, describe_validation_error
from ecr_retention.workflow import RepositoryName, WireRecord

Model = TypeVar("Model", bound=BaseModel)


class EcrPushDetail(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    result: Literal["SUCCESS"]
    action_type: Literal["PUSH"] = Field(alias="action-type")
    repository_name: RepositoryName = Field(alias="repository-name")
    image_digest: str | None = Field(default=None, alias="image-digest")
    image_tag: str | None = Field(default=None, alias="image-tag")


class EcrPushEvent(EventBridgeModel):
    source: Literal["aws.ecr"]
    detail_type: Literal["ECR Image Action"] = Field(alias="detail-type")
    detail: EcrPushDetail


class EcrPushRecord(SqsRecordModel):
    """One message of the push queue: an ECR push event, as EventBridge delivered it, in its body."""

    body: Json[EcrPushEvent]  # SqsRecordModel says str: the raw body, parsed here


class TaggingDone(WireRecord):
    """What the tagger returns."""

    run_id: str
    tagged: NonNegativeInt
    already_tagged: NonNegativeInt
    would_tag: NonNegativeInt
    problems: NonNegativeInt


class ManifestCollected(WireRecord):
    name: str
    complete: bool
    images: NonNegativeInt
    location: str | None
    problems: NonNegativeInt


class CollectionDone(WireRecord):
    """What the collector returns: one entry per account and region."""

    manifests: tuple[ManifestCollected, ...]
    incomplete: NonNegativeInt


def parse_event(event: Any, model: type[Model], what: str) -> Model:
    try:
        return parse(event=event, model=model)
    except ValidationError as error:
        raise InputError(f"{what}: {describe_validation_error(error, model)}") from None
    except (TypeError, ValueError) as error:
        raise InputError(f"{what}: {error}") from None
