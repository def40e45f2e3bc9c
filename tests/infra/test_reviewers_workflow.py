"""The reviewers' role pinned to one review workflow (`reviewers.workflow`, issue 45): the subjects it trusts end with
GitHub's job_workflow_ref claim, so a token from any other workflow (a pull request's edited copy included) does not
assume it; a workflow with a wildcard, or not a workflow file at a branch or tag, is refused in one line."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from ecr_retention.cdk.deploy_settings import DeploySettings, Reviewers
from ecr_retention.domain.errors import InputError
from support.infra_stacks import CONTEXT, RULES, SharedStack

WORKFLOW = "acme/platform-workflows/.github/workflows/retention-review.yml@refs/heads/main"
PINNED = {
    "repository": "acme/platform-config",
    "repositoryId": 718293645,
    "branches": ["main"],
    "pullRequests": True,
    "workflow": WORKFLOW,
}
SUBJECT = "repo:acme/platform-config:repository_id:718293645"


def reviewers_settings(reviewers: dict[str, Any]) -> Reviewers | None:
    return DeploySettings.from_context(lambda key: reviewers if key == "reviewers" else None).reviewers


def test_a_pinned_workflow_ends_every_subject_the_role_trusts(shared_stack: SharedStack) -> None:
    template = Template.from_stack(shared_stack(RULES, {**CONTEXT, "reviewers": PINNED})).to_json()
    [role] = [
        resource
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Role" and "Federated" in str(resource["Properties"])
    ]
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Condition"]["StringLike"] == {
        "token.actions.githubusercontent.com:sub": [
            f"{SUBJECT}:pull_request:job_workflow_ref:{WORKFLOW}",
            f"{SUBJECT}:ref:refs/heads/main:job_workflow_ref:{WORKFLOW}",
        ]
    }


def test_without_a_pinned_workflow_the_subjects_are_the_repository_s() -> None:
    settings = reviewers_settings({key: value for key, value in PINNED.items() if key != "workflow"})
    assert settings is not None
    assert settings.subjects == [f"{SUBJECT}:pull_request", f"{SUBJECT}:ref:refs/heads/main"]


@pytest.mark.parametrize(
    "workflow",
    [
        "acme/platform-workflows/.github/workflows/*.yml@refs/heads/main",
        "acme/platform-workflows/.github/workflows/retention-review.yml@refs/heads/*",
        "acme/platform-workflows/.github/workflows/retention-review.yml",
        "acme/platform-workflows/retention-review.yml@refs/heads/main",
        "acme/platform-workflows/.github/workflows/retention-review.yml@main",
    ],
    ids=["wildcard-file", "wildcard-ref", "no-ref", "not-a-workflow", "short-ref"],
)
def test_a_workflow_that_pins_nothing_precisely_is_refused_in_one_line(workflow: str) -> None:
    with pytest.raises(InputError, match=r"^cdk context: reviewers\.workflow: ") as raised:
        reviewers_settings({**PINNED, "workflow": workflow})
    assert "\n" not in str(raised.value)
