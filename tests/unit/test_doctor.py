"""The lifecycle doctor: each finding, its severity and its concrete fix."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from ecr_retention.domain.doctor.diagnosis import comparable_config, diagnose, diagnose_repository
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.doctor.models import Finding, KeepTags, RaiseCount, RemoveRule
from ecr_retention.domain.doctor.tag_kinds import is_mutable_tag
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.lifecycle.evaluation import evaluate
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from support.builders import HOST, NOW, OCI_INDEX, config, digest, image, in_use, index_manifest, repository, snapshot

DAY = timedelta(days=1)


def rule(priority: int, selection: dict[str, Any]) -> dict[str, Any]:
    return {"rulePriority": priority, "selection": selection, "action": {"type": "expire"}}


def count(n: int, *patterns: str) -> dict[str, Any]:
    lists = {"tagStatus": "tagged", "tagPatternList": list(patterns)} if patterns else {"tagStatus": "any"}
    return {**lists, "countType": "imageCountMoreThan", "countNumber": n}


UNTAGGED_1D = {"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 1}


def policy(*rules: dict[str, Any]) -> LifecyclePolicy:
    return parse_policy(json.dumps({"rules": list(rules)}, indent=2))


INCIDENT = policy(rule(1, count(3, "*.*")), rule(2, UNTAGGED_1D))
FIXED = policy(
    rule(1, count(1, "latest")),
    rule(2, count(1, "dev")),
    rule(3, count(3, "*.*")),
    rule(4, UNTAGGED_1D),
)


def repo(*details: dict[str, Any]) -> list[ImageDetail]:
    return [ImageDetail.model_validate({**d, "repositoryName": "app"}) for d in details]


INCIDENT_IMAGES = repo(
    image("dev", "dev", "1.12.350-dev", age=27 * DAY),
    image("v352", "1.12.352", age=23 * DAY),
    image("v355", "1.12.355", age=16 * DAY),
    image("v359", "1.12.359", age=9 * DAY),
    image("v362", "latest", "1.12.362", age=2 * DAY),
)


def run(pol: LifecyclePolicy, images: list[ImageDetail], **kwargs: Any) -> RepositoryDiagnosis:
    return diagnose(
        pol, images, now=NOW, repository_name="app", registry=registry(kwargs.pop("replication", None)), **kwargs
    )


def registry(replication: Any = None) -> RegistryCoordinates:
    return RegistryCoordinates("123456789012", "eu-west-1", *(() if replication is None else (replication,)))


def findings(diagnosis: RepositoryDiagnosis, code: str) -> list[Finding]:
    return [f for f in diagnosis.findings if f.code == code]


def fixed_policy(diagnosis: RepositoryDiagnosis) -> LifecyclePolicy:
    assert diagnosis.fixed_policy is not None, diagnosis.fixed_policy_problem
    return parse_policy(json.dumps(diagnosis.fixed_policy, indent=2))


def rule_summary(policy: LifecyclePolicy) -> list[tuple[int, list[str] | None, int]]:
    return [
        (r.rule_priority, list(r.selection.tag_pattern_list or []) or None, r.selection.count_number)
        for r in policy.ordered_rules
    ]


def test_mutable_tags_are_tags_without_a_digit() -> None:
    assert [t for t in ["latest", "dev", "main", "1.12.370-dev", "v2", "3f2c1a9", "pr-12"] if is_mutable_tag(t)] == [
        "latest",
        "dev",
        "main",
    ]


def test_seed_002_incident_reports_dev_expiring_with_its_version_tag_as_error() -> None:
    diagnosis = run(INCIDENT, INCIDENT_IMAGES)
    [expires] = findings(diagnosis, "mutable-tag-expires")
    assert expires.severity == "error"
    assert expires.image_digest == digest("dev")
    assert expires.rule_priority == 1
    assert "through its other tags (1.12.350-dev)" in expires.message
    assert "the mutable tag dev goes with it" in expires.message
    [at_risk] = findings(diagnosis, "mutable-tag-at-risk")
    assert at_risk.severity == "warning"
    assert at_risk.image_digest == digest("v362")
    assert diagnosis.has_errors


def test_seed_002_fix_is_written_out_as_policy_json_with_a_keep_1_rule_per_mutable_tag() -> None:
    diagnosis = run(INCIDENT, INCIDENT_IMAGES)
    [expires] = findings(diagnosis, "mutable-tag-expires")
    [at_risk] = findings(diagnosis, "mutable-tag-at-risk")
    assert expires.policy_edit == KeepTags(tags=("dev",))
    assert at_risk.policy_edit == KeepTags(tags=("latest",))
    fixed = fixed_policy(diagnosis)
    assert rule_summary(fixed) == [
        (1, ["dev"], 1),
        (2, ["latest"], 1),
        (3, ["*.*"], 4),  # the latest image now takes one of rule 3's slots: count-reduced, fixed with it
        (4, None, 1),
    ]
    assert evaluate(fixed, INCIDENT_IMAGES, NOW).action_of(digest("dev")) is None
    assert run(fixed, INCIDENT_IMAGES).findings == ()


def test_seed_002_preview_count_reduced_by_protected_images_with_raised_count_as_fix() -> None:
    images = repo(
        image("v359", "1.12.359", age=20 * DAY),
        image("v365", "1.12.365", age=12 * DAY),
        image("v368", "1.12.368", "latest", age=6 * DAY),
        image("v370", "1.12.370-dev", "dev", age=3 * DAY),
    )
    diagnosis = run(FIXED, images)
    [reduced] = findings(diagnosis, "count-reduced")
    assert reduced.severity == "warning"
    assert reduced.rule_priority == 3
    assert "2 of those 3 slots" in reduced.message
    assert "1.12.359" in reduced.message
    assert reduced.policy_edit == RaiseCount(rule_priority=3, count_number=5, own_images=3)
    fixed = fixed_policy(diagnosis)
    assert fixed.ordered_rules[2].selection.count_number == 5
    assert evaluate(fixed, images, NOW).verdicts == {}
    assert not diagnosis.has_errors


def test_policy_that_expires_an_in_use_image_names_cluster_namespace_and_workload() -> None:
    inventory = Inventory(manifests=(in_use("dev", (f"{HOST}/app:dev", None)),))
    diagnosis = run(INCIDENT, INCIDENT_IMAGES, inventory=inventory)
    [finding] = findings(diagnosis, "expires-in-use")
    assert finding.severity == "error"
    assert finding.image_digest == digest("dev")
    assert "cluster dev, namespace default, Deployment/web (pod)" in finding.message
    assert [w.cluster for w in finding.in_use_by] == ["dev"]
    assert finding.policy_edit == KeepTags(tags=("dev",))  # the tag the pod uses
    assert fixed_policy(diagnosis).ordered_rules[0].selection.tag_pattern_list == ("dev",)


def test_in_use_by_digest_only_pins_a_build_tag() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app@{digest('v352')}", "v352")),))
    [finding] = findings(run(INCIDENT, INCIDENT_IMAGES, inventory=inventory), "expires-in-use")
    assert finding.image_digest == digest("v352")
    assert finding.policy_edit == KeepTags(tags=("1.12.352",))


def test_in_use_untagged_image_has_no_policy_fix() -> None:
    images = repo(image("old", age=5 * DAY))
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app@{digest('old')}", "old")),))
    diagnosis = run(INCIDENT, images, inventory=inventory)
    [finding] = findings(diagnosis, "expires-in-use")
    assert finding.policy_edit is None
    assert diagnosis.fixed_policy is None
    assert "untagged image cannot be protected" in finding.fix


def test_image_kept_by_the_policy_is_not_reported_in_use() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.362", None)),))
    assert not findings(run(INCIDENT, INCIDENT_IMAGES, inventory=inventory), "expires-in-use")


def test_keep_1_rule_per_mutable_tag_protects_them() -> None:
    assert not run(FIXED, INCIDENT_IMAGES).has_errors


def test_mutable_tag_under_an_any_rule_is_at_risk() -> None:
    images = repo(image("a", "latest", age=DAY), image("b", "1.0", age=2 * DAY))
    [finding] = findings(run(policy(rule(1, count(5))), images), "mutable-tag-at-risk")
    assert "selects every image" in finding.message


def test_shadowed_rule_can_never_act_and_the_fix_removes_it() -> None:
    pol = policy(rule(1, count(10, "v*")), rule(2, count(2, "v1*")), rule(3, count(2, "prod*")))
    diagnosis = run(pol, INCIDENT_IMAGES)
    [finding] = findings(diagnosis, "rule-shadowed")
    assert finding.rule_priority == 2
    assert "every image it selects is selected first by rule 1" in finding.message
    assert finding.policy_edit == RemoveRule(rule_priority=2)
    assert [r.rule_priority for r in fixed_policy(diagnosis).ordered_rules] == [1, 3]


def test_rule_with_more_patterns_is_shadowed_by_one_with_fewer() -> None:
    pol = policy(rule(1, count(10, "alpha*")), rule(2, count(2, "alpha*", "beta*")))
    assert [f.rule_priority for f in findings(run(pol, []), "rule-shadowed")] == [2]


def test_untagged_rule_next_to_indexes_that_stay_gives_no_finding_and_stays_in_the_fixed_policy() -> None:
    """ECR documents that a child of a manifest list cannot be expired before the list: no child is at risk."""
    images = repo(
        image("idx", "v1.0", media_type=OCI_INDEX, age=5 * DAY),
        image("child", age=5 * DAY),
        image("dev", "dev", "1.0-dev", age=9 * DAY),
    )
    diagnosis = run(INCIDENT, images, manifests={digest("idx"): index_manifest("child")})
    assert not findings(diagnosis, "untagged-rule-multi-arch")
    assert [r.selection.tag_status for r in fixed_policy(diagnosis).ordered_rules][-1] == "untagged"


def test_untagged_rule_note_names_the_children_of_an_index_the_policy_expires() -> None:
    images = repo(
        image("idx2", "v2.0", media_type=OCI_INDEX, age=2 * DAY),
        image("child2", age=2 * DAY),
        image("idx1", "v1.0", media_type=OCI_INDEX, age=5 * DAY),
        image("child1", age=5 * DAY),
    )
    manifests = {digest("idx1"): index_manifest("child1"), digest("idx2"): index_manifest("child2")}
    pol = policy(rule(1, count(1, "v*")), rule(2, UNTAGGED_1D))

    diagnosis = run(pol, images, manifests=manifests)

    [finding] = findings(diagnosis, "untagged-rule-multi-arch")
    assert finding.severity == "info"
    assert finding.policy_edit is None
    assert "cannot be expired or archived without the manifest list being deleted or archived first" in finding.message
    assert "1 children of indexes this policy removes now go on a later run" in finding.message
    assert "keep rule 2" in finding.fix
    assert evaluate(pol, images, NOW, manifests).action_of(digest("child1")) is None  # the preview is unchanged


def test_untagged_rule_note_when_an_index_has_no_manifest_in_the_input() -> None:
    images = repo(image("idx", "v1.0", media_type=OCI_INDEX, age=5 * DAY), image("child", age=5 * DAY))
    [finding] = findings(run(INCIDENT, images), "untagged-rule-multi-arch")
    assert "1 indexes have no manifest in the input" in finding.message


def test_a_policy_of_one_untagged_rule_is_never_removed() -> None:
    """The Serverless Framework's default policy: the old fix said "delete the lifecycle policy"."""
    images = repo(image("idx", "v1.0", media_type=OCI_INDEX, age=5 * DAY), image("child", age=5 * DAY))
    diagnosis = run(policy(rule(1, UNTAGGED_1D)), images, manifests={digest("idx"): index_manifest("child")})
    assert diagnosis.findings == ()
    assert diagnosis.fixed_policy is None
    assert diagnosis.fixed_policy_problem is None


