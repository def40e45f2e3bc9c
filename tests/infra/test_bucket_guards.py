"""Nobody but its writer changes the sentinel's records (`removals/`), the manifest cache (`manifests/`) or the
inventory bucket's own guards (its policy, lifecycle rules, versioning, ownership), whatever identity policies say:
the synthesized bucket policy, evaluated with the project's IAM evaluator (tests/support/iam_evaluation.py) for an
administrator (an Allow-everything identity policy), the pipeline's roles, the break-glass role and the role
CloudFormation deploys with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from ecr_retention.cdk.inventory_bucket import ACCESS_LOG_GUARD_ACTIONS, BUCKET_GUARD_ACTIONS
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.domain.errors import InputError
from support.iam_evaluation import Request, decide
from support.infra_stacks import (
    CONTEXT,
    REPOSITORY_CDK_JSON,
    RULES,
    SharedStack,
    build_stack,
    role_statements,
    rules_file,
)

ACCOUNT, REGION = "123456789012", "eu-west-1"
BUCKET_ARN = "arn:aws:s3:::inventory"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/admin"
BREAK_GLASS = f"arn:aws:iam::{ACCOUNT}:role/ecr-retention-break-glass"
# DefaultStackSynthesizer's CloudFormation execution role, as the bootstrap (default qualifier) creates it.
CFN_EXEC = f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-{ACCOUNT}-{REGION}"
SENTINEL, EVALUATE, REPORT = (f"arn:aws:iam::{ACCOUNT}:role/{name}" for name in ("sentinel", "evaluate", "report"))
EVERYTHING = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
RECORD = "removals/app/20261202T101500Z-4d3c2b1a-0.json"
CACHE_ENTRY = "manifests/sha256:" + "ab" * 32 + ".json"


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    context = {**CONTEXT, "breakGlassRoleArn": BREAK_GLASS}
    return shared_stack(RULES, context)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


def deployed(value: Any) -> Any:
    """The template's Fn::Sub strings as CloudFormation fills them in for this account and Region."""
    if isinstance(value, dict) and set(value) == {"Fn::Sub"}:
        text = value["Fn::Sub"]
        for name, filled in (("AWS::Partition", "aws"), ("AWS::AccountId", ACCOUNT), ("AWS::Region", REGION)):
            text = text.replace("${" + name + "}", filled)
        return text
    if isinstance(value, dict):
        return {key: deployed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [deployed(item) for item in value]
    return value


def bucket_policy(template: dict[str, Any], bucket_id: str) -> list[dict[str, Any]]:
    [statements] = [
        resource["Properties"]["PolicyDocument"]["Statement"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::S3::BucketPolicy" and resource["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    return list(deployed(statements))


def decision(
    stack: EcrRetentionStack,
    template: dict[str, Any],
    action: str,
    resource: str,
    principal: str,
    *,
    own_policies: bool = False,
) -> str:
    """An administrator, the break-glass role, the deploying role or (with `own_policies` false) a pipeline role
    whose identity policy allows every S3 action; the bucket policy decides."""
    roles = {SENTINEL: stack.sentinel.sentinel.role, EVALUATE: stack.workflow.evaluate.role}
    roles[REPORT] = stack.workflow.report.role
    role_ids = {arn: stack.get_logical_id(role.node.default_child) for arn, role in roles.items()}  # type: ignore[arg-type]
    bucket_id = stack.get_logical_id(stack.inventory.bucket.node.default_child)  # type: ignore[arg-type]
    tokens = {f"{bucket_id}.Arn": BUCKET_ARN, bucket_id: "inventory"}
    # Every other role of the stack (the exporter, the collector) by its logical id.
    tokens |= {
        f"{logical_id}.Arn": f"arn:aws:iam::{ACCOUNT}:role/{logical_id}"
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
    }
    tokens |= {f"{role_id}.Arn": arn for arn, role_id in role_ids.items()}
    identity = role_statements(template, role_ids[principal]) if own_policies else EVERYTHING
    context = {"aws:PrincipalArn": principal, "aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}
    return decide([identity, bucket_policy(template, bucket_id)], Request(action, resource, context), tokens)


def on_object(key: str) -> str:
    return f"{BUCKET_ARN}/{key}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        pytest.param(SENTINEL, "allow", id="sentinel"),
        pytest.param(ADMIN, "deny", id="admin"),
        pytest.param(BREAK_GLASS, "deny", id="break-glass"),
        pytest.param(EVALUATE, "deny", id="evaluate"),
        pytest.param(REPORT, "deny", id="report"),
        pytest.param(CFN_EXEC, "deny", id="deployment"),
    ],
)
def test_a_forged_removal_record_is_refused_to_everyone_but_the_sentinel(
    stack: EcrRetentionStack, template: dict[str, Any], principal: str, expected: str
) -> None:
    assert decision(stack, template, "s3:PutObject", on_object(RECORD), principal) == expected


@pytest.mark.slow
def test_the_sentinel_writes_its_records_with_its_own_policies(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    assert decision(stack, template, "s3:PutObject", on_object(RECORD), SENTINEL, own_policies=True) == "allow"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        pytest.param(EVALUATE, "allow", id="evaluate"),
        pytest.param(SENTINEL, "allow", id="sentinel"),
        pytest.param(ADMIN, "deny", id="admin"),
        pytest.param(REPORT, "deny", id="report"),
        pytest.param(BREAK_GLASS, "deny", id="break-glass"),
    ],
)
def test_only_the_evaluations_and_the_sentinel_write_the_manifest_cache(
    stack: EcrRetentionStack, template: dict[str, Any], principal: str, expected: str
) -> None:
    assert decision(stack, template, "s3:PutObject", on_object(CACHE_ENTRY), principal) == expected
    if principal == EVALUATE:  # and its own policies let it
        assert (
            decision(stack, template, "s3:PutObject", on_object(CACHE_ENTRY), principal, own_policies=True) == "allow"
        )


@pytest.mark.slow
@pytest.mark.parametrize("action", ["s3:DeleteObject", "s3:DeleteObjectVersion"])
@pytest.mark.parametrize("key", [RECORD, CACHE_ENTRY])
def test_only_the_break_glass_role_deletes_a_record_or_a_cache_entry(
    stack: EcrRetentionStack, template: dict[str, Any], action: str, key: str
) -> None:
    """A delete of the current version brings the previous one back: it rewrites."""
    assert decision(stack, template, action, on_object(key), BREAK_GLASS) == "allow"
    for principal in (ADMIN, SENTINEL, EVALUATE, CFN_EXEC):
        assert decision(stack, template, action, on_object(key), principal) == "deny", principal


@pytest.mark.slow
@pytest.mark.parametrize("action", BUCKET_GUARD_ACTIONS)
def test_the_buckets_own_guards_change_only_through_the_deployment_or_the_break_glass_role(
    stack: EcrRetentionStack, template: dict[str, Any], action: str
) -> None:
    # CloudFormation's own updates (lifecycle rules, versioning, this very policy) act as the cfn-exec role: allowed.
    assert decision(stack, template, action, BUCKET_ARN, CFN_EXEC) == "allow"
    assert decision(stack, template, action, BUCKET_ARN, BREAK_GLASS) == "allow"
    for principal in (ADMIN, SENTINEL, EVALUATE, REPORT):
        assert decision(stack, template, action, BUCKET_ARN, principal) == "deny", principal


@pytest.mark.slow
def test_the_access_logs_bucket_keeps_its_own_policy_with_its_own_guards(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    """Its guards are its own (policy, lifecycle, versioning: tests/infra/test_one_writer.py), not the inventory
    bucket's: S3's log delivery still writes there."""
    logs_id = stack.get_logical_id(stack.inventory.access_log_bucket.node.default_child)  # type: ignore[arg-type]
    actions = {action for statement in bucket_policy(template, logs_id) for action in _listed(statement["Action"])}
    assert actions & set(BUCKET_GUARD_ACTIONS) == set(ACCESS_LOG_GUARD_ACTIONS)
    assert "s3:PutObject" in actions  # S3's log delivery still writes there


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@pytest.mark.slow
def test_without_a_break_glass_role_nobody_deletes_a_record(shared_stack: SharedStack) -> None:
    stack = shared_stack(RULES, CONTEXT)
    template = Template.from_stack(stack).to_json()
    for principal in (ADMIN, BREAK_GLASS):
        assert decision(stack, template, "s3:DeleteObjectVersion", on_object(RECORD), principal) == "deny"
    assert decision(stack, template, "s3:PutBucketPolicy", BUCKET_ARN, BREAK_GLASS) == "deny"
    assert decision(stack, template, "s3:PutBucketPolicy", BUCKET_ARN, CFN_EXEC) == "allow"


def guard_statement(template: dict[str, Any]) -> dict[str, Any]:
    [statement] = [
        s
        for r in template["Resources"].values()
        if r["Type"] == "AWS::S3::BucketPolicy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "BucketGuardsChangedOnlyByTheDeployment"
    ]
    return statement


@pytest.mark.slow
def test_the_deployment_role_follows_the_bootstrap_qualifier(tmp_path: Path) -> None:
    context = {**CONTEXT, "@aws-cdk/core:bootstrapQualifier": "team42abc"}
    template = Template.from_stack(build_stack(rules_file(tmp_path, RULES), context)).to_json()
    [allowed] = guard_statement(template)["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    assert allowed == {
        "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/cdk-team42abc-cfn-exec-role-"
        "${AWS::AccountId}-${AWS::Region}"
    }


def stack_with_synthesizer(tmp_path: Path, context: dict[str, Any]) -> EcrRetentionStack:
    """As app.py builds the stack, with a synthesizer that names no CloudFormation execution role."""
    import aws_cdk as cdk

    from ecr_retention.cdk.app_context import cdk_json_context
    from ecr_retention.cdk.deploy_settings import DeploySettings

    path = rules_file(tmp_path, RULES)
    app = cdk.App(
        context={**cdk_json_context(REPOSITORY_CDK_JSON), "aws:cdk:bundling-stacks": [], **context, "config": str(path)}
    )
    settings = DeploySettings.from_context(app.node.try_get_context)
    return EcrRetentionStack(
        app,
        "EcrRetentionTest",
        settings=settings,
        synthesizer=cdk.CliCredentialsStackSynthesizer(),
    )


@pytest.mark.slow
def test_a_synthesizer_without_an_execution_role_stops_synthesis_naming_the_context_key(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^cdk context: deploymentRoleArn: .*names no CloudFormation execution role"):
        stack_with_synthesizer(tmp_path, CONTEXT)


@pytest.mark.slow
def test_the_deployment_role_context_key_names_the_role_that_changes_the_guards(tmp_path: Path) -> None:
    deployer = f"arn:aws:iam::{ACCOUNT}:role/platform-deployer"
    stack = stack_with_synthesizer(tmp_path, {**CONTEXT, "deploymentRoleArn": deployer})
    template = Template.from_stack(stack).to_json()
    assert guard_statement(template)["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] == [deployer]
