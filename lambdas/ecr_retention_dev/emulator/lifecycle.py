"""ECR's native lifecycle evaluation, run now in the emulator, and the events ECR sends about it.

moto stores a repository's lifecycle policy (PutLifecyclePolicy) and never applies it. `execute_lifecycle_policy`
does what ECR does when its evaluation runs (within 24 hours of a change, ECR's words): it reads the policy and the
repository through the ECR API, evaluates them with the project's own simulator (`ecr_retention.domain.lifecycle`,
the code behind `ecr-retention lifecycle-preview`), expires the images the policy selects (deleted) and archives
those a transition selects, with the referrers ECR removes with their subject, and returns the CloudTrail service
events ECR emits about it, as EventBridge delivers them to the default bus.

The event's shape is AWS's, from the Amazon ECR User Guide, "Logging Amazon ECR actions with AWS CloudTrail",
"Example: Image lifecycle policy action" (https://docs.aws.amazon.com/AmazonECR/latest/userguide/logging-using-cloudtrail.html,
awsdocs/amazon-ecr-user-guide doc_source/logging-using-cloudtrail.md): `eventName` PolicyExecutionEvent, `eventType`
AwsServiceEvent, `serviceEventDetails` with `repositoryName`, `lifecycleEventPolicy` (`lifecycleEventRules` with a
`lifecycleEventSelection` in words: tagStatus `Tagged`, countType `Image count more than`, action `expire`;
`lastEvaluatedAt`, `policyVersion`, `policyId`) and `lifecycleEventImageActions` (`lifecycleEventImage` {digest,
tagStatus, tagList, pushedAt in epoch milliseconds} and `rulePriority`). A recent record (2025) adds
`tagPatternList`, countType `Time since image pushed` with countUnit `Days`, `lifecycleEventFailureDetails` and
`eventCategory` Management. The same page: "for lifecycle policy actions where 10 or more images are expired, Amazon
ECR sends multiple events to CloudTrail", and at most 100 tags per image: `MAX_IMAGES_PER_EVENT`, `MAX_TAGS`.
EventBridge delivers such a record as `detail` of an event with detail-type "AWS Service Event via CloudTrail" and
source aws.ecr (EventBridge User Guide, "AWS service events delivered via AWS CloudTrail", eb-service-event-cloudtrail).

Not documented, so chosen here: the words for `sinceImagePulled` and `sinceImageTransitioned` (by analogy with the
documented ones), transitions reported in the same event with action `transition`, and the cascaded referrers
(removed with their subject, outside any rule) left out of the events.

`image_action_event` builds the `ECR Image Action` events ECR sends directly (DELETE; UPDATE_STORAGE_CLASS with its
target storage class), for API removals a test or the demo makes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.domain.lifecycle.evaluation import evaluate
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule
from ecr_retention.domain.lifecycle.preview import LifecyclePolicyPreview, build_preview
from ecr_retention.ports import BatchOutcome
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_repository

MAX_IMAGES_PER_EVENT = 10
MAX_TAGS = 100
SERVICE_EVENT = "AWS Service Event via CloudTrail"
IMAGE_ACTION = "ECR Image Action"
SOURCE = "aws.ecr"

# How the CloudTrail record words a rule's selection (the documented ones, then the two chosen by analogy).
TAG_STATUS_WORDS = {"tagged": "Tagged", "untagged": "Untagged", "any": "Any"}
COUNT_TYPE_WORDS = {
    "imageCountMoreThan": "Image count more than",
    "sinceImagePushed": "Time since image pushed",
    "sinceImagePulled": "Time since image pulled",
    "sinceImageTransitioned": "Time since image transitioned",
}


class LifecycleExecutionError(RuntimeError):
    """The emulator could not do what ECR would have done (no policy, or the registry refused an action)."""


@dataclass(frozen=True)
class LifecycleExecution:
    """One evaluation of a repository's native policy, acted on: what the simulator decided, what was removed, and
    the events ECR sends about it (EventBridge events, newest field layout first)."""

    repository: str
    policy: LifecyclePolicy
    preview: LifecyclePolicyPreview
    expired: tuple[str, ...]  # digests deleted, the cascaded referrers last
    transitioned: tuple[str, ...]  # digests archived
    events: tuple[dict[str, Any], ...]
    evaluated_at: datetime

    def rule(self, priority: int) -> LifecycleRule:
        return next(rule for rule in self.policy.rules if rule.rule_priority == priority)


def execute_lifecycle_policy(
    ecr: Any,
    repository: str,
    *,
    registry_id: str,
    region: str,
    now: datetime | None = None,
    policy_id: str | None = None,
) -> LifecycleExecution:
    """Evaluate the repository's lifecycle policy as ECR does at `now` and act on it through the ECR API.
    `policy_id`: the id the events name (a new one by default: ECR's is not in its API)."""
    registry = EcrRegistry(ecr, registry_id, region)
    text = registry.lifecycle_policy(repository)
    if text is None:
        raise LifecycleExecutionError(f"{repository} has no lifecycle policy")
    policy = parse_policy(text, f"the lifecycle policy of {repository}")
    evaluated_at = now or datetime.now(UTC)
    snapshot = snapshot_repository(registry, repository, MemoryManifestCache())
    evaluation = evaluate(policy, snapshot.image_details, evaluated_at, snapshot.manifests)
    preview = build_preview(evaluation, repository_name=repository, registry_id=registry_id, policy_text=text)
    ruled = {result.image_digest: result.action.type for result in preview.preview_results}
    cascaded = {referrer.image_digest: referrer.action.type for referrer in preview.cascaded_referrers}
    expired = [digest for digest, action in (*ruled.items(), *cascaded.items()) if action == "EXPIRE"]
    archived = [digest for digest, action in (*ruled.items(), *cascaded.items()) if action == "TRANSITION"]
    _confirm(repository, "expire", expired, registry.delete_images(repository, expired))
    _confirm(repository, "transition", archived, registry.archive_images(repository, archived))
    events = policy_execution_events(
        preview,
        policy,
        account=registry_id,
        region=region,
        at=evaluated_at,
        policy_id=policy_id or str(uuid.uuid4()),
    )
    return LifecycleExecution(
        repository=repository,
        policy=policy,
        preview=preview,
        expired=tuple(expired),
        transitioned=tuple(archived),
        events=events,
        evaluated_at=evaluated_at,
    )


def _confirm(repository: str, action: str, digests: Sequence[str], outcome: BatchOutcome) -> None:
    """ECR's own lifecycle action does not fail on an image it selected; the emulator's calls must not either."""
    missing = sorted(set(digests) - set(outcome.done))
    if missing:
        failures = ", ".join(f"{failure.image_digest}: {failure.code}" for failure in outcome.failed) or "no answer"
        raise LifecycleExecutionError(f"{action} in {repository}: {len(missing)} images not done ({failures})")


def policy_execution_events(
    preview: LifecyclePolicyPreview,
    policy: LifecyclePolicy,
    *,
    account: str,
    region: str,
    at: datetime,
    policy_id: str,
    policy_version: int = 1,
) -> tuple[dict[str, Any], ...]:
    """The EventBridge events of one lifecycle evaluation: one PolicyExecutionEvent per MAX_IMAGES_PER_EVENT images
    acted on, in the preview's order (by rule priority, each rule's images oldest first). None when nothing acted."""
    actions = [
        image_action(result.image_digest, result.image_tags, result.image_pushed_at, result.applied_rule_priority)
        for result in preview.preview_results
    ]
    repository = str(preview.repository_name)
    chunks = [actions[start : start + MAX_IMAGES_PER_EVENT] for start in range(0, len(actions), MAX_IMAGES_PER_EVENT)]
    lifecycle_policy = {
        "lifecycleEventRules": [event_rule(rule) for rule in policy.ordered_rules],
        "lastEvaluatedAt": _millis(at),
        "policyVersion": policy_version,
        "policyId": policy_id,
    }
    return tuple(
        service_event(
            {
                "repositoryName": repository,
                "lifecycleEventPolicy": lifecycle_policy,
                "lifecycleEventImageActions": chunk,
                "lifecycleEventFailureDetails": [],
            },
            repository=repository,
            account=account,
            region=region,
            at=at,
        )
        for chunk in chunks
    )


def image_action(digest: str, tags: Sequence[str], pushed_at: datetime, rule_priority: int) -> dict[str, Any]:
    """One entry of `lifecycleEventImageActions`."""
    return {
        "lifecycleEventImage": {
            "digest": digest,
            "tagStatus": "Tagged" if tags else "Untagged",
            "tagList": list(tags[:MAX_TAGS]),
            "pushedAt": _millis(pushed_at),
        },
        "rulePriority": rule_priority,
    }


def event_rule(rule: LifecycleRule) -> dict[str, Any]:
    """One entry of `lifecycleEventRules`: the rule as the CloudTrail record words it."""
    selection = rule.selection
    words: dict[str, Any] = {
        "tagStatus": TAG_STATUS_WORDS[selection.tag_status],
        "tagPrefixList": list(selection.tag_prefix_list or ()),
        "tagPatternList": list(selection.tag_pattern_list or ()),
        "countType": COUNT_TYPE_WORDS[selection.count_type],
    }
    if selection.count_unit is not None:
        words["countUnit"] = "Days"
    words["countNumber"] = selection.count_number
    entry: dict[str, Any] = {"rulePriority": rule.rule_priority}
    if rule.description is not None:
        entry["description"] = rule.description
    return {**entry, "lifecycleEventSelection": words, "action": rule.action.type}


def service_event(
    details: dict[str, Any], *, repository: str, account: str, region: str, at: datetime
) -> dict[str, Any]:
    """A CloudTrail service event of ECR about one repository, as EventBridge delivers it."""
    record = {
        "eventVersion": "1.05",
        "userIdentity": {"accountId": account, "invokedBy": "AWS Internal"},
        "eventTime": _iso(at),
        "eventSource": "ecr.amazonaws.com",
        "eventName": "PolicyExecutionEvent",
        "awsRegion": region,
        "sourceIPAddress": "AWS Internal",
        "userAgent": "AWS Internal",
        "requestParameters": None,
        "responseElements": None,
        "eventID": str(uuid.uuid4()),
        "readOnly": True,
        "resources": [
            {
                "ARN": f"arn:aws:ecr:{region}:{account}:repository/{repository}",
                "accountId": account,
                "type": "AWS::ECR::Repository",
            }
        ],
        "eventType": "AwsServiceEvent",
        "recipientAccountId": account,
        "serviceEventDetails": details,
        "eventCategory": "Management",
    }
    return envelope(SERVICE_EVENT, record, account=account, region=region, at=at)


def image_action_event(
    repository: str,
    digest: str,
    *,
    account: str,
    region: str,
    at: datetime,
    tag: str | None = None,
    action: Literal["DELETE", "UPDATE_STORAGE_CLASS"] = "DELETE",
    target_storage_class: Literal["ARCHIVE", "STANDARD"] | None = None,
) -> dict[str, Any]:
    """An `ECR Image Action` event (reference/ecr-lifecycle.md section 5: a push event's shape, with `action-type`
    DELETE, or UPDATE_STORAGE_CLASS and `target-storage-class`)."""
    detail: dict[str, Any] = {
        "result": "SUCCESS",
        "repository-name": repository,
        "image-digest": digest,
        "action-type": action,
    }
    if tag is not None:
        detail["image-tag"] = tag
    if target_storage_class is not None:
        detail["target-storage-class"] = target_storage_class
    return envelope(IMAGE_ACTION, detail, account=account, region=region, at=at)


def envelope(detail_type: str, detail: dict[str, Any], *, account: str, region: str, at: datetime) -> dict[str, Any]:
    """An event as EventBridge delivers it to a rule's target (`resources` is empty for ECR's image actions)."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": SOURCE,
        "account": account,
        "time": _iso(at),
        "region": region,
        "resources": [],
        "detail": detail,
    }


def removed_digests(events: Iterable[dict[str, Any]]) -> list[str]:
    """The digests the lifecycle events name, in their order."""
    return [
        action["lifecycleEventImage"]["digest"]
        for event in events
        for action in event["detail"]["serviceEventDetails"]["lifecycleEventImageActions"]
    ]


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
