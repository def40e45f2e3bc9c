"""The lifecycle simulator's evaluation: AWS's worked examples, seed 002, and each documented rule."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.domain.lifecycle.evaluation import evaluate
from ecr_retention.domain.lifecycle.matching import pattern_includes, tag_matches
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.lifecycle.preview import preview
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import NOW, OCI_INDEX, digest, image, index_manifest

DAY = timedelta(days=1)


def rule(priority: int, selection: dict[str, Any], action: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "rulePriority": priority,
        "description": f"Rule {priority}",
        "selection": selection,
        "action": action or {"type": "expire"},
    }


def policy(*rules: dict[str, Any]) -> LifecyclePolicy:
    return parse_policy(json.dumps({"rules": list(rules)}, indent=2))


def count(n: int, status: str = "tagged", **lists: list[str]) -> dict[str, Any]:
    return {"tagStatus": status, **lists, "countType": "imageCountMoreThan", "countNumber": n}


def since(n: int, status: str = "tagged", count_type: str = "sinceImagePushed", **rest: Any) -> dict[str, Any]:
    return {"tagStatus": status, **rest, "countType": count_type, "countUnit": "days", "countNumber": n}


def images(*details: dict[str, Any]) -> list[ImageDetail]:
    return [ImageDetail.model_validate(detail) for detail in details]


def acted(pol: LifecyclePolicy, imgs: list[ImageDetail], **kwargs: Any) -> dict[str, int]:
    """seed -> applied rule priority, for the images the policy acts on (seeds are single letters here)."""
    evaluation = evaluate(pol, imgs, NOW, **kwargs)
    by_digest = {digest(seed): seed for seed in SEEDS}
    return {by_digest[d]: v.rule.rule_priority for d, v in evaluation.verdicts.items()}


SEEDS = [*"ABCDEFGHIJ", "dev", "v350", "v352", "v355", "v359", "v362", "v365", "v368", "v370", "old", "new"]


# --- AWS's worked examples (shared/reference/ecr-lifecycle.md §1.4; LPE) ---------------------------

MULTIPLE_RULES_REPO = (
    image("A", "beta-1", "prod-1", age=10 * DAY),
    image("B", "beta-2", "prod-2", age=9 * DAY),
    image("C", "beta-3", age=8 * DAY),
)


@pytest.mark.parametrize(
    ("prod", "beta"),
    [
        ({"tagPatternList": ["prod*"]}, {"tagPatternList": ["beta*"]}),
        ({"tagPrefixList": ["prod"]}, {"tagPrefixList": ["beta"]}),
    ],
    ids=["patterns", "prefixes"],
)
def test_aws_multiple_rules_example_a_expires_only_image_a(prod: dict[str, Any], beta: dict[str, Any]) -> None:
    pol = policy(rule(1, count(1, **prod)), rule(2, count(1, **beta)))
    assert acted(pol, images(*MULTIPLE_RULES_REPO)) == {"A": 1}


@pytest.mark.parametrize(
    ("prod", "beta"),
    [
        ({"tagPatternList": ["prod*"]}, {"tagPatternList": ["beta*"]}),
        ({"tagPrefixList": ["prod"]}, {"tagPrefixList": ["beta"]}),
    ],
    ids=["patterns", "prefixes"],
)
def test_aws_multiple_rules_example_b_expires_a_and_b(prod: dict[str, Any], beta: dict[str, Any]) -> None:
    pol = policy(rule(1, count(1, **beta)), rule(2, count(1, **prod)))
    assert acted(pol, images(*MULTIPLE_RULES_REPO)) == {"A": 1, "B": 1}


def test_aws_multiple_tags_example_a_selects_only_images_with_all_patterns() -> None:
    repo = images(
        image("A", "alpha-1", age=12 * DAY),
        image("B", "beta-1", age=11 * DAY),
        image("C", "alpha-2", "beta-2", age=10 * DAY),
        image("D", "alpha-3", age=4 * DAY),
        image("E", "beta-3", age=3 * DAY),
        image("F", "alpha-4", "beta-4", age=2 * DAY),
    )
    pol = policy(rule(1, since(5, tagPatternList=["alpha*", "beta*"])))
    evaluation = evaluate(pol, repo, NOW)
    assert [i.image_digest for i in evaluation.rules[0].selected] == [digest("F"), digest("C")]
    assert acted(pol, repo) == {"C": 1}


def test_aws_multiple_tags_example_b_tags_are_not_exclusive() -> None:
    repo = images(
        image("A", "alpha-1", "beta-1", "gamma-1", age=10 * DAY),
        image("B", "alpha-2", "beta-2", age=9 * DAY),
        image("C", "alpha-3", "beta-3", "gamma-2", age=8 * DAY),
    )
    pol = policy(rule(1, count(1, tagPatternList=["alpha*", "beta*"])))
    assert acted(pol, repo) == {"A": 1, "B": 1}


def test_aws_all_images_example_a_keeps_only_the_newest() -> None:
    repo = images(
        image("A", "alpha-1", age=4 * DAY),
        image("B", "beta-1", age=3 * DAY),
        image("C", age=2 * DAY),
        image("D", "alpha-2", age=1 * DAY),
    )
    assert acted(policy(rule(1, count(1, "any"))), repo) == {"A": 1, "B": 1, "C": 1}


def test_aws_all_images_example_b_expires_a_b_and_d() -> None:
    """D and E are both "1 day" old in AWS's text; E was pushed last (at exactly 24 hours), so E is the
    youngest and holds rule 3's one slot, and E is not older than one day for rule 2."""
    repo = images(
        image("A", "alpha-1", "beta-1", age=4 * DAY),
        image("B", age=3 * DAY),
        image("C", "alpha-2", age=2 * DAY),
        image("D", "git-hash", age=DAY + timedelta(hours=1)),
        image("E", age=DAY),
    )
    pol = policy(
        rule(1, count(1, tagPatternList=["alpha*"])),
        rule(2, since(1, "untagged")),
        rule(3, count(1, "any")),
    )
    evaluation = evaluate(pol, repo, NOW)
    assert acted(pol, repo) == {"A": 1, "B": 2, "D": 3}
    rule3 = evaluation.rule(3)
    # Rule 3 cannot mark A, B (marked by higher rules), C (selected by rule 1) nor E (selected by rule 2).
    assert {i.image_digest for i in rule3.already_acted} == {digest("A"), digest("B")}
    assert {i.image_digest for i, _ in rule3.claimed} == {digest("C")}
    assert [i.image_digest for i in rule3.window] == [digest("E")]


