"""The emulator's native lifecycle execution: a policy put through the ECR API acts as ECR's evaluation would (the
project's simulator decides), and ECR's PolicyExecutionEvent comes out, shaped as AWS documents it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID

from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.preview import preview
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention_dev.emulator.lifecycle import (
    MAX_IMAGES_PER_EVENT,
    LifecycleExecutionError,
    execute_lifecycle_policy,
    image_action_event,
    removed_digests,
)
from ecr_retention_dev.emulator.seeding import MotoEcr, iter_details
from ecr_retention_dev.scenario import incident_policy

from .conftest import REGION

NOW = datetime(2026, 12, 1, 9, 14, tzinfo=UTC)
REPO = "app"


def push_builds(seed: MotoEcr, count: int) -> dict[str, str]:
    """`count` builds of app, a day apart, the newest a day old; every fourth a dev build that takes `dev`.
    Returns tag -> digest."""
    tags: dict[str, str] = {}
    for n in range(count):
        age = timedelta(days=count - n)
        name = f"1.12.{n}-dev" if n % 4 == 3 else f"1.12.{n}"
        image = seed.push_image(REPO, name, seed=f"app-{n}", pushed_at=NOW - age)
        tags[name] = image.digest
        if name.endswith("-dev"):
            seed.client.put_image(
                repositoryName=REPO, imageManifest=image.manifest, imageTag="dev", imageDigest=image.digest
            )
            tags["dev"] = image.digest
    return tags


def describe(seed: MotoEcr) -> list[dict[str, Any]]:
    return list(iter_details(seed.client, REPO))


def test_the_incident_policy_expires_the_dev_image_and_everything_beyond_the_newest_three(seed: MotoEcr) -> None:
    # Given app with seven builds, the newest dev build fourth from the top, and the `dev` incident's policy
    seed.create_repository(REPO, lifecycle_policy=incident_policy(description="keep 3 version images"))
    tags = push_builds(seed, 7)
    untagged = seed.push_image(REPO, seed="rebuild", pushed_at=NOW - timedelta(days=30)).digest
    before = describe(seed)
    expected = preview(
        parse_policy(incident_policy(description="keep 3 version images")),
        [ImageDetail.model_validate(detail) for detail in before],
        NOW,
    )

    # When ECR's evaluation runs
    execution = execute_lifecycle_policy(seed.client, REPO, registry_id=DEFAULT_ACCOUNT_ID, region=REGION, now=NOW)

    # Then what lifecycle-preview says goes, the dev image with it, and nothing else
    gone = {result.image_digest for result in expected.preview_results}
    assert tags["dev"] in gone
    assert set(execution.expired) == gone
    assert {detail["imageDigest"] for detail in describe(seed)} == {d["imageDigest"] for d in before} - gone
    assert untagged not in gone  # no rule selects untagged images
    assert {tags["1.12.6"], tags["1.12.5"], tags["1.12.4"]}.isdisjoint(gone)


def test_the_event_is_shaped_as_aws_documents_it(seed: MotoEcr) -> None:
    seed.create_repository(REPO, lifecycle_policy=incident_policy(description="keep 3 version images"))
    tags = push_builds(seed, 5)

    execution = execute_lifecycle_policy(
        seed.client, REPO, registry_id=DEFAULT_ACCOUNT_ID, region=REGION, now=NOW, policy_id="policy-1"
    )

    [event] = execution.events
    assert {key: event[key] for key in ("version", "detail-type", "source", "account", "time", "region")} == {
        "version": "0",
        "detail-type": "AWS Service Event via CloudTrail",
        "source": "aws.ecr",
        "account": DEFAULT_ACCOUNT_ID,
        "time": "2026-12-01T09:14:00Z",
        "region": REGION,
    }
    record = event["detail"]
    assert (record["eventSource"], record["eventName"], record["eventType"]) == (
        "ecr.amazonaws.com",
        "PolicyExecutionEvent",
        "AwsServiceEvent",
    )
    assert record["userIdentity"] == {"accountId": DEFAULT_ACCOUNT_ID, "invokedBy": "AWS Internal"}
    assert record["resources"] == [
        {
            "ARN": f"arn:aws:ecr:{REGION}:{DEFAULT_ACCOUNT_ID}:repository/{REPO}",
            "accountId": DEFAULT_ACCOUNT_ID,
            "type": "AWS::ECR::Repository",
        }
    ]
    details = record["serviceEventDetails"]
    assert details["repositoryName"] == REPO
    assert details["lifecycleEventPolicy"] == {
        "lifecycleEventRules": [
            {
                "rulePriority": 1,
                "description": "keep 3 version images",
                "lifecycleEventSelection": {
                    "tagStatus": "Tagged",
                    "tagPrefixList": [],
                    "tagPatternList": ["*.*"],
                    "countType": "Image count more than",
                    "countNumber": 3,
                },
                "action": "expire",
            }
        ],
        "lastEvaluatedAt": int(NOW.timestamp() * 1000),
        "policyVersion": 1,
        "policyId": "policy-1",
    }
    # five builds: 1.12.4 1.12.3-dev(dev) 1.12.2 | 1.12.1 1.12.0 expire, oldest first
    assert details["lifecycleEventImageActions"] == [
        {
            "lifecycleEventImage": {
                "digest": tags[name],
                "tagStatus": "Tagged",
                "tagList": [name],
                "pushedAt": int((NOW - timedelta(days=5 - n)).timestamp() * 1000),
            },
            "rulePriority": 1,
        }
        for n, name in ((0, "1.12.0"), (1, "1.12.1"))
    ]
    json.dumps(event)  # as it travels


def test_more_than_ten_images_are_told_in_events_of_at_most_ten(seed: MotoEcr) -> None:
    seed.create_repository(REPO, lifecycle_policy=incident_policy(description="keep 3 version images"))
    push_builds(seed, 26)  # 23 expire

    execution = execute_lifecycle_policy(seed.client, REPO, registry_id=DEFAULT_ACCOUNT_ID, region=REGION, now=NOW)

    sizes = [len(event["detail"]["serviceEventDetails"]["lifecycleEventImageActions"]) for event in execution.events]
    assert sizes == [MAX_IMAGES_PER_EVENT, MAX_IMAGES_PER_EVENT, 3]
    assert removed_digests(execution.events) == list(execution.expired)
    assert len({event["detail"]["eventID"] for event in execution.events}) == 3


def test_a_transition_archives_instead_of_deleting(seed: MotoEcr) -> None:
    policy = {
        "rules": [
            {
                "rulePriority": 1,
                "description": "archive what nobody pulled for 30 days",
                "selection": {
                    "tagStatus": "any",
                    "countType": "sinceImagePulled",
                    "countUnit": "days",
                    "countNumber": 30,
                },
                "action": {"type": "transition", "targetStorageClass": "archive"},
            }
        ]
    }
    seed.create_repository(REPO, lifecycle_policy=json.dumps(policy))
    stale = seed.push_image(REPO, "1.0", seed="stale", pushed_at=NOW - timedelta(days=90)).digest
    fresh = seed.push_image(REPO, "1.1", seed="fresh", pushed_at=NOW - timedelta(days=2)).digest

    execution = execute_lifecycle_policy(seed.client, REPO, registry_id=DEFAULT_ACCOUNT_ID, region=REGION, now=NOW)

    status = {detail["imageDigest"]: detail.get("imageStatus") for detail in describe(seed)}
    assert status == {stale: "ARCHIVED", fresh: "ACTIVE"}
    assert (execution.expired, execution.transitioned) == ((), (stale,))
    [rule] = execution.events[0]["detail"]["serviceEventDetails"]["lifecycleEventPolicy"]["lifecycleEventRules"]
    assert rule["action"] == "transition"
    assert rule["lifecycleEventSelection"]["countUnit"] == "Days"


def test_nothing_to_do_sends_no_event(seed: MotoEcr) -> None:
    seed.create_repository(REPO, lifecycle_policy=incident_policy(description="keep 3 version images"))
    push_builds(seed, 3)

    execution = execute_lifecycle_policy(seed.client, REPO, registry_id=DEFAULT_ACCOUNT_ID, region=REGION, now=NOW)

    assert (execution.expired, execution.events) == ((), ())


def test_a_repository_without_a_policy_is_refused(seed: MotoEcr) -> None:
    seed.create_repository(REPO)

    with pytest.raises(LifecycleExecutionError, match="app has no lifecycle policy"):
        execute_lifecycle_policy(seed.client, REPO, registry_id=DEFAULT_ACCOUNT_ID, region=REGION, now=NOW)


def test_an_image_action_event_has_ecrs_shape() -> None:
    event = image_action_event(
        REPO,
        "sha256:" + "a" * 64,
        account=DEFAULT_ACCOUNT_ID,
        region=REGION,
        at=NOW,
        action="UPDATE_STORAGE_CLASS",
        target_storage_class="ARCHIVE",
    )

    assert (event["detail-type"], event["source"], event["resources"]) == ("ECR Image Action", "aws.ecr", [])
    assert event["detail"] == {
        "result": "SUCCESS",
        "repository-name": REPO,
        "image-digest": "sha256:" + "a" * 64,
        "action-type": "UPDATE_STORAGE_CLASS",
        "target-storage-class": "ARCHIVE",
    }


def test_put_lifecycle_policy_refuses_what_ecr_refuses(seed: MotoEcr) -> None:
    seed.create_repository(REPO)
    policy = json.loads(incident_policy(description="keep 3 version images"))
    policy["rules"][0]["selection"]["countUnit"] = "days"  # not allowed with imageCountMoreThan

    with pytest.raises(seed.client.exceptions.InvalidParameterException, match="Lifecycle policy validation failure"):
        seed.client.put_lifecycle_policy(repositoryName=REPO, lifecyclePolicyText=json.dumps(policy))
