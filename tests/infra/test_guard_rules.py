"""With a trail (`cloudTrailManagementEvents`), the sentinel also hears every call that changes the inventory bucket's
own guards and, with a break-glass role, its assumption and every call made as it: layout.py's patterns, matched
against the fixtures of tests/fixtures/guards/ with moto's EventBridge matcher, each rule delivering the whole event
under `guard` to the sentinel function with retries and its dead-letter queue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template
from moto.events.models import EventPattern

from ecr_retention import layout
from ecr_retention.cdk.event_provenance import ALL_MANAGEMENT_EVENTS
from ecr_retention.cdk.sentinel import GUARD_INPUT_TEMPLATE
from ecr_retention.cdk.stack import EcrRetentionStack
from support.infra_stacks import CONTEXT, RULES, SharedStack, build_stack, rules_file

GUARDS = Path(__file__).parents[1] / "fixtures" / "guards"
SENTINEL_FIXTURES = Path(__file__).parents[1] / "fixtures" / "sentinel"
BUCKET = "ecr-retention-inventory-example"
BREAK_GLASS = "arn:aws:iam::123456789012:role/ecr-retention-break-glass"
DELIVERY = {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 3}


def fixtures(directory: Path) -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def matched(pattern: dict[str, Any]) -> set[str]:
    events = {**fixtures(GUARDS), **fixtures(SENTINEL_FIXTURES)}
    loaded = EventPattern.load(json.dumps(pattern))
    return {name for name, event in events.items() if loaded.matches_event(event)}


@pytest.mark.parametrize(
    ("pattern", "names"),
    [
        (layout.bucket_guard_pattern(BUCKET), {"put-bucket-policy.json"}),
        (layout.bucket_guard_pattern("another-bucket"), set()),
        (layout.break_glass_assumed_pattern(BREAK_GLASS), {"assume-break-glass-role.json"}),
        (layout.break_glass_used_pattern(BREAK_GLASS), {"break-glass-batch-delete-image.json"}),
        (layout.break_glass_assumed_pattern(BREAK_GLASS.replace("break-glass", "other")), set()),
    ],
)
def test_each_guard_pattern_matches_its_events_and_no_other(pattern: dict[str, Any], names: set[str]) -> None:
    assert matched(pattern) == names


def test_a_deletion_made_as_the_break_glass_role_is_also_watched_as_a_removal() -> None:
    assert "break-glass-batch-delete-image.json" in matched(layout.API_CALL_PATTERN)


def test_every_call_that_changes_a_bucket_guard_is_in_the_pattern() -> None:
    event = fixtures(GUARDS)["put-bucket-policy.json"]
    loaded = EventPattern.load(json.dumps(layout.bucket_guard_pattern(BUCKET)))
    for name in layout.BUCKET_GUARD_EVENT_NAMES:
        event["detail"]["eventName"] = name
        assert loaded.matches_event(event), name
    event["detail"]["eventName"] = "GetBucketPolicy"
    assert not loaded.matches_event(event)


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    context = {**CONTEXT, "cloudTrailManagementEvents": True, "breakGlassRoleArn": BREAK_GLASS}
    return shared_stack(RULES, context)


def guard_rules(stack: EcrRetentionStack) -> dict[str, dict[str, Any]]:
    template = Template.from_stack(stack).to_json()
    ids = {name: stack.get_logical_id(rule.node.default_child) for name, rule in stack.sentinel.rules.items()}  # type: ignore[arg-type]
    wanted = ("BucketGuardChanged", "BreakGlassAssumed", "BreakGlassUsed")
    return {name: template["Resources"][ids[name]]["Properties"] for name in wanted if name in ids}


@pytest.mark.slow
def test_the_guard_rules_watch_this_bucket_and_this_break_glass_role(stack: EcrRetentionStack) -> None:
    rules = guard_rules(stack)
    bucket = {"Ref": stack.get_logical_id(stack.inventory.bucket.node.default_child)}  # type: ignore[arg-type]
    # Each of this account only (tests/infra/test_event_provenance.py).
    ours = {"account": [{"Ref": "AWS::AccountId"}]}
    assert rules["BucketGuardChanged"]["EventPattern"] == {**layout.bucket_guard_pattern(bucket), **ours}  # type: ignore[arg-type]
    assert rules["BreakGlassAssumed"]["EventPattern"] == {**layout.break_glass_assumed_pattern(BREAK_GLASS), **ours}
    assert rules["BreakGlassUsed"]["EventPattern"] == {**layout.break_glass_used_pattern(BREAK_GLASS), **ours}
    # AssumeRole, and a Get or List made as the role, are read-only management events: only this state matches them.
    assert rules["BreakGlassAssumed"]["State"] == rules["BreakGlassUsed"]["State"] == ALL_MANAGEMENT_EVENTS
    assert rules["BucketGuardChanged"]["State"] == "ENABLED"


@pytest.mark.slow
def test_each_guard_rule_delivers_the_whole_event_under_guard_to_the_sentinel(stack: EcrRetentionStack) -> None:
    function = {"Fn::GetAtt": [stack.get_logical_id(stack.sentinel.function.node.default_child), "Arn"]}  # type: ignore[arg-type]
    queue = {"Fn::GetAtt": [stack.get_logical_id(stack.sentinel.dead_letters.node.default_child), "Arn"]}  # type: ignore[arg-type]
    for name, rule in guard_rules(stack).items():
        [target] = rule["Targets"]
        assert target["Arn"] == function, name
        assert target["InputTransformer"] == {"InputTemplate": '{"guard": <aws.events.event.json>}'}, name
        assert target["DeadLetterConfig"] == {"Arn": queue}
        assert target["RetryPolicy"] == DELIVERY
    assert GUARD_INPUT_TEMPLATE == '{"guard": <aws.events.event.json>}'


@pytest.mark.slow
def test_without_a_trail_there_is_no_guard_rule_and_without_a_break_glass_role_only_the_buckets(
    tmp_path: Path,
) -> None:
    without_trail = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "breakGlassRoleArn": BREAK_GLASS})
    assert guard_rules(without_trail) == {}
    (tmp_path / "other").mkdir()
    without_break_glass = build_stack(
        rules_file(tmp_path / "other", RULES), {**CONTEXT, "cloudTrailManagementEvents": True}
    )
    assert set(guard_rules(without_break_glass)) == {"BucketGuardChanged"}