def repository_plan(rules: list[dict[str, Any]], images: list[dict[str, Any]], *manifests: Any) -> Any:
    cfg = comparable_config(config(rules, clusters=["prod"], max_delete_fraction=0.1))
    result = plan_registry(cfg, snapshot(repository("app", *images)), Inventory(manifests=manifests), NOW)
    return result.repositories[0]


def test_count_rule_that_removes_what_the_plan_keeps_differs_from_plan() -> None:
    details = [
        image("dev", "dev", "1.12.350-dev", age=27 * DAY),
        image("v352", "1.12.352", age=23 * DAY),
        image("v355", "1.12.355", age=16 * DAY),
        image("v359", "1.12.359", age=9 * DAY),
        image("v362", "latest", "1.12.362", age=2 * DAY),
    ]
    plan = repository_plan([{"delete": {"tags": ["*.*"], "older_than": "25d"}}], details)
    diagnosis = run(INCIDENT, repo(*details), plan=plan)
    [finding] = findings(diagnosis, "differs-from-plan")
    assert finding.severity == "warning"
    assert "would remove 1 that the pipeline's plan keeps" in finding.message
    assert finding.policy_edit == RaiseCount(rule_priority=1, count_number=4)
    stricter = repository_plan([{"delete": {"tags": ["*.*"], "older_than": "5d"}}], details)
    [info] = findings(run(INCIDENT, repo(*details), plan=stricter), "differs-from-plan")
    assert info.severity == "info"
    assert info.message.startswith("rule 1 keeps 2 images that the pipeline's plan removes")


