"""A hold in a replica the source's deletions reach (delete replication) keeps the source's image: deleting it in
the source would delete the held replica (SPEC "Replicated deletions", as an in-use reference into such a replica
protects the source's image; docs/holds.md, docs/safety.md invariant 37). A replica without delete replication keeps
its copy whatever the source deletes, so its hold protects nothing in the source."""

from __future__ import annotations

from datetime import timedelta

from ecr_retention.domain.holds.model import read_holds
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from support.builders import (
    ACCOUNT,
    NOW,
    action_of,
    config,
    decision_of,
    digest,
    image,
    index_manifest,
    kinds_of,
    replication_rule,
    repository,
    snapshot,
)
from support.holds import a_hold, stored

DELETE_OLD = [{"delete": {"tags": ["*"], "older_than": "30d"}}, {"delete": {"untagged": True, "older_than": "30d"}}]
OLD = timedelta(days=200)
REPLICA = "us-east-1"


def plan_replicated(documents: list[tuple[str, str, bytes]], *images: dict, delete: bool, **more: dict) -> Plan:
    """The source (eu-west-1) replicating `app` to us-east-1, with or without its deletions."""
    snap = snapshot(
        repository("app", *images, **more),
        replication={"rules": [replication_rule((REPLICA, ACCOUNT), delete=delete)]},
    )
    return plan_registry(config(DELETE_OLD), snap, Inventory(holds=read_holds(documents)), NOW)


def test_a_hold_in_a_replica_the_deletions_reach_keeps_the_sources_image() -> None:
    held = a_hold("app", "a", region=REPLICA)

    result = plan_replicated(stored(held), image("a", "v1", age=OLD), image("b", "v2", age=OLD), delete=True)

    assert action_of(result, "app", "a") == "keep"
    assert action_of(result, "app", "b") == "delete"
    reason = decision_of(result, "app", "a").main_reason
    assert reason.kind == "hold"
    assert reason.detail == (
        "held in us-east-1 (a deletion here reaches it) by alice@example.com until 2026-12-30T06:00:00Z (in 30d): "
        "audit INC-42"
    )


def test_a_hold_in_a_replica_without_delete_replication_does_not_keep_the_sources_image() -> None:
    held = a_hold("app", "a", region=REPLICA)

    result = plan_replicated(stored(held), image("a", "v1", age=OLD), delete=False)

    assert action_of(result, "app", "a") == "delete"


def test_a_hold_in_a_region_the_repository_does_not_replicate_to_keeps_nothing_in_the_source() -> None:
    held = a_hold("app", "a", region="ap-south-1")

    result = plan_replicated(stored(held), image("a", "v1", age=OLD), delete=True)

    assert action_of(result, "app", "a") == "delete"


def test_a_hold_in_a_reached_replica_keeps_the_held_indexs_children_in_the_source() -> None:
    result = plan_replicated(
        stored(a_hold("app", "index", region=REPLICA)),
        image("index", "v1", age=OLD, media_type="application/vnd.oci.image.index.v1+json"),
        image("child", age=OLD),
        delete=True,
        manifests={"index": index_manifest("child")},
    )

    assert action_of(result, "app", "index") == "keep"
    assert action_of(result, "app", "child") == "keep"
    assert kinds_of(result, "app", "child")[0] == "index-child"


def test_a_malformed_hold_in_a_reached_replica_keeps_the_sources_image() -> None:
    key = f"holds/{REPLICA}/app/{digest('a')}.json"

    result = plan_replicated([(f"s3://bucket/{key}", key, b"{")], image("a", "v1", age=OLD), delete=True)

    assert action_of(result, "app", "a") == "keep"
    assert decision_of(result, "app", "a").main_reason.detail.startswith(
        "held in us-east-1 (a deletion here reaches it) by a malformed hold object"
    )


def test_an_ended_hold_in_a_reached_replica_protects_nothing_and_is_told_by_the_replicas_plan_only() -> None:
    ended = a_hold("app", "a", region=REPLICA, until=-timedelta(hours=1))

    result = plan_replicated(stored(ended), image("a", "v1", age=OLD), delete=True)

    assert action_of(result, "app", "a") == "delete"
    assert not [warning for warning in result.warnings if "ended at" in warning]