def test_aws_combining_archive_and_expire_rules() -> None:
    repo = images(
        image("A", "v1", age=40 * DAY),
        image("B", "v2", age=10 * DAY),
        {**image("C", "v0", age=900 * DAY), "imageStatus": "ARCHIVED", "lastArchivedAt": (NOW - 400 * DAY).isoformat()},
        {
            **image("D", "v00", age=500 * DAY),
            "imageStatus": "ARCHIVED",
            "lastArchivedAt": (NOW - 100 * DAY).isoformat(),
        },
    )
    pol = policy(
        rule(1, since(30, "any"), {"type": "transition", "targetStorageClass": "archive"}),
        rule(2, since(365, "any", "sinceImageTransitioned", storageClass="archive")),
    )
    result = preview(pol, repo, NOW).to_json_dict()
    assert [(r["imageDigest"], r["action"], r["storageClass"]) for r in result["previewResults"]] == [
        (digest("A"), {"type": "TRANSITION", "targetStorageClass": "ARCHIVE"}, "STANDARD"),
        (digest("C"), {"type": "EXPIRE"}, "ARCHIVE"),
    ]
    assert result["summary"] == {
        "expiringImageTotalCount": 1,
        "transitioningImageTotalCounts": [{"targetStorageClass": "ARCHIVE", "imageTotalCount": 1}],
    }


# --- seed 002 (shared/seeds/002_bc5c65cfd47901d5.txt) ----------------------------------------------

INCIDENT_POLICY = (
    rule(1, count(3, tagPatternList=["*.*"])),
    rule(2, since(1, "untagged")),
)
FIXED_POLICY = (
    rule(1, count(1, tagPatternList=["latest"])),
    rule(2, count(1, tagPatternList=["dev"])),
    rule(3, count(3, tagPatternList=["*.*"])),
    rule(4, since(1, "untagged")),
)


def test_seed_002_incident_count_rule_expires_dev_with_its_version_tag() -> None:
    """Four production builds after the last dev build push 1.12.350-dev out of the newest 3, and the
    dev tag on the same image goes with it."""
    repo = images(
        image("dev", "dev", "1.12.350-dev", age=27 * DAY),
        image("v352", "1.12.352", age=23 * DAY),
        image("v355", "1.12.355", age=16 * DAY),
        image("v359", "1.12.359", age=9 * DAY),
        image("v362", "latest", "1.12.362", age=2 * DAY),
        image("old", age=10 * DAY),
        image("new", age=timedelta(hours=10)),
    )
    result = preview(policy(*INCIDENT_POLICY), repo, NOW).to_json_dict()
    assert [(r["imageTags"], r["appliedRulePriority"]) for r in result["previewResults"]] == [
        (["dev", "1.12.350-dev"], 1),
        (["1.12.352"], 1),
        ([], 2),
    ]
    assert result["summary"]["expiringImageTotalCount"] == 3


