"""The mistakes real lifecycle policies make (issue 29): tag lists read as OR, untagged rules next to multi-arch
indexes, nulls, commit-id tags, rules that name a mutable tag, keep-forever limits."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.doctor.diagnosis import diagnose
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.doctor.models import SplitRule
from ecr_retention.domain.doctor.tag_kinds import TagKinds, is_mutable_tag
from ecr_retention.domain.doctor.templates import diagnose_template
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.lifecycle.evaluation import evaluate
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import NOW, image

DAY = timedelta(days=1)


def prefixes(*entries: str) -> dict[str, Any]:
    return {"tagStatus": "tagged", "tagPrefixList": list(entries)}


def patterns(*entries: str) -> dict[str, Any]:
    return {"tagStatus": "tagged", "tagPatternList": list(entries)}


def keep(n: int) -> dict[str, Any]:
    return {"countType": "imageCountMoreThan", "countNumber": n}


def older_than(days: int) -> dict[str, Any]:
    return {"countType": "sinceImagePushed", "countUnit": "days", "countNumber": days}


def rule(priority: int, selection: dict[str, Any], action: str = "expire") -> dict[str, Any]:
    act: dict[str, Any] = {"type": action}
    if action == "transition":
        act["targetStorageClass"] = "archive"
    return {"rulePriority": priority, "selection": selection, "action": act}


def policy(*rules: dict[str, Any]) -> LifecyclePolicy:
    return parse_policy(json.dumps({"rules": list(rules)}, indent=2))


def repo(*details: dict[str, Any]) -> list[ImageDetail]:
    return [ImageDetail.model_validate({**d, "repositoryName": "app"}) for d in details]


def run(pol: LifecyclePolicy, images: list[ImageDetail], **kwargs: Any) -> RepositoryDiagnosis:
    return diagnose(pol, images, now=NOW, repository_name="app", **kwargs)


def codes(diagnosis: RepositoryDiagnosis) -> list[tuple[str, str, int | None]]:
    return [(f.severity, f.code, f.rule_priority) for f in diagnosis.findings]


def fixed(diagnosis: RepositoryDiagnosis) -> LifecyclePolicy:
    assert diagnosis.fixed_policy is not None, diagnosis.fixed_policy_problem
    return parse_policy(json.dumps(diagnosis.fixed_policy, indent=2))


# 1. Tag lists are AND

REPORTING = repo(
    image("r3", "production-reporting-3", age=2 * DAY),
    image("b3", "production-billing-3", age=3 * DAY),
    image("r2", "production-reporting-2", age=4 * DAY),
    image("b2", "production-billing-2", age=5 * DAY),
    image("r1", "production-reporting-1", age=6 * DAY),
    image("b1", "production-billing-1", age=7 * DAY),
)
REPORTING_POLICY = policy(
    rule(1, prefixes("production-reporting-", "production-billing-") | keep(10)),
    rule(2, {"tagStatus": "any"} | keep(2)),
)


def test_a_list_of_alternatives_selects_nothing_and_the_finding_says_where_its_images_go() -> None:
    diagnosis = run(REPORTING_POLICY, REPORTING)

    [finding] = [f for f in diagnosis.findings if f.code == "tag-list-is-and"]
    assert finding.severity == "error"
    assert finding.message.startswith(
        "rule 1 selects no image: ECR requires a tag for every entry "
        "(tagPrefixList production-reporting-, production-billing-)"
    )
    assert "production-reporting-* images fall to rule 2 and 2 of them expire" in finding.message
    assert "production-billing-* images fall to rule 2 and 2 of them expire" in finding.message
    assert finding.policy_edit == SplitRule(rule_priority=1, entries=("production-reporting-", "production-billing-"))


def test_the_fixed_policy_splits_the_list_into_one_rule_per_entry_with_the_same_count_renumbered() -> None:
    diagnosis = run(REPORTING_POLICY, REPORTING)

    rules = fixed(diagnosis).ordered_rules
    assert [(r.rule_priority, r.selection.tag_prefix_list, r.selection.count_number) for r in rules[:2]] == [
        (1, ("production-reporting-",), 10),
        (2, ("production-billing-",), 10),
    ]
    assert rules[2].rule_priority == 3
    assert rules[2].selection.tag_status == "any"
    # the images the rule was written to keep now stay
    assert evaluate(fixed(diagnosis), REPORTING, NOW).verdicts == {}


def test_entries_that_never_co_occur_because_one_matches_nothing_are_the_same_error() -> None:
    """No staging image yet: the dev images are lost below all the same (issue 43: one severity for one mistake)."""
    images = repo(image("d1", "dev-1", age=DAY), image("d2", "dev-2", age=2 * DAY))
    pol = policy(rule(1, prefixes("dev", "staging") | keep(30)), rule(2, {"tagStatus": "any"} | keep(1)))

    [finding] = [f for f in run(pol, images).findings if f.code == "tag-list-is-and"]

    assert finding.severity == "error"
    assert "no image has a staging* tag" in finding.message
    assert "dev* images fall to rule 2 and 1 of them expires" in finding.message


def test_a_list_whose_entries_co_occur_is_not_reported() -> None:
    images = repo(image("a", "alpha-1", "beta-1", age=DAY), image("b", "alpha-2", age=2 * DAY))
    pol = policy(rule(1, patterns("alpha*", "beta*") | keep(1)))
    assert [f for f in run(pol, images).findings if f.code == "tag-list-is-and"] == []


def test_a_split_part_whose_prefix_a_lower_rule_lists_becomes_the_same_pattern() -> None:
    """ECR refuses two rules with the same set of prefixes; `dev*` selects what the prefix `dev` does. Here the
    lower `dev` rule then never acts, and goes as shadowed; the part takes its prefix back."""
    images = repo(image("d", "dev-1", age=DAY), image("s", "staging-1", age=2 * DAY))
    pol = policy(rule(1, prefixes("dev", "staging") | keep(3)), rule(2, prefixes("dev") | keep(5)))

    diagnosis = run(pol, images)
    rules = fixed(diagnosis).ordered_rules

    assert [(r.rule_priority, r.selection.tag_prefix_list) for r in rules] == [(1, ("dev",)), (2, ("staging",))]
    assert diagnosis.fixed_policy_problem is None


def test_a_split_part_that_a_higher_rule_selects_all_of_is_left_out_and_the_others_stay() -> None:
    images = repo(image("d", "dev-1", age=DAY), image("s", "staging-1", age=2 * DAY))
    pol = policy(rule(1, prefixes("dev") | keep(5)), rule(2, prefixes("dev", "staging") | keep(3)))

    rules = fixed(run(pol, images)).ordered_rules

    assert [(r.rule_priority, r.selection.tag_prefix_list) for r in rules] == [(1, ("dev",)), (2, ("staging",))]


def test_split_rules_that_share_an_entry_keep_its_first_part_only() -> None:
    """Two split rules both listing `dev`: the second part for `dev` can never act (the first selects every dev
    image), so it is left out, and ECR's unique prefix sets hold."""
    pol = policy(rule(1, prefixes("dev", "qa") | keep(3)), rule(2, prefixes("dev", "staging") | older_than(30)))
    rules = fixed(run(pol, [])).ordered_rules
    assert [(r.rule_priority, r.selection.tag_prefix_list) for r in rules] == [
        (1, ("dev",)),
        (2, ("qa",)),
        (3, ("staging",)),
    ]


