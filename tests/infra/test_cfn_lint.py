"""cfn-lint (pinned in requirements-dev.txt) accepts the synthesized template, in the regions we deploy to.

W3005 (a DependsOn that a reference already implies) is ignored: the CDK emits those on purpose, so that a
role's policy exists before the resource that needs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Template
from cfnlint.api import ManualArgs, lint_file

from support.infra_stacks import CONTEXT, RULES, build_stack, rules_file

REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-2"]


@pytest.mark.slow
def test_cfn_lint_finds_nothing_in_the_template(tmp_path: Path) -> None:
    template = Template.from_stack(build_stack(rules_file(tmp_path, RULES), CONTEXT)).to_json()
    path = tmp_path / "EcrRetention.template.json"
    path.write_text(json.dumps(template, indent=1))

    findings = lint_file(path, config=ManualArgs(regions=REGIONS, ignore_checks=["W3005"]))

    assert [f"{m.rule.id} {m.message} ({m.path})" for m in findings] == []
