"""Events are checked for where they came from (docs/safety.md section 30, docs/security.md): every rule of the
deployment on ECR's, S3's and STS's events, at home and in each forwarding stack, matches only this account's events;
the lifecycle rule delivers read-only events (PolicyExecutionEvent is marked readOnly); the forwarder's role is
EventBridge's for a rule of this account and Region only; the exporter's role is Pod Identity's for a cluster of this
account only; the sentinel reads a new lifecycle policy from ECR; and EventBridge, by the stack's rules, is the only
invoker the sentinel's resource policy names. One two-Region app, with a trail and a break-glass role, synthesized once
for the module (about 20 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from moto.events.models import EventPattern

from ecr_retention.cdk.event_provenance import ALL_MANAGEMENT_EVENTS
from ecr_retention.cdk.region_forwarder import RegionForwarderStack
from ecr_retention.cdk.stack import EcrRetentionStack
from support.infra_stacks import CONTEXT, RULES, build_app, function_role, role_statements, rules_file

HOME, OTHER = "eu-west-1", "us-east-1"
ACCOUNT, FOREIGN = "123456789012", "210987654321"
BREAK_GLASS = f"arn:aws:iam::{ACCOUNT}:role/ecr-retention-break-glass"
CONTEXT_WITH_EVERY_RULE = {
    **CONTEXT,
    "regions": [HOME, OTHER],
    "cloudTrailManagementEvents": True,
    "breakGlassRoleArn": BREAK_GLASS,
}
THIS_ACCOUNT = [{"Ref": "AWS::AccountId"}]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "sentinel"
# The rules of the home stack, by the end of their logical id: the push trigger's, the sentinel's (three, and the API
# calls' with a trail), its guards' (the bucket, the break-glass role) and the tagger's.
HOME_RULES = {
    "Pushed",
    "ImageDeleted",
    "ImageArchived",
    "LifecycleAction",
    "ApiCall",
    "BucketGuardChanged",
    "BreakGlassAssumed",
    "BreakGlassUsed",
    "ManifestWritten",
}
FORWARDED_RULES = {"Pushed", "ImageDeleted", "ImageArchived", "LifecycleAction", "ApiCall"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> tuple[EcrRetentionStack, dict[str, RegionForwarderStack]]:
    return build_app(rules_file(tmp_path_factory.mktemp("provenance"), RULES), CONTEXT_WITH_EVERY_RULE)


@pytest.fixture(scope="module")
def home(app: tuple[EcrRetentionStack, dict[str, RegionForwarderStack]]) -> dict[str, Any]:
    from aws_cdk.assertions import Template

    return Template.from_stack(app[0]).to_json()


@pytest.fixture(scope="module")
def forwarder(app: tuple[EcrRetentionStack, dict[str, RegionForwarderStack]]) -> dict[str, Any]:
    from aws_cdk.assertions import Template

    return Template.from_stack(app[1][OTHER]).to_json()


def rules(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The template's event rules by the name they were given (the logical id without the CDK's hash and scope)."""
    found = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Events::Rule" and "EventPattern" in resource["Properties"]:
            [name] = [name for name in HOME_RULES if logical_id[:-8].endswith(name)]
            found[name] = resource["Properties"]
    return found


def deployed(pattern: dict[str, Any]) -> EventPattern:
    """The rule's pattern as EventBridge holds it once deployed in ACCOUNT (moto's matcher)."""
    text = json.dumps(pattern).replace(json.dumps({"Ref": "AWS::AccountId"}), json.dumps(ACCOUNT))
    return EventPattern.load(text)


def fixture(name: str, account: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return {**event, "account": account}


@pytest.mark.slow
def test_every_home_rule_matches_only_this_accounts_events(home: dict[str, Any]) -> None:
    found = rules(home)
    assert set(found) == HOME_RULES
    assert {name: rule["EventPattern"].get("account") for name, rule in found.items()} == dict.fromkeys(
        HOME_RULES, THIS_ACCOUNT
    )


@pytest.mark.slow
def test_every_forwarded_rule_matches_only_this_accounts_events(forwarder: dict[str, Any]) -> None:
    found = rules(forwarder)
    assert set(found) == FORWARDED_RULES
    assert all(rule["EventPattern"]["account"] == THIS_ACCOUNT for rule in found.values())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rule", "event"),
    [
        ("ImageDeleted", "image-deleted.json"),
        ("ImageArchived", "image-archived.json"),
        ("LifecycleAction", "policy-execution.json"),
        ("ApiCall", "put-lifecycle-policy.json"),
        ("ApiCall", "batch-delete-image.json"),
    ],
)
def test_another_accounts_genuine_ecr_event_on_the_bus_matches_no_rule(
    home: dict[str, Any], forwarder: dict[str, Any], rule: str, event: str
) -> None:
    for template in (home, forwarder):
        pattern = deployed(rules(template)[rule]["EventPattern"])
        assert pattern.matches_event(fixture(event, ACCOUNT))
        assert not pattern.matches_event(fixture(event, FOREIGN))


