"""Amazon Inspector's in-use reading at synthesis (cdk.json `inspectorInUse`, docs/aws-inventory.md): off by default,
and then nothing of Inspector in the template; on, the collector's role gets inspector2:ListCoverage and nothing else of
Inspector, writes in-use/inspector-*.json, which only it may write, and every inspector-<account>-<region> it writes
must be listed in a safety list, as every aws-<account>-<region> is."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.errors import InputError
from support.infra_stacks import CONTEXT, RULES, build_stack, function_role, role_statements, rules_file

LISTED = (
    "version: 1\nsafety: {clusters: [prod], optional_clusters: [%s]}\n"
    "policies: [{repositories: [app], rules: [{delete: {untagged: true}}]}]\n"
)
ACCOUNT = "123456789012"


def settings(**context: Any) -> DeploySettings:
    return DeploySettings.from_context(context.get)


def collector_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return role_statements(template, function_role(template, "collector"))


def actions_of(statements: list[dict[str, Any]]) -> set[str]:
    return {action for s in statements for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}


@pytest.fixture(scope="module")
def inspecting(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_stack(rules_file(tmp_path_factory.mktemp("rules"), RULES), {**CONTEXT, "inspectorInUse": True})


def test_with_inspector_in_use_the_collector_may_list_coverage_and_nothing_else_of_inspector(inspecting: Any) -> None:
    template = Template.from_stack(inspecting).to_json()
    statements = collector_statements(template)

    inspector = [s for s in statements if any(a.startswith("inspector2:") for a in actions_of([s]))]
    assert [(s["Action"], s["Resource"]) for s in inspector] == [("inspector2:ListCoverage", "*")]
    written = [s for s in statements if "s3:PutObject" in actions_of([s])]
    resources = json.dumps([s["Resource"] for s in written])
    assert "/in-use/inspector-*.json" in resources
    assert "/in-use/aws-*.json" in resources
    [function] = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "ecr_retention.handlers.collector.lambda_handler"
    ]
    assert function["Properties"]["Environment"]["Variables"]["INSPECTOR_IN_USE"] == "true"


def test_only_the_collector_may_write_inspectors_manifests(inspecting: Any) -> None:
    template = Template.from_stack(inspecting).to_json()
    statements = [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::S3::BucketPolicy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]
    denies = [
        s
        for s in statements
        if s["Effect"] == "Deny" and "/in-use/inspector-*.json" in json.dumps(s.get("Resource", s.get("NotResource")))
    ]
    assert {s["Sid"] for s in denies} >= {"CollectedClustersManifestsOnlyByTheCollector"}


def test_cdk_nag_finds_the_list_coverage_star_acknowledged(inspecting: Any) -> None:
    Template.from_stack(inspecting)
    report = AwsSolutionsChecks(inspecting.node.root).validate_scope(inspecting)
    assert report.success, [violation.rule_name for violation in report.violations]


def test_without_inspector_in_use_no_role_may_call_inspector(tmp_path: Any) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), CONTEXT)
    text = json.dumps(Template.from_stack(stack).to_json())

    assert "inspector2" not in text
    assert "INSPECTOR_IN_USE" not in text
    assert "in-use/inspector-" not in text


def test_an_inspector_reading_in_neither_safety_list_stops_synthesis_naming_it() -> None:
    context = {"inspectorInUse": True, "collectRegions": ["eu-west-1", "us-east-1"]}
    aws = f"aws-{ACCOUNT}-eu-west-1, aws-{ACCOUNT}-us-east-1"

    with pytest.raises(InputError) as raised:
        settings(**context).check_against_the_stack(parse_config(LISTED % aws), account=ACCOUNT, region="eu-west-1")

    assert str(raised.value).startswith(
        "cdk.json inspectorInUse (the collector writes in-use/inspector-<account>-<region>.json for this account, in "
        f"each of collectRegions): clusters inspector-{ACCOUNT}-eu-west-1, inspector-{ACCOUNT}-us-east-1 are in neither"
    )
    listed = f"{aws}, inspector-{ACCOUNT}-eu-west-1, inspector-{ACCOUNT}-us-east-1"
    settings(**context).check_against_the_stack(parse_config(LISTED % listed), account=ACCOUNT, region="eu-west-1")


def test_inspector_in_use_needs_the_collector() -> None:
    with pytest.raises(ValueError, match="the collector reads Amazon Inspector's coverage: awsInventory is false"):
        settings(inspectorInUse=True, awsInventory=False)


def test_a_cluster_may_not_take_the_name_of_an_inspector_reading() -> None:
    with pytest.raises(ValueError, match="reserved for Amazon Inspector's in-use reading"):
        settings(eksClusters=[f"arn:aws:eks:eu-west-1:{ACCOUNT}:cluster/inspector-{ACCOUNT}-eu-west-1"])
