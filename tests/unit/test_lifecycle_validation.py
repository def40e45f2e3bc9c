"""Policy validation mirrors PutLifecyclePolicy: each rule of ECR's, one line naming the rule and constraint."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.lifecycle.parsing import parse_policy, parse_policy_document
from ecr_retention.domain.lifecycle.policy import MAX_POLICY_TEXT

COUNT = {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 5}
EXPIRE = {"type": "expire"}
ARCHIVE = {"type": "transition", "targetStorageClass": "archive"}


def rule(priority: int = 1, action: dict[str, Any] | None = None, **selection: Any) -> dict[str, Any]:
    return {
        "rulePriority": priority,
        "description": "a rule description long enough for the policy text minimum",
        "selection": selection or COUNT,
        "action": action or EXPIRE,
    }


def tagged(patterns: list[str] | None = None, **rest: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"tagStatus": "tagged", "countType": "imageCountMoreThan", "countNumber": 3}
    if patterns is not None:
        base["tagPatternList"] = patterns
    return {**base, **rest}


def error_of(*rules: dict[str, Any]) -> str:
    with pytest.raises(InputError) as caught:
        parse_policy(json.dumps({"rules": list(rules)}, indent=2), "policy.json")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("policy.json: ")
    return message


def test_valid_policy_parses() -> None:
    policy = parse_policy(json.dumps({"rules": [rule(1, **tagged(["v*"])), rule(2)]}))
    assert [r.rule_priority for r in policy.ordered_rules] == [1, 2]


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        # rulePriority: integer >= 1, unique
        ([rule(0)], "rule 0 (rules[0]): rulePriority: 0: input should be greater than or equal to 1"),
        ([rule("1")], "rules[0]: rulePriority: '1': input should be a valid integer"),  # type: ignore[arg-type]
        ([rule(1, **tagged(["a*"])), rule(1)], "rules[0] and rules[1] both have rulePriority 1"),
        # tagStatus and the tag lists
        (
            [rule(1, **tagged())],
            "rule 1 (rules[0]): selection: tagStatus tagged requires tagPatternList or tagPrefixList",
        ),
        (
            [rule(1, **{**COUNT, "tagStatus": "untagged", "tagPrefixList": ["v"]})],
            "rule 1 (rules[0]): selection: tagPrefixList is only allowed with tagStatus tagged, not untagged",
        ),
        (
            [rule(1, **{**COUNT, "tagPatternList": ["v*"]})],
            "rule 1 (rules[0]): selection: tagPatternList is only allowed with tagStatus tagged, not any",
        ),
        (
            [rule(1, **tagged(["v*"], tagPrefixList=["v"]))],
            "selection: tagPatternList and tagPrefixList cannot both be given in one rule",
        ),
        ([rule(1, **tagged([]))], "rule 1 (rules[0]): selection.tagPatternList: needs at least 1, got 0"),
        ([rule(1, **tagged([""]))], "selection.tagPatternList[0]: must not be empty"),
        (
            [rule(1, **{**COUNT, "tagStatus": "all"})],
            "selection.tagStatus: 'all': input should be 'tagged', 'untagged' or 'any'",
        ),
        # at most four wildcards per pattern
        (
            [rule(1, **tagged(["test*1*2*3*4*5*6"]))],
            "selection.tagPatternList: 'test*1*2*3*4*5*6' has 6 wildcards; at most 4 allowed",
        ),
        # countType / countUnit / countNumber
        (
            [rule(1, **{**COUNT, "countUnit": "days"})],
            "rule 1 (rules[0]): selection: countUnit is not allowed with countType imageCountMoreThan",
        ),
        (
            [rule(1, tagStatus="any", countType="sinceImagePushed", countNumber=3)],
            "selection: countUnit (days) is required with countType sinceImagePushed",
        ),
        (
            [rule(1, tagStatus="any", countType="sinceImagePushed", countUnit="hours", countNumber=3)],
            "selection.countUnit: 'hours': input should be 'days'",
        ),
        (
            [rule(1, **{**COUNT, "countNumber": 0})],
            "selection.countNumber: 0: input should be greater than or equal to 1",
        ),
        ([rule(1, **{**COUNT, "countNumber": 2.5})], "selection.countNumber: 2.5: input should be a valid integer"),
        ([rule(1, **{**COUNT, "countType": "imageCountLessThan"})], "selection.countType: 'imageCountLessThan'"),
        # storage class
        (
            [rule(1, **{**COUNT, "storageClass": "archive"})],
            "selection: storageClass archive is only allowed with sinceImageTransitioned, not imageCountMoreThan",
        ),
        (
            [rule(1, tagStatus="any", countType="sinceImageTransitioned", countUnit="days", countNumber=100)],
            "selection: countType sinceImageTransitioned requires storageClass archive",
        ),
        (
            [
                rule(
                    1,
                    tagStatus="any",
                    storageClass="archive",
                    countType="sinceImageTransitioned",
                    countUnit="days",
                    countNumber=30,
                )
            ],
            "selection: countNumber 30: sinceImageTransitioned needs at least 90 days",
        ),
        # action and count type pairings
        (
            [rule(1, {"type": "transition"})],
            "rule 1 (rules[0]): action: action type transition requires targetStorageClass archive",
        ),
        (
            [rule(1, {"type": "expire", "targetStorageClass": "archive"})],
            "action: targetStorageClass is only allowed with action type transition",
        ),
        ([rule(1, {"type": "delete"})], "action.type: 'delete': input should be 'expire' or 'transition'"),
        (
            [rule(1, tagStatus="any", countType="sinceImagePulled", countUnit="days", countNumber=30)],
            "rule 1 (rules[0]): countType sinceImagePulled can only be used with action type transition",
        ),
        (
            [
                rule(
                    1,
                    ARCHIVE,
                    tagStatus="any",
                    storageClass="archive",
                    countType="sinceImageTransitioned",
                    countUnit="days",
                    countNumber=365,
                )
            ],
            "countType sinceImageTransitioned can only be used with action type expire",
        ),
        # rule-set constraints, per storage class
        ([rule(1), rule(2, **tagged(["v*"]))], "rule 1: a rule with tagStatus any must have the highest rulePriority"),
        (
            [
                rule(1, tagStatus="untagged", countType="imageCountMoreThan", countNumber=1),
                rule(2, **{**COUNT, "tagStatus": "untagged"}),
            ],
            "rule 2: only one rule may select untagged images among rules selecting storageClass standard",
        ),
        (
            [rule(1, **tagged(tagPrefixList=["a", "b"])), rule(2, **tagged(tagPrefixList=["b", "a"]))],
            "rule 2: tagPrefixList ['a', 'b'] repeats rule 1",
        ),
        # unknown keys
        ([{**rule(1), "selectionn": COUNT}], "rule 1 (rules[0]): selectionn: unknown key"),
        ([rule(1, **{**COUNT, "tagPatterns": ["v*"]})], "selection.tagPatterns: unknown key"),
        (
            [{"rulePriority": 1, "description": "x" * 120, "action": EXPIRE}],
            "rule 1 (rules[0]): selection: required but missing",
        ),
    ],
)
def test_invalid_policy_names_the_rule_and_the_constraint(rules: list[dict[str, Any]], expected: str) -> None:
    assert expected in error_of(*rules)


def test_any_rules_may_end_each_storage_class() -> None:
    parse_policy(
        json.dumps(
            {
                "rules": [
                    rule(1, ARCHIVE, tagStatus="any", countType="sinceImagePushed", countUnit="days", countNumber=30),
                    rule(
                        2,
                        tagStatus="any",
                        storageClass="archive",
                        countType="sinceImageTransitioned",
                        countUnit="days",
                        countNumber=365,
                    ),
                ]
            }
        )
    )


def test_four_wildcards_are_allowed() -> None:
    parse_policy(json.dumps({"rules": [rule(1, **tagged(["*test*1*2*3", "test*1*2*3*"]))]}))


def test_same_pattern_lists_are_allowed_as_the_rule_is_only_about_prefixes() -> None:
    parse_policy(json.dumps({"rules": [rule(1, **tagged(["v*"])), rule(2, **tagged(["v*"]))]}))


def test_at_most_50_rules() -> None:
    rules = [{"rulePriority": n, "selection": tagged([f"t{n}*"]), "action": EXPIRE} for n in range(1, 52)]
    assert "policy.json: rules: at most 50 allowed (ECR's quota of rules per policy), got 51" in error_of(*rules)


def test_at_least_one_rule() -> None:
    with pytest.raises(InputError, match="rules: needs at least 1, got 0"):
        parse_policy('{"rules": []}' + " " * 100, "policy.json")


def test_policy_text_length_limits() -> None:
    with pytest.raises(InputError, match="the policy text is 12 characters; ECR accepts 100 to 30720"):
        parse_policy('{"rules":[]}', "policy.json")
    rules = [rule(n, **tagged([f"{'x' * 250}{n}*"])) for n in range(1, 50)]
    text = json.dumps({"rules": rules}, indent=4)
    assert len(text) > MAX_POLICY_TEXT
    with pytest.raises(InputError, match=f"ECR accepts 100 to {MAX_POLICY_TEXT}"):
        parse_policy(text, "policy.json")


def test_invalid_json_is_one_line() -> None:
    with pytest.raises(InputError, match=r"policy.json: invalid JSON \(line 1, column 123\)"):
        parse_policy("{" + " " * 120 + "}}", "policy.json")


def test_policy_must_be_an_object() -> None:
    with pytest.raises(InputError, match="a lifecycle policy is a JSON object"):
        parse_policy("[" + " " * 120 + "]", "policy.json")


def test_get_lifecycle_policy_output_is_unwrapped() -> None:
    text = json.dumps({"rules": [rule(1)]})
    document = parse_policy_document(
        json.dumps(
            {
                "registryId": "123456789012",
                "repositoryName": "app",
                "lifecyclePolicyText": text,
                "lastEvaluatedAt": "2026-11-29T00:00:00Z",
            }
        ),
        "policy.json",
    )
    assert document.text == text
    assert document.repository_name == "app"
    assert document.registry_id == "123456789012"


def test_get_lifecycle_policy_output_with_an_invalid_policy_names_the_inner_text() -> None:
    inner = json.dumps({"rules": [rule(0)]})
    with pytest.raises(InputError, match=r"policy.json: lifecyclePolicyText: rule 0 \(rules\[0\]\): rulePriority"):
        parse_policy_document(json.dumps({"lifecyclePolicyText": inner}), "policy.json")


def test_boolean_rule_priority_is_not_named_as_a_rule() -> None:
    message = error_of(rule(True))  # type: ignore[arg-type]
    assert "policy.json: rules[0]: rulePriority: True: input should be a valid integer" in message
