"""The sentinel function on moto (`mock_aws`, with the emulator's ECR fidelity for archives): the event as EventBridge
delivers it, the environment the stack sets, an alert read from the queue subscribed to the report topic."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID

from ecr_retention.domain.in_use.references import Removal
from ecr_retention.layout import ALERT_CLAIM_SUFFIX, removals_prefix
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from support.lambda_stack import HOST, REGION, SENTINEL_ROLE_ARN, FakeContext, Stack, push


@pytest.fixture
def ecr(stack: Stack) -> Iterator[Any]:
    with EcrFidelity():
        yield boto3.client("ecr", region_name=REGION)


def eventbridge(detail_type: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": "aws.ecr",
        "account": DEFAULT_ACCOUNT_ID,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [],
        "detail": detail,
    }


def image_action(action: str, repository: str, digest: str, **more: str) -> dict[str, Any]:
    detail = {"result": "SUCCESS", "action-type": action, "repository-name": repository, "image-digest": digest}
    return eventbridge("ECR Image Action", {**detail, **more})


def status(ecr: Any, repository: str, digest: str) -> str:
    [detail] = ecr.describe_images(
        repositoryName=repository, imageIds=[{"imageDigest": digest}], filter={"imageStatus": "ANY"}
    )["imageDetails"]
    return str(detail.get("imageStatus", "ACTIVE"))


def _json_line(line: str) -> dict[str, Any]:
    try:
        document = json.loads(line)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def sentinel(event: dict[str, Any]) -> dict[str, Any]:
    from ecr_retention.handlers import sentinel as handler

    result: dict[str, Any] = handler.lambda_handler(event, FakeContext())
    return result


def test_a_deleted_in_use_image_is_alerted_on_the_report_topic_and_recorded(stack: Stack, ecr: Any) -> None:
    # Given prod runs app v2 (by digest) and someone deletes it
    running = stack.images["v2"]
    ecr.batch_delete_image(repositoryName="app", imageIds=[{"imageDigest": running}])
    # When ECR's DELETE event reaches the sentinel
    result = sentinel(image_action("DELETE", "app", running, **{"image-tag": "v2"}))
    # Then one alert names the workload, the image and what follows
    [message] = stack.messages()
    assert message["Subject"].startswith("ecr-retention sentinel: app@sha256:")
    assert "prod: prod/Deployment/app (pod)" in message["Message"]
    assert "no longer exists: the next pull fails" in message["Message"]
    assert message["MessageAttributes"]["kind"]["Value"] == "sentinel"
    assert result["alerted"] is True
    # And the removal is on record, readable as a Removal
    listed = stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix=removals_prefix("app"))["Contents"]
    [record] = [
        Removal.model_validate_json(stack.s3().get_object(Bucket=stack.bucket, Key=o["Key"])["Body"].read())
        for o in listed
        if not o["Key"].endswith(ALERT_CLAIM_SUFFIX)  # beside it, the claim of the event's one alert
    ]
    assert (record.image_digest, record.image_tags, record.cause) == (running, ("v2",), "image-action")


def test_an_archived_in_use_image_in_a_managed_repository_is_restored_at_once(stack: Stack, ecr: Any) -> None:
    running = stack.images["v2"]
    ecr.update_image_storage_class(repositoryName="app", imageId={"imageDigest": running}, targetStorageClass="ARCHIVE")
    sentinel(image_action("UPDATE_STORAGE_CLASS", "app", running, **{"target-storage-class": "ARCHIVE"}))
    assert status(ecr, "app", running) == "ACTIVATING"
    [message] = stack.messages()
    assert "Restore: restore started" in message["Message"]


def test_an_archived_in_use_image_in_an_unmanaged_repository_is_not_restored(stack: Stack, ecr: Any) -> None:
    # Given ops runs tools:1.0, a repository no policy of the rules file manages, and it is archived
    ecr.create_repository(repositoryName="tools")
    digest = push(ecr, "tools", "1.0", age=datetime.now(UTC) - datetime.now(UTC), seed="tools-1.0")
    stack.s3().put_object(
        Bucket=stack.bucket,
        Key="in-use/ops.json",
        Body=json.dumps(
            {
                "schemaVersion": 1,
                "cluster": "ops",
                "generatedAt": datetime.now(UTC).isoformat(),
                "complete": True,
                "images": [
                    {
                        "image": f"{HOST}/tools:1.0",
                        "digest": digest,
                        "namespace": "ops",
                        "workload": "CronJob/backup",
                        "container": "backup",
                        "source": "cronjob",
                    }
                ],
            }
        ),
    )
    ecr.update_image_storage_class(
        repositoryName="tools", imageId={"imageDigest": digest}, targetStorageClass="ARCHIVE"
    )
    # When the archive event reaches the sentinel
    sentinel(image_action("UPDATE_STORAGE_CLASS", "tools", digest, **{"target-storage-class": "ARCHIVE"}))
    # Then it stays archived, and the alert says why
    assert status(ecr, "tools", digest) == "ARCHIVED"
    [message] = stack.messages()
    assert "ops: ops/CronJob/backup (cronjob)" in message["Message"]
    assert "not restored: no policy of the rules file manages this repository" in message["Message"]


def test_a_new_lifecycle_policy_that_would_expire_a_running_image_is_alerted(stack: Stack, ecr: Any) -> None:
    policy = {
        "rules": [
            {
                "rulePriority": 1,
                "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1},
                "action": {"type": "expire"},
            }
        ]
    }
    ecr.put_lifecycle_policy(repositoryName="app", lifecyclePolicyText=json.dumps(policy))  # read back by the sentinel
    event = eventbridge(
        "AWS API Call via CloudTrail",
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "PutLifecyclePolicy",
            "eventID": str(uuid.uuid4()),
            "eventTime": datetime.now(UTC).isoformat(),
            "userIdentity": {"arn": f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:user/Mary_Major"},
            "requestParameters": {"repositoryName": "app", "lifecyclePolicyText": json.dumps(policy)},
        },
    )
    result = sentinel(event)
    [message] = stack.messages()
    assert "the new lifecycle policy of app" in message["Subject"]
    assert "prod: prod/Deployment/app (pod)" in message["Message"]
    assert result["policyFindings"] >= 1
    assert stack.digests("app") == set(stack.images.values())  # the sentinel never deletes


def test_a_removal_of_an_image_nothing_runs_is_recorded_not_alerted(stack: Stack, ecr: Any) -> None:
    old = stack.images["v1"]
    ecr.batch_delete_image(repositoryName="app", imageIds=[{"imageDigest": old}])
    result = sentinel(image_action("DELETE", "app", old, **{"image-tag": "v1"}))
    assert stack.messages() == []
    assert result == {**result, "alerted": False, "recorded": 1}


def test_a_deleted_tag_a_workload_pulls_by_tag_is_confirmed_gone_through_the_registry(stack: Stack, ecr: Any) -> None:
    # Given dev pulls app:v3 by tag, and someone removes the tag v3 (its image had no other tag: it goes too)
    stack.s3().put_object(
        Bucket=stack.bucket,
        Key="in-use/dev.json",
        Body=json.dumps(
            {
                "schemaVersion": 1,
                "cluster": "dev",
                "generatedAt": datetime.now(UTC).isoformat(),
                "complete": True,
                "images": [
                    {
                        "image": f"{HOST}/app:v3",
                        "namespace": "dev",
                        "workload": "Deployment/app",
                        "container": "app",
                        "source": "template",
                    }
                ],
            }
        ),
    )
    ecr.batch_delete_image(repositoryName="app", imageIds=[{"imageTag": "v3"}])
    # When the DELETE event reaches the sentinel
    sentinel(image_action("DELETE", "app", stack.images["v3"], **{"image-tag": "v3"}))
    # Then the registry, asked by tag, confirms it gone, and the alert names dev's workload
    [message] = stack.messages()
    assert "app:v3 no longer exists: the next pull fails" in message["Message"]
    assert "dev: dev/Deployment/app (template)" in message["Message"]


def test_one_event_delivered_twice_is_one_alert(stack: Stack, ecr: Any) -> None:
    """EventBridge delivers at least once: the same event (same id) twice, and the topic hears of it once. The claim
    is S3's conditional write (If-None-Match), as moto answers it."""
    running = stack.images["v2"]
    ecr.batch_delete_image(repositoryName="app", imageIds=[{"imageDigest": running}])
    event = image_action("DELETE", "app", running, **{"image-tag": "v2"})
    first, second = sentinel(event), sentinel(event)
    assert (first["alerted"], second["alerted"]) == (True, False)
    assert len(stack.messages()) == 1


