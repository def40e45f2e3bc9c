"""What the sentinel hears (SPEC "The sentinel"): the `detail` of each EventBridge event its rules match, and the
removals each one tells. Pure pydantic: the handler's Powertools envelope (handlers/sentinel.py) carries these as its
typed `detail`, and the service (services/sentinel.py) reads them. The ECR Image Action here, what comes through
CloudTrail in trail_events.py (loaded with such an event).

Sources (the fixtures under tests/fixtures/sentinel/ hold the documented examples):
- `ECR Image Action` DELETE and UPDATE_STORAGE_CLASS: https://docs.aws.amazon.com/AmazonECR/latest/userguide/ecr-eventbridge.html
  (the DELETE example's digest has 60 hex digits: digests are read as ECR sends them, never refused).
- `PolicyExecutionEvent`: https://docs.aws.amazon.com/AmazonECR/latest/userguide/logging-using-cloudtrail.html
  ("Example: Image lifecycle policy action"). Its image actions carry no action type: which rule acted is
  `rulePriority`, and what that rule does is the `action` of the rule with that priority in `lifecycleEventRules`
  ("expire" in the example; a transition rule's, read as archived, is not shown there [INF]). Above about ten images
  ECR splits one evaluation over several events, with at most 100 tags per image.
- `AWS API Call via CloudTrail`: the CloudTrail record of the call (requestParameters, responseElements, userIdentity)
  as EventBridge delivers it in `detail`; a call ECR refused carries `errorCode` and removed nothing.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from ecr_retention.domain.in_use.references import Removal


class EventDetail(BaseModel):
    """Unknown fields are ignored (AWS adds fields); the ones read are required to be what they claim."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")


# --- ECR Image Action ------------------------------------------------------------------------------------------------


class ImageDeleted(EventDetail):
    """One image deleted, or one of its tags: ECR sends the tag it removed (`image-tag`) when there was one."""

    result: Literal["SUCCESS"]
    action_type: Literal["DELETE"] = Field(alias="action-type")
    repository_name: str = Field(alias="repository-name", min_length=1)
    image_digest: str | None = Field(default=None, alias="image-digest")
    image_tag: str | None = Field(default=None, alias="image-tag")

    def removals(self, event_id: str, time: datetime) -> tuple[Removal, ...]:
        return (
            Removal(
                repository_name=self.repository_name,
                image_digest=self.image_digest,
                image_tags=(self.image_tag,) if self.image_tag else (),
                action="deleted",
                cause="image-action",
                removed_at=time,
                event_id=event_id,
            ),
        )


class ImageArchived(EventDetail):
    """UpdateImageStorageClass to ARCHIVE, by a call or by a lifecycle transition (the event does not say which)."""

    result: Literal["SUCCESS"]
    action_type: Literal["UPDATE_STORAGE_CLASS"] = Field(alias="action-type")
    target_storage_class: Literal["ARCHIVE"] = Field(alias="target-storage-class")
    repository_name: str = Field(alias="repository-name", min_length=1)
    image_digest: str = Field(alias="image-digest", min_length=1)

    def removals(self, event_id: str, time: datetime) -> tuple[Removal, ...]:
        return (
            Removal(
                repository_name=self.repository_name,
                image_digest=self.image_digest,
                action="archived",
                cause="image-action",
                removed_at=time,
                event_id=event_id,
            ),
        )


ImageAction = Annotated[ImageDeleted | ImageArchived, Field(discriminator="action_type")]


if TYPE_CHECKING:  # what comes through CloudTrail: domain/sentinel/trail_events.py, loaded with such an event
    from ecr_retention.domain.sentinel.trail_events import ImagesBatchDeleted, LifecyclePolicyPut, PolicyExecution

    RemovalDetail: TypeAlias = ImageDeleted | ImageArchived | PolicyExecution | ImagesBatchDeleted


@dataclass(frozen=True)
class Observed:
    """One event as the sentinel acts on it: EventBridge's id and time, its typed detail, the Region it happened in
    (EventBridge's `region`: another pruned Region's events reach the home Region's bus by the rules the stack creates
    there; None: not said, taken for the home Region), and the account it happened in (EventBridge's `account`: an
    event of another account than the registry's changes nothing, domain/provenance.py; None: not said, outside
    EventBridge)."""

    event_id: str
    time: datetime
    detail: "RemovalDetail | LifecyclePolicyPut"
    region: str | None = None
    account: str | None = None

    @property
    def policy_put(self) -> "LifecyclePolicyPut | None":
        """The call that put a lifecycle policy, when the event is one (an event that came through CloudTrail: its
        models were loaded to read it)."""
        if isinstance(self.detail, ImageDeleted | ImageArchived):
            return None
        from ecr_retention.domain.sentinel.trail_events import LifecyclePolicyPut

        return self.detail if isinstance(self.detail, LifecyclePolicyPut) else None

    def removals(self) -> tuple[Removal, ...]:
        detail = self.detail
        if isinstance(detail, ImageDeleted | ImageArchived):
            return detail.removals(self.event_id, self.time)
        from ecr_retention.domain.sentinel.trail_events import LifecyclePolicyPut

        return () if isinstance(detail, LifecyclePolicyPut) else detail.removals(self.event_id, self.time)

    @property
    def repository_name(self) -> str:
        detail = self.detail
        if isinstance(detail, ImageDeleted | ImageArchived):
            return detail.repository_name
        from ecr_retention.domain.sentinel.trail_events import PolicyExecution

        if isinstance(detail, PolicyExecution):
            return detail.service_event_details.repository_name
        return detail.request_parameters.repository_name
