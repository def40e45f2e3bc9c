"""Invariants of the lifecycle simulator over generated repositories and policies (hypothesis)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ecr_retention.domain.lifecycle.evaluation import LifecycleEvaluation, evaluate
from ecr_retention.domain.lifecycle.matching import selects
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import NOW, image

TAGS = ["v1", "v2", "v1.2", "1.12.370-dev", "dev", "latest", "prod-1", "beta-3"]
PATTERNS = ["v*", "*.*", "dev", "latest", "prod*", "*-*", "*", "beta*", "*1*"]


@st.composite
def repositories(draw: st.DrawFn) -> list[ImageDetail]:
    count = draw(st.integers(min_value=0, max_value=12))
    details: list[ImageDetail] = []
    used_tags: set[str] = set()
    for n in range(count):
        tags = [t for t in draw(st.lists(st.sampled_from(TAGS), max_size=3, unique=True)) if t not in used_tags]
        used_tags.update(tags)
        hours = draw(st.integers(min_value=0, max_value=24 * 20))
        pulled = draw(st.none() | st.integers(min_value=0, max_value=hours))
        data = image(
            f"img-{n}",
            *tags,
            age=timedelta(hours=hours),
            pulled_ago=None if pulled is None else timedelta(hours=pulled),
        )
        details.append(ImageDetail.model_validate(data))
    return details


@st.composite
def selections(draw: st.DrawFn, status: str) -> dict[str, Any]:
    selection: dict[str, Any] = {"tagStatus": status}
    if status == "tagged":
        selection["tagPatternList"] = draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=2, unique=True))
    kind = draw(st.sampled_from(["imageCountMoreThan", "sinceImagePushed", "sinceImagePulled"]))
    selection["countType"] = kind
    selection["countNumber"] = draw(st.integers(min_value=1, max_value=6))
    if kind != "imageCountMoreThan":
        selection["countUnit"] = "days"
    return selection


def rule_json(priority: int, selection: dict[str, Any]) -> dict[str, Any]:
    action = (
        {"type": "transition", "targetStorageClass": "archive"}
        if selection["countType"] == "sinceImagePulled"
        else {"type": "expire"}
    )
    return {"rulePriority": priority, "selection": selection, "action": action}


@st.composite
def policies(draw: st.DrawFn) -> LifecyclePolicy:
    body = draw(st.lists(selections("tagged"), min_size=0, max_size=4))
    if draw(st.booleans()):
        body.append(draw(selections("untagged")))
    body = draw(st.permutations(body))
    if draw(st.booleans()) or not body:
        body.append(draw(selections("any")))
    priorities = sorted(
        draw(st.lists(st.integers(min_value=2, max_value=60), min_size=len(body), max_size=len(body), unique=True))
    )
    return LifecyclePolicy.model_validate({"rules": [rule_json(p, s) for p, s in zip(priorities, body, strict=True)]})


def outcome(evaluation: LifecycleEvaluation) -> dict[str, int]:
    return {digest: verdict.rule.rule_priority for digest, verdict in evaluation.verdicts.items()}


@settings(max_examples=150, deadline=None)
@given(policy=policies(), repo=repositories())
def test_an_image_is_acted_on_by_at_most_one_rule(policy: LifecyclePolicy, repo: list[ImageDetail]) -> None:
    evaluation = evaluate(policy, repo, NOW)
    acted = [image.image_digest for rule in evaluation.rules for image in rule.acted]
    assert len(acted) == len(set(acted)) == len(evaluation.verdicts)


@settings(max_examples=150, deadline=None)
@given(policy=policies(), repo=repositories())
def test_a_rule_never_acts_on_an_image_a_higher_rule_selects(policy: LifecyclePolicy, repo: list[ImageDetail]) -> None:
    evaluation = evaluate(policy, repo, NOW)
    for digest, verdict in evaluation.verdicts.items():
        image = next(i for i in repo if i.image_digest == digest)
        higher = [r for r in policy.ordered_rules if r.rule_priority < verdict.rule.rule_priority]
        assert not any(selects(r.selection, image) for r in higher)


@settings(max_examples=100, deadline=None)
@given(policy=policies(), repo=repositories(), data=st.data())
def test_results_do_not_depend_on_input_order(
    policy: LifecyclePolicy, repo: list[ImageDetail], data: st.DataObject
) -> None:
    shuffled_images = data.draw(st.permutations(repo))
    shuffled_rules = data.draw(st.permutations(policy.rules))
    reordered = LifecyclePolicy.model_validate({"rules": [r.model_dump(by_alias=True) for r in shuffled_rules]})
    assert outcome(evaluate(reordered, shuffled_images, NOW)) == outcome(evaluate(policy, repo, NOW))


@settings(max_examples=150, deadline=None)
@given(policy=policies(), repo=repositories(), extra=selections("tagged"))
def test_adding_a_higher_priority_rule_never_lets_a_lower_rule_act_on_more_images(
    policy: LifecyclePolicy, repo: list[ImageDetail], extra: dict[str, Any]
) -> None:
    before = evaluate(policy, repo, NOW)
    rules = [rule_json(1, extra), *(r.model_dump(by_alias=True, exclude_none=True) for r in policy.rules)]
    after = evaluate(LifecyclePolicy.model_validate({"rules": rules}), repo, NOW)
    for rule_before in before.rules:
        acted_before = {i.image_digest for i in rule_before.acted}
        acted_after = {i.image_digest for i in after.rule(rule_before.rule.rule_priority).acted}
        assert acted_after <= acted_before