def test_a_template_with_a_list_of_several_entries_is_warned_with_the_split() -> None:
    text = json.dumps({"rules": [rule(1, prefixes("dev", "staging") | keep(30))]}, indent=2)
    template = RepositoryCreationTemplate.model_validate(
        {"prefix": "team-a/", "appliedFor": ["CREATE_ON_PUSH"], "lifecyclePolicy": text}
    )
    found = [f for f in diagnose_template(template) if f.code == "tag-list-is-and"]
    assert [(f.severity, f.rule_priority) for f in found] == [("warning", 1)]
    assert "ECR requires a tag for every entry" in found[0].message
    assert found[0].policy_edit == SplitRule(rule_priority=1, entries=("dev", "staging"))


def test_a_template_age_rule_that_names_latest_is_warned() -> None:
    text = json.dumps({"rules": [rule(1, patterns("latest") | older_than(180))]}, indent=2)
    template = RepositoryCreationTemplate.model_validate(
        {"prefix": "team-a/", "appliedFor": ["CREATE_ON_PUSH"], "lifecyclePolicy": text}
    )
    found = [f for f in diagnose_template(template) if f.code == "rule-names-mutable-tag"]
    assert [(f.severity, f.rule_priority) for f in found] == [("warning", 1)]
    assert "names the mutable tag latest and expires images pushed more than 180 days ago" in found[0].message


