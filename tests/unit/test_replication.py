"""Replicated deletions (SPEC "Replicated deletions"): where a deletion reaches, and what runs there protects."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pydantic import ValidationError

from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import build_run_context, plan_repository
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.registry.replication import RegistryReplication, Replica, ReplicationConfiguration
from ecr_retention.tables import render_plan_table
from support.builders import (
    ACCOUNT,
    HOST,
    NOW,
    action_of,
    config,
    decision_of,
    digest,
    image,
    in_use,
    kinds_of,
    plan,
    repository,
    snapshot,
)
from support.builders import (
    replication_rule as rule,
)

PROD_ACCOUNT = "210987654321"
US_HOST = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
PROD_HOST = f"{PROD_ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com"
DELETE_OLD = {"delete": {"tags": ["*"], "older_than": "30d"}}


def configuration(*rules: dict[str, object]) -> ReplicationConfiguration:
    return ReplicationConfiguration.model_validate({"rules": list(rules)})


def old_release_snapshot(*rules: dict[str, object]) -> Snapshot:
    return snapshot(
        repository("app", image("new", "1.1", age=timedelta(days=40)), image("old", "1.0")),
        replication={"rules": list(rules)} if rules else None,
    )


# --- which destinations a repository has --------------------------------------------------------------


def test_a_rule_without_filters_replicates_every_repository_and_its_deletions() -> None:
    config_ = configuration(rule(("us-east-1", ACCOUNT)))
    assert config_.deletion_reach("app") == (Replica(ACCOUNT, "us-east-1", True),)
    assert config_.deletion_reach("team-a/api") == (Replica(ACCOUNT, "us-east-1", True),)


def test_prefix_filters_match_names_that_start_with_them() -> None:
    config_ = configuration(rule(("us-east-1", ACCOUNT), prefixes=("team-", "app")))
    assert config_.deletion_reach("team-a/api")
    assert config_.deletion_reach("app")
    assert config_.deletion_reach("application")  # PREFIX_MATCH is a prefix, not a name
    assert config_.deletion_reach("web") == ()
    assert config_.deletion_reach("my-app") == ()


def test_a_rule_with_delete_replication_disabled_copies_but_reaches_no_deletion() -> None:
    config_ = configuration(rule(("us-east-1", ACCOUNT), delete=False), rule(("ap-south-1", ACCOUNT), delete=False))
    assert config_.replicas("app") == (
        Replica(ACCOUNT, "ap-south-1", False),
        Replica(ACCOUNT, "us-east-1", False),
    )
    assert config_.deletion_reach("app") == ()


def test_a_rule_that_says_nothing_of_deletions_is_read_as_replicating_them() -> None:
    """The safe side: an old AWS CLI drops deleteReplication; the live adapter always states it."""
    config_ = configuration(rule(("us-east-1", ACCOUNT), delete=False), rule(("ap-south-1", ACCOUNT), delete=None))
    assert config_.deletion_reach("app") == (Replica(ACCOUNT, "ap-south-1", True),)
    assert config_.rules_without_delete_replication == (1,)


def test_a_destination_of_several_rules_receives_deletions_when_any_of_them_replicates_deletions() -> None:
    config_ = configuration(
        rule(("us-east-1", ACCOUNT), delete=False),
        rule(("us-east-1", ACCOUNT), ("eu-west-1", PROD_ACCOUNT), prefixes=("app",), delete=True),
    )
    assert config_.deletion_reach("app") == (
        Replica(ACCOUNT, "us-east-1", True),
        Replica(PROD_ACCOUNT, "eu-west-1", True),
    )
    assert config_.deletion_reach("web") == ()
    assert config_.replicas("web") == (Replica(ACCOUNT, "us-east-1", False),)


@pytest.mark.parametrize(
    "bad_rule",
    [
        {"destinations": [{"region": "us-east-1", "registryId": ACCOUNT}], "deleteReplication": {"enabled": "true"}},
        {
            "destinations": [{"region": "us-east-1", "registryId": ACCOUNT}],
            "repositoryFilters": [{"filter": "app", "filterType": "REGEX"}],
        },
        {"destinations": [{"region": "us-east-1", "registryId": "12345"}]},
        {"repositoryFilters": []},
    ],
    ids=["enabled-as-string", "unknown-filter-type", "short-account", "no-destinations"],
)
def test_a_configuration_this_release_cannot_read_is_refused_not_taken_for_none(bad_rule: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        configuration(bad_rule)


# --- protection follows replication ------------------------------------------------------------------


def test_an_image_a_delete_replicating_destination_runs_is_kept_and_the_reason_names_the_destination() -> None:
    snap = old_release_snapshot(rule(("us-east-1", ACCOUNT)))
    result = plan(config([DELETE_OLD]), snap, in_use("us-prod", (f"{US_HOST}/app@{digest('old')}", "old")))
    assert action_of(result, "app", "old") == "keep"
    assert decision_of(result, "app", "old").reasons[0].detail == (
        "us-prod (us-east-1, replicated): default/Deployment/web (pod)"
    )
    assert action_of(result, "app", "new") == "delete"


def test_a_tag_a_destination_runs_protects_the_digest_the_source_tag_points_to() -> None:
    snap = old_release_snapshot(rule(("us-east-1", ACCOUNT)))
    result = plan(config([DELETE_OLD]), snap, in_use("us-prod", (f"{US_HOST}/app:1.0", None)))
    assert action_of(result, "app", "old") == "keep"
    assert kinds_of(result, "app", "old")[0] == "in-use"


def test_a_cross_account_destination_is_named_with_its_account() -> None:
    snap = old_release_snapshot(rule(("eu-west-1", PROD_ACCOUNT), prefixes=("app",)))
    result = plan(config([DELETE_OLD]), snap, in_use("prod", (f"{PROD_HOST}/app:1.0", None)))
    assert action_of(result, "app", "old") == "keep"
    assert (
        decision_of(result, "app", "old")
        .reasons[0]
        .detail.startswith(f"prod (eu-west-1, account {PROD_ACCOUNT}, replicated): ")
    )


def test_a_destination_reference_protects_only_the_repository_of_the_same_name() -> None:
    snap = snapshot(
        repository("app", image("old", "1.0")),
        repository("web", image("w", "1.0")),
        replication={"rules": [rule(("us-east-1", ACCOUNT))]},
    )
    result = plan(config([DELETE_OLD], repositories=("*",)), snap, in_use("us-prod", (f"{US_HOST}/web:1.0", None)))
    assert action_of(result, "web", "w") == "keep"
    assert action_of(result, "app", "old") == "delete"


def test_what_a_copy_without_delete_replication_runs_is_not_protected_here() -> None:
    """Our deletion does not reach that copy, so neither its tags nor its digests hold the source image."""
    snap = old_release_snapshot(rule(("us-east-1", ACCOUNT), delete=False))
    result = plan(
        config([DELETE_OLD]),
        snap,
        in_use("us-prod", (f"{US_HOST}/app@{digest('old')}", "old"), (f"{US_HOST}/app:1.0", None)),
    )
    assert action_of(result, "app", "old") == "delete"


def test_without_replication_a_destination_tag_reference_protects_nothing_here() -> None:
    result = plan(config([DELETE_OLD]), old_release_snapshot(), in_use("us-prod", (f"{US_HOST}/app:1.0", None)))
    assert action_of(result, "app", "old") == "delete"


def test_without_replication_a_digest_of_a_registry_nobody_named_still_protects() -> None:
    """Nothing says how that registry relates to this one: a digest it runs is kept, as before replication."""
    result = plan(
        config([DELETE_OLD]), old_release_snapshot(), in_use("us-prod", (f"{US_HOST}/app@{digest('old')}", "old"))
    )
    assert action_of(result, "app", "old") == "keep"


def test_a_cluster_that_references_only_delete_replicating_destinations_is_no_other_registry() -> None:
    snap = old_release_snapshot(rule(("us-east-1", ACCOUNT)))
    result = plan(config([DELETE_OLD], clusters=["us-prod"]), snap, in_use("us-prod", (f"{US_HOST}/app:1.0", None)))
    assert not any("references only ECR registr" in warning for warning in result.warnings)
    without = plan(
        config([DELETE_OLD], clusters=["us-prod"]),
        old_release_snapshot(),
        in_use("us-prod", (f"{US_HOST}/app:1.0", None)),
    )
    assert any("references only ECR registr" in warning for warning in without.warnings)


# --- the reach, said ---------------------------------------------------------------------------------


def test_the_plan_names_each_repositorys_delete_replicating_destinations_and_who_reports_there() -> None:
    snap = old_release_snapshot(rule(("us-east-1", ACCOUNT)), rule(("ap-south-1", ACCOUNT), delete=False))
    result = plan(config([DELETE_OLD], clusters=["us-prod"]), snap, in_use("us-prod", (f"{US_HOST}/app:1.0", None)))
    data = result.to_json_dict()["repositories"][0]
    assert data["deletionReplicatesTo"] == [
        {"registryId": ACCOUNT, "region": "us-east-1", "expectedClusters": ["us-prod"]}
    ]
    assert not any("no expected cluster reports" in warning for warning in result.warnings)
    assert f"deletions replicate to us-east-1 ({ACCOUNT}) (expected clusters there: us-prod)" in render_plan_table(
        result
    )


def test_deletions_that_replicate_where_no_expected_cluster_reports_get_a_loud_warning() -> None:
    snap = old_release_snapshot(rule(("us-east-1", ACCOUNT)))
    result = plan(config([DELETE_OLD], clusters=["prod"]), snap, in_use("prod", (f"{HOST}/app:1.1", None)))
    assert f"app: deletions replicate to us-east-1 ({ACCOUNT}), where no expected cluster reports" in "\n".join(
        result.warnings
    )
    assert "NO EXPECTED CLUSTER THERE" in render_plan_table(result)


def test_a_plan_that_only_archives_warns_of_no_replica() -> None:
    snap = old_release_snapshot(rule(("us-east-1", ACCOUNT)))
    archive_old = {"delete": {"tags": ["*"], "older_than": "30d", "archive": True}}
    result = plan(config([archive_old], clusters=["prod"]), snap, in_use("prod", (f"{HOST}/app:1.1", None)))
    assert action_of(result, "app", "old") == "archive"
    assert not any("where no expected cluster reports" in warning for warning in result.warnings)


def test_a_repository_that_removes_nothing_warns_of_no_replica() -> None:
    snap = snapshot(
        repository("app", image("young", "1.0", age=timedelta(hours=1))),
        replication={"rules": [rule(("us-east-1", ACCOUNT))]},
    )
    result = plan(config([DELETE_OLD]), snap)
    assert result.repositories[0].deletion_replicates_to
    assert not any("where no expected cluster reports" in warning for warning in result.warnings)


# --- fail closed ---------------------------------------------------------------------------------------


def test_a_replication_configuration_that_could_not_be_read_blocks_every_deletion() -> None:
    snap = old_release_snapshot()
    run = build_run_context(
        config([DELETE_OLD]),
        Inventory(),
        NOW,
        registry=RegistryCoordinates(ACCOUNT, "eu-west-1"),
        tags_by_repository={},
        replication_problem=RegistryReplication.unreadable(
            "DescribeRegistry failed: AccessDeniedException: no"
        ).problem,
    )
    planned = plan_repository(snap.repositories[0], run)
    assert run.blocked == ("DescribeRegistry failed: AccessDeniedException: no",)
    assert {d.action for d in planned.plan.images} == {"keep"}
    assert all(d.reasons[0].kind == "blocked" for d in planned.plan.images)


def test_the_run_file_round_trips_what_the_targets_step_read() -> None:
    read = RegistryReplication(replication_configuration=configuration(rule(("us-east-1", ACCOUNT), prefixes=("a",))))
    again = RegistryReplication.model_validate(json.loads(read.model_dump_json(by_alias=True)))
    assert again == read
    assert again.replication_configuration.deletion_reach("app")