@pytest.mark.slow
def test_the_lifecycle_rule_also_delivers_read_only_events_at_home_and_where_forwarded(
    home: dict[str, Any], forwarder: dict[str, Any]
) -> None:
    read_only_too = {"LifecycleAction", "BreakGlassAssumed", "BreakGlassUsed"}
    assert {name: rule["State"] for name, rule in rules(home).items()} == {
        name: ALL_MANAGEMENT_EVENTS if name in read_only_too else "ENABLED" for name in HOME_RULES
    }
    assert {name: rule["State"] for name, rule in rules(forwarder).items()} == {
        name: ALL_MANAGEMENT_EVENTS if name == "LifecycleAction" else "ENABLED" for name in FORWARDED_RULES
    }


@pytest.mark.slow
def test_the_forwarders_role_is_eventbridges_for_a_rule_of_this_account_and_region_only(
    forwarder: dict[str, Any],
) -> None:
    [role] = [r for r in forwarder["Resources"].values() if r["Type"] == "AWS::IAM::Role"]
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "events.amazonaws.com"}
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {
            "aws:SourceArn": {"Fn::Join": ["", [f"arn:aws:events:{OTHER}:", {"Ref": "AWS::AccountId"}, ":rule/*"]]}
        },
    }


@pytest.mark.slow
def test_the_exporters_role_is_pod_identitys_for_a_cluster_of_this_account_only(home: dict[str, Any]) -> None:
    [role] = [
        r
        for r in home["Resources"].values()
        if r["Type"] == "AWS::IAM::Role"
        and "pods.eks.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
    ]
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    # CONTEXT's exporter clusters are both in eu-west-1.
    assert trust["Condition"]["StringLike"] == {
        "aws:RequestTag/eks-cluster-arn": [
            {"Fn::Join": ["", ["arn:aws:eks:eu-west-1:", {"Ref": "AWS::AccountId"}, ":cluster/*"]]}
        ]
    }
    assert set(trust["Condition"]["StringEquals"]) == {
        "aws:RequestTag/kubernetes-namespace",
        "aws:RequestTag/kubernetes-service-account",
    }


@pytest.mark.slow
def test_the_sentinel_may_read_a_lifecycle_policy_in_every_repository_of_each_region(home: dict[str, Any]) -> None:
    statements = role_statements(home, function_role(home, "sentinel"))
    [read] = [s for s in statements if "ecr:GetLifecyclePolicy" in json.dumps(s["Action"])]
    assert read["Action"] == ["ecr:DescribeImages", "ecr:GetLifecyclePolicy"]
    assert "repository/*" in json.dumps(read["Resource"])
    assert OTHER in json.dumps(read["Resource"])


@pytest.mark.slow
def test_only_eventbridge_by_the_stacks_own_rules_is_allowed_to_invoke_the_sentinel(home: dict[str, Any]) -> None:
    """A Lambda resource policy cannot deny: it allows EventBridge for each rule, nothing else. Other principals of
    the account are kept out by the SCP (tests/infra/test_sentinel_invoke_scp.py)."""
    sentinel = next(
        logical_id
        for logical_id, r in home["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "ecr_retention.handlers.sentinel.lambda_handler"
    )
    rule_ids = {
        logical_id
        for logical_id, r in home["Resources"].items()
        if r["Type"] == "AWS::Events::Rule"
        and any(t["Arn"] == {"Fn::GetAtt": [sentinel, "Arn"]} for t in r["Properties"]["Targets"])
    }
    permissions = [
        r["Properties"]
        for r in home["Resources"].values()
        if r["Type"] == "AWS::Lambda::Permission"
        and r["Properties"]["FunctionName"] == {"Fn::GetAtt": [sentinel, "Arn"]}
    ]
    assert len(rule_ids) == 7
    assert {p["Principal"] for p in permissions} == {"events.amazonaws.com"}
    assert {p["SourceArn"]["Fn::GetAtt"][0] for p in permissions} == rule_ids


@pytest.mark.slow
def test_the_stack_outputs_the_sentinels_arn_that_the_scp_takes(home: dict[str, Any]) -> None:
    value = home["Outputs"]["SentinelFunctionArn"]["Value"]
    [sentinel] = value["Fn::GetAtt"][:1]
    assert home["Resources"][sentinel]["Properties"]["Handler"] == "ecr_retention.handlers.sentinel.lambda_handler"
