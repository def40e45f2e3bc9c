"""Every protected key has one writer (issue 43, Deliver 3): the synthesized bucket policies, evaluated with the
project's IAM evaluator (tests/support/iam_evaluation.py) for an administrator (an Allow-everything identity policy),
the pipeline's roles, the break-glass role and the deploying roles. S3 replication writes nothing into the bucket; run
state and kept snapshots have the step that writes them as their only writer, and only the break-glass role deletes
them; the bucket's guards cover replication, object lock, encryption, notifications, logging and the public access
block, and the sentinel's guard rule hears those calls; the access-logs bucket is versioned and guarded; a deployment
may name several deploying roles."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from ecr_retention import layout
from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.cdk.inventory_bucket import BUCKET_GUARD_CALLS
from ecr_retention.cdk.stack import EcrRetentionStack
from support.iam_evaluation import Request, decide
from support.infra_stacks import CONTEXT, RULES, SharedStack, role_statements

ACCOUNT, REGION = "123456789012", "eu-west-1"
BUCKET_ARN = "arn:aws:s3:::inventory"
LOGS_ARN = "arn:aws:s3:::inventory-logs"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/admin"
BREAK_GLASS = f"arn:aws:iam::{ACCOUNT}:role/ecr-retention-break-glass"
OLD_DEPLOYER = f"arn:aws:iam::{ACCOUNT}:role/cfn-exec-old"
NEW_DEPLOYER = f"arn:aws:iam::{ACCOUNT}:role/cfn-exec-new"
CFN_EXEC = f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-{ACCOUNT}-{REGION}"
TARGETS, EVALUATE, REPORT, SENTINEL, WORKFLOW, EXPORTER = (
    f"arn:aws:iam::{ACCOUNT}:role/{name}" for name in ("targets", "evaluate", "report", "sentinel", "workflow", "exp")
)
EVERYTHING = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
RUN = "2026-12-04T03-00-00Z-0a1b2c3d"


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    context = {
        **CONTEXT,
        "breakGlassRoleArn": BREAK_GLASS,
        "cloudTrailManagementEvents": True,
        "deploymentRoleArn": OLD_DEPLOYER,
        "deploymentRoleArns": [NEW_DEPLOYER],
    }
    return shared_stack(RULES, context)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


def logical_id(stack: EcrRetentionStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


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
    """The bucket's policy, but S3 log delivery's Allow (a service principal: it changes no Deny)."""
    [statements] = [
        resource["Properties"]["PolicyDocument"]["Statement"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::S3::BucketPolicy" and resource["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    return [statement for statement in deployed(statements) if "Service" not in statement.get("Principal", {})]


def roles(stack: EcrRetentionStack) -> dict[str, Any]:
    workflow = stack.workflow
    return {
        TARGETS: workflow.targets.role,
        EVALUATE: workflow.evaluate.role,
        REPORT: workflow.report.role,
        SENTINEL: stack.sentinel.sentinel.role,
        WORKFLOW: workflow.state_machine_role,
        EXPORTER: stack.exporter.role,
    }


def decision(
    stack: EcrRetentionStack,
    template: dict[str, Any],
    action: str,
    resource: str,
    principal: str,
    *,
    own_policies: bool = False,
    bucket: str = "inventory",
) -> str:
    """The principal with an identity policy that allows every S3 action (or, `own_policies`, the role's own); the
    inventory bucket's policy (or the access-logs bucket's) decides."""
    role_ids = {arn: logical_id(stack, role) for arn, role in roles(stack).items()}
    inventory_id = logical_id(stack, stack.inventory.bucket)
    logs_id = logical_id(stack, stack.inventory.access_log_bucket)
    tokens = {f"{inventory_id}.Arn": BUCKET_ARN, inventory_id: "inventory", f"{logs_id}.Arn": LOGS_ARN}
    tokens |= {
        f"{role_id}.Arn": f"arn:aws:iam::{ACCOUNT}:role/{role_id}"
        for role_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
    }
    tokens |= {f"{role_id}.Arn": arn for arn, role_id in role_ids.items()}
    identity = role_statements(template, role_ids[principal]) if own_policies else EVERYTHING
    context = {"aws:PrincipalArn": principal, "aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}
    policy = bucket_policy(template, inventory_id if bucket == "inventory" else logs_id)
    return decide([identity, policy], Request(action, resource, context), tokens)


def on_object(key: str, bucket_arn: str = BUCKET_ARN) -> str:
    return f"{bucket_arn}/{key}"


PROTECTED_KEYS = [
    "in-use/prod.json",
    "in-use/210987654321/prod.json",
    layout.IN_USE_MEMORY_KEY,
    "removals/app/20261202T101500Z-4d3c2b1a-0.json",
    "manifests/sha256:" + "ab" * 32 + ".json",
    f"runs/{RUN}/replication.json",
    f"runs/{RUN}/targets.json",
    "snapshots/0123456789abcdef0123456789abcdef.json",
]


@pytest.mark.slow
@pytest.mark.parametrize("action", ["s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags"])
@pytest.mark.parametrize("key", PROTECTED_KEYS)
@pytest.mark.parametrize("principal", [ADMIN, BREAK_GLASS, REPORT, SENTINEL, EXPORTER])
def test_replication_writes_and_delete_marks_no_key_of_the_bucket(
    stack: EcrRetentionStack, template: dict[str, Any], action: str, key: str, principal: str
) -> None:
    """Before: ReplicateObject in-use/prod.json and ReplicateDelete state/in-use-memory.json were allowed to an
    administrator's replication role (security review M1)."""
    assert decision(stack, template, action, on_object(key), principal) == "deny"


