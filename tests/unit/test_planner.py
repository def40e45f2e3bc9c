"""The retention engine's semantics and guards, one behaviour per test (SPEC.md "The rules file")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ecr_retention.domain.inventory.manifest import read_inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.digests import short_digest
from support.builders import (
    ACCOUNT,
    HOST,
    NOW,
    OCI_INDEX,
    REGION,
    action_of,
    config,
    decision_of,
    digest,
    image,
    in_use,
    index_manifest,
    kinds_of,
    manifest_bytes,
    plan,
    removed,
    repository,
    snapshot,
)

DAY = timedelta(days=1)
DELETE_OLD = {"delete": {"tags": ["*"], "older_than": "30d"}}


# --- policies and selection -----------------------------------------------------------------------


def test_repository_no_policy_matches_is_untouched() -> None:
    result = plan(config([DELETE_OLD]), snapshot(repository("other", image("a", "v1"))))
    assert action_of(result, "other", "a") == "keep"
    assert kinds_of(result, "other", "a") == ["no-policy"]
    assert result.repositories[0].policy is None


def test_first_matching_policy_applies_and_later_ones_do_not() -> None:
    cfg = config(
        policies=[
            {"repositories": ["team-*/*"], "rules": [{"keep": {"tags": ["*"]}}]},
            {"repositories": ["team-a/api"], "rules": [DELETE_OLD]},
        ]
    )
    result = plan(cfg, snapshot(repository("team-a/api", image("a", "v1"))))
    assert action_of(result, "team-a/api", "a") == "keep"
    assert result.repositories[0].policy == "policies[0]"


def test_repository_glob_star_crosses_slashes() -> None:
    cfg = config([DELETE_OLD], repositories=("docker.io/*",))
    result = plan(cfg, snapshot(repository("docker.io/library/nginx", image("a", "1.14.2"))))
    assert action_of(result, "docker.io/library/nginx", "a") == "delete"


def test_question_mark_matches_one_character() -> None:
    cfg = config([{"delete": {"tags": ["v?"], "older_than": "1d"}}])
    result = plan(cfg, snapshot(repository("app", image("a", "v1"), image("b", "v10"))))
    assert action_of(result, "app", "a") == "delete"
    assert action_of(result, "app", "b") == "keep"


def test_tag_patterns_match_whole_tags_only() -> None:
    cfg = config([{"delete": {"tags": ["1.2"], "older_than": "1d"}}])
    result = plan(cfg, snapshot(repository("app", image("a", "1.2.3"), image("b", "1.2"))))
    assert action_of(result, "app", "a") == "keep"
    assert action_of(result, "app", "b") == "delete"


def test_untagged_rule_selects_only_untagged_images() -> None:
    cfg = config([{"delete": {"untagged": True, "older_than": "1d"}}])
    result = plan(cfg, snapshot(repository("app", image("a"), image("b", "v1"))))
    assert action_of(result, "app", "a") == "delete"
    assert action_of(result, "app", "b") == "keep"


def test_rule_without_tag_selector_selects_every_image() -> None:
    cfg = config([{"delete": {"older_than": "30d"}}])
    result = plan(cfg, snapshot(repository("app", image("a"), image("b", "v1"), image("c", "v2", age=DAY * 2))))
    assert removed(result) == {digest("a"), digest("b")}


# --- keep rules ------------------------------------------------------------------------------------


def test_keep_wins_over_delete() -> None:
    cfg = config([{"keep": {"tags": ["latest"]}}, DELETE_OLD])
    result = plan(cfg, snapshot(repository("app", image("a", "1.0", "latest"), image("b", "0.9"))))
    assert action_of(result, "app", "a") == "keep"
    assert kinds_of(result, "app", "a") == ["keep-rule", "delete-rule"]
    assert action_of(result, "app", "b") == "delete"


def test_keep_rule_order_does_not_matter() -> None:
    cfg = config([DELETE_OLD, {"keep": {"tags": ["latest"]}}])
    result = plan(cfg, snapshot(repository("app", image("a", "1.0", "latest"))))
    assert action_of(result, "app", "a") == "keep"


def test_mutable_dev_tag_protects_the_image_its_version_tag_shares() -> None:
    """Seed 002: `dev` rides on 1.12.370-dev, which a version-tag rule selects; ECR expired both."""
    images = [image(f"1.12.{n}", f"1.12.{n}", age=DAY * days) for n, days in ((359, 60), (365, 50), (368, 40))]
    images.append(image("1.12.370-dev", "1.12.370-dev", "dev", age=DAY * 35))
    images.append(image("1.12.371", "1.12.371", age=DAY * 31))
    cfg = config(
        [{"keep": {"tags": ["latest", "dev"]}}, {"delete": {"tags": ["*.*"], "older_than": "30d", "keep_newest": 3}}]
    )
    result = plan(cfg, snapshot(repository("app", *images)))
    assert action_of(result, "app", "1.12.370-dev") == "keep"
    assert kinds_of(result, "app", "1.12.370-dev")[0] == "keep-rule"
    # the dev image still counts among the 3 newest, as it does in ECR, so 1.12.365 falls out
    assert removed(result) == {digest("1.12.359"), digest("1.12.365")}


def test_keep_newest_n_protects_only_the_n_newest_selected() -> None:
    images = [image(f"d{n}", f"deployed-prod-{n}", age=DAY * (40 + n)) for n in range(5)]
    cfg = config([{"keep": {"tags": ["deployed-prod-*"], "newest": 2}}, DELETE_OLD])
    result = plan(cfg, snapshot(repository("app", *images)))
    assert [action_of(result, "app", f"d{n}") for n in range(5)] == ["keep", "keep", "delete", "delete", "delete"]


def test_keep_pulled_within_uses_last_pull_strictly() -> None:
    cfg = config([{"keep": {"pulled_within": "30d"}}, DELETE_OLD])
    images = [
        image("recent", "a", pulled_ago=DAY * 29),
        image("exact", "b", pulled_ago=DAY * 30),
        image("never", "c", age=DAY * 100),
    ]
    result = plan(cfg, snapshot(repository("app", *images)))
    assert action_of(result, "app", "recent") == "keep"
    assert action_of(result, "app", "exact") == "delete"
    assert action_of(result, "app", "never") == "delete"


def test_tag_in_repositories_keeps_tags_another_repository_carries() -> None:
    cfg = config([{"keep": {"tag_in_repositories": ["frontend"]}}, DELETE_OLD], repositories=("backend",))
    snap = snapshot(
        repository("backend", image("b1", "v1"), image("b2", "v2")),
        repository("frontend", image("f2", "v2")),
    )
    result = plan(cfg, snap)
    assert action_of(result, "backend", "b1") == "delete"
    assert action_of(result, "backend", "b2") == "keep"


def test_tag_in_repositories_with_tags_needs_one_tag_to_satisfy_both() -> None:
    cfg = config(
        [{"keep": {"tags": ["v*"], "tag_in_repositories": ["frontend"]}}, DELETE_OLD], repositories=("backend",)
    )
    snap = snapshot(
        repository("backend", image("b1", "v1", "latest")),
        repository("frontend", image("f1", "v2", "latest")),
    )
    assert action_of(plan(cfg, snap), "backend", "b1") == "delete"


def test_tag_in_repositories_naming_a_repository_not_in_snapshot_keeps_everything_it_selects() -> None:
    cfg = config([{"keep": {"tag_in_repositories": ["frontend"]}}, DELETE_OLD], repositories=("backend",))
    result = plan(cfg, snapshot(repository("backend", image("b1", "v1"))))
    assert action_of(result, "backend", "b1") == "keep"
    assert any("frontend" in warning for warning in result.warnings)


def test_tag_in_repositories_ignores_the_repository_itself() -> None:
    cfg = config([{"keep": {"tag_in_repositories": ["*"]}}, DELETE_OLD], repositories=("backend",))
    snap = snapshot(repository("backend", image("b1", "v1")), repository("frontend", image("f1", "v9")))
    assert action_of(plan(cfg, snap), "backend", "b1") == "delete"


# --- delete rules ----------------------------------------------------------------------------------


def test_older_than_is_strictly_greater() -> None:
    cfg = config([DELETE_OLD])
    result = plan(
        cfg, snapshot(repository("app", image("exact", "a", age=DAY * 30), image("older", "b", age=DAY * 31)))
    )
    assert action_of(result, "app", "exact") == "keep"
    assert kinds_of(result, "app", "exact") == ["no-delete-rule"]
    assert "not older than 30d" in decision_of(result, "app", "exact").reasons[0].detail
    assert action_of(result, "app", "older") == "delete"


def test_keep_newest_counts_every_selected_image_whatever_its_age_or_protection() -> None:
    images = [
        image("young", "v5", age=DAY * 2),  # newest, too young for the rule
        image("protected", "v4", "latest", age=DAY * 40),  # kept by a keep rule, still takes a slot
        image("old3", "v3", age=DAY * 50),
        image("old2", "v2", age=DAY * 60),
        image("old1", "v1", age=DAY * 70),
    ]
    cfg = config([{"keep": {"tags": ["latest"]}}, {"delete": {"tags": ["v*"], "older_than": "30d", "keep_newest": 3}}])
    result = plan(cfg, snapshot(repository("app", *images)))
    assert action_of(result, "app", "old3") == "keep"
    assert kinds_of(result, "app", "old3") == ["keep-newest"]
    assert removed(result) == {digest("old2"), digest("old1")}


def test_newest_ties_break_by_digest_ascending() -> None:
    same_age = [image(f"s{n}", f"v{n}", age=DAY * 50) for n in range(4)]
    cfg = config([{"delete": {"tags": ["v*"], "older_than": "30d", "keep_newest": 2}}])
    result = plan(cfg, snapshot(repository("app", *same_age)))
    by_digest = sorted(digest(f"s{n}") for n in range(4))
    assert removed(result) == set(by_digest[2:])


def test_not_pulled_within_falls_back_to_push_time() -> None:
    cfg = config([{"delete": {"tags": ["*"], "not_pulled_within": "14d"}}])
    images = [
        image("pulled-recently", "a", age=DAY * 100, pulled_ago=DAY * 3),
        image("pulled-long-ago", "b", age=DAY * 100, pulled_ago=DAY * 20),
        image("never-pulled-young", "c", age=DAY * 10),
        image("never-pulled-old", "d", age=DAY * 15),
    ]
    result = plan(cfg, snapshot(repository("app", *images)))
    assert removed(result) == {digest("pulled-long-ago"), digest("never-pulled-old")}


def test_conditions_of_one_rule_combine_with_and() -> None:
    cfg = config([{"delete": {"tags": ["pr-*"], "older_than": "30d", "not_pulled_within": "14d"}}])
    images = [
        image("old-pulled", "pr-1", age=DAY * 60, pulled_ago=DAY * 2),
        image("old-idle", "pr-2", age=DAY * 60, pulled_ago=DAY * 20),
        image("young-idle", "pr-3", age=DAY * 20),
    ]
    assert removed(plan(cfg, snapshot(repository("app", *images)))) == {digest("old-idle")}


def test_deleted_image_names_every_rule_that_marked_it() -> None:
    cfg = config([DELETE_OLD, {"delete": {"untagged": False, "older_than": "60d"}, "description": "very old"}])
    result = plan(cfg, snapshot(repository("app", image("a", "v1"))))
    reasons = decision_of(result, "app", "a").reasons
    assert [(r.kind, r.rule) for r in reasons] == [("delete-rule", "policies[0].rules[0]"), ("delete-rule", "very old")]


def test_kept_image_says_no_delete_rule_selects_it() -> None:
    cfg = config([{"delete": {"tags": ["pr-*"], "older_than": "1d"}}])
    result = plan(cfg, snapshot(repository("app", image("a", "v1"))))
    reason = decision_of(result, "app", "a").reasons[0]
    assert (reason.kind, reason.detail) == ("no-delete-rule", "no delete rule selects it")


# --- archive -------------------------------------------------------------------------------------


def test_archive_rule_archives_instead_of_deleting() -> None:
    cfg = config([{"delete": {"tags": ["pr-*"], "not_pulled_within": "14d", "archive": True}}])
    result = plan(cfg, snapshot(repository("app", image("a", "pr-1"))))
    assert action_of(result, "app", "a") == "archive"


def test_image_marked_by_archive_and_plain_delete_is_deleted() -> None:
    cfg = config([{"delete": {"tags": ["pr-*"], "archive": True}}, DELETE_OLD])
    assert action_of(plan(cfg, snapshot(repository("app", image("a", "pr-1")))), "app", "a") == "delete"


def test_archive_rule_skips_images_already_archived() -> None:
    cfg = config([{"delete": {"tags": ["pr-*"], "archive": True}}])
    result = plan(cfg, snapshot(repository("app", image("a", "pr-1", status="ARCHIVED"))))
    assert action_of(result, "app", "a") == "keep"
    assert "already archived" in decision_of(result, "app", "a").reasons[0].detail


def test_image_being_restored_is_never_deleted() -> None:
    cfg = config([DELETE_OLD])
    assert (
        action_of(plan(cfg, snapshot(repository("app", image("a", "v1", status="ACTIVATING")))), "app", "a") == "keep"
    )


def test_children_and_referrers_of_an_archived_index_are_archived_with_it() -> None:
    cfg = config([{"delete": {"tags": ["pr-*"], "archive": True}}])
    snap = snapshot(
        repository(
            "app",
            image("idx", "pr-1", media_type=OCI_INDEX),
            image("amd64"),
            image("sbom", subject="idx"),
            manifests={"idx": index_manifest("amd64")},
        )
    )
    result = plan(cfg, snap)
    assert {action_of(result, "app", seed) for seed in ("idx", "amd64", "sbom")} == {"archive"}


# --- in use ----------------------------------------------------------------------------------------


def test_in_use_digest_is_kept_in_every_repository_of_the_registry() -> None:
    cfg = config([DELETE_OLD], repositories=("*",))
    snap = snapshot(repository("app", image("x", "v1")), repository("mirror/app", image("x", "copy")))
    result = plan(cfg, snap, in_use("prod", (f"{HOST}/app@{digest('x')}", "x")))
    assert action_of(result, "app", "x") == "keep"
    assert action_of(result, "mirror/app", "x") == "keep"
    assert kinds_of(result, "mirror/app", "x")[0] == "in-use"


def test_in_use_tag_reference_protects_the_digest_the_tag_points_to_now() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(repository("app", image("a", "1.0", "dev"), image("b", "0.9")))
    result = plan(cfg, snap, in_use("dev", (f"{HOST}/app:dev", None)))
    assert action_of(result, "app", "a") == "keep"
    detail = decision_of(result, "app", "a").reasons[0].detail
    assert "dev: default/Deployment/web (pod)" in detail
    assert action_of(result, "app", "b") == "delete"


def test_in_use_reference_without_tag_means_latest() -> None:
    cfg = config([DELETE_OLD])
    result = plan(cfg, snapshot(repository("app", image("a", "latest"))), in_use("dev", (f"{HOST}/app", None)))
    assert action_of(result, "app", "a") == "keep"


def test_in_use_tag_reference_with_an_explicit_port_protects_its_tag() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(repository("app", image("a", "1.0"), image("b", "0.9")))
    result = plan(cfg, snap, in_use("prod", (f"{HOST}:443/app:1.0", None)))
    assert action_of(result, "app", "a") == "keep"
    assert kinds_of(result, "app", "a")[0] == "in-use"
    assert action_of(result, "app", "b") == "delete"


def test_image_swapper_cache_path_is_an_ecr_image_like_any_other() -> None:
    """Seed 000: the cached docker.io/library/nginx:1.14.2 still runs; deleting it means ImagePullBackOff."""
    cfg = config([{"delete": {"tags": ["*"], "not_pulled_within": "90d"}}], repositories=("docker.io/*",))
    snap = snapshot(repository("docker.io/library/nginx", image("n1", "1.14.2", age=DAY * 700, pulled_ago=DAY * 150)))
    result = plan(cfg, snap, in_use("dev", (f"{HOST}/docker.io/library/nginx:1.14.2", None)))
    assert action_of(result, "docker.io/library/nginx", "n1") == "keep"


@pytest.mark.parametrize(
    "reference",
    [
        "210987654321.dkr.ecr.eu-west-1.amazonaws.com/app:1.0",  # another account
        f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/app:1.0",  # another region
        "docker.io/library/app:1.0",  # another registry
    ],
)
def test_tag_reference_to_another_registry_does_not_protect(reference: str) -> None:
    cfg = config([DELETE_OLD])
    result = plan(cfg, snapshot(repository("app", image("a", "1.0"))), in_use("prod", (reference, None)))
    assert action_of(result, "app", "a") == "delete"


def test_manifest_of_another_registry_than_the_snapshot_is_a_loud_warning() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    other = "210987654321.dkr.ecr.us-east-1.amazonaws.com"
    manifest = in_use(
        "prod", (f"{other}/app:1.0", None), (f"{other}/web:2.0", None), ("docker.io/library/nginx:1", None)
    )
    result = plan(cfg, snapshot(repository("app", image("a", "1.0"))), manifest)
    assert action_of(result, "app", "a") == "delete"  # the reference is of another registry: it protects nothing here
    assert (
        f"cluster prod: the snapshot is of registry {ACCOUNT} in {REGION}, but the in-use manifest references only "
        "ECR registry 210987654321 in us-east-1; no tag reference of this cluster protects anything in this run "
        "(digests still do): is the snapshot of the right account and region?"
    ) in result.warnings


def test_manifest_with_one_reference_to_the_snapshot_registry_is_not_warned_about() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    manifest = in_use("prod", ("210987654321.dkr.ecr.us-east-1.amazonaws.com/app:1.0", None), (f"{HOST}/app:2", None))
    result = plan(cfg, snapshot(repository("app", image("a", "1.0"))), manifest)
    assert not [warning for warning in result.warnings if "right account" in warning]


def test_tag_reference_resolves_by_repository_when_the_snapshot_names_no_registry() -> None:
    cfg = config([DELETE_OLD])
    detail = image("a", "1.0")
    del detail["registryId"]
    snap = snapshot(repository("app", detail), registry_id=None, region=None)
    result = plan(cfg, snap, in_use("prod", ("210987654321.dkr.ecr.us-east-1.amazonaws.com/app:1.0", None)))
    assert action_of(result, "app", "a") == "keep"


def test_digest_of_a_non_ecr_reference_still_protects_the_same_digest() -> None:
    cfg = config([DELETE_OLD], repositories=("docker.io/*",))
    snap = snapshot(repository("docker.io/library/nginx", image("n1", "1.14.2")))
    result = plan(cfg, snap, in_use("dev", (f"docker.io/library/nginx@{digest('n1')}", None)))
    assert action_of(result, "docker.io/library/nginx", "n1") == "keep"


def test_unparseable_in_use_reference_is_a_warning_not_a_crash() -> None:
    cfg = config([DELETE_OLD])
    result = plan(cfg, snapshot(repository("app", image("a", "1.0"))), in_use("prod", ("not an image!", "a")))
    assert action_of(result, "app", "a") == "keep"  # its digest still protects it
    assert any("not an image!" in warning for warning in result.warnings)


def test_unparseable_ecr_reference_without_digest_blocks_its_expected_cluster() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    broken = f"{HOST}/app:has space"
    result = plan(cfg, snapshot(repository("app", image("a", "1.0"))), in_use("prod", (broken, None)))
    assert result.blocked == (
        f"cluster prod: in-use image {broken!r} looks like ECR but is not a valid reference and has no digest, "
        "so it cannot be protected",
    )
    assert removed(result) == set()


def test_unparseable_ecr_reference_of_an_unexpected_cluster_is_a_warning() -> None:
    cfg = config([DELETE_OLD], clusters=[])
    result = plan(cfg, snapshot(repository("app", image("a", "1.0"))), in_use("lab", (f"{HOST}/app:bad tag", None)))
    assert not result.blocked
    assert any("cannot be protected" in warning for warning in result.warnings)


def test_stale_manifest_of_an_unexpected_cluster_still_protects() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    snap = snapshot(repository("app", image("a", "1.0")))
    result = plan(cfg, snap, in_use("prod", ("x/y:z", None)), in_use("old", (f"{HOST}/app:1.0", None), age=DAY * 9))
    assert not result.blocked
    assert action_of(result, "app", "a") == "keep"


# --- young images ----------------------------------------------------------------------------------


def test_image_younger_than_min_age_is_kept_even_when_marked() -> None:
    cfg = config([{"delete": {"untagged": True}}], min_age="1d")
    snap = snapshot(repository("app", image("young", age=timedelta(hours=23)), image("exact", age=DAY), image("old")))
    result = plan(cfg, snap)
    assert kinds_of(result, "app", "young") == ["min-age", "delete-rule"]
    assert action_of(result, "app", "exact") == "keep"
    assert action_of(result, "app", "old") == "delete"


def test_image_pushed_in_the_future_is_young_and_named_in_a_warning() -> None:
    cfg = config([{"delete": {"tags": ["v*"], "older_than": "30d"}}])
    result = plan(cfg, snapshot(repository("app", image("future", "v9", age=-DAY * 2), image("old", "v1"))))
    assert kinds_of(result, "app", "future") == ["min-age"]
    assert decision_of(result, "app", "future").reasons[0].detail == (
        "pushed 2d in the future, so counted as 0s old: within min_age 1d"
    )
    assert result.warnings == (
        f"app: image {digest('future')[7:19]} (v9) was pushed 2d after the plan's time "
        "(2026-12-02T06:00:00Z); it ranks as the newest image and counts as 0s old: kept as young, "
        "and it takes keep_newest slots",
    )


def test_image_a_few_minutes_ahead_is_clock_skew_without_a_warning() -> None:
    cfg = config([{"delete": {"tags": ["v*"], "older_than": "30d"}}])
    result = plan(cfg, snapshot(repository("app", image("soon", "v9", age=-timedelta(minutes=4)))))
    assert result.warnings == ()


def test_future_image_taking_a_keep_newest_slot_says_which_image_is_deleted_in_its_place() -> None:
    cfg = config([{"delete": {"tags": ["v*"], "older_than": "30d", "keep_newest": 1}}])
    images = [image("future", "v3", age=-DAY * 2), image("b", "v2", age=DAY * 40), image("c", "v1", age=DAY * 50)]
    result = plan(cfg, snapshot(repository("app", *images)))
    assert removed(result) == {digest("b"), digest("c")}  # b would have been the one newest kept
    assert (
        f"app: policies[0].rules[0]: the future image {digest('future')[7:19]} (v3) takes one of its 1 keep_newest "
        f"slots, so {digest('b')[7:19]} (v2) is deleted in its place"
    ) in result.warnings


def test_future_images_taking_several_slots_name_every_image_deleted_in_their_place() -> None:
    cfg = config([{"delete": {"tags": ["v*"], "older_than": "30d", "keep_newest": 3}}])
    images = [image("f1", "v5", age=-DAY), image("f2", "v6", age=-DAY * 2)]
    images += [image("a", "v3", age=DAY * 40), image("b", "v2", age=DAY * 50), image("c", "v1", age=DAY * 60)]
    result = plan(cfg, snapshot(repository("app", *images)))
    assert removed(result) == {digest("b"), digest("c")}
    f1, f2, b, c = (digest(seed)[7:19] for seed in ("f1", "f2", "b", "c"))
    assert (
        f"app: policies[0].rules[0]: the future images {f2} (v6), {f1} (v5) take 2 of its 3 keep_newest slots, "
        f"so {b} (v2), {c} (v1) are deleted in their place"
    ) in result.warnings


# --- multi-arch ------------------------------------------------------------------------------------


def multi_arch_repo(*extra: dict[str, object]) -> dict[str, object]:
    return repository(
        "app",
        image("idx-new", "v2", media_type=OCI_INDEX, age=DAY * 10),
        image("idx-old", "v1", media_type=OCI_INDEX, age=DAY * 100),
        image("amd64-new", age=DAY * 10),
        image("amd64-old", age=DAY * 100),
        image("arm64-shared", age=DAY * 100),
        *extra,
        manifests={
            "idx-new": index_manifest("amd64-new", "arm64-shared"),
            "idx-old": index_manifest("amd64-old", "arm64-shared"),
        },
    )


def test_child_of_kept_index_is_kept_even_when_an_untagged_rule_marks_it() -> None:
    cfg = config([{"delete": {"untagged": True, "older_than": "1d"}}])
    result = plan(cfg, snapshot(multi_arch_repo()))
    assert action_of(result, "app", "amd64-old") == "keep"
    assert kinds_of(result, "app", "amd64-old") == ["index-child", "delete-rule"]


def test_children_of_a_deleted_index_are_deleted_with_it_unless_another_kept_index_shares_them() -> None:
    cfg = config([{"delete": {"tags": ["v1"]}}])
    result = plan(cfg, snapshot(multi_arch_repo()))
    assert action_of(result, "app", "idx-old") == "delete"
    assert action_of(result, "app", "amd64-old") == "delete"
    assert kinds_of(result, "app", "amd64-old") == ["index-child"]
    assert action_of(result, "app", "arm64-shared") == "keep"  # idx-new still references it
    assert action_of(result, "app", "amd64-new") == "keep"


def test_child_of_a_deleted_index_that_is_in_use_is_kept() -> None:
    cfg = config([{"delete": {"tags": ["v1"]}}])
    result = plan(cfg, snapshot(multi_arch_repo()), in_use("prod", (f"{HOST}/app@{digest('amd64-old')}", None)))
    assert action_of(result, "app", "idx-old") == "delete"
    assert action_of(result, "app", "amd64-old") == "keep"


def test_young_child_of_a_deleted_index_is_kept() -> None:
    cfg = config([{"delete": {"tags": ["v1"]}}])
    result = plan(cfg, snapshot(multi_arch_repo(image("late-child", age=timedelta(hours=2)))))
    # late-child is not referenced by any index, so it is an ordinary image that no rule marks
    assert action_of(result, "app", "late-child") == "keep"
    snap = snapshot(
        repository(
            "app",
            image("idx", "v1", media_type=OCI_INDEX),
            image("child", age=timedelta(hours=2)),
            manifests={"idx": index_manifest("child")},
        )
    )
    result = plan(cfg, snap)
    assert action_of(result, "app", "idx") == "delete"
    assert kinds_of(result, "app", "child") == ["min-age"]


def test_index_whose_manifest_is_unknown_keeps_every_single_platform_image() -> None:
    cfg = config([{"delete": {"untagged": True}}, {"delete": {"tags": ["v1"]}}])
    snap = snapshot(repository("app", image("idx", "v1", media_type=OCI_INDEX), image("orphan?")))
    result = plan(cfg, snap)
    assert action_of(result, "app", "orphan?") == "keep"
    assert kinds_of(result, "app", "orphan?")[0] == "index-child"
    assert action_of(result, "app", "idx") == "delete"


def test_index_inside_an_index_follows_its_parent() -> None:
    cfg = config([{"delete": {"tags": ["v1"]}}])
    snap = snapshot(
        repository(
            "app",
            image("outer", "v1", media_type=OCI_INDEX),
            image("inner", media_type=OCI_INDEX),
            image("leaf"),
            manifests={"outer": index_manifest("inner"), "inner": index_manifest("leaf")},
        )
    )
    assert removed(plan(cfg, snap)) == {digest("outer"), digest("inner"), digest("leaf")}


# --- signatures and referrers ----------------------------------------------------------------------


def cosign_tag(seed: str) -> str:
    return "sha256-" + digest(seed).split(":")[1] + ".sig"


def test_cosign_signature_is_kept_with_its_kept_subject() -> None:
    cfg = config([{"delete": {"tags": ["sha256-*"]}}])
    snap = snapshot(repository("app", image("subject", "v1"), image("sig", cosign_tag("subject"))))
    result = plan(cfg, snap)
    assert action_of(result, "app", "sig") == "keep"
    assert kinds_of(result, "app", "sig") == ["referrer", "delete-rule"]


def test_cosign_signature_is_deleted_with_its_deleted_subject() -> None:
    cfg = config([{"delete": {"tags": ["v*"]}}])
    snap = snapshot(repository("app", image("subject", "v1"), image("sig", cosign_tag("subject"))))
    result = plan(cfg, snap)
    assert action_of(result, "app", "subject") == "delete"
    assert action_of(result, "app", "sig") == "delete"
    assert kinds_of(result, "app", "sig") == ["referrer"]


def test_oci_referrer_lives_and_dies_with_its_subject() -> None:
    cfg = config([{"delete": {"tags": ["v1"]}}, {"delete": {"untagged": True}}])
    snap = snapshot(
        repository(
            "app",
            image("s1", "v1"),
            image("s2", "v2"),
            image("sbom1", subject="s1"),
            image("sbom2", subject="s2"),
        )
    )
    result = plan(cfg, snap)
    assert action_of(result, "app", "sbom1") == "delete"
    assert action_of(result, "app", "sbom2") == "keep"


def test_referrer_of_a_kept_subject_is_kept_even_when_old_and_untagged() -> None:
    cfg = config([{"delete": {"untagged": True, "older_than": "1d"}}])
    snap = snapshot(repository("app", image("s", "v1"), image("att", subject="s", age=DAY * 300)))
    assert action_of(plan(cfg, snap), "app", "att") == "keep"


# --- orphaned referrers: the subject is gone ---------------------------------------------------------

KEEP_RELEASES = [{"keep": {"tags": ["v*"]}}]


def test_oci_referrer_whose_subject_is_gone_is_deleted_as_its_subject_was() -> None:
    # no rule selects the untagged SBOM; its subject went, so it goes too
    snap = snapshot(repository("app", image("release", "v1"), image("sbom", subject="gone")))
    result = plan(config(KEEP_RELEASES), snap)
    assert action_of(result, "app", "sbom") == "delete"
    [reason] = decision_of(result, "app", "sbom").reasons
    assert (reason.kind, reason.detail) == (
        "referrer",
        f"its subject {short_digest(digest('gone'))} is gone from the repository",
    )
    assert action_of(result, "app", "release") == "keep"


def test_orphaned_oci_referrer_is_deleted_even_when_an_archive_rule_marks_it() -> None:
    cfg = config([{"delete": {"untagged": True, "archive": True}}])
    result = plan(cfg, snapshot(repository("app", image("sbom", subject="gone"))))
    assert action_of(result, "app", "sbom") == "delete"
    assert kinds_of(result, "app", "sbom") == ["delete-rule", "referrer"]


def test_orphaned_oci_referrer_younger_than_min_age_is_kept() -> None:
    snap = snapshot(repository("app", image("sbom", subject="gone", age=timedelta(hours=2))))
    result = plan(config(KEEP_RELEASES, min_age="1d"), snap)
    assert action_of(result, "app", "sbom") == "keep"
    assert kinds_of(result, "app", "sbom") == ["min-age"]


def test_orphaned_oci_referrer_in_use_is_kept() -> None:
    snap = snapshot(repository("app", image("sbom", subject="gone")))
    result = plan(config(KEEP_RELEASES), snap, in_use("prod", (f"{HOST}/app@{digest('sbom')}", None)))
    assert action_of(result, "app", "sbom") == "keep"
    assert kinds_of(result, "app", "sbom") == ["in-use"]


def test_orphaned_oci_referrer_selected_by_a_keep_rule_is_kept() -> None:
    cfg = config([{"keep": {"untagged": True, "pulled_within": "7d"}}])
    snap = snapshot(repository("app", image("sbom", subject="gone", pulled_ago=DAY)))
    result = plan(cfg, snap)
    assert action_of(result, "app", "sbom") == "keep"
    assert kinds_of(result, "app", "sbom") == ["keep-rule"]


def test_oci_referrer_of_an_archived_subject_is_no_orphan_and_stays_with_it() -> None:
    cfg = config([{"delete": {"untagged": True}}])
    snap = snapshot(repository("app", image("s", "v1", status="ARCHIVED"), image("sbom", subject="s")))
    result = plan(cfg, snap)
    assert action_of(result, "app", "sbom") == "keep"
    assert kinds_of(result, "app", "sbom") == ["referrer", "delete-rule"]


def test_orphaned_oci_referrer_listed_by_a_kept_index_stays() -> None:
    snap = snapshot(
        repository(
            "app",
            image("idx", "v1", media_type=OCI_INDEX),
            image("attestation", subject="gone"),
            manifests={"idx": index_manifest("attestation")},
        )
    )
    result = plan(config(KEEP_RELEASES), snap)
    assert action_of(result, "app", "attestation") == "keep"
    assert kinds_of(result, "app", "attestation") == ["index-child"]


def test_referrer_of_an_orphaned_referrer_goes_with_it() -> None:
    snap = snapshot(repository("app", image("sbom", subject="gone"), image("sbom-signature", subject="sbom")))
    result = plan(config(KEEP_RELEASES), snap)
    assert action_of(result, "app", "sbom-signature") == "delete"
    assert kinds_of(result, "app", "sbom-signature") == ["referrer"]
    assert "goes with subject" in decision_of(result, "app", "sbom-signature").reasons[0].detail


def test_cosign_signature_whose_subject_is_gone_is_kept_when_no_delete_rule_selects_it() -> None:
    # COSIGN_REPOSITORY may keep signatures apart from their images: an absent subject proves nothing here
    snap = snapshot(repository("app", image("release", "v1"), image("sig", cosign_tag("elsewhere"))))
    result = plan(config(KEEP_RELEASES), snap)
    assert action_of(result, "app", "sig") == "keep"
    assert kinds_of(result, "app", "sig") == ["no-delete-rule"]


def test_cosign_signature_whose_subject_is_gone_is_deleted_when_a_delete_rule_marks_it() -> None:
    cfg = config([{"delete": {"tags": ["sha256-*"], "older_than": "30d"}}])
    snap = snapshot(repository("app", image("sig", cosign_tag("gone"))))
    result = plan(cfg, snap)
    assert action_of(result, "app", "sig") == "delete"
    assert kinds_of(result, "app", "sig") == ["delete-rule"]


def test_orphaned_oci_referrers_count_toward_max_delete_fraction() -> None:
    cfg = config(KEEP_RELEASES, max_delete_fraction=0.5)
    snap = snapshot(
        repository("app", image("release", "v1"), image("sbom1", subject="gone1"), image("sbom2", subject="gone2"))
    )
    result = plan(cfg, snap)
    assert result.repositories[0].skipped is not None  # 2 of 3 images
    assert removed(result) == set()
    assert kinds_of(result, "app", "sbom1") == ["skipped", "referrer"]


def test_a_blocked_run_keeps_orphaned_oci_referrers() -> None:
    cfg = config(KEEP_RELEASES, clusters=["prod"])
    result = plan(cfg, snapshot(repository("app", image("sbom", subject="gone"))))
    assert removed(result) == set()
    assert kinds_of(result, "app", "sbom") == ["blocked", "referrer"]


# --- fail closed -----------------------------------------------------------------------------------


def old_app() -> object:
    return snapshot(repository("app", image("a", "v1")))


@pytest.mark.parametrize(
    ("manifests", "problems", "expected"),
    [
        ((), {}, "cluster prod: no in-use manifest"),
        ((in_use("prod", age=timedelta(hours=7)),), {}, "older than inventory_max_age 6h"),
        ((in_use("prod", complete=False),), {}, "incomplete"),
        ((in_use("prod", age=-timedelta(hours=1)),), {}, "in the future"),
        (
            (),
            {"in-use/prod.json": "images: required but missing"},
            "in-use/prod.json: unreadable in-use manifest: images: required but missing",
        ),
    ],
)
def test_expected_cluster_without_a_usable_manifest_blocks_every_deletion(
    manifests: tuple[object, ...], problems: dict[str, str], expected: str
) -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    result = plan(cfg, old_app(), *manifests, problems=problems)  # type: ignore[arg-type]
    assert result.blocked
    assert expected in result.blocked[0]
    decision = decision_of(result, "app", "a")
    assert decision.action == "keep"
    assert [r.kind for r in decision.reasons] == ["blocked", "delete-rule"]
    assert result.has_problems


def plan_files(cfg: object, snap: object, *documents: tuple[str, bytes]) -> Plan:
    return plan_registry(cfg, snap, read_inventory(documents), NOW)  # type: ignore[arg-type]


def test_unreadable_manifest_of_a_cluster_nobody_expects_still_blocks_and_names_the_file() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    broken = manifest_bytes(in_use("staging", (f"{HOST}/app:v1", None))).replace(b'"images"', b'"imagez"')
    result = plan_files(
        cfg, old_app(), ("in-use/prod.json", manifest_bytes(in_use("prod"))), ("in-use/staging.json", broken)
    )
    assert result.blocked == ("in-use/staging.json: unreadable in-use manifest: images: required but missing",)
    assert removed(result) == set()
    assert kinds_of(result, "app", "a") == ["blocked", "delete-rule"]


def test_unreadable_manifest_of_an_expected_cluster_is_named_once() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    result = plan_files(cfg, old_app(), ("in-use/prod.json", b"{not json"))
    assert result.blocked == (
        "in-use/prod.json: unreadable in-use manifest: invalid JSON (line 1, column 2): "
        "Expecting property name enclosed in double quotes",
    )


def test_manifest_whose_file_names_another_cluster_protects_but_satisfies_neither() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    misfiled = manifest_bytes(in_use("staging", (f"{HOST}/app:v1", None)))
    result = plan_files(cfg, old_app(), ("in-use/prod.json", misfiled))
    assert result.blocked == ("cluster prod: no in-use manifest (in-use/prod.json declares cluster staging)",)
    assert kinds_of(result, "app", "a") == ["blocked", "in-use", "delete-rule"]

    result = plan_files(config([DELETE_OLD], clusters=["staging"]), old_app(), ("in-use/prod.json", misfiled))
    assert result.blocked == ("cluster staging: no in-use manifest (in-use/prod.json declares cluster staging)",)


def test_misfiled_manifest_of_clusters_nobody_expects_protects_with_a_warning() -> None:
    misfiled = manifest_bytes(in_use("staging", (f"{HOST}/app:v1", None)))
    result = plan_files(config([DELETE_OLD]), old_app(), ("in-use/lab.json", misfiled))
    assert not result.blocked
    assert action_of(result, "app", "a") == "keep"
    assert "in-use/lab.json declares cluster staging" in " ".join(result.warnings)


def test_manifest_exactly_inventory_max_age_old_is_fresh() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    result = plan(cfg, old_app(), in_use("prod", age=timedelta(hours=6)))  # type: ignore[arg-type]
    assert not result.blocked
    assert action_of(result, "app", "a") == "delete"


def test_one_missing_cluster_blocks_all_repositories() -> None:
    cfg = config([DELETE_OLD], repositories=("*",), clusters=["prod", "dev"])
    snap = snapshot(repository("app", image("a", "v1")), repository("web", image("w", "v1")))
    result = plan(cfg, snap, in_use("prod"))
    assert removed(result) == set()
    assert result.blocked == ("cluster dev: no in-use manifest",)


def test_repository_over_max_delete_fraction_is_skipped_with_would_be_deletions_as_reasons() -> None:
    cfg = config([DELETE_OLD], max_delete_fraction=0.5)
    snap = snapshot(repository("app", image("a", "v1"), image("b", "v2"), image("c", "v3", age=DAY)))
    result = plan(cfg, snap)
    repo = result.repositories[0]
    assert repo.skipped is not None
    assert "2 of 3" in repo.skipped
    assert removed(result) == set()
    assert kinds_of(result, "app", "a") == ["skipped", "delete-rule"]
    assert result.has_problems


def test_repository_exactly_at_max_delete_fraction_is_not_skipped() -> None:
    cfg = config([DELETE_OLD], max_delete_fraction=0.5)
    snap = snapshot(repository("app", image("a", "v1"), image("b", "v2", age=DAY)))
    result = plan(cfg, snap)
    assert result.repositories[0].skipped is None
    assert removed(result) == {digest("a")}


def test_children_count_toward_max_delete_fraction() -> None:
    cfg = config([{"delete": {"tags": ["v1"]}}], max_delete_fraction=0.5)
    snap = snapshot(
        repository(
            "app",
            image("idx", "v1", media_type=OCI_INDEX),
            image("c1"),
            image("c2"),
            image("keep1", "v2"),
            image("keep2", "v3"),
            manifests={"idx": index_manifest("c1", "c2")},
        )
    )
    assert plan(cfg, snap).repositories[0].skipped is not None  # 3 of 5 images


# --- output ----------------------------------------------------------------------------------------


def test_plan_lists_images_newest_first_with_sorted_tags() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(repository("app", image("old", "b", "a", age=DAY * 50), image("new", "z", age=DAY * 2)))
    decisions = plan(cfg, snap).repositories[0].images
    assert [d.image_digest for d in decisions] == [digest("new"), digest("old")]
    assert decisions[1].image_tags == ("a", "b")


def test_json_output_uses_the_documented_field_names() -> None:
    cfg = config([DELETE_OLD])
    data = plan(cfg, snapshot(repository("app", image("a", "v1")))).to_json_dict()
    repo = data["repositories"][0]  # type: ignore[index]
    assert set(repo) >= {"repositoryName", "skipped", "images", "summary"}
    assert set(repo["images"][0]) >= {"imageDigest", "imageTags", "action", "reasons"}
    assert repo["images"][0]["reasons"][0] == {
        "kind": "delete-rule",
        "rule": "policies[0].rules[0]",
        "detail": "delete tags *, older than 30d",
    }
    assert data["blocked"] == []
    assert data["generatedAt"] == NOW.isoformat().replace("+00:00", "Z")


# --- in-use images found archived ------------------------------------------------------------------


def test_archived_image_in_use_by_digest_is_restored_even_when_a_delete_rule_marks_it() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED"), image("b", "v0")))
    result = plan(cfg, snap, in_use("prod", (f"{HOST}/app@{digest('a')}", "a")))
    assert action_of(result, "app", "a") == "restore"
    main = decision_of(result, "app", "a").main_reason
    assert main.kind == "in-use"
    assert "prod: default/Deployment/web (pod)" in main.detail
    assert "delete-rule" in kinds_of(result, "app", "a")
    assert removed(result) == {digest("b")}
    assert result.repositories[0].summary.restored == 1
    assert result.repositories[0].summary.kept == 1


def test_archived_image_in_use_by_a_tag_reference_is_restored() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(
        repository("app", image("a", "1.0", "dev", status="ARCHIVED"), image("b", "0.9", status="ARCHIVED"))
    )
    result = plan(cfg, snap, in_use("dev", (f"{HOST}/app:dev", None)))
    assert action_of(result, "app", "a") == "restore"
    assert action_of(result, "app", "b") == "delete"  # archived, not in use: the delete rule deletes it


def test_an_archived_image_nobody_runs_is_not_restored() -> None:
    cfg = config([{"keep": {"tags": ["*"]}}])
    result = plan(cfg, snapshot(repository("app", image("a", "v1", status="ARCHIVED"))))
    assert action_of(result, "app", "a") == "keep"


def test_a_blocked_run_still_restores_an_in_use_image_found_archived() -> None:
    cfg = config([DELETE_OLD], clusters=["prod", "missing"])
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED"), image("b", "v0")))
    result = plan(cfg, snap, in_use("prod", (f"{HOST}/app@{digest('a')}", "a")))
    assert result.blocked
    assert action_of(result, "app", "a") == "restore"
    assert removed(result) == set()
    assert kinds_of(result, "app", "b")[0] == "blocked"


def test_with_restore_in_use_false_an_archived_in_use_image_is_kept_and_reported() -> None:
    cfg = config([DELETE_OLD], restore_in_use=False)
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED")))
    result = plan(cfg, snap, in_use("prod", (f"{HOST}/app@{digest('a')}", "a")))
    assert action_of(result, "app", "a") == "keep"
    assert kinds_of(result, "app", "a")[0] == "in-use"
    assert "in-use-archived" in kinds_of(result, "app", "a")
    assert any("restore_in_use is false" in w and "prod: default/Deployment/web" in w for w in result.warnings)


def test_an_activating_image_is_kept_with_a_restoring_reason_whatever_selects_it() -> None:
    cfg = config([DELETE_OLD, {"delete": {"tags": ["v*"], "archive": True}}])
    snap = snapshot(
        repository(
            "app",
            image("idx", "old", media_type=OCI_INDEX),
            image("amd64", status="ACTIVATING"),
            manifests={"idx": index_manifest("amd64")},
        )
    )
    result = plan(cfg, snap)
    assert action_of(result, "app", "idx") == "delete"
    assert action_of(result, "app", "amd64") == "keep"  # its index goes, it is being restored: it stays
    assert decision_of(result, "app", "amd64").main_reason.kind == "restoring"


def test_max_delete_fraction_does_not_count_restores_and_a_skipped_repository_still_restores() -> None:
    cfg = config([DELETE_OLD], max_delete_fraction=0.5)
    snap = snapshot(
        repository("app", image("a", "v1", status="ARCHIVED"), image("b", "v2", status="ARCHIVED"), image("c", "v3"))
    )
    uses = in_use("prod", (f"{HOST}/app@{digest('a')}", "a"), (f"{HOST}/app@{digest('b')}", "b"))
    result = plan(cfg, snap, uses)
    assert result.repositories[0].skipped is None  # 1 removal of 3 images; the 2 restores are no removals
    assert removed(result) == {digest("c")}
    skipped = plan(
        cfg,
        snapshot(repository("app", image("a", "v1", status="ARCHIVED"), image("c", "v3"), image("d", "v4"))),
        in_use("prod", (f"{HOST}/app@{digest('a')}", "a")),
    )
    assert skipped.repositories[0].skipped is not None  # 2 removals of 3 images
    assert action_of(skipped, "app", "a") == "restore"
    assert removed(skipped) == set()


def test_the_archived_children_of_an_in_use_index_are_restored_with_it() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(
        repository(
            "app",
            image("idx", "v1", media_type=OCI_INDEX, status="ARCHIVED"),
            image("amd64", status="ARCHIVED"),
            image("arm64"),
            image("sbom", subject="idx", status="ARCHIVED"),
            manifests={"idx": index_manifest("amd64", "arm64")},
        )
    )
    result = plan(cfg, snap, in_use("prod", (f"{HOST}/app:v1", None)))
    assert action_of(result, "app", "idx") == "restore"
    assert action_of(result, "app", "amd64") == "restore"  # a pull of the index on amd64 fetches it
    assert decision_of(result, "app", "amd64").main_reason.kind == "index-child"
    assert action_of(result, "app", "arm64") == "keep"  # active already
    assert action_of(result, "app", "sbom") == "keep"  # a referrer is not pulled with its subject: kept, archived
    assert removed(result) == set()


def test_an_archived_child_of_an_active_in_use_index_is_restored() -> None:
    snap = snapshot(
        repository(
            "app",
            image("idx", "v1", media_type=OCI_INDEX),
            image("amd64", status="ARCHIVED"),
            manifests={"idx": index_manifest("amd64")},
        )
    )
    result = plan(config([DELETE_OLD]), snap, in_use("prod", (f"{HOST}/app@{digest('idx')}", "idx")))
    assert action_of(result, "app", "amd64") == "restore"
    assert action_of(result, "app", "idx") == "keep"


def test_with_restore_in_use_false_the_archived_child_of_an_in_use_index_is_named_as_such() -> None:
    snap = snapshot(
        repository(
            "app",
            image("idx", "v1", media_type=OCI_INDEX),
            image("amd64", status="ARCHIVED"),
            manifests={"idx": index_manifest("amd64")},
        )
    )
    uses = in_use("prod", (f"{HOST}/app@{digest('idx')}", "idx"))
    result = plan(config([DELETE_OLD], restore_in_use=False), snap, uses)
    assert action_of(result, "app", "amd64") == "keep"
    [warning] = [w for w in result.warnings if short_digest(digest("amd64")) in w]
    assert "is archived, the child of an in-use index (" in warning