def test_seed_002_fix_keeps_dev_and_latest_and_ages_out_the_rest() -> None:
    repo = images(
        image("dev", "dev", "1.12.350-dev", age=27 * DAY),
        image("v352", "1.12.352", age=23 * DAY),
        image("v355", "1.12.355", age=16 * DAY),
        image("v359", "1.12.359", age=9 * DAY),
        image("v362", "latest", "1.12.362", age=2 * DAY),
        image("old", age=10 * DAY),
    )
    assert acted(policy(*FIXED_POLICY), repo) == {"v352": 3, "old": 4}


def test_seed_002_preview_protected_images_still_take_count_slots() -> None:
    """1.12.359 / 1.12.365 / 1.12.368 (latest) / 1.12.370-dev (dev): rule 3 counts the dev and latest
    images among its newest 3, cannot expire them, and pushes 1.12.359 out."""
    repo = images(
        image("v359", "1.12.359", age=20 * DAY),
        image("v365", "1.12.365", age=12 * DAY),
        image("v368", "1.12.368", "latest", age=6 * DAY),
        image("v370", "1.12.370-dev", "dev", age=3 * DAY),
    )
    evaluation = evaluate(policy(*FIXED_POLICY), repo, NOW)
    assert acted(policy(*FIXED_POLICY), repo) == {"v359": 3}
    assert [(i.image_digest, by) for i, by in evaluation.rule(3).window_blocked] == [
        (digest("v370"), 2),
        (digest("v368"), 1),
    ]


# --- each rule of the evaluation --------------------------------------------------------------------


def test_count_rule_counts_images_protected_by_higher_rule() -> None:
    repo = images(image("A", "keep-me", "v1", age=1 * DAY), image("B", "v2", age=2 * DAY))
    pol = policy(rule(1, count(1, tagPatternList=["keep-me"])), rule(2, count(1, tagPatternList=["v*"])))
    assert acted(pol, repo) == {"B": 2}


def test_lower_rule_cannot_act_on_image_a_higher_rule_only_selected() -> None:
    repo = images(image("A", "prod-1", age=100 * DAY))
    pol = policy(rule(1, count(5, tagPatternList=["prod*"])), rule(2, since(1, "any")))
    assert acted(pol, repo) == {}


def test_image_is_acted_on_by_the_highest_priority_rule_that_marks_it() -> None:
    repo = images(image("A", "v1", age=100 * DAY))
    pol = policy(rule(7, since(10, tagPatternList=["v*"])), rule(3, since(50, tagPatternList=["*1"])))
    assert acted(pol, repo) == {"A": 3}


def test_rules_apply_by_priority_number_not_by_list_order() -> None:
    repo = images(image("A", "v1", "x", age=100 * DAY))
    pol = policy(
        rule(20, since(1, tagPatternList=["v*"]), {"type": "transition", "targetStorageClass": "archive"}),
        rule(10, since(1, tagPatternList=["x"])),
    )
    assert evaluate(pol, repo, NOW).verdicts[digest("A")].action == "EXPIRE"


@pytest.mark.parametrize(
    ("pattern", "tag", "matches"),
    [
        ("prod*", "prod-1", True),
        ("prod*", "preprod", False),
        ("*prod*", "preprod-1", True),
        ("prod", "prod", True),
        ("prod", "prod-1", False),
        ("v?.1", "v1.1", False),  # `?` is literal for ECR
        ("v?.1", "v?.1", True),
        ("1.[0-9]", "1.5", False),  # so are brackets
        ("*.*", "1.12.370-dev", True),
        ("*.*", "dev", False),
        ("*test*1*2*3", "xtestx1x2x3", True),
        ("Prod*", "prod-1", False),  # case-sensitive
    ],
)
def test_tag_pattern_only_star_is_special_and_matches_the_whole_tag(pattern: str, tag: str, matches: bool) -> None:
    assert tag_matches(tag, pattern) is matches


def test_prefix_list_matches_tag_beginnings_only() -> None:
    repo = images(image("A", "release-1", age=10 * DAY), image("B", "pre-release", age=10 * DAY))
    assert acted(policy(rule(1, since(1, tagPrefixList=["release"]))), repo) == {"A": 1}


def test_every_list_entry_must_match_some_tag_of_the_image() -> None:
    repo = images(image("A", "alpha-1", age=10 * DAY), image("B", "alpha-2", "beta-2", age=10 * DAY))
    assert acted(policy(rule(1, since(1, tagPrefixList=["alpha", "beta"]))), repo) == {"B": 1}