@pytest.mark.slow
def test_the_replication_deny_covers_the_owner_override(stack: EcrRetentionStack, template: dict[str, Any]) -> None:
    request = on_object("in-use/prod.json")
    assert decision(stack, template, "s3:ObjectOwnerOverrideToBucketOwner", request, ADMIN) == "deny"


RUN_STATE_WRITERS = [
    (f"runs/{RUN}/targets.json", TARGETS),
    (f"runs/{RUN}/replication.json", TARGETS),
    (f"runs/{RUN}/replication-us-east-1.json", TARGETS),
    (f"runs/{RUN}/repositories/0123456789abcdef0123456789abcdef.json", EVALUATE),
    (f"runs/{RUN}/deletions/0123456789abcdef0123456789abcdef.json", EVALUATE),
    ("snapshots/0123456789abcdef0123456789abcdef.json", EVALUATE),
    ("runs/map-results/5e6f7a8b/SUCCEEDED_0.json", WORKFLOW),
]
PIPELINE = [TARGETS, EVALUATE, REPORT, SENTINEL, WORKFLOW]


@pytest.mark.slow
@pytest.mark.parametrize(("key", "writer"), RUN_STATE_WRITERS)
def test_each_key_of_run_state_and_snapshots_has_one_writer(
    stack: EcrRetentionStack, template: dict[str, Any], key: str, writer: str
) -> None:
    """Before: an administrator's PutObject runs/<id>/replication.json (which hides delete-replicating destinations
    from the in-use guard) and snapshots/* (which makes a review say "no change") were allowed (review M3)."""
    assert decision(stack, template, "s3:PutObject", on_object(key), writer) == "allow"
    for principal in (ADMIN, BREAK_GLASS, CFN_EXEC, EXPORTER, *[p for p in PIPELINE if p != writer]):
        assert decision(stack, template, "s3:PutObject", on_object(key), principal) == "deny", principal


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "writer"),
    [(key, writer) for key, writer in RUN_STATE_WRITERS if "replication-" not in key and "/deletions/" not in key],
)
def test_each_writer_writes_its_run_state_with_its_own_policies(
    stack: EcrRetentionStack, template: dict[str, Any], key: str, writer: str
) -> None:
    """The bucket policy's binding matches what each role's own policy grants (a single-Region stack: no
    replication-<region>.json, no deletions/)."""
    assert decision(stack, template, "s3:PutObject", on_object(key), writer, own_policies=True) == "allow"


