"""The guard events (domain/sentinel/guard_events.py) as the sentinel's guard rules deliver them (`{"guard": <event>}`): a change
of the inventory bucket's own guards, the break-glass role assumed, a call made as it; each gives one alert naming
what, who, when and what follows. The fixtures are tests/fixtures/guards/ (SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.sentinel.guard_events import SUBJECT_LIMIT, guard_body, guard_subject
from ecr_retention.handlers.events import parse_event
from ecr_retention.handlers.guard import GuardDelivery
from ecr_retention.layout import is_guard_delivery

FIXTURES = Path(__file__).parents[1] / "fixtures" / "guards"


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return loaded


def delivered(event: dict[str, Any]) -> Any:
    return parse_event({"guard": event}, GuardDelivery, "sentinel guard event").guard.detail


def test_every_fixture_parses_as_a_guard_delivery() -> None:
    names = sorted(path.name for path in FIXTURES.glob("*.json"))
    assert len(names) == 3
    kinds = {name: delivered(fixture(name)).kind for name in names}
    assert kinds == {
        "assume-break-glass-role.json": "break-glass-assumed",
        "break-glass-batch-delete-image.json": "break-glass-used",
        "put-bucket-policy.json": "bucket-guard",
    }


def test_a_refused_bucket_policy_change_names_the_bucket_the_caller_and_the_attempt() -> None:
    call = delivered(fixture("put-bucket-policy.json"))
    assert guard_subject(call) == "ecr-retention sentinel: PutBucketPolicy on the inventory bucket (refused)"
    body = guard_body(call)
    assert body.splitlines()[:4] == [
        "PutBucketPolicy on the inventory bucket ecr-retention-inventory-example.",
        "By: arn:aws:sts::123456789012:assumed-role/Admin/mary (MFA: false)",
        "When: 2026-12-02 10:15:00 UTC, from 203.0.113.7, in eu-west-1",
        "Refused: AccessDenied. Nothing changed, but someone tried.",
    ]
    assert "CloudTrail event: 3c6f2a8e-9f5d-4d0e-8a54-1b2c3d4e5f60" in body
    assert "compare the bucket with the stack (cdk diff)" in body


def test_the_break_glass_role_assumed_names_who_and_whether_with_mfa() -> None:
    call = delivered(fixture("assume-break-glass-role.json"))
    assert guard_subject(call) == "ecr-retention sentinel: the break-glass role was assumed"
    body = guard_body(call)
    assert body.startswith(
        "The break-glass role arn:aws:iam::123456789012:role/ecr-retention-break-glass was assumed "
        "(session incident-4711).\nBy: arn:aws:iam::123456789012:user/mary (MFA: true)\n"
    )
    assert "Confirm that this is an agreed recovery." in body


def test_a_call_made_as_the_break_glass_role_names_the_call_and_the_role() -> None:
    call = delivered(fixture("break-glass-batch-delete-image.json"))
    assert guard_subject(call) == "ecr-retention sentinel: the break-glass role called BatchDeleteImage"
    assert guard_body(call).startswith(
        "The break-glass role arn:aws:iam::123456789012:role/ecr-retention-break-glass called BatchDeleteImage "
        "of ecr.amazonaws.com.\n"
    )


def test_a_subject_stays_within_what_sns_accepts() -> None:
    event = fixture("break-glass-batch-delete-image.json")
    event["detail"]["eventName"] = "Describe" + "X" * 200
    assert len(guard_subject(delivered(event))) == SUBJECT_LIMIT


def test_only_a_guard_delivery_is_routed_to_the_guard_alert() -> None:
    assert is_guard_delivery({"guard": fixture("put-bucket-policy.json")})
    assert not is_guard_delivery(fixture("put-bucket-policy.json"))
    assert not is_guard_delivery({"guard": {}, "detail": {}})


def test_a_malformed_guard_delivery_is_refused_in_one_line() -> None:
    event = fixture("put-bucket-policy.json")
    del event["detail"]["eventID"]
    with pytest.raises(InputError, match=r"^sentinel guard event: guard\.detail\.eventID: required but missing$"):
        delivered(event)
