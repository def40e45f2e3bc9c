"""What the sentinel hears (SPEC "The sentinel"): the `detail` of each EventBridge event its rules match, and the
removals each one tells. Pure pydantic: the handler's Powertools envelope (handlers/sentinel.py) carries these as its
typed `detail`, and the service (services/sentinel.py) reads them.

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

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ecr_retention.domain.in_use.references import Removal, RemovalAction
from ecr_retention.domain.timestamps import UtcDatetime


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


# --- AWS Service Event via CloudTrail: PolicyExecutionEvent ------------------------------------------------------------


class LifecycleEventRule(EventDetail):
    rule_priority: int = Field(alias="rulePriority")
    action: str = "expire"  # "expire" in AWS's example; a transition rule's says so


class LifecycleEventPolicy(EventDetail):
    lifecycle_event_rules: tuple[LifecycleEventRule, ...] = Field(default=(), alias="lifecycleEventRules")


class LifecycleEventImage(EventDetail):
    digest: str = Field(min_length=1)
    tag_list: tuple[str, ...] = Field(default=(), alias="tagList")


class LifecycleEventImageAction(EventDetail):
    lifecycle_event_image: LifecycleEventImage = Field(alias="lifecycleEventImage")
    rule_priority: int | None = Field(default=None, alias="rulePriority")


class PolicyExecutionDetails(EventDetail):
    repository_name: str = Field(alias="repositoryName", min_length=1)
    lifecycle_event_policy: LifecycleEventPolicy = Field(default=LifecycleEventPolicy(), alias="lifecycleEventPolicy")
    lifecycle_event_image_actions: tuple[LifecycleEventImageAction, ...] = Field(
        default=(), alias="lifecycleEventImageActions"
    )


class PolicyExecution(EventDetail):
    """A native lifecycle policy acted (expired or, by a transition rule, archived) on up to about ten images."""

    event_source: Literal["ecr.amazonaws.com"] = Field(alias="eventSource")
    event_name: Literal["PolicyExecutionEvent"] = Field(alias="eventName")
    event_id: str = Field(alias="eventID", min_length=1)
    service_event_details: PolicyExecutionDetails = Field(alias="serviceEventDetails")

    def action_of(self, rule_priority: int | None) -> RemovalAction:
        rules = self.service_event_details.lifecycle_event_policy.lifecycle_event_rules
        acting = next((rule for rule in rules if rule.rule_priority == rule_priority), None)
        return "archived" if acting is not None and acting.action.lower() == "transition" else "deleted"

    def removals(self, event_id: str, time: datetime) -> tuple[Removal, ...]:
        details = self.service_event_details
        return tuple(
            Removal(
                repository_name=details.repository_name,
                image_digest=action.lifecycle_event_image.digest,
                image_tags=action.lifecycle_event_image.tag_list,
                action=self.action_of(action.rule_priority),
                cause="lifecycle",
                rule_priority=action.rule_priority,
                removed_at=time,
                event_id=self.event_id,
            )
            for action in details.lifecycle_event_image_actions
        )


# --- AWS API Call via CloudTrail (only with a trail recording management events) ------------------------------------


class UserIdentity(EventDetail):
    arn: str | None = None
    principal_id: str | None = Field(default=None, alias="principalId")
    invoked_by: str | None = Field(default=None, alias="invokedBy")

    @property
    def who(self) -> str | None:
        return self.arn or self.principal_id or self.invoked_by


class ApiCall(EventDetail):
    event_source: Literal["ecr.amazonaws.com"] = Field(alias="eventSource")
    event_id: str = Field(alias="eventID", min_length=1)
    event_time: UtcDatetime = Field(alias="eventTime")
    user_identity: UserIdentity = Field(default=UserIdentity(), alias="userIdentity")
    error_code: str | None = Field(default=None, alias="errorCode")  # set when ECR refused the call


class PolicyRequest(EventDetail):
    repository_name: str = Field(alias="repositoryName", min_length=1)
    lifecycle_policy_text: str = Field(alias="lifecyclePolicyText", min_length=1)


class LifecyclePolicyPut(ApiCall):
    event_name: Literal["PutLifecyclePolicy"] = Field(alias="eventName")
    request_parameters: PolicyRequest = Field(alias="requestParameters")


class ImageId(EventDetail):
    image_digest: str | None = Field(default=None, alias="imageDigest")
    image_tag: str | None = Field(default=None, alias="imageTag")


class BatchDeleteRequest(EventDetail):
    repository_name: str = Field(alias="repositoryName", min_length=1)
    image_ids: tuple[ImageId, ...] = Field(alias="imageIds")


class BatchDeleteResponse(EventDetail):
    image_ids: tuple[ImageId, ...] = Field(default=(), alias="imageIds")


class ImagesBatchDeleted(ApiCall):
    event_name: Literal["BatchDeleteImage"] = Field(alias="eventName")
    request_parameters: BatchDeleteRequest = Field(alias="requestParameters")
    response_elements: BatchDeleteResponse | None = Field(default=None, alias="responseElements")

    def removals(self, event_id: str, time: datetime) -> tuple[Removal, ...]:
        """What ECR answered it deleted, one removal per digest with the tags it listed. Whether the whole image went
        (asked by digest) or only those tags (asked by tag) the registry tells when the sentinel confirms."""
        if self.error_code is not None or self.response_elements is None:
            return ()
        tags: dict[str | None, list[str]] = {}
        for deleted in self.response_elements.image_ids:
            tags.setdefault(deleted.image_digest, []).extend([deleted.image_tag] if deleted.image_tag else [])
        return tuple(
            Removal(
                repository_name=self.request_parameters.repository_name,
                image_digest=digest,
                image_tags=tuple(dict.fromkeys(listed)),
                action="deleted",
                cause="api",
                principal=self.user_identity.who,
                removed_at=time,
                event_id=self.event_id,
            )
            for digest, listed in tags.items()
        )


ApiCallDetail = Annotated[LifecyclePolicyPut | ImagesBatchDeleted, Field(discriminator="event_name")]
RemovalDetail = ImageDeleted | ImageArchived | PolicyExecution | ImagesBatchDeleted


@dataclass(frozen=True)
class Observed:
    """One event as the sentinel acts on it: EventBridge's id and time, its typed detail, the Region it happened in
    (EventBridge's `region`: another pruned Region's events reach the home Region's bus by the rules the stack creates
    there; None: not said, taken for the home Region), and the account it happened in (EventBridge's `account`: an
    event of another account than the registry's changes nothing, domain/provenance.py; None: not said, outside
    EventBridge)."""

    event_id: str
    time: datetime
    detail: RemovalDetail | LifecyclePolicyPut
    region: str | None = None
    account: str | None = None

    def removals(self) -> tuple[Removal, ...]:
        if isinstance(self.detail, LifecyclePolicyPut):
            return ()
        return self.detail.removals(self.event_id, self.time)

    @property
    def repository_name(self) -> str:
        detail = self.detail
        if isinstance(detail, PolicyExecution):
            return detail.service_event_details.repository_name
        if isinstance(detail, LifecyclePolicyPut | ImagesBatchDeleted):
            return detail.request_parameters.repository_name
        return detail.repository_name