@pytest.mark.slow
@pytest.mark.parametrize("action", ["s3:DeleteObject", "s3:DeleteObjectVersion"])
@pytest.mark.parametrize("key", [key for key, _ in RUN_STATE_WRITERS])
def test_only_the_break_glass_role_deletes_run_state_or_a_snapshot(
    stack: EcrRetentionStack, template: dict[str, Any], action: str, key: str
) -> None:
    """Deleting the current version brings the previous one back: a delete rewrites."""
    assert decision(stack, template, action, on_object(key), BREAK_GLASS) == "allow"
    for principal in (ADMIN, *PIPELINE, CFN_EXEC):
        assert decision(stack, template, action, on_object(key), principal) == "deny", principal


@pytest.mark.slow
def test_reports_stay_writable_by_an_operators_run(stack: EcrRetentionStack, template: dict[str, Any]) -> None:
    """`ecr-retention run` from an operator's machine writes its report under reports/ (docs/operations.md)."""
    assert decision(stack, template, "s3:PutObject", on_object("reports/2026/12/04/run.json"), ADMIN) == "allow"


NEW_GUARDS = [
    "s3:PutReplicationConfiguration",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutEncryptionConfiguration",
    "s3:PutBucketNotification",
    "s3:PutBucketLogging",
    "s3:PutBucketPublicAccessBlock",
]


@pytest.mark.slow
@pytest.mark.parametrize("action", NEW_GUARDS)
def test_replication_object_lock_encryption_notification_logging_and_public_access_are_guarded(
    stack: EcrRetentionStack, template: dict[str, Any], action: str
) -> None:
    """Before: each was allowed to an administrator (review M1)."""
    for principal in (OLD_DEPLOYER, NEW_DEPLOYER, BREAK_GLASS):
        assert decision(stack, template, action, BUCKET_ARN, principal) == "allow", principal
    for principal in (ADMIN, CFN_EXEC, *PIPELINE):
        assert decision(stack, template, action, BUCKET_ARN, principal) == "deny", principal


def test_every_guarded_action_has_its_cloudtrail_calls_in_the_sentinels_guard_rule() -> None:
    calls = {name for names in BUCKET_GUARD_CALLS.values() for name in names}
    assert calls == set(layout.BUCKET_GUARD_EVENT_NAMES)
    assert set(layout.bucket_guard_pattern("inventory")["detail"]["eventName"]) == calls  # type: ignore[index]