def test_policy_that_expires_an_image_the_rules_file_keeps_is_an_error() -> None:
    details = [
        image("dev", "dev", "1.12.350-dev", age=27 * DAY),
        image("v352", "1.12.352", age=23 * DAY),
        image("v355", "1.12.355", age=16 * DAY),
        image("v359", "1.12.359", age=9 * DAY),
    ]
    plan = repository_plan(
        [{"keep": {"tags": ["dev"]}, "description": "dev stays"}, {"delete": {"tags": ["*"], "older_than": "1d"}}],
        details,
    )
    [finding] = findings(run(INCIDENT, repo(*details), plan=plan), "expires-kept-image")
    assert finding.severity == "error"
    assert "which the rules file keeps (dev stays)" in finding.message


def test_blocked_plan_is_not_compared() -> None:
    details = [image("a", "1.0", age=5 * DAY)]
    cfg = config([{"delete": {"tags": ["*"], "older_than": "1d"}}], clusters=["prod"])
    plan = plan_registry(cfg, snapshot(repository("app", *details)), Inventory(), NOW).repositories[0]
    diagnosis = run(INCIDENT, repo(*details), plan=plan)
    assert [f.code for f in diagnosis.findings] == ["plan-not-compared"]


def test_pipeline_entry_point_reads_the_policy_text_and_diagnoses_the_repository() -> None:
    snapshot_repo = RepositorySnapshot.model_validate(
        repository("app", *[i.model_dump(mode="json", by_alias=True) for i in INCIDENT_IMAGES])
    )
    text = json.dumps(INCIDENT.to_json_dict(), indent=2)
    diagnosis = diagnose_repository(text, snapshot_repo, now=NOW, inventory=Inventory())
    assert diagnosis.repository_name == "app"
    assert diagnosis.has_errors
    data = diagnosis.to_json_dict()
    assert data["summary"] == {"errors": 1, "warnings": 1, "infos": 0}
    assert data["findings"][0]["code"] == "mutable-tag-expires"


