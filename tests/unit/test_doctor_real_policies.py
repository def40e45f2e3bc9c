"""The corpus of real lifecycle policies (tests/support/real_lifecycle_policies.py, each with its public source): what
ECR's preview lists for each, and what the doctor finds. A change in either is a change in what a user is told."""

from __future__ import annotations

import json

import pytest

from ecr_retention.domain.doctor.diagnosis import diagnose
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.preview import preview
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import NOW, digest
from support.real_lifecycle_policies import CASES, SEEDS, Case


def run(case: Case) -> tuple[list[tuple[str, int]], RepositoryDiagnosis]:
    policy = parse_policy(json.dumps(case.policy, indent=2), case.source)
    images = [ImageDetail.model_validate({**detail, "repositoryName": "app"}) for detail in case.images]
    manifests = {digest(seed): manifest for seed, manifest in case.manifests.items()}
    listed = preview(policy, images, NOW, manifests).preview_results
    expired = [(SEEDS[result.image_digest], result.applied_rule_priority) for result in listed]
    return expired, diagnose(policy, images, now=NOW, manifests=manifests, repository_name="app")


def test_the_corpus_holds_at_least_twenty_real_policies_each_with_its_source() -> None:
    assert len(CASES) >= 20
    assert all(":" in case.source for case in CASES)
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_preview_of_a_real_policy(case: Case) -> None:
    expired, _ = run(case)
    assert expired == case.preview


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_doctor_on_a_real_policy(case: Case) -> None:
    _, diagnosis = run(case)
    assert [(f.severity, f.code, f.rule_priority) for f in diagnosis.findings] == case.findings
    if case.fixed is not None:
        assert diagnosis.fixed_policy is not None
        assert [_summary(rule) for rule in diagnosis.fixed_policy["rules"]] == case.fixed


def _summary(rule: dict[str, object]) -> tuple[int, str, int]:
    selection = rule["selection"]
    assert isinstance(selection, dict)
    lists = selection.get("tagPrefixList") or selection.get("tagPatternList")
    what = ",".join(lists) if lists else str(selection["tagStatus"])
    priority = rule["rulePriority"]
    assert isinstance(priority, int)
    return priority, what, int(selection["countNumber"])


def test_a_policy_that_jsonencode_wrote_with_nulls_is_refused_as_ecr_refuses_it() -> None:
    """cloudposse/terraform-aws-ecr issue 158 and PR 132: an optional attribute left unset in a custom lifecycle rule
    reaches the policy as `"countUnit": null`; ECR answers InvalidParameterException, and so does the simulator."""
    rendered = {
        "rules": [
            {
                "rulePriority": 1,
                "description": "Remove untagged images",
                "selection": {
                    "tagStatus": "untagged",
                    "countType": "imageCountMoreThan",
                    "countNumber": 1,
                    "countUnit": None,
                    "tagPrefixList": None,
                },
                "action": {"type": "expire", "targetStorageClass": None},
            }
        ]
    }
    with pytest.raises(InputError) as raised:
        parse_policy(json.dumps(rendered), "cloudposse custom_lifecycle_rules")
    assert str(raised.value).startswith(
        "cloudposse custom_lifecycle_rules: rule 1 (rules[0]): selection.countUnit: null is not allowed"
    )