@pytest.mark.slow
def test_the_synthesized_guard_rule_hears_the_new_calls(template: dict[str, Any]) -> None:
    [names] = [
        resource["Properties"]["EventPattern"]["detail"]["eventName"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Events::Rule"
        and resource["Properties"].get("EventPattern", {}).get("source") == ["aws.s3"]
        and resource["Properties"]["EventPattern"]["detail-type"] == ["AWS API Call via CloudTrail"]
    ]
    for name in (
        "PutBucketReplication",
        "PutObjectLockConfiguration",
        "DeleteBucketEncryption",
        "PutBucketNotification",
        "PutBucketLogging",
        "DeleteBucketPublicAccessBlock",
    ):
        assert name in names


def test_the_guard_alert_names_what_the_new_guards_protect() -> None:
    from ecr_retention.domain.sentinel.guard_events import WHAT_FOLLOWS

    text = WHAT_FOLLOWS["bucket-guard"]
    for word in ("replication", "object lock", "encryption", "notifications", "logging", "public access block"):
        assert word in text


@pytest.mark.slow
def test_the_access_logs_bucket_is_versioned(stack: EcrRetentionStack, template: dict[str, Any]) -> None:
    properties = template["Resources"][logical_id(stack, stack.inventory.access_log_bucket)]["Properties"]
    assert properties["VersioningConfiguration"] == {"Status": "Enabled"}
    rules = properties["LifecycleConfiguration"]["Rules"]
    assert any(rule.get("NoncurrentVersionExpiration") for rule in rules)  # old versions still go


@pytest.mark.slow
@pytest.mark.parametrize("action", ["s3:DeleteObject", "s3:DeleteObjectVersion"])
def test_only_the_break_glass_role_deletes_an_access_log(
    stack: EcrRetentionStack, template: dict[str, Any], action: str
) -> None:
    log = on_object("inventory-bucket/2026-12-04-10-15-00-ABCDEF0123456789", LOGS_ARN)
    assert decision(stack, template, action, log, BREAK_GLASS, bucket="logs") == "allow"
    for principal in (ADMIN, OLD_DEPLOYER, CFN_EXEC, REPORT):
        assert decision(stack, template, action, log, principal, bucket="logs") == "deny", principal


@pytest.mark.slow
@pytest.mark.parametrize(
    "action", ["s3:PutBucketPolicy", "s3:DeleteBucketPolicy", "s3:PutLifecycleConfiguration", "s3:PutBucketVersioning"]
)
def test_the_access_logs_guards_change_only_through_the_deployment_or_the_break_glass_role(
    stack: EcrRetentionStack, template: dict[str, Any], action: str
) -> None:
    for principal in (OLD_DEPLOYER, NEW_DEPLOYER, BREAK_GLASS):
        assert decision(stack, template, action, LOGS_ARN, principal, bucket="logs") == "allow", principal
    for principal in (ADMIN, REPORT):
        assert decision(stack, template, action, LOGS_ARN, principal, bucket="logs") == "deny", principal


@pytest.mark.slow
def test_every_listed_deploying_role_may_replace_the_bucket_policy(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    """deploymentRoleArn and deploymentRoleArns together: a deployment that moves from one deploying role to another
    names both, and the switch succeeds in one deploy (review L4)."""
    for principal in (OLD_DEPLOYER, NEW_DEPLOYER):
        assert decision(stack, template, "s3:PutBucketPolicy", BUCKET_ARN, principal) == "allow", principal
    # Named roles replace the synthesizer's: the bootstrap's execution role is no longer exempt.
    assert decision(stack, template, "s3:PutBucketPolicy", BUCKET_ARN, CFN_EXEC) == "deny"


def test_deployment_role_arns_accepts_a_list_in_json_or_comma_separated_and_keeps_the_single_key() -> None:
    listed = DeploySettings.model_validate({"deploymentRoleArns": f"{OLD_DEPLOYER},{NEW_DEPLOYER}"})
    assert listed.deploying_roles == (OLD_DEPLOYER, NEW_DEPLOYER)
    as_json = DeploySettings.model_validate({"deploymentRoleArns": f'["{OLD_DEPLOYER}"]'})
    assert as_json.deploying_roles == (OLD_DEPLOYER,)
    single = DeploySettings.model_validate({"deploymentRoleArn": OLD_DEPLOYER})
    assert single.deploying_roles == (OLD_DEPLOYER,)
    both = DeploySettings.model_validate({"deploymentRoleArn": OLD_DEPLOYER, "deploymentRoleArns": [OLD_DEPLOYER]})
    assert both.deploying_roles == (OLD_DEPLOYER,)


@pytest.mark.slow
def test_a_memory_deletion_is_acknowledged_only_by_the_break_glass_role(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    """With a break-glass role, the only principal that can delete the memory is the only one that says it meant to."""
    key = on_object(layout.memory_deletion_acknowledgement_key("3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"))
    assert decision(stack, template, "s3:PutObject", key, BREAK_GLASS) == "allow"
    for principal in (ADMIN, REPORT, EVALUATE):
        assert decision(stack, template, "s3:PutObject", key, principal) == "deny", principal
