"""Holds in the planner (SPEC "Holds", docs/holds.md, docs/safety.md invariant "holds"): a hold in force protects its
image like a running one (reason kind `hold`, with owner, reason and until; its index children and referrers kept);
an ended hold protects nothing and is listed once; a malformed hold object keeps what it names; an unreadable one
blocks the run."""

from __future__ import annotations

from datetime import timedelta

from ecr_retention.domain.holds.model import read_holds
from ecr_retention.domain.holds.protection import check_holds, ending_soon
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from support.builders import (
    ACCOUNT,
    NOW,
    REGION,
    action_of,
    config,
    decision_of,
    digest,
    image,
    index_manifest,
    kinds_of,
    repository,
    snapshot,
)
from support.holds import a_hold, stored

DELETE_OLD = [{"delete": {"tags": ["*"], "older_than": "30d"}}, {"delete": {"untagged": True, "older_than": "30d"}}]
OLD = timedelta(days=200)


def plan_with(documents: list[tuple[str, str, bytes]], *images: dict, manifests: dict | None = None, **safety) -> Plan:
    snap = snapshot(repository("app", *images, manifests=manifests))
    inventory = Inventory(holds=read_holds(documents))
    return plan_registry(config(DELETE_OLD, **safety), snap, inventory, NOW)


def test_a_hold_keeps_an_image_the_rules_delete() -> None:
    result = plan_with(stored(a_hold("app", "a")), image("a", "v1", age=OLD), image("b", "v2", age=OLD))

    assert action_of(result, "app", "a") == "keep"
    assert action_of(result, "app", "b") == "delete"
    reason = decision_of(result, "app", "a").main_reason
    assert reason.kind == "hold"
    assert reason.detail == "held by alice@example.com until 2026-12-30T06:00:00Z (in 30d): audit INC-42"
    assert not result.blocked


def test_an_ended_hold_protects_nothing_and_is_listed_once() -> None:
    ended = a_hold("app", "a", until=-timedelta(hours=1))

    result = plan_with(stored(ended), image("a", "v1", age=OLD), image("b", "v2", age=OLD))

    assert action_of(result, "app", "a") == "delete"
    listed = [warning for warning in result.warnings if "ended at" in warning]
    assert listed == [
        "hold on app@" + digest("a") + " in eu-west-1 by alice@example.com ended at 2026-11-30T05:00:00Z "
        "(audit INC-42): it protects nothing any more; `ecr-retention hold remove app@" + digest("a") + " --region "
        "eu-west-1` removes it"
    ]


def test_a_held_index_keeps_its_children_and_a_held_subject_its_referrers() -> None:
    result = plan_with(
        stored(a_hold("app", "index"), a_hold("app", "subject")),
        image("index", "v1", age=OLD, media_type="application/vnd.oci.image.index.v1+json"),
        image("child", age=OLD),
        image("subject", "v2", age=OLD),
        image("signature", age=OLD, subject="subject"),
        image("other", "v3", age=OLD),
        manifests={"index": index_manifest("child")},
    )

    assert action_of(result, "app", "index") == "keep"
    assert kinds_of(result, "app", "child")[0] == "index-child"
    assert action_of(result, "app", "child") == "keep"
    assert action_of(result, "app", "signature") == "keep"
    assert action_of(result, "app", "other") == "delete"


def test_a_held_archived_image_is_kept_not_deleted_nor_restored_under_quarantine() -> None:
    result = plan_with(
        stored(a_hold("app", "a")),
        image("a", "v1", age=OLD, archived_ago=timedelta(days=100)),
        quarantine="30d",
    )

    assert action_of(result, "app", "a") == "keep"
    assert kinds_of(result, "app", "a")[0] == "hold"


def test_a_hold_placed_by_a_tag_that_moved_stays_on_its_digest_and_says_so() -> None:
    result = plan_with(stored(a_hold("app", "a", tag="release")), image("a", age=OLD), image("b", "release", age=OLD))

    assert action_of(result, "app", "a") == "keep"
    assert action_of(result, "app", "b") == "delete"
    assert "placed by tag release, which has moved since" in decision_of(result, "app", "a").main_reason.detail


def test_a_hold_longer_than_max_hold_protects_only_until_the_bound() -> None:
    long = a_hold("app", "a", placed=timedelta(days=20), until=timedelta(days=5))

    within = plan_with(stored(long), image("a", "v1", age=OLD), max_hold="30d")
    past = plan_with(stored(long), image("a", "v1", age=OLD), max_hold="10d")

    assert action_of(within, "app", "a") == "keep"
    assert action_of(past, "app", "a") == "delete"
    assert any("ended at" in warning for warning in past.warnings)


def test_a_hold_of_another_region_or_repository_protects_nothing_here() -> None:
    elsewhere = [a_hold("app", "a", region="us-east-1"), a_hold("web", "a")]

    result = plan_with(stored(*elsewhere), image("a", "v1", age=OLD))

    assert action_of(result, "app", "a") == "delete"


def test_a_malformed_hold_object_keeps_the_image_its_key_names_and_warns() -> None:
    key = f"holds/{REGION}/app/{digest('a')}.json"

    result = plan_with([(f"s3://bucket/{key}", key, b'{"owner": "alice"}')], image("a", "v1", age=OLD))

    assert action_of(result, "app", "a") == "keep"
    assert kinds_of(result, "app", "a")[0] == "hold"
    assert not result.blocked
    assert any(warning.startswith(f"s3://bucket/{key}: malformed hold: ") for warning in result.warnings)


def test_a_hold_object_that_names_no_image_blocks_the_run() -> None:
    key = "holds/notes.json"

    result = plan_with([(f"s3://bucket/{key}", key, b"not json")], image("a", "v1", age=OLD))

    assert action_of(result, "app", "a") == "keep"
    assert result.blocked[0].startswith("s3://bucket/holds/notes.json: unreadable hold: ")
    assert "nothing is deleted until it is fixed or removed" in result.blocked[0]


def test_no_holds_plans_exactly_as_before() -> None:
    images = (image("a", "v1", age=OLD), image("b", "v2", age=OLD))

    assert plan_with([], *images) == plan_registry(
        config(DELETE_OLD), snapshot(repository("app", *images)), Inventory(), NOW
    )


def test_holds_ending_within_seven_days_are_named_soonest_first() -> None:
    soon, later, far = (
        a_hold("app", "a", until=timedelta(days=6)),
        a_hold("app", "b", until=timedelta(days=2)),
        a_hold("app", "c", until=timedelta(days=8)),
    )

    ending = ending_soon(read_holds(stored(soon, later, far)), NOW, timedelta(days=90))

    assert [hold.digest for hold, _ in ending] == [digest("b"), digest("a")]


def test_a_hold_of_another_account_protects_nothing_in_this_registry() -> None:
    check = check_holds(
        read_holds(stored(a_hold("app", "a"))), RegistryCoordinates("210987654321", REGION), NOW, timedelta(days=90)
    )

    assert check.live == {}
    assert check_holds(
        read_holds(stored(a_hold("app", "a"))), RegistryCoordinates(ACCOUNT, REGION), NOW, timedelta(days=90)
    ).of("app", digest("a"))