def test_a_template_transition_rule_says_the_mutable_tag_is_archived() -> None:
    """The keep rule for latest sits below the archive rule, so it protects nothing."""
    pulled = {"countType": "sinceImagePulled", "countUnit": "days", "countNumber": 30}
    text = json.dumps(
        {"rules": [rule(1, patterns("*.*") | pulled, "transition"), rule(2, patterns("latest") | keep(1))]}
    )
    template = RepositoryCreationTemplate.model_validate(
        {"prefix": "team-a/", "appliedFor": ["CREATE_ON_PUSH"], "lifecyclePolicy": text}
    )
    [finding] = [f for f in diagnose_template(template) if f.code == "mutable-tag-unprotected"]
    assert "the image is archived with latest on it, and pulls of latest fail until it is restored" in finding.message
    assert "goes with" not in finding.message


def test_a_list_read_as_and_over_an_archive_rule_says_archived() -> None:
    images = repo(image("d1", "dev-1", age=40 * DAY), image("s1", "staging-1", age=41 * DAY))
    pulled = {"countType": "sinceImagePulled", "countUnit": "days", "countNumber": 30}
    pol = policy(
        rule(1, prefixes("dev", "staging") | keep(5)),
        rule(2, {"tagStatus": "any"} | pulled, "transition"),
    )
    [finding] = [f for f in run(pol, images).findings if f.code == "tag-list-is-and"]
    assert "dev* images fall to rule 2 and 1 of them is archived" in finding.message


# 3. Nulls are refused as ECR refuses them


@pytest.mark.parametrize(
    ("selection_extra", "action", "named"),
    [
        ({"countUnit": None}, {"type": "expire"}, "rule 1 (rules[0]): selection.countUnit: null is not allowed"),
        ({}, {"type": "expire", "targetStorageClass": None}, "rule 1 (rules[0]): action.targetStorageClass: null"),
        ({"tagPrefixList": None}, {"type": "expire"}, "rule 1 (rules[0]): selection.tagPrefixList: null"),
    ],
)
def test_null_in_any_field_is_refused_naming_the_field(
    selection_extra: dict[str, Any], action: dict[str, Any], named: str
) -> None:
    data = {
        "rules": [{"rulePriority": 1, "selection": {"tagStatus": "any"} | keep(3) | selection_extra, "action": action}]
    }
    with pytest.raises(InputError) as raised:
        parse_policy(json.dumps(data, indent=2), "policy.json")
    assert str(raised.value).startswith(f"policy.json: {named}")
    assert "\n" not in str(raised.value)


def test_null_description_is_refused_too() -> None:
    data = {"rules": [{"rulePriority": 1, "description": None, "selection": {"tagStatus": "any"} | keep(3)}]}
    with pytest.raises(InputError, match=r"rule 1 \(rules\[0\]\): description: null is not allowed"):
        parse_policy(json.dumps(data, indent=2))


