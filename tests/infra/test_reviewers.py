"""The reviewers' role (stack context `reviewers`, issue 28): GitHub Actions of one repository assume it through OIDC
and may only read the snapshots, the in-use manifests and the in-use memory; cdk-nag has nothing to say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk.deploy_settings import DeploySettings, Reviewers
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.domain.errors import InputError
from support.infra_stacks import CONTEXT, RULES, SharedStack, build_stack, role_statements, rules_file

REPOSITORY_ID = 718293645
REVIEWERS = {
    "repository": "acme/platform-config",
    "repositoryId": REPOSITORY_ID,
    "branches": ["main"],
    "pullRequests": True,
    "createOidcProvider": True,
}
# The subject GitHub issues once the repository's OIDC subject is customized (docs/review.md, set-up step 2).
SUBJECT = f"repo:acme/platform-config:repository_id:{REPOSITORY_ID}"


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    return shared_stack(RULES, {**CONTEXT, "reviewers": REVIEWERS})


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


def reviewer_role(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    [(role_id, role)] = [
        (logical_id, resource)
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role" and "Federated" in json.dumps(resource["Properties"])
    ]
    return role_id, role


def test_github_actions_of_the_repository_assume_it_through_oidc(template: dict[str, Any]) -> None:
    _, role = reviewer_role(template)
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Action"] == "sts:AssumeRoleWithWebIdentity"
    [provider_id] = [k for k, v in template["Resources"].items() if v["Type"] == "AWS::IAM::OIDCProvider"]
    assert trust["Principal"] == {"Federated": {"Fn::GetAtt": [provider_id, "Arn"]}}
    assert trust["Condition"] == {
        "StringEquals": {"token.actions.githubusercontent.com:aud": "sts.amazonaws.com"},
        "StringLike": {
            "token.actions.githubusercontent.com:sub": [f"{SUBJECT}:pull_request", f"{SUBJECT}:ref:refs/heads/main"]
        },
    }
    provider = template["Resources"][provider_id]["Properties"]
    assert provider["Url"] == "https://token.actions.githubusercontent.com"
    assert provider["ClientIdList"] == ["sts.amazonaws.com"]


def test_it_reads_the_snapshots_the_manifests_the_holds_and_the_memory_and_nothing_else(
    template: dict[str, Any],
) -> None:
    role_id, _ = reviewer_role(template)
    statements = role_statements(template, role_id)
    actions = sorted(
        action for statement in statements for action in json.dumps(statement["Action"]).split('"') if ":" in action
    )
    assert actions == ["s3:GetObject", "s3:ListBucket"]
    [listing] = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert listing["Condition"] == {
        "StringLike": {"s3:prefix": ["snapshots/*", "in-use/*", "holds/*", "state/in-use-memory.json*"]}
    }
    [reading] = [s for s in statements if s["Action"] == "s3:GetObject"]
    keys = sorted(resource["Fn::Join"][1][1] for resource in reading["Resource"])
    assert keys == ["/holds/*", "/in-use/*", "/snapshots/*", "/state/in-use-memory.json"]


def test_its_arn_is_a_stack_output(template: dict[str, Any]) -> None:
    role_id, _ = reviewer_role(template)
    assert template["Outputs"]["ReviewerRoleArn"]["Value"] == {"Fn::GetAtt": [role_id, "Arn"]}


@pytest.mark.slow
def test_cdk_nag_finds_nothing_unacknowledged_with_reviewers(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
    findings = [f"{v.rule_name} at {[str(r.construct_path) for r in v.violating_resources]}" for v in report.violations]
    assert report.success, "\n".join(findings)


def test_an_existing_provider_is_imported_not_created(tmp_path: Path) -> None:
    reviewers = {"repository": "acme/platform-config", "repositoryId": REPOSITORY_ID, "branches": ["release/*"]}
    template = Template.from_stack(
        build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "reviewers": reviewers})
    ).to_json()
    assert [v for v in template["Resources"].values() if v["Type"] == "AWS::IAM::OIDCProvider"] == []
    _, role = reviewer_role(template)
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert "oidc-provider/token.actions.githubusercontent.com" in json.dumps(trust["Principal"])
    assert trust["Condition"]["StringLike"] == {
        "token.actions.githubusercontent.com:sub": [f"{SUBJECT}:ref:refs/heads/release/*"]
    }


def test_reviewers_that_allow_no_workflow_stop_synthesis(tmp_path: Path) -> None:
    reviewers = {"repository": "acme/platform-config", "repositoryId": REPOSITORY_ID}
    with pytest.raises(InputError, match=r"reviewers: .*allows no workflow"):
        build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "reviewers": reviewers})


def reviewers_settings(reviewers: dict[str, Any]) -> Reviewers | None:
    return DeploySettings.from_context(lambda key: reviewers if key == "reviewers" else None).reviewers


def test_pull_requests_are_trusted_only_when_asked() -> None:
    """Any pull request's workflow can be edited by whoever can push a branch: not trusted unless the deployment
    says so."""
    settings = reviewers_settings({"repository": "acme/platform-config", "repositoryId": 7, "branches": ["main"]})
    assert settings is not None
    assert settings.subjects == ["repo:acme/platform-config:repository_id:7:ref:refs/heads/main"]


@pytest.mark.parametrize("branch", ["*", "**", "*/*"])
def test_a_branch_that_is_every_branch_is_refused_in_one_line(branch: str) -> None:
    reviewers = {"repository": "acme/platform-config", "repositoryId": 7, "branches": ["main", branch]}
    with pytest.raises(InputError, match=r"^cdk context: reviewers\.branches: .*trusts every branch"):
        reviewers_settings(reviewers)


def test_reviewers_without_the_repository_id_stop_synthesis_naming_the_key() -> None:
    """What an existing deployment meets on upgrade: one line naming repositoryId and where to find it."""
    with pytest.raises(InputError, match=r"^cdk context: reviewers: repositoryId is required: .*gh api repos/acme/"):
        reviewers_settings({"repository": "acme/platform-config", "branches": ["main"]})


@pytest.mark.parametrize("repository_id", ["718293645", 0, -3, 1.5, True])
def test_a_repository_id_that_is_not_a_positive_whole_number_is_refused(repository_id: Any) -> None:
    reviewers = {"repository": "acme/platform-config", "repositoryId": repository_id, "branches": ["main"]}
    with pytest.raises(InputError, match=r"^cdk context: reviewers\.repositoryId: "):
        reviewers_settings(reviewers)


def test_kept_snapshots_expire_when_no_sweep_rewrites_them(template: dict[str, Any]) -> None:
    rules = [
        rule
        for bucket in template["Resources"].values()
        if bucket["Type"] == "AWS::S3::Bucket"
        for rule in bucket["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
    ]
    assert {
        "Id": "expire-review-snapshots",
        "Prefix": "snapshots/",
        "ExpirationInDays": 30,
        "Status": "Enabled",
    } in rules
