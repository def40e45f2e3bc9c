"""The sentinel's rules: layout.py's patterns, matched against AWS's documented events (tests/fixtures/sentinel/) with
moto's EventBridge matcher; each delivered to the sentinel function with retries and its own dead-letter queue, which
also takes the function's asynchronous failures; the API-call rule only with a trail; the record of removals expired
by the bucket's lifecycle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks
from moto.events.models import EventPattern

from ecr_retention import layout
from ecr_retention.cdk import constants
from ecr_retention.cdk.stack import EcrRetentionStack
from support.infra_stacks import CONTEXT, RULES, SharedStack, build_stack, rules_file

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sentinel"
DELIVERY = {"RetryPolicy": {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 3}}


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    return shared_stack(RULES, CONTEXT)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> Template:
    return Template.from_stack(stack)


def logical_id(stack: EcrRetentionStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def sentinel_rules(template: Template, stack: EcrRetentionStack) -> list[dict[str, Any]]:
    function = logical_id(stack, stack.sentinel.function)
    return [
        r["Properties"]
        for r in template.find_resources("AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [function, "Arn"]}
    ]


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return loaded


def canonical(pattern: dict[str, Any]) -> str:
    return json.dumps(pattern, sort_keys=True)


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    return bool(EventPattern.load(json.dumps(pattern)).matches_event(event))


def without_account(pattern: dict[str, Any]) -> dict[str, Any]:
    """The rule's pattern less its `account`, which names this stack's account."""
    assert pattern["account"] == [{"Ref": "AWS::AccountId"}]
    return {key: value for key, value in pattern.items() if key != "account"}


@pytest.mark.slow
def test_without_a_trail_the_sentinel_hears_deletions_archives_and_lifecycle_actions(
    template: Template, stack: EcrRetentionStack
) -> None:
    # layout.py's patterns, each of this account only (tests/infra/test_event_provenance.py)
    patterns = [without_account(rule["EventPattern"]) for rule in sentinel_rules(template, stack)]
    assert sorted(patterns, key=canonical) == sorted(
        [layout.IMAGE_DELETED_PATTERN, layout.IMAGE_ARCHIVED_PATTERN, layout.LIFECYCLE_ACTION_PATTERN], key=canonical
    )


@pytest.mark.slow
def test_each_rule_delivers_with_retries_and_the_sentinels_dead_letter_queue(
    template: Template, stack: EcrRetentionStack
) -> None:
    queue = {"Fn::GetAtt": [logical_id(stack, stack.sentinel.dead_letters), "Arn"]}
    for rule in sentinel_rules(template, stack):
        [target] = rule["Targets"]
        assert target["DeadLetterConfig"] == {"Arn": queue}
        assert target["RetryPolicy"] == DELIVERY["RetryPolicy"]
    function = logical_id(stack, stack.sentinel.function)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Handler": "ecr_retention.handlers.sentinel.lambda_handler", "DeadLetterConfig": {"TargetArn": queue}},
    )
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"FunctionName": {"Ref": function}, "MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 7200},
    )


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [
        (layout.IMAGE_DELETED_PATTERN, {"image-deleted.json"}),
        (layout.IMAGE_ARCHIVED_PATTERN, {"image-archived.json"}),
        (layout.LIFECYCLE_ACTION_PATTERN, {"policy-execution.json"}),
        (layout.API_CALL_PATTERN, {"put-lifecycle-policy.json", "batch-delete-image.json"}),
    ],
)
def test_each_pattern_matches_its_documented_events_and_no_other(pattern: dict[str, Any], matched: set[str]) -> None:
    names = {path.name for path in FIXTURES.glob("*.json")}
    assert {name for name in names if matches(pattern, fixture(name))} == matched


def test_no_pattern_matches_a_push_a_restore_or_a_failed_deletion() -> None:
    restore = fixture("image-archived.json")
    restore["detail"]["target-storage-class"] = "STANDARD"
    push = fixture("image-deleted.json")
    push["detail"]["action-type"] = "PUSH"
    failed = fixture("image-deleted.json")
    failed["detail"]["result"] = "FAILURE"
    every = (layout.IMAGE_DELETED_PATTERN, layout.IMAGE_ARCHIVED_PATTERN, layout.LIFECYCLE_ACTION_PATTERN)
    assert not [p for p in (*every, layout.API_CALL_PATTERN) for e in (restore, push, failed) if matches(p, e)]


@pytest.mark.slow
def test_with_a_trail_the_api_calls_have_their_rule_and_cdk_nag_finds_nothing_unacknowledged(tmp_path: Path) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "cloudTrailManagementEvents": True})
    patterns = [without_account(rule["EventPattern"]) for rule in sentinel_rules(Template.from_stack(stack), stack)]
    assert layout.API_CALL_PATTERN in patterns
    assert len(patterns) == 5  # and the bucket guards' rule (tests/infra/test_guard_rules.py)
    # The doctor's extra grants (BatchGetImage, manifests/ written) are acknowledged like the rest.
    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
    assert report.success, [violation.rule_name for violation in report.violations]


@pytest.mark.slow
def test_the_record_of_removals_expires(template: Template) -> None:
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Prefix": "removals/",
                                "ExpirationInDays": constants.REMOVAL_RECORD_RETENTION_DAYS,
                                "Status": "Enabled",
                            }
                        )
                    ]
                )
            }
        },
    )
