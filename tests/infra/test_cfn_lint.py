"""cfn-lint (pinned in requirements-dev.txt) accepts the synthesized template, in the regions we deploy to.

W3005 (a DependsOn that a reference already implies) is ignored: the CDK emits those on purpose, so that a
role's policy exists before the resource that needs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Template
from cfnlint.api import ManualArgs, lint_file

from ecr_retention.cdk import spoke_templates
from support.infra_stacks import CONTEXT, RULES, SharedStack, build_stack, rules_file

REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-2"]


@pytest.mark.slow
def test_cfn_lint_finds_nothing_in_the_template(tmp_path: Path, shared_stack: SharedStack) -> None:
    template = Template.from_stack(shared_stack(RULES, CONTEXT)).to_json()
    path = tmp_path / "EcrRetention.template.json"
    path.write_text(json.dumps(template, indent=1))

    findings = lint_file(path, config=ManualArgs(regions=REGIONS, ignore_checks=["W3005"]))

    assert [f"{m.rule.id} {m.message} ({m.path})" for m in findings] == []


SPOKE_TEMPLATES = sorted(spoke_templates.DIRECTORY.glob("*.yaml"))


@pytest.mark.parametrize("path", SPOKE_TEMPLATES, ids=lambda path: path.name)
def test_cfn_lint_finds_nothing_in_the_spoke_templates(path: Path) -> None:
    findings = lint_file(path, config=ManualArgs(regions=REGIONS))

    assert [f"{m.rule.id} {m.message} ({m.path})" for m in findings] == []


@pytest.mark.slow
def test_with_eks_clusters_and_a_vpc_cfn_lint_finds_nothing_in_the_template(tmp_path: Path) -> None:
    context = {
        **CONTEXT,
        "eksClusters": ["arn:aws:eks:eu-west-1:123456789012:cluster/agentless"],
        "collectorVpc": {"vpcId": "vpc-0a1b2c3d4e5f60718", "subnetIds": ["subnet-0a1b2c3d4e5f60718"]},
    }
    # The cluster the collector reads is expected or optional (DeploySettings.check_against_the_stack).
    rules = RULES.replace("clusters: [prod, dev]}", "clusters: [prod, dev], optional_clusters: [agentless]}")
    template = Template.from_stack(build_stack(rules_file(tmp_path, rules), context)).to_json()
    path = tmp_path / "EcrRetention.template.json"
    path.write_text(json.dumps(template, indent=1))

    findings = lint_file(path, config=ManualArgs(regions=REGIONS, ignore_checks=["W3005"]))

    assert [f"{m.rule.id} {m.message} ({m.path})" for m in findings] == []


@pytest.mark.slow
def test_with_a_trail_and_a_break_glass_role_cfn_lint_finds_nothing_in_the_guard_rules(tmp_path: Path) -> None:
    """The guard rules' input transformer and state, and the bucket policy's deploying role (Fn::Sub)."""
    context = {
        **CONTEXT,
        "cloudTrailManagementEvents": True,
        "breakGlassRoleArn": "arn:aws:iam::123456789012:role/ecr-retention-break-glass",
    }
    template = Template.from_stack(build_stack(rules_file(tmp_path, RULES), context)).to_json()
    path = tmp_path / "EcrRetention.template.json"
    path.write_text(json.dumps(template, indent=1))

    findings = lint_file(path, config=ManualArgs(regions=REGIONS, ignore_checks=["W3005"]))

    assert [f"{m.rule.id} {m.message} ({m.path})" for m in findings] == []