def test_pipeline_entry_point_turns_an_unreadable_policy_into_a_finding() -> None:
    snapshot_repo = RepositorySnapshot.model_validate(repository("app"))
    diagnosis = diagnose_repository('{"rules": []}' + " " * 100, snapshot_repo, now=NOW, inventory=Inventory())
    assert [(f.code, f.severity) for f in diagnosis.findings] == [("policy-invalid", "warning")]
    assert "lifecycle policy of app: rules: needs at least 1" in diagnosis.findings[0].message


def test_findings_are_ordered_errors_first() -> None:
    severities = [f.severity for f in run(INCIDENT, INCIDENT_IMAGES).findings]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)


def test_count_reduced_fix_also_counts_protected_images_just_beyond_the_window() -> None:
    """rule 3 keeps 1 but `latest` holds the slot; `dev` is next in line, so the fix must reach 3, not 2."""
    pol = policy(rule(1, count(1, "latest")), rule(2, count(1, "dev")), rule(3, count(1, "*.*")))
    images = repo(
        image("a", "1.0.5", "latest", age=1 * DAY),
        image("b", "1.0.4", "dev", age=2 * DAY),
        image("c", "1.0.3", age=3 * DAY),
        image("d", "1.0.2", age=4 * DAY),
    )
    diagnosis = run(pol, images)
    [reduced] = findings(diagnosis, "count-reduced")
    assert "raise countNumber to 3" in reduced.fix
    fixed = fixed_policy(diagnosis)
    evaluation = evaluate(fixed, images, NOW)
    assert set(evaluation.verdicts) == {digest("d")}  # 1.0.3 is rule 3's one own image, kept


