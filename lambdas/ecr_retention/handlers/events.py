"""The events the functions accept, as Powertools parser models: an event of any other shape is refused
with one line naming the field, and nothing is done."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, ValidationError
from pydantic.alias_generators import to_camel

from ecr_retention.domain.errors import InputError, describe_validation_error

RepositoryName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._/-]{1,255}$")]
Model = TypeVar("Model", bound=BaseModel)


class WorkflowInput(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class RunRequest(WorkflowInput):
    """The state machine's input: `{"trigger": "schedule"}` from the schedule, or the pushed repositories."""

    trigger: Literal["schedule", "push"] = "schedule"
    repositories: Annotated[tuple[RepositoryName, ...], Field(min_length=1, max_length=10_000)] | None = None


class WorkItem(WorkflowInput):
    """One item of the Map: evaluate this repository for this run."""

    run_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,100}$")]
    repository: RepositoryName
    trigger: Literal["schedule", "push", "cli"]
    # Strict, as the rules file's dry_run: "false", "no" or 0 is a broken input, not permission to delete.
    dry_run: StrictBool


class RunStarted(WorkflowInput):
    """What the targets step returned, handed to the report step."""

    run_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,100}$")]
    trigger: Literal["schedule", "push", "cli"]
    dry_run: StrictBool
    started_at: datetime
    targets_key: str
    count: int = Field(ge=0)
    bucket: str | None = None  # where targets_key is, for the Distributed Map's ItemReader


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


def parse_event(event: Any, model: type[Model], what: str) -> Model:
    try:
        return parse(event=event, model=model)
    except ValidationError as error:
        raise InputError(f"{what}: {describe_validation_error(error, model)}") from None
    except (TypeError, ValueError) as error:
        raise InputError(f"{what}: {error}") from None
