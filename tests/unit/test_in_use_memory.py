"""The in-use memory (SPEC "The in-use memory", docs/safety.md invariant 19): a reference any manifest named keeps
protecting its image for safety.in_use_grace after the last reading that named it, whatever becomes of the manifest
(deleted, emptied, incomplete, stale, unreadable); a cluster that drops most of its references is a warning; an
unreadable memory blocks; `in_use_grace: 0s` turns it off."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ecr_retention.domain.in_use.memory import reading_warnings, remember, still_protecting
from ecr_retention.domain.inventory.manifest import InUseManifest, InUseMemory, Inventory, memory_json, parse_memory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.tables import describe_reason
from support.builders import (
    HOST,
    NOW,
    action_of,
    config,
    decision_of,
    digest,
    image,
    in_use,
    index_manifest,
    repository,
    snapshot,
)

DELETE_OLD = [{"delete": {"tags": ["*"], "older_than": "30d"}}]
GRACE = timedelta(days=7)


def memory_of(*manifests: InUseManifest, when: timedelta = timedelta(0), resolved: Any = None) -> InUseMemory:
    """The memory a run wrote `when` ago, after reading these manifests."""
    return remember(
        None,
        Inventory(manifests=manifests),
        NOW - when,
        GRACE,
        resolved=resolved or {},
        registries=[RegistryCoordinates("123456789012", "eu-west-1")],
    )


def plan_with(
    memory: InUseMemory | None, *manifests: InUseManifest, now_after: timedelta = timedelta(0), **safety: Any
) -> Plan:
    snap = snapshot(
        repository("app", image("a", "v1", age=timedelta(days=200)), image("b", "v2", age=timedelta(days=150)))
    )
    rules = config(DELETE_OLD, **safety)
    return plan_registry(rules, snap, Inventory(manifests=manifests, memory=memory), NOW + now_after)


def test_a_deleted_manifest_keeps_protecting_what_it_named() -> None:
    # Given dev ran app:v1 (by digest) in the last reading, when dev.json is deleted, then v1 is still kept.
    memory = memory_of(in_use("dev", (f"{HOST}/app:v1", "a"), age=timedelta(days=2)))

    result = plan_with(memory)

    assert action_of(result, "app", "a") == "keep"
    assert action_of(result, "app", "b") == "delete"
    reason = decision_of(result, "app", "a").main_reason
    assert (reason.kind, reason.rule) == ("in-use", "remembered")
    assert describe_reason(reason) == (
        "in-use [remembered]: dev: default/Deployment/web (pod), last seen 2d ago, protected until 2026-12-05T06:00:00Z"
    )


def test_an_emptied_complete_fresh_manifest_keeps_its_images_protected_and_warns() -> None:
    before = in_use("prod", (f"{HOST}/app:v1", "a"), (f"{HOST}/app:v2", "b"), age=timedelta(hours=2))
    emptied = in_use("prod", age=timedelta(minutes=1))

    result = plan_with(memory_of(before, when=timedelta(hours=1)), emptied, clusters=["prod"])

    assert action_of(result, "app", "a") == action_of(result, "app", "b") == "keep"
    assert result.blocked == ()
    assert (
        "cluster prod: now reports 0 images, it reported 2 images at 2026-11-30T04:00:00Z; the references it dropped "
        "stay protected through the in-use memory until 2026-12-07T04:00:00Z (safety.in_use_grace 1w)"
    ) in result.warnings


def test_protection_lasts_exactly_the_grace_after_the_last_reading() -> None:
    memory = memory_of(in_use("dev", (f"{HOST}/app:v1", "a"), age=timedelta(0)))

    assert action_of(plan_with(memory, now_after=GRACE), "app", "a") == "keep"
    assert action_of(plan_with(memory, now_after=GRACE + timedelta(seconds=1)), "app", "a") == "delete"


def test_a_grace_of_zero_turns_the_memory_off() -> None:
    memory = memory_of(in_use("dev", (f"{HOST}/app:v1", "a"), age=timedelta(hours=1)))

    result = plan_with(memory, in_use_grace="0s")

    assert action_of(result, "app", "a") == "delete"
    assert result.warnings == ()


def test_a_tag_reference_is_remembered_with_the_digest_its_tag_pointed_to() -> None:
    # Given a template ran app:v1 (no digest) when v1 was image a, when v1 moves to c and the manifest is gone,
    # then a stays protected (what ran), and so does what v1 names now (as the reference would protect it).
    template = in_use("dev", (f"{HOST}/app:v1", None))
    memory = memory_of(template, resolved={("eu-west-1", "app", "v1"): digest("a")})
    moved = snapshot(
        repository(
            "app",
            image("a", age=timedelta(days=200)),
            image("c", "v1", age=timedelta(days=100)),
            image("b", "v2", age=timedelta(days=150)),
        )
    )

    result = plan_registry(config(DELETE_OLD), moved, Inventory(memory=memory), NOW + timedelta(days=1))

    assert memory.images[0].digest == digest("a")
    assert action_of(result, "app", "a") == "keep"
    assert action_of(result, "app", "c") == "keep"
    assert action_of(result, "app", "b") == "delete"


def test_a_tag_reference_seen_both_resolved_and_not_is_remembered_both_ways() -> None:
    # A push run evaluates some repositories only: the same template reference is resolved in one run and not in
    # the next; both are kept, in a stable order.
    template = in_use("dev", (f"{HOST}/app:v1", None))
    resolved = memory_of(template, when=timedelta(hours=1), resolved={("eu-west-1", "app", "v1"): digest("a")})

    memory = remember(
        resolved, Inventory(manifests=(template,)), NOW, GRACE, resolved={}, registries=[RegistryCoordinates()]
    )

    assert [image.digest for image in memory.images] == [None, digest("a")]


def test_a_remembered_index_keeps_its_children() -> None:
    memory = memory_of(in_use("dev", (f"{HOST}/app@{digest('index')}", None)))
    snap = snapshot(
        repository(
            "app",
            image("index", "v1", media_type="application/vnd.oci.image.index.v1+json"),
            image("child"),
            manifests={"index": index_manifest("child")},
        )
    )

    result = plan_registry(config([{"delete": {"older_than": "30d"}}]), snap, Inventory(memory=memory), NOW)

    assert action_of(result, "app", "index") == "keep"
    assert action_of(result, "app", "child") == "keep"
    assert "index-child" in [r.kind for r in decision_of(result, "app", "child").reasons]


def test_a_workload_a_current_manifest_names_is_not_repeated_from_the_memory() -> None:
    manifest = in_use("dev", (f"{HOST}/app:v1", "a"))
    result = plan_with(memory_of(manifest, when=timedelta(hours=1)), manifest)

    reasons = [r for r in decision_of(result, "app", "a").reasons if r.kind == "in-use"]
    assert [(r.rule, r.detail) for r in reasons] == [(None, "dev: default/Deployment/web (pod)")]


def test_a_reading_dated_in_the_future_is_remembered_as_of_now() -> None:
    memory = memory_of(in_use("dev", (f"{HOST}/app:v1", "a"), age=-timedelta(days=30)))

    assert memory.images[0].last_seen_at == NOW
    assert still_protecting(memory, NOW + GRACE + timedelta(seconds=1), GRACE) == ()


def test_a_reading_a_few_minutes_ahead_is_clock_skew_clamped_without_a_warning() -> None:
    skewed = in_use("dev", (f"{HOST}/app:v1", "a"), age=-timedelta(minutes=4))
    memory = memory_of(skewed)

    assert memory.clusters["dev"].last.generated_at == NOW
    assert reading_warnings(memory, Inventory(manifests=(skewed,)), NOW, GRACE) == ()
    ahead = in_use("dev", (f"{HOST}/app:v1", "a"), age=-timedelta(hours=2))
    (warning,) = reading_warnings(memory, Inventory(manifests=(ahead,)), NOW, GRACE)
    assert warning.startswith("cluster dev: its in-use manifest says it was generated at 2026-11-30T08:00:00Z")


def test_a_memory_dated_at_the_end_of_the_calendar_is_a_warning_not_a_crash() -> None:
    # A memory written by a wrong clock (or by hand) at 9999-12-31: its grace would fall off the calendar.
    memory = memory_of(in_use("dev", (f"{HOST}/app:v1", "a")))
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    dated = memory.model_copy(
        update={"images": tuple(i.model_copy(update={"last_seen_at": end}) for i in memory.images)}
    )

    future, missing = reading_warnings(dated, Inventory(manifests=()), NOW, GRACE)
    assert future.endswith("they protect until 2026-12-07T06:00:00Z, not 9999-12-31T23:59:59Z")
    assert missing.startswith("cluster dev: no in-use manifest now")
    assert action_of(plan_with(dated), "app", "a") == "keep"


def test_remembering_refreshes_what_is_named_again_and_forgets_what_is_past_the_grace() -> None:
    old = memory_of(in_use("dev", (f"{HOST}/app:v1", "a"), (f"{HOST}/app:v2", "b")), when=timedelta(days=8))
    again = in_use("dev", (f"{HOST}/app:v1", "a"))

    memory = remember(old, Inventory(manifests=(again,)), NOW, GRACE, resolved={}, registries=[RegistryCoordinates()])

    assert [(i.digest, i.last_seen_at) for i in memory.images] == [(digest("a"), again.generated_at)]


def test_a_cluster_that_drops_most_of_its_references_is_a_warning_until_a_new_reading() -> None:
    ten = in_use("dev", *((f"{HOST}/app:v{n}", f"d{n}") for n in range(10)), age=timedelta(hours=3))
    four = in_use("dev", *((f"{HOST}/app:v{n}", f"d{n}") for n in range(4)), age=timedelta(hours=1))
    five = in_use("dev", *((f"{HOST}/app:v{n}", f"d{n}") for n in range(5)), age=timedelta(hours=1))
    memory = memory_of(ten, when=timedelta(hours=2))

    assert reading_warnings(memory, Inventory(manifests=(five,)), NOW, GRACE) == ()
    (warning,) = reading_warnings(memory, Inventory(manifests=(four,)), NOW, GRACE)
    assert warning.startswith("cluster dev: now reports 4 images, it reported 10 images at 2026-11-30T03:00:00Z")
    # The run that saw the drop remembers it; the next run reads the same manifest and still compares with ten.
    after = remember(memory, Inventory(manifests=(four,)), NOW, GRACE, resolved={}, registries=[RegistryCoordinates()])
    assert reading_warnings(after, Inventory(manifests=(four,)), NOW, GRACE) == (warning,)


def test_a_remembered_cluster_without_a_manifest_now_is_a_warning() -> None:
    memory = memory_of(in_use("dev", (f"{HOST}/app:v1", "a"), age=timedelta(hours=2)), when=timedelta(hours=1))

    (warning,) = reading_warnings(memory, Inventory(), NOW, GRACE)

    assert warning.startswith("cluster dev: no in-use manifest now, it reported 1 image at 2026-11-30T04:00:00Z")


def test_an_unreadable_memory_blocks_the_run() -> None:
    result = plan_registry(
        config(DELETE_OLD),
        snapshot(repository("app", image("a", "v1"))),
        Inventory(memory_problem="s3://inventory/state/in-use-memory.json: unreadable in-use memory: invalid JSON"),
        NOW,
    )

    assert action_of(result, "app", "a") == "keep"
    assert result.blocked[0].startswith("s3://inventory/state/in-use-memory.json: unreadable in-use memory")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{", "invalid JSON"),
        (
            b'{"schemaVersion": 1, "updatedAt": "2026-11-30T06:00:00Z", "images": [{"image": "x"}]}',
            r"images\[0\]\.namespace",
        ),
        (b'{"schemaVersion": 2, "updatedAt": "2026-11-30T06:00:00Z"}', "schemaVersion"),
        (b'{"schemaVersion": 1, "updatedAt": "2026-11-30T06:00:00Z", "extra": 1}', "extra"),
    ],
)
def test_a_malformed_memory_is_refused(body: bytes, problem: str) -> None:
    from ecr_retention.domain.errors import InputError

    with pytest.raises(InputError, match=problem):
        parse_memory("memory.json", body)


def test_the_memory_reads_back_what_it_wrote() -> None:
    memory = memory_of(in_use("dev", (f"{HOST}/app:v1", "a"), (f"{HOST}/app:v2", None)))

    assert parse_memory("memory.json", memory_json(memory)) == memory