def test_tagged_rule_never_selects_untagged_images_and_untagged_rule_never_tagged() -> None:
    repo = images(image("A", age=10 * DAY), image("B", "x", age=10 * DAY))
    assert acted(policy(rule(1, since(1, tagPatternList=["*"]))), repo) == {"B": 1}
    assert acted(policy(rule(1, since(1, "untagged"))), repo) == {"A": 1}


def test_age_exactly_n_days_is_not_older_than_n_days() -> None:
    repo = images(image("A", "x", age=3 * DAY), image("B", "y", age=3 * DAY + timedelta(seconds=1)))
    assert acted(policy(rule(1, since(3, "any"))), repo) == {"B": 1}


def test_age_uses_exact_24_hour_periods_not_calendar_days() -> None:
    repo = images(image("A", "x", age=DAY + timedelta(hours=23, minutes=59)))
    assert acted(policy(rule(1, since(1, "any"))), repo) == {"A": 1}
    assert acted(policy(rule(1, since(2, "any"))), repo) == {}


def test_equal_push_times_break_by_digest_the_lower_digest_counts_as_younger() -> None:
    repo = images(*(image(seed, f"t-{seed}", age=5 * DAY) for seed in "ABC"))
    lowest = min(digest(seed) for seed in "ABC")
    evaluation = evaluate(policy(rule(1, count(1, "any"))), repo, NOW)
    assert [i.image_digest for i in evaluation.rules[0].window] == [lowest]
    assert set(evaluation.verdicts) == {digest(seed) for seed in "ABC"} - {lowest}


def test_since_image_pulled_uses_last_pull_and_falls_back_to_push_time() -> None:
    repo = images(
        image("A", "a", age=100 * DAY, pulled_ago=2 * DAY),
        image("B", "b", age=100 * DAY, pulled_ago=40 * DAY),
        image("C", "c", age=40 * DAY),
        image("D", "d", age=10 * DAY),
    )
    pol = policy(rule(1, since(30, "any", "sinceImagePulled"), {"type": "transition", "targetStorageClass": "archive"}))
    assert acted(pol, repo) == {"B": 1, "C": 1}


def test_restored_image_counts_from_its_activation() -> None:
    restored = {**image("A", "a", age=100 * DAY, pulled_ago=80 * DAY), "lastActivatedAt": (NOW - 2 * DAY).isoformat()}
    repo = images(restored, image("B", "b", age=50 * DAY))
    pulled = rule(1, since(30, "any", "sinceImagePulled"), {"type": "transition", "targetStorageClass": "archive"})
    assert acted(policy(pulled), repo) == {"B": 1}
    assert acted(policy(rule(1, since(30, "any"))), repo) == {"B": 1}
    # and orders as if pushed at activation: it holds the one slot of a count rule
    assert acted(policy(rule(1, count(1, "any"))), repo) == {"B": 1}


def test_since_image_transitioned_expires_archived_images_only() -> None:
    archived = {
        **image("A", "a", age=400 * DAY),
        "imageStatus": "ARCHIVED",
        "lastArchivedAt": (NOW - 91 * DAY).isoformat(),
    }
    repo = images(archived, image("B", "b", age=400 * DAY))
    pol = policy(rule(1, since(90, "any", "sinceImageTransitioned", storageClass="archive")))
    assert acted(pol, repo) == {"A": 1}


def test_standard_rules_do_not_see_archived_or_activating_images() -> None:
    repo = images(
        {**image("A", "a", age=400 * DAY), "imageStatus": "ARCHIVED", "lastArchivedAt": (NOW - 200 * DAY).isoformat()},
        image("B", "b", age=400 * DAY, status="ACTIVATING"),
        image("C", "c", age=400 * DAY),
    )
    assert acted(policy(rule(1, since(1, "any"))), repo) == {"C": 1}
    archive_rule = rule(1, since(90, "any", "sinceImageTransitioned", storageClass="archive"))
    assert acted(policy(archive_rule), repo) == {"A": 1}


def test_index_child_is_not_expired_while_its_index_stays() -> None:
    repo = images(
        image("A", "v1", media_type=OCI_INDEX, age=10 * DAY),
        image("B", age=10 * DAY),
        image("C", age=10 * DAY),
    )
    manifests = {digest("A"): index_manifest("B")}
    evaluation = evaluate(policy(rule(1, since(1, "untagged"))), repo, NOW, manifests)
    assert set(evaluation.verdicts) == {digest("C")}
    assert [i.image_digest for i in evaluation.rules[0].index_children] == [digest("B")]