def test_in_use_referrer_removed_with_its_subject_is_fixed_by_protecting_the_subject() -> None:
    images = repo(
        image("a", "v2", age=1 * DAY),
        image("b", "v1", age=5 * DAY),
        image("sig", "sig-1", subject="b", age=5 * DAY),
    )
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:sig-1", None)),))
    diagnosis = run(policy(rule(1, count(1, "v*"))), images, inventory=inventory)
    [finding] = findings(diagnosis, "expires-in-use")
    assert finding.image_digest == digest("sig")
    assert finding.policy_edit == KeepTags(tags=("v1",))
    fixed = fixed_policy(diagnosis)
    assert fixed.ordered_rules[0].selection.tag_pattern_list == ("v1",)
    assert evaluate(fixed, images, NOW).action_of(digest("sig")) is None


# --- item 14: a suggested fix, applied, clears its finding ------------------------------------------------

SEED_002_PREVIEW_IMAGES = repo(
    image("v359", "1.12.359", age=20 * DAY),
    image("v365", "1.12.365", age=12 * DAY),
    image("v368", "1.12.368", "latest", age=6 * DAY),
    image("v370", "1.12.370-dev", "dev", age=3 * DAY),
)


def test_count_reduced_fix_applied_is_not_reported_again() -> None:
    """Raising rule 3 from 3 to 5 made room for the latest and dev images; 5 is not then read as 5 of its own."""
    fixed = fixed_policy(run(FIXED, SEED_002_PREVIEW_IMAGES))

    again = run(fixed, SEED_002_PREVIEW_IMAGES)

    assert findings(again, "count-reduced") == []
    assert again.fixed_policy is None  # nothing left to fix
    rule_3 = fixed.ordered_rules[2]
    assert rule_3.selection.count_number == 5
    assert rule_3.description == "keep 3 of its own images, plus one slot per image a higher rule keeps"


def test_count_reduced_returns_when_more_protected_images_take_the_rules_slots() -> None:
    """The intent recorded in the description (3 of its own) still holds when a third tag is pinned."""
    fixed = fixed_policy(run(FIXED, SEED_002_PREVIEW_IMAGES))
    pinned = policy(
        rule(1, count(1, "1.12.365")),
        *(
            {**r.model_dump(mode="json", by_alias=True, exclude_none=True), "rulePriority": r.rule_priority + 1}
            for r in fixed.ordered_rules
        ),
    )
    more = repo(
        *(i.model_dump(mode="json", by_alias=True) for i in SEED_002_PREVIEW_IMAGES),
        image("v350", "1.12.350", age=30 * DAY),
    )

    [reduced] = findings(run(pinned, more), "count-reduced")

    assert reduced.policy_edit == RaiseCount(rule_priority=4, count_number=6, own_images=3)
    assert "to keep 3 images of its own, raise countNumber to 6" in reduced.fix


