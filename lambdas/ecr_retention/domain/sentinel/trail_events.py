"""What the sentinel hears through CloudTrail (SPEC "The sentinel"): a native lifecycle policy's PolicyExecutionEvent
and, with a trail, the API calls PutLifecyclePolicy and BatchDeleteImage, as the `detail` of their EventBridge events
(sources: domain/sentinel/events.py). Apart from the ECR Image Action (events.py), the sentinel's common event, so that a
cold start for one builds none of these models: an event that comes through CloudTrail loads them
(handlers/sentinel_events.py)."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from ecr_retention.domain.in_use.references import Removal, RemovalAction
from ecr_retention.domain.sentinel.events import EventDetail
from ecr_retention.domain.timestamps import UtcDatetime

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
