"""A direct invocation cannot write the sentinel's records or send its alerts (docs/safety.md section 30,
docs/security.md): infra/cloudformation/sentinel-invoke-scp.yaml (package data, ecr_retention.cdk.spoke_templates),
evaluated with tests/support/iam_evaluation.py against the identity policies that would otherwise allow it. Every IAM principal of the account, an administrator
with `*` included, is denied invoking the sentinel (any qualifier) and rewiring it or the stack's rules; the deploying
role may still update them; nothing else is touched. EventBridge delivers as a service principal, through the
function's resource policy (tests/infra/test_event_provenance.py), and SCPs do not apply to service principals: that
the evaluator cannot show, the test of the resource policy does. No synthesis."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from ecr_retention.cdk.spoke_templates import SENTINEL_INVOKE_SCP, template_path
from support.iam_evaluation import Request, decide

TEMPLATE = template_path(SENTINEL_INVOKE_SCP)
ACCOUNT = "123456789012"
SENTINEL = f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:EcrRetention-SentinelSentinelFunction1A2B3C4D-AbCdEf012345"
OTHER_FUNCTION = f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:EcrRetention-PushTriggerPushFunction-XyZ"
DEPLOYER = f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-{ACCOUNT}-eu-west-1"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/Admin"
DEVELOPER = f"arn:aws:iam::{ACCOUNT}:role/developer"
RULE = f"arn:aws:events:eu-west-1:{ACCOUNT}:rule/EcrRetention-SentinelImageDeletedB0A1C2D3-1QW2E3R4T5Y6"
FORWARDED_RULE = f"arn:aws:events:us-east-1:{ACCOUNT}:rule/EcrRetentionEvents-us-east-1-ImageDeletedC1D2-7YH8"
OTHER_RULE = f"arn:aws:events:eu-west-1:{ACCOUNT}:rule/team-builds"
TOKENS = {"SentinelFunctionArn": SENTINEL, "DeployingRoleArns": DEPLOYER, "StackRulePrefix": "EcrRetention"}
# What the principals' own policies allow: everything.
EVERYTHING = [{"Effect": "Allow", "Action": "*", "Resource": "*"}]


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(TEMPLATE.read_text())
    return loaded


@pytest.fixture(scope="module")
def scp(template: dict[str, Any]) -> list[dict[str, Any]]:
    policy = template["Resources"]["SentinelInvokeGuard"]
    assert policy["Type"] == "AWS::Organizations::Policy"
    assert policy["Properties"]["Type"] == "SERVICE_CONTROL_POLICY"
    statements: list[dict[str, Any]] = policy["Properties"]["Content"]["Statement"]
    return statements


def decision(scp: list[dict[str, Any]], principal: str, action: str, resource: str) -> str:
    return decide([EVERYTHING, scp], Request(action, resource, {"aws:PrincipalArn": principal}), TOKENS)


@pytest.mark.parametrize("principal", [ADMIN, DEVELOPER, DEPLOYER])
@pytest.mark.parametrize("resource", [SENTINEL, f"{SENTINEL}:$LATEST", f"{SENTINEL}:1"])
@pytest.mark.parametrize("action", ["lambda:InvokeFunction", "lambda:InvokeAsync", "lambda:InvokeFunctionUrl"])
def test_no_iam_principal_of_the_account_may_invoke_the_sentinel(
    scp: list[dict[str, Any]], principal: str, resource: str, action: str
) -> None:
    assert decision(scp, principal, action, resource) == "deny"


@pytest.mark.parametrize(
    "action",
    [
        "lambda:AddPermission",
        "lambda:UpdateFunctionCode",
        "lambda:UpdateFunctionConfiguration",
        "lambda:PutFunctionEventInvokeConfig",
        "lambda:CreateFunctionUrlConfig",
        "lambda:DeleteFunction",
    ],
)
def test_only_the_deploying_role_may_rewire_the_sentinel(scp: list[dict[str, Any]], action: str) -> None:
    assert decision(scp, ADMIN, action, SENTINEL) == "deny"
    assert decision(scp, DEVELOPER, action, SENTINEL) == "deny"
    assert decision(scp, DEPLOYER, action, SENTINEL) == "allow"


@pytest.mark.parametrize("rule", [RULE, FORWARDED_RULE])
@pytest.mark.parametrize("action", ["events:PutTargets", "events:RemoveTargets", "events:DisableRule"])
def test_only_the_deploying_role_may_retarget_the_stacks_rules(
    scp: list[dict[str, Any]], rule: str, action: str
) -> None:
    """A rule's target given a constant input would be delivered by EventBridge, as a service principal."""
    assert decision(scp, ADMIN, action, rule) == "deny"
    assert decision(scp, DEPLOYER, action, rule) == "allow"


def test_other_functions_and_rules_are_not_touched(scp: list[dict[str, Any]]) -> None:
    assert decision(scp, DEVELOPER, "lambda:InvokeFunction", OTHER_FUNCTION) == "allow"
    assert decision(scp, DEVELOPER, "lambda:UpdateFunctionCode", OTHER_FUNCTION) == "allow"
    assert decision(scp, DEVELOPER, "events:PutTargets", OTHER_RULE) == "allow"
    assert decision(scp, ADMIN, "lambda:GetFunction", SENTINEL) == "allow"


def test_the_scp_fits_organizations_limit(scp: list[dict[str, Any]]) -> None:
    """An SCP is at most 5,120 characters; the ARNs filled in add about 200."""
    content = json.dumps({"Version": "2012-10-17", "Statement": scp}, separators=(",", ":"))
    assert len(content) + 200 < 5120


def test_the_scp_takes_the_function_arn_as_the_stack_outputs_it() -> None:
    """The parameter's pattern accepts a function ARN as the stack's output SentinelFunctionArn gives it (the output
    itself: tests/infra/test_event_provenance.py)."""
    import re

    loaded = yaml.safe_load(TEMPLATE.read_text())
    assert re.fullmatch(loaded["Parameters"]["SentinelFunctionArn"]["AllowedPattern"], SENTINEL)