def test_keep_1_rules_for_two_tags_of_one_image_are_neither_reduced_nor_at_risk() -> None:
    """`dev` and `latest` on one image: rule 2 ranks an image rule 1 selects, but a keep-1 rule never acts."""
    images = repo(image("a", "latest", "dev", "1.0.1", age=DAY), image("b", "1.0.0", age=2 * DAY))
    pol = policy(rule(1, count(1, "dev")), rule(2, count(1, "latest")), rule(3, count(5, "*.*")))

    diagnosis = run(pol, images)

    assert [f.rule_priority for f in findings(diagnosis, "count-reduced")] == [3]  # *.* ranks the image, rightly
    assert findings(diagnosis, "mutable-tag-at-risk") == []


def test_keep_rule_added_for_an_in_use_build_tag_settles_the_mutable_tag_on_the_same_image() -> None:
    """The keep rule for 1.12.352 is the first to select that image; `dev` on it is then safe, not at risk."""
    images = [*repo(image("a", "1.12.352", "dev", age=20 * DAY)), *INCIDENT_IMAGES[2:]]
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app@{digest('a')}", "a")),))

    diagnosis = run(INCIDENT, images, inventory=inventory)

    fixed = fixed_policy(diagnosis)
    assert [f.code for f in run(fixed, images, inventory=inventory).findings if f.policy_edit] == []


# --- item 15: one fixed policy per repository, and a word when the in-use check was skipped --------------


def test_one_fixed_policy_merges_every_fix_of_the_repository() -> None:
    images = repo(
        image("idx", "v1.0", media_type=OCI_INDEX, age=5 * DAY),
        image("child", age=5 * DAY),
        image("dev", "dev", "1.12.350-dev", age=27 * DAY),
        image("v352", "1.12.352", age=23 * DAY),
        image("v362", "latest", "1.12.362", age=2 * DAY),
    )
    pol = policy(rule(1, count(3, "*.*")), rule(2, count(2, "1.*")), rule(3, UNTAGGED_1D))

    diagnosis = run(pol, images, manifests={digest("idx"): index_manifest("child")})

    edits = {f.code: f.policy_edit for f in diagnosis.findings if f.policy_edit is not None}
    assert edits == {
        "mutable-tag-expires": KeepTags(tags=("dev",)),
        "mutable-tag-at-risk": KeepTags(tags=("latest",)),
        "rule-shadowed": RemoveRule(rule_priority=2),
    }
    fixed = fixed_policy(diagnosis)
    # 3 own + dev + latest; the untagged rule stays (ECR keeps the children of the index that stays)
    assert rule_summary(fixed) == [(1, ["dev"], 1), (2, ["latest"], 1), (3, ["*.*"], 5), (5, None, 1)]
    assert [
        f for f in run(fixed, images, manifests={digest("idx"): index_manifest("child")}).findings if f.policy_edit
    ] == []
    assert diagnosis.fixed_policy_findings == ()


def test_fixed_policy_drops_a_rule_that_a_new_keep_rule_shadows() -> None:
    """The keep-1 rule for `latest` selects all that the user's own `latest` rule selects: that rule goes too."""
    latest_30d = {
        "tagStatus": "tagged",
        "tagPatternList": ["latest"],
        "countType": "sinceImagePushed",
        "countUnit": "days",
        "countNumber": 1,
    }
    images = repo(image("a", "latest", "1.0.1", age=5 * DAY), image("b", "1.0.0", age=6 * DAY))

    fixed = fixed_policy(run(policy(rule(1, latest_30d), rule(2, count(5, "*.*"))), images))

    assert rule_summary(fixed) == [(1, ["latest"], 1), (3, ["*.*"], 6)]  # 5 of its own beside the latest image
    assert fixed.ordered_rules[0].description == "keep the image tagged latest"


def test_fix_beyond_ecrs_50_rules_is_a_problem_not_a_policy() -> None:
    tags = [f"m{chr(97 + n // 26)}{chr(97 + n % 26)}" for n in range(40)]  # mutable: no digit
    images = repo(*(image(tag, tag, f"1.0.{n}", age=(n + 1) * DAY) for n, tag in enumerate(tags)))
    pol = policy(*(rule(n + 1, count(1, f"1.0.{n}*")) for n in range(12)), rule(13, count(1)))

    diagnosis = run(pol, images)

    assert diagnosis.fixed_policy is None
    assert diagnosis.fixed_policy_problem is not None
    assert "rules: at most 50 allowed" in diagnosis.fixed_policy_problem


