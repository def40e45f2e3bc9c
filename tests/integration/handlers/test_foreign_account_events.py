"""The functions refuse an event of another account (docs/safety.md section 30), on moto with the environment the
stack sets: another account's genuine ECR event, delivered because a bus admits other accounts, is one warning line
and changes nothing; the sentinel compares with the registry it watches (REGISTRY_ID), the push function with the
account of its own ARN (the Lambda context), and neither calls STS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
from moto.core.models import DEFAULT_ACCOUNT_ID

from ecr_retention.layout import GUARD_DELIVERY_KEY
from support.lambda_stack import REGION, FakeContext, Stack, ecr_push_event, sqs_record
from support.log_lines import warnings_of

FOREIGN = "210987654321"
GUARDS = Path(__file__).parents[2] / "fixtures" / "guards"


def of_account(event: dict[str, Any], account: str) -> dict[str, Any]:
    return {**event, "account": account}


def image_deleted(repository: str, digest: str, tag: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "1f5c0f4e-7e2f-4b55-9d7f-3f7a5e0b9a10",
        "detail-type": "ECR Image Action",
        "source": "aws.ecr",
        "account": DEFAULT_ACCOUNT_ID,
        "time": "2026-11-30T06:00:00Z",
        "region": REGION,
        "resources": [],
        "detail": {
            "result": "SUCCESS",
            "action-type": "DELETE",
            "repository-name": repository,
            "image-digest": digest,
            "image-tag": tag,
        },
    }


def sentinel(event: dict[str, Any]) -> dict[str, Any]:
    from ecr_retention.handlers import sentinel as handler

    result: dict[str, Any] = handler.lambda_handler(event, FakeContext())
    return result


def test_another_accounts_deletion_of_a_same_named_image_is_one_warning_line_and_nothing_else(stack: Stack) -> None:
    # Given prod runs app v2, and another account deletes its own app:v2 (the same digest, as a mirror has)
    running = stack.images["v2"]
    boto3.client("ecr", region_name=REGION).batch_delete_image(
        repositoryName="app", imageIds=[{"imageDigest": running}]
    )
    # When that account's event reaches this sentinel
    with warnings_of("ecr_retention.services.sentinel") as lines:
        result = sentinel(of_account(image_deleted("app", running, "v2"), FOREIGN))
    # Then nothing is recorded or alerted, and one warning line names the account
    assert result["alerted"] is False
    assert f"came from account {FOREIGN}" in result["ignored"]
    assert stack.messages() == []
    assert "Contents" not in stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix="removals/")
    assert lines == [result["ignored"]]


def test_the_same_deletion_in_this_account_is_alerted(stack: Stack) -> None:
    running = stack.images["v2"]
    boto3.client("ecr", region_name=REGION).batch_delete_image(
        repositoryName="app", imageIds=[{"imageDigest": running}]
    )
    result = sentinel(image_deleted("app", running, "v2"))
    assert result["alerted"] is True
    assert len(stack.messages()) == 1


def test_another_accounts_guard_event_is_not_alerted(stack: Stack) -> None:
    event = json.loads((GUARDS / "put-bucket-policy.json").read_text())
    result = sentinel({GUARD_DELIVERY_KEY: of_account(event, FOREIGN)})
    assert result["alerted"] is False
    assert f"came from account {FOREIGN}" in result["ignored"]
    assert stack.messages() == []


def test_a_push_of_another_account_starts_no_run_and_its_message_is_not_retried(stack: Stack) -> None:
    from ecr_retention.handlers import push
    from ecr_retention.handlers.observability import SERVICE

    foreign = sqs_record(json.dumps(of_account(ecr_push_event("app", "v9"), FOREIGN)), "foreign")
    with warnings_of(SERVICE) as lines:
        response = push.lambda_handler({"Records": [foreign]}, FakeContext())
    assert response == {"batchItemFailures": []}
    sfn = boto3.client("stepfunctions", region_name=REGION)
    assert sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"] == []
    [line] = lines
    assert line.startswith("push event ")
    assert FOREIGN in line


def test_a_batch_of_both_accounts_starts_a_run_for_this_accounts_push_only(stack: Stack) -> None:
    from ecr_retention.handlers import push

    records = [
        sqs_record(json.dumps(of_account(ecr_push_event("backend", "v1"), FOREIGN)), "foreign"),
        sqs_record(json.dumps(ecr_push_event("app", "v9")), "ours"),
    ]
    push.lambda_handler({"Records": records}, FakeContext())
    sfn = boto3.client("stepfunctions", region_name=REGION)
    [execution] = sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"]
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == {"trigger": "push", "repositories": ["app"]}