def test_a_forged_record_of_removals_does_not_silence_the_alert(stack: Stack, ecr: Any) -> None:
    # Given someone other than the sentinel wrote a record saying the alert for the image went out, then deleted it
    running = stack.images["v2"]
    forged = {
        "schemaVersion": 1,
        "repositoryName": "app",
        "imageDigest": running,
        "action": "deleted",
        "cause": "image-action",
        "removedAt": datetime.now(UTC).isoformat(),
        "eventId": "forged",
        "alerted": [f"app@{running[:19]}"],
        "writer": f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/Insider",
    }
    key = f"{removals_prefix('app')}{datetime.now(UTC):%Y%m%dT%H%M%SZ}-forged-0.json"
    stack.s3().put_object(Bucket=stack.bucket, Key=key, Body=json.dumps(forged))
    ecr.batch_delete_image(repositoryName="app", imageIds=[{"imageDigest": running}])
    # When ECR's DELETE event reaches the sentinel, the alert goes out and names the record it ignored
    sentinel(image_action("DELETE", "app", running, **{"image-tag": "v2"}))
    [message] = stack.messages()
    assert f"s3://{stack.bucket}/{key} (writer arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/Insider)" in message["Message"]
    # And the sentinel's own record names its writer
    [record] = [
        Removal.model_validate_json(stack.s3().get_object(Bucket=stack.bucket, Key=o["Key"])["Body"].read())
        for o in stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix=removals_prefix("app"))["Contents"]
        if o["Key"] != key and not o["Key"].endswith(ALERT_CLAIM_SUFFIX)
    ]
    assert record.writer == SENTINEL_ROLE_ARN