def test_index_child_is_not_expired_in_the_same_evaluation_as_its_index() -> None:
    repo = images(image("A", "v1", media_type=OCI_INDEX, age=10 * DAY), image("B", age=10 * DAY))
    pol = policy(rule(1, since(1, tagPatternList=["v*"])), rule(2, since(1, "untagged")))
    assert acted(pol, repo, manifests={digest("A"): index_manifest("B")}) == {"A": 1}


def test_child_of_an_archived_index_is_no_longer_guarded() -> None:
    archived_index = {
        **image("A", "v1", media_type=OCI_INDEX, age=400 * DAY),
        "imageStatus": "ARCHIVED",
        "lastArchivedAt": (NOW - 100 * DAY).isoformat(),
    }
    repo = images(archived_index, image("B", age=400 * DAY))
    assert acted(policy(rule(1, since(1, "untagged"))), repo, manifests={digest("A"): index_manifest("B")}) == {"B": 1}


def test_index_without_manifest_is_reported_and_its_children_are_unknown() -> None:
    repo = images(image("A", "v1", media_type=OCI_INDEX), image("B"))
    evaluation = evaluate(policy(rule(1, since(1, "untagged"))), repo, NOW)
    assert evaluation.indexes_without_manifest == (digest("A"),)
    assert set(evaluation.verdicts) == {digest("B")}


def test_referrers_go_with_their_expired_subject_outside_any_rule() -> None:
    repo = images(
        image("A", "v1", age=10 * DAY),
        image("B", subject="A", age=timedelta(hours=1)),
        image("C", subject="B", age=timedelta(hours=1)),
        image("D", subject="E", age=timedelta(hours=1)),
        image("E", "v2", age=timedelta(hours=2)),
    )
    result = preview(policy(rule(1, since(5, tagPatternList=["v*"]))), repo, NOW).to_json_dict()
    assert [r["imageDigest"] for r in result["previewResults"]] == [digest("A")]
    assert result["summary"]["expiringImageTotalCount"] == 1
    assert {(r["imageDigest"], r["subjectManifestDigest"]) for r in result["cascadedReferrers"]} == {
        (digest("B"), digest("A")),
        (digest("C"), digest("B")),
    }


def test_preview_has_the_get_lifecycle_policy_preview_shape() -> None:
    repo = images(image("A", "v1", age=10 * DAY), image("B", "v2", age=1 * DAY))
    result = preview(policy(rule(1, count(1, tagPatternList=["v*"]))), repo, NOW).to_json_dict()
    assert result == {
        "status": "COMPLETE",
        "previewResults": [
            {
                "imageDigest": digest("A"),
                "imageTags": ["v1"],
                "imagePushedAt": "2026-11-20T06:00:00Z",
                "action": {"type": "EXPIRE"},
                "appliedRulePriority": 1,
                "storageClass": "STANDARD",
            }
        ],
        "summary": {"expiringImageTotalCount": 1},
    }


def test_preview_with_nothing_to_do_is_empty() -> None:
    result = preview(policy(rule(1, count(5, "any"))), images(image("A", "v1")), NOW).to_json_dict()
    assert result["previewResults"] == []
    assert result["summary"] == {"expiringImageTotalCount": 0}


def test_preview_lists_results_by_priority_then_oldest_first() -> None:
    repo = images(
        image("A", "v1", age=30 * DAY),
        image("B", "v2", age=20 * DAY),
        image("C", "v3", age=10 * DAY),
        image("D", age=40 * DAY),
    )
    pol = policy(rule(2, count(1, tagPatternList=["v*"])), rule(1, since(1, "untagged")))
    result = preview(pol, repo, NOW)
    assert [r.image_digest for r in result.preview_results] == [digest("D"), digest("A"), digest("B")]


@pytest.mark.parametrize(
    ("outer", "inner", "included"),
    [
        ("*", "anything*", True),
        ("v*", "v1*", True),
        ("v1*", "v*", False),
        ("*a*", "x*a*y", True),
        ("*ab*", "a*b", False),
        ("prod", "prod", True),
        ("prod*", "prod", True),
    ],
)
def test_pattern_inclusion_is_sound(outer: str, inner: str, included: bool) -> None:
    assert pattern_includes(outer, inner) is included


def test_age_rule_with_a_count_number_beyond_any_date_range_acts_on_nothing() -> None:
    """countNumber has no documented maximum; one too large for a timedelta must not crash."""
    repo = images(image("A", "x", age=400 * DAY))
    for days in (999_999_999, 1_000_000_000, 10**40):
        assert acted(policy(rule(1, since(days, "any"))), repo) == {}
