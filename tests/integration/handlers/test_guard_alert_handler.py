"""The sentinel function on moto (`mock_aws`) for its guard rules: a change of the inventory bucket's own guards or a
use of the break-glass role, delivered as the rule's input transformer delivers it (`{"guard": <event>}`), is one
alert on the report topic, read from the queue subscribed to it, marked `kind=sentinel` like the sentinel's other
alerts; nothing is recorded under removals/ and nothing is watched as a removal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ecr_retention.layout import GUARD_DELIVERY_KEY
from support.lambda_stack import FakeContext, Stack

FIXTURES = Path(__file__).parents[2] / "fixtures" / "guards"


def delivery(name: str) -> dict[str, Any]:
    return {GUARD_DELIVERY_KEY: json.loads((FIXTURES / name).read_text())}


def sentinel(event: dict[str, Any]) -> dict[str, Any]:
    from ecr_retention.handlers import sentinel as handler

    result: dict[str, Any] = handler.lambda_handler(event, FakeContext())
    return result


def test_a_refused_change_of_the_bucket_policy_is_one_alert_on_the_report_topic(stack: Stack) -> None:
    result = sentinel(delivery("put-bucket-policy.json"))
    [message] = stack.messages()
    assert message["Subject"] == "ecr-retention sentinel: PutBucketPolicy on the inventory bucket (refused)"
    assert "By: arn:aws:sts::123456789012:assumed-role/Admin/mary" in message["Message"]
    assert message["MessageAttributes"]["kind"]["Value"] == "sentinel"
    assert result == {
        "guard": "bucket-guard",
        "eventId": "3c6f2a8e-9f5d-4d0e-8a54-1b2c3d4e5f60",
        "refused": True,
        "alerted": True,
    }
    assert "Contents" not in stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix="removals/")


def test_the_break_glass_role_assumed_is_one_alert(stack: Stack) -> None:
    sentinel(delivery("assume-break-glass-role.json"))
    [message] = stack.messages()
    assert message["Subject"] == "ecr-retention sentinel: the break-glass role was assumed"
    assert "(MFA: true)" in message["Message"]


def test_a_deletion_made_as_the_break_glass_role_through_its_guard_rule_is_the_break_glass_alert_only(
    stack: Stack,
) -> None:
    """The same call also reaches the sentinel through its API-call rule, unwrapped, and is watched there."""
    sentinel(delivery("break-glass-batch-delete-image.json"))
    [message] = stack.messages()
    assert message["Subject"] == "ecr-retention sentinel: the break-glass role called BatchDeleteImage"
    assert "Contents" not in stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix="removals/")
