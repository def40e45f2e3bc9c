"""Who may place and lift holds (docs/holds.md): the bucket policy lets only the holders (cdk.json holderRoleArns, and
the stack's holders role with holdersRole) write holds/, and only they and the break-glass role delete there, whatever
identity policies say; with no holders named, nobody writes a hold. The holders role reads and writes holds/ and
describes images, nothing else; cdk-nag has nothing to say."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk.stack import EcrRetentionStack
from support.infra_stacks import CONTEXT, RULES, SharedStack, role_statements
from tests.infra.test_bucket_guards import ACCOUNT, ADMIN, BREAK_GLASS, EVALUATE, REPORT, SENTINEL, decision, on_object

HOLDER = f"arn:aws:iam::{ACCOUNT}:role/platform-oncall"
HOLD = "holds/eu-west-1/app/sha256:" + "ab" * 32 + ".json"


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    context = {**CONTEXT, "breakGlassRoleArn": BREAK_GLASS, "holderRoleArns": [HOLDER], "holdersRole": True}
    return shared_stack(RULES, context)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


def holders_role_arn(stack: EcrRetentionStack) -> str:
    assert stack.holders.role is not None
    return f"arn:aws:iam::{ACCOUNT}:role/{stack.get_logical_id(stack.holders.role.node.default_child)}"  # type: ignore[arg-type]


@pytest.mark.slow
def test_only_the_holders_write_a_hold(stack: EcrRetentionStack, template: dict[str, Any]) -> None:
    for holder in (HOLDER, holders_role_arn(stack)):
        assert decision(stack, template, "s3:PutObject", on_object(HOLD), holder) == "allow", holder
    for principal in (ADMIN, BREAK_GLASS, SENTINEL, EVALUATE, REPORT):
        assert decision(stack, template, "s3:PutObject", on_object(HOLD), principal) == "deny", principal


@pytest.mark.slow
@pytest.mark.parametrize("action", ["s3:DeleteObject", "s3:DeleteObjectVersion"])
def test_only_the_holders_and_the_break_glass_role_lift_a_hold(
    stack: EcrRetentionStack, template: dict[str, Any], action: str
) -> None:
    for principal in (HOLDER, holders_role_arn(stack), BREAK_GLASS):
        assert decision(stack, template, action, on_object(HOLD), principal) == "allow", principal
    for principal in (ADMIN, SENTINEL, EVALUATE, REPORT):
        assert decision(stack, template, action, on_object(HOLD), principal) == "deny", principal


@pytest.mark.slow
def test_without_holders_nobody_writes_a_hold(shared_stack: SharedStack) -> None:
    stack = shared_stack(RULES, CONTEXT)
    template = Template.from_stack(stack).to_json()

    assert stack.holders.role is None
    for principal in (ADMIN, BREAK_GLASS, HOLDER):
        assert decision(stack, template, "s3:PutObject", on_object(HOLD), principal) == "deny", principal
    assert "HoldersRoleArn" not in template["Outputs"]


def test_the_holders_role_reads_and_writes_holds_and_describes_images_only(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    assert stack.holders.role is not None
    role_id = stack.get_logical_id(stack.holders.role.node.default_child)  # type: ignore[arg-type]
    statements = role_statements(template, role_id)
    actions = sorted({a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])})

    assert actions == ["ecr:DescribeImages", "s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "s3:PutObject"]
    [listing] = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["holds/*"]}}
    assert "holds/*" in json.dumps([s["Resource"] for s in statements if "s3:PutObject" in s["Action"]])
    assert template["Outputs"]["HoldersRoleArn"]["Value"] == {"Fn::GetAtt": [role_id, "Arn"]}


def test_the_runs_and_the_sentinel_read_the_holds(stack: EcrRetentionStack, template: dict[str, Any]) -> None:
    for role in (stack.workflow.evaluate.role, stack.workflow.report.role, stack.sentinel.sentinel.role):
        statements = role_statements(template, stack.get_logical_id(role.node.default_child))  # type: ignore[arg-type]
        reads = [s for s in statements if s["Action"] == "s3:GetObject"]
        assert "/holds/*" in json.dumps(reads), role


@pytest.mark.slow
def test_cdk_nag_finds_nothing_unacknowledged_with_holders(stack: EcrRetentionStack) -> None:
    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
    findings = [f"{v.rule_name} at {[str(r.construct_path) for r in v.violating_resources]}" for v in report.violations]
    assert report.success, "\n".join(findings)