def test_in_use_check_skipped_without_manifests_is_said() -> None:
    without = run(INCIDENT, INCIDENT_IMAGES)
    with_manifests = run(INCIDENT, INCIDENT_IMAGES, inventory=Inventory(manifests=(in_use("prod"),)))

    assert without.in_use_checked is False
    assert without.notes == (
        "in-use check skipped: no in-use manifest was given, so the doctor cannot tell whether the policy "
        "would remove an image that runs in a cluster (pass --manifests DIR)",
    )
    assert without.to_json_dict()["inUseChecked"] is False
    assert with_manifests.in_use_checked is True
    assert with_manifests.notes == ()


def test_pipeline_entry_point_carries_the_findings_and_the_fixed_policy() -> None:
    snapshot_repo = RepositorySnapshot.model_validate(
        repository("app", *[i.model_dump(mode="json", by_alias=True) for i in INCIDENT_IMAGES])
    )
    inventory = Inventory(manifests=(in_use("dev", (f"{HOST}/app:dev", None)),))

    diagnosis = diagnose_repository(
        json.dumps(INCIDENT.to_json_dict(), indent=2),
        snapshot_repo,
        now=NOW,
        inventory=inventory,
        registry=registry(),
    )

    data = diagnosis.to_json_dict()
    assert [f["code"] for f in data["findings"]] == ["expires-in-use", "mutable-tag-expires", "mutable-tag-at-risk"]
    assert data["findings"][0]["policyEdit"] == {"kind": "keep-tags", "tags": ["dev"]}
    assert all("fixPolicy" not in f for f in data["findings"])
    assert [r["selection"].get("tagPatternList") for r in data["fixedPolicy"]["rules"]] == [
        ["dev"],
        ["latest"],
        ["*.*"],
        None,
    ]
    assert data["inUseChecked"] is True


# --- replicated deletions ------------------------------------------------------------------------------------

US_HOST = "123456789012.dkr.ecr.us-east-1.amazonaws.com"


def replicating(delete: bool) -> ReplicationConfiguration:
    return ReplicationConfiguration.model_validate(
        {
            "rules": [
                {
                    "destinations": [{"region": "us-east-1", "registryId": "123456789012"}],
                    "deleteReplication": {"enabled": delete},
                }
            ]
        }
    )


def test_a_policy_whose_expiries_replicate_is_checked_against_the_destinations_clusters() -> None:
    inventory = Inventory(manifests=(in_use("us-prod", (f"{US_HOST}/app:dev", None)),))
    diagnosis = run(INCIDENT, INCIDENT_IMAGES, inventory=inventory, replication=replicating(delete=True))
    [finding] = findings(diagnosis, "expires-in-use")
    assert finding.image_digest == digest("dev")
    assert "cluster us-prod (us-east-1, replicated), namespace default, Deployment/web (pod)" in finding.message
    assert "where ECR repeats the expiry (deleteReplication)" in finding.message
    assert finding.policy_edit == KeepTags(tags=("dev",))
    assert diagnosis.expiries_replicate_to == ("us-east-1 (123456789012)",)
    assert any("expiries replicate to us-east-1 (123456789012)" in note for note in diagnosis.notes)
    assert "expiries replicate" in " ".join(diagnosis.to_json_dict()["notes"])


def test_a_copy_that_does_not_follow_expiries_is_no_concern_of_the_policy() -> None:
    inventory = Inventory(manifests=(in_use("us-prod", (f"{US_HOST}/app:dev", None)),))
    diagnosis = run(INCIDENT, INCIDENT_IMAGES, inventory=inventory, replication=replicating(delete=False))
    assert findings(diagnosis, "expires-in-use") == []
    assert diagnosis.expiries_replicate_to == ()
