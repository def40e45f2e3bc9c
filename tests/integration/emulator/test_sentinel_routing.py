"""ECR's events routed as the stack routes them: moto's EventBridge with rules whose patterns are exactly
`ecr_retention.layout`'s, an SQS queue standing for the sentinel function. Each pattern delivers what it must and
nothing else, and what is delivered is the event ECR emitted."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID

from ecr_retention_dev.emulator.eventbridge import EventRoutes
from ecr_retention_dev.emulator.lifecycle import envelope, image_action_event, service_event

from .conftest import REGION

AT = datetime(2026, 12, 1, 9, 14, tzinfo=UTC)
DIGEST = "sha256:" + "b" * 64


@pytest.fixture
def aws() -> Iterator[tuple[Any, Any]]:
    with mock_aws():
        yield boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)


def action(kind: str, **options: Any) -> dict[str, Any]:
    return image_action_event(
        "app", DIGEST, account=DEFAULT_ACCOUNT_ID, region=REGION, at=AT, **options, tag=f"{kind}-tag"
    )


def lifecycle() -> dict[str, Any]:
    return service_event(
        {"repositoryName": "app", "lifecycleEventImageActions": []},
        repository="app",
        account=DEFAULT_ACCOUNT_ID,
        region=REGION,
        at=AT,
    )


def api_call(name: str) -> dict[str, Any]:
    record = {"eventSource": "ecr.amazonaws.com", "eventName": name, "requestParameters": {"repositoryName": "app"}}
    return envelope("AWS API Call via CloudTrail", record, account=DEFAULT_ACCOUNT_ID, region=REGION, at=AT)


def without_id(event: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in event.items() if key != "id"}


def test_each_rule_delivers_the_events_its_pattern_matches_and_nothing_else(aws: tuple[Any, Any]) -> None:
    # Given the stack's rules (the API call rule off, as without a trail)
    routes = EventRoutes(*aws).create()
    deleted = action("deleted")
    archived = action("archived", action="UPDATE_STORAGE_CLASS", target_storage_class="ARCHIVE")
    expired = lifecycle()
    ignored = [
        action("pushed", action="PUSH"),
        action("restored", action="UPDATE_STORAGE_CLASS", target_storage_class="STANDARD"),
        {**action("failed"), "detail": {**action("failed")["detail"], "result": "FAILURE"}},
        {**lifecycle(), "detail": {**lifecycle()["detail"], "eventName": "DryRunEvent"}},  # a preview
        {**deleted, "source": "my.app"},
        api_call("PutLifecyclePolicy"),
    ]

    # When ECR emits them
    routes.emit([deleted, ignored[0], archived, *ignored[1:], expired])

    # Then the function receives exactly the three, as EventBridge delivers them
    delivered = routes.delivered()
    assert [without_id(event) for event in delivered] == [
        without_id(deleted),
        without_id(archived),
        without_id(expired),
    ]
    assert all(event["id"] for event in delivered)
    assert routes.delivered() == []


def test_api_calls_are_delivered_only_with_a_trail(aws: tuple[Any, Any]) -> None:
    routes = EventRoutes(*aws).create(api_calls=True)

    routes.emit([api_call("PutLifecyclePolicy"), api_call("BatchDeleteImage"), api_call("DescribeImages")])

    assert [event["detail"]["eventName"] for event in routes.delivered()] == ["PutLifecyclePolicy", "BatchDeleteImage"]


def test_more_than_ten_events_go_in_several_put_events_calls(aws: tuple[Any, Any]) -> None:
    routes = EventRoutes(*aws).create()

    routes.emit([lifecycle() for _ in range(23)])

    assert len(routes.delivered()) == 23