@pytest.mark.parametrize("command", ["lifecycle-preview", "doctor"])
def test_the_cli_refuses_a_null_with_one_line_and_exit_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    selection = {"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 1, "countUnit": None}
    (tmp_path / "policy.json").write_text(
        json.dumps({"rules": [{"rulePriority": 1, "selection": selection, "action": {"type": "expire"}}]}, indent=2)
    )
    (tmp_path / "images.json").write_text(json.dumps({"imageDetails": []}))

    code = main([command, "--policy", str(tmp_path / "policy.json"), "--images", str(tmp_path / "images.json")])

    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "rule 1 (rules[0]): selection.countUnit: null is not allowed" in err


def test_the_templates_command_refuses_a_null_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps({"rules": [rule(1, {"tagStatus": "any"} | keep(3) | {"countUnit": None})]}, indent=2)
    document = {
        "repositoryCreationTemplates": [{"prefix": "ROOT", "appliedFor": ["CREATE_ON_PUSH"], "lifecyclePolicy": text}]
    }
    (tmp_path / "templates.json").write_text(json.dumps(document))

    code = main(["doctor", "--templates", str(tmp_path / "templates.json")])

    assert code == 2
    assert "template ROOT: lifecyclePolicy: rule 1 (rules[0]): selection.countUnit: null" in capsys.readouterr().err


# 4. Commit ids are build tags


@pytest.mark.parametrize("tag", ["cafebab", "build-febacfb", "main-deadbeefcafe", "3f2c1a9", "1.12.370", "v2"])
def test_builds_are_not_mutable(tag: str) -> None:
    assert not is_mutable_tag(tag)


@pytest.mark.parametrize("tag", ["latest", "dev", "main", "stable", "cafe", "build-cafe", "CAFEBAB"])
def test_moving_tags_are_mutable(tag: str) -> None:
    assert is_mutable_tag(tag)


def test_the_users_patterns_override_the_heuristic_mutable_first() -> None:
    kinds = TagKinds(mutable=("release-*",), build=("nightly", "release-*"))
    assert kinds.is_mutable("release-cafebab")
    assert not kinds.is_mutable("nightly")


def test_a_build_whose_sha_has_no_digit_is_not_a_mutable_tag_at_risk() -> None:
    images = repo(image("new", "build-1234567", age=DAY), image("old", "build-febacfb", age=2 * DAY))
    diagnosis = run(policy(rule(1, patterns("build-*") | keep(1))), images)
    assert diagnosis.findings == ()


def write_repository(tmp_path: Path, images: list[ImageDetail], *rules: dict[str, Any]) -> list[str]:
    details = [i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in images]
    (tmp_path / "images.json").write_text(json.dumps({"imageDetails": details}))
    (tmp_path / "policy.json").write_text(json.dumps({"rules": list(rules)}, indent=2))
    images_path, policy_path = str(tmp_path / "images.json"), str(tmp_path / "policy.json")
    return ["doctor", "--policy", policy_path, "--images", images_path, "--now", NOW.isoformat()]


def test_the_doctor_takes_extra_build_tag_patterns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    images = repo(image("new", "1.1", age=DAY), image("old", "1.0", "prod-current", age=2 * DAY))
    argv = write_repository(tmp_path, images, rule(1, patterns("*.*") | keep(1)))

    assert main(argv) == 1  # prod-current has no digit: a mutable tag that goes with 1.0
    assert "mutable-tag-expires" in capsys.readouterr().out
    assert main([*argv, "--build-tag", "prod-*"]) == 0


def test_the_doctor_takes_extra_mutable_tag_patterns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    images = repo(image("new", "1.1", age=DAY), image("old", "1.0", "release-2026", age=2 * DAY))
    argv = write_repository(tmp_path, images, rule(1, patterns("*.*") | keep(1)))

    assert main(argv) == 0
    assert main([*argv, "--mutable-tag", "release-*"]) == 1
    assert "mutable tag release-2026 goes with it" in capsys.readouterr().out


def test_an_empty_tag_pattern_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = write_repository(tmp_path, [], rule(1, patterns("*.*") | keep(1)))
    assert main([*argv, "--mutable-tag", ""]) == 2
    assert "--mutable-tag: a tag pattern must not be empty" in capsys.readouterr().err


# 5. Rules that name a mutable tag


def test_an_age_rule_that_names_latest_warns_with_the_date_it_acts() -> None:
    images = repo(image("l", "latest", age=170 * DAY), image("v", "1.0", age=200 * DAY))
    diagnosis = run(policy(rule(1, patterns("latest") | older_than(180))), images)

    [finding] = diagnosis.findings
    assert (finding.severity, finding.code) == ("warning", "rule-names-mutable-tag")
    due = (NOW - 170 * DAY + 180 * DAY).date().isoformat()
    assert f"latest: image pushed 170 days ago, expires on {due} unless latest moves" in finding.message


def test_a_prefix_that_is_a_mutable_tag_names_it_too() -> None:
    images = repo(image("d", "dev", age=50 * DAY), image("b", "dev-123", "dev-cafebab", age=51 * DAY))
    [finding] = run(policy(rule(1, prefixes("dev") | older_than(60))), images).findings
    assert finding.code == "rule-names-mutable-tag"
    assert "dev: image pushed 50 days ago, expires on" in finding.message


def test_a_mutable_tag_that_build_tags_also_select_is_the_at_risk_warning_alone() -> None:
    images = repo(image("d", "dev", "dev-123", age=50 * DAY))
    diagnosis = run(policy(rule(1, prefixes("dev") | older_than(60))), images)
    assert [f.code for f in diagnosis.findings] == ["mutable-tag-at-risk"]


def test_an_age_rule_that_takes_latest_now_is_the_mutable_tag_error_not_a_second_warning() -> None:
    images = repo(image("l", "latest", age=190 * DAY))
    assert codes(run(policy(rule(1, patterns("latest") | older_than(180))), images)) == [
        ("error", "mutable-tag-expires", 1)
    ]


def test_a_keep_1_rule_for_latest_is_not_a_rule_that_names_it_to_remove_it() -> None:
    images = repo(image("l", "latest", age=170 * DAY))
    assert run(policy(rule(1, patterns("latest") | keep(1))), images).findings == ()


# 6. No false alarms


@pytest.mark.parametrize("limit", [keep(9999), older_than(365000), keep(1000), older_than(3650)])
def test_keep_forever_limits_are_intentional_keeps(limit: dict[str, Any]) -> None:
    images = repo(image("l", "latest", "1.1", age=DAY), image("v", "1.0", age=2 * DAY))
    pol = policy(rule(1, patterns("1.*") | limit), rule(2, {"tagStatus": "any"} | keep(1)))
    assert [f for f in run(pol, images).findings if f.code == "mutable-tag-at-risk"] == []


def test_a_limit_just_below_keep_forever_is_still_a_risk() -> None:
    images = repo(image("l", "latest", "1.1", age=DAY), image("v", "1.0", age=2 * DAY))
    pol = policy(rule(1, patterns("1.*") | keep(999)))
    assert [f.code for f in run(pol, images).findings] == ["mutable-tag-at-risk"]


def test_a_mutable_tag_under_an_archive_rule_is_said_to_be_archived() -> None:
    images = repo(image("l", "latest", "1.1", age=DAY, pulled_ago=DAY))
    pulled = {"countType": "sinceImagePulled", "countUnit": "days", "countNumber": 30}
    [finding] = run(policy(rule(1, patterns("1.*") | pulled, "transition")), images).findings
    assert "the image is archived with the tag on it" in finding.message
    assert "goes with the image" not in finding.message


def test_counts_in_the_fixed_policy_equal_what_it_protects() -> None:
    """3 own images beside latest and dev, which the fixed policy's keep rules protect: 5, not more."""
    images = repo(
        image("a", "latest", "1.5", age=1 * DAY),
        image("b", "dev", "1.4-dev", age=2 * DAY),
        image("c", "1.3", age=3 * DAY),
        image("d", "1.2", age=4 * DAY),
        image("e", "1.1", age=5 * DAY),
        image("f", "1.0", age=6 * DAY),
        image("u", age=7 * DAY),
    )
    untagged = {"tagStatus": "untagged"} | older_than(1)
    diagnosis = run(policy(rule(1, untagged), rule(2, patterns("*") | keep(3))), images)
    rules = fixed(diagnosis).ordered_rules
    assert [(r.selection.tag_status, r.selection.count_number) for r in rules] == [
        ("tagged", 1),
        ("tagged", 1),
        ("untagged", 1),
        ("tagged", 5),
    ]
    kept = {i.image_digest for i in images} - set(evaluate(fixed(diagnosis), images, NOW).verdicts)
    assert len(kept) == 5  # latest, dev and 3 version images of rule 4's own


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lifecycle"


def test_the_dev_and_staging_example_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/lifecycle.md's AND-list example: the preview shows rule 2 taking the dev and staging images, the doctor
    says why and splits rule 1 in its fixed policy."""
    files = [
        "--policy",
        str(EXAMPLES / "policy-dev-staging.json"),
        "--images",
        str(EXAMPLES / "describe-images-dev-staging.json"),
        "--now",
        "2026-11-30T06:00:00Z",
    ]
    assert main(["lifecycle-preview", *files, "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["previewResults"]
    assert [(r["imageTags"], r["appliedRulePriority"]) for r in listed] == [
        (["dev-101"], 2),
        (["staging-55"], 2),
        (["dev-102"], 2),
        (["staging-56"], 2),
        (["dev-103"], 2),
    ]

    assert main(["doctor", *files, "--format", "json"]) == 1
    diagnosis = json.loads(capsys.readouterr().out)
    [finding] = [f for f in diagnosis["findings"] if f["code"] == "tag-list-is-and"]
    assert finding["message"].endswith(
        "dev* images fall to rule 2 and 3 of them expire; staging* images fall to rule 2 and 2 of them expire"
    )
    assert finding["policyEdit"] == {"kind": "split-rule", "rulePriority": 1, "entries": ["dev", "staging"]}
    rules = diagnosis["fixedPolicy"]["rules"]
    assert [r["selection"].get("tagPrefixList") for r in rules] == [None, ["dev"], ["staging"], None]
    assert [r["selection"]["countNumber"] for r in rules] == [1, 3, 3, 8]
