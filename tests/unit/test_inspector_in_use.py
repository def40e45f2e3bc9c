"""Amazon Inspector's in-use reading through the planner and the in-use memory (SPEC "Who is a cluster", docs/safety.md
"Amazon Inspector only adds protection"): an entry with inUseCount > 0, or lastInUseAt within safety.in_use_grace
(exactly the grace ago still is, one second more is not), protects its image; an image only Inspector names is
drift; the manifest's new fields are strict and optional, so every manifest written before them reads as it did."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.in_use.memory import remember
from ecr_retention.domain.in_use.references import pulled_references
from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory, manifest_json, parse_manifest
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.tables import describe_reason
from support.builders import (
    ACCOUNT,
    HOST,
    NOW,
    REGION,
    action_of,
    config,
    decision_of,
    digest,
    image,
    in_use,
    repository,
    snapshot,
)

NAME = f"inspector-{ACCOUNT}-{REGION}"
GRACE = timedelta(days=7)


def inspector_entry(seed: str, *, count: int | None = None, last_ago: timedelta | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "image": f"{HOST}/app@{digest(seed)}",
        "digest": digest(seed),
        "namespace": "inspector",
        "workload": "Repository/app",
        "container": "image",
        "source": "inspector",
    }
    if count is not None:
        entry["inUseCount"] = count
    if last_ago is not None:
        entry["lastInUseAt"] = (NOW - last_ago).isoformat()
    return entry


def inspector_manifest(*entries: dict[str, Any], gaps: list[str] | None = None, complete: bool = True) -> InUseManifest:
    document: dict[str, Any] = {
        "schemaVersion": 1,
        "cluster": NAME,
        "generatedAt": (NOW - timedelta(minutes=10)).isoformat(),
        "complete": complete,
        "images": list(entries),
    }
    if gaps is not None:
        document["coverageGaps"] = gaps
    return InUseManifest.model_validate(document)


def plan_with(*manifests: InUseManifest, **safety: Any) -> Plan:
    snap = snapshot(
        repository("app", image("a", "v1", age=timedelta(days=200)), image("b", "v2", age=timedelta(days=200)))
    )
    rules = config([{"delete": {"tags": ["*"], "older_than": "30d"}}], in_use_grace="7d", **safety)
    return plan_registry(rules, snap, Inventory(manifests=manifests), NOW)


def test_an_image_inspector_saw_in_use_exactly_the_grace_ago_is_kept_and_one_second_more_is_not() -> None:
    at_the_boundary = inspector_manifest(inspector_entry("a", count=0, last_ago=GRACE))
    past_it = inspector_manifest(inspector_entry("a", count=0, last_ago=GRACE + timedelta(seconds=1)))

    kept, deleted = plan_with(at_the_boundary), plan_with(past_it)

    assert action_of(kept, "app", "a") == "keep"
    assert describe_reason(decision_of(kept, "app", "a").main_reason) == (
        "in-use: Inspector: last 2026-11-23 06:00 UTC, within safety.in_use_grace"
    )
    assert action_of(deleted, "app", "a") == "delete"
    assert not [warning for warning in deleted.warnings if warning.startswith("drift: ")]


def test_a_running_count_protects_whatever_the_last_in_use_time_says() -> None:
    result = plan_with(inspector_manifest(inspector_entry("a", count=3, last_ago=timedelta(days=90))))

    assert action_of(result, "app", "a") == "keep"
    assert describe_reason(decision_of(result, "app", "a").main_reason) == (
        "in-use: Inspector: in use by 3 (last 2026-09-01 06:00 UTC)"
    )


def test_an_entry_inspector_never_saw_in_use_protects_nothing() -> None:
    result = plan_with(inspector_manifest(inspector_entry("a", count=0), inspector_entry("b")))

    assert action_of(result, "app", "a") == action_of(result, "app", "b") == "delete"


def test_an_image_a_cluster_also_runs_is_not_drift_and_names_both_readings() -> None:
    prod = in_use("prod", (f"{HOST}/app:v1", None))
    result = plan_with(prod, inspector_manifest(inspector_entry("a", count=1, last_ago=timedelta(hours=1))))

    assert action_of(result, "app", "a") == "keep"
    detail = decision_of(result, "app", "a").main_reason.detail
    assert "Inspector: in use by 1" in detail
    assert "prod: default/Deployment/web (pod)" in detail
    assert not [warning for warning in result.warnings if warning.startswith("drift: ")]


def test_an_image_only_inspector_names_is_listed_under_drift() -> None:
    result = plan_with(inspector_manifest(inspector_entry("a", count=2, last_ago=timedelta(hours=1))))

    [drift] = [warning for warning in result.warnings if warning.startswith("drift: ")]
    assert drift == (
        f"drift: app@{digest('a')}: Inspector: in use by 2 (last 2026-11-30 05:00 UTC), but no cluster's in-use "
        "manifest names it; it runs where nothing connected to ecr-retention reads (a cluster nobody connected?); "
        "kept (docs/aws-inventory.md)"
    )


def test_coverage_gaps_are_named_and_an_unlisted_inspector_reading_blocks_nothing() -> None:
    gap = f"Inspector in {ACCOUNT} {REGION}: repository batch is not covered (INACTIVE, SCAN_FREQUENCY_MANUAL)"
    result = plan_with(inspector_manifest(gaps=[gap]))

    assert result.blocked == ()
    assert f"Inspector coverage gap: {gap}" in result.warnings
    assert not [warning for warning in result.warnings if "neither safety.clusters" in warning]


def test_an_incomplete_expected_inspector_reading_blocks_like_any_expected_cluster() -> None:
    result = plan_with(inspector_manifest(complete=False), clusters=[NAME])

    assert f"cluster {NAME}: in-use manifest is incomplete (complete: false)" in result.blocked
    assert f"Inspector coverage gap: cluster {NAME}: Inspector's reading is incomplete" in result.warnings


def test_the_memory_counts_an_inspector_entry_from_when_inspector_last_saw_it_in_use() -> None:
    manifest = inspector_manifest(
        inspector_entry("a", count=0, last_ago=timedelta(days=6)),
        inspector_entry("b", count=0, last_ago=timedelta(days=8)),
        inspector_entry("c", count=1, last_ago=timedelta(days=30)),
    )

    memory = remember(
        None,
        Inventory(manifests=(manifest,)),
        NOW,
        GRACE,
        resolved={},
        registries=[RegistryCoordinates(ACCOUNT, REGION)],
    )

    seen = {image.digest: NOW - image.last_seen_at for image in memory.images}
    assert seen == {digest("a"): timedelta(days=6), digest("c"): timedelta(minutes=10)}
    assert {image.in_use_count for image in memory.images} == {0, 1}


def test_a_manifest_written_before_inspector_reads_and_serializes_byte_for_byte_as_before() -> None:
    manifest = in_use("prod", (f"{HOST}/app:v1", "a"))
    body = manifest_json(manifest)

    assert b"inUseCount" not in body
    assert b"lastInUseAt" not in body
    assert b"coverageGaps" not in body
    assert manifest_json(parse_manifest("in-use/prod.json", body)) == body


@pytest.mark.parametrize(
    ("field", "value"),
    [("inUseCount", "2"), ("inUseCount", -1), ("inUseCount", True), ("inUseCount", 1.0), ("lastInUseAt", "yesterday")],
)
def test_inspector_fields_are_read_strictly(field: str, value: object) -> None:
    entry = {**inspector_entry("a", count=1), field: value}
    body = json.dumps(
        {"schemaVersion": 1, "cluster": NAME, "generatedAt": NOW.isoformat(), "complete": True, "images": [entry]}
    ).encode()

    with pytest.raises(InputError, match=field):
        parse_manifest(f"in-use/{NAME}.json", body)


def test_the_sentinel_counts_as_running_what_inspector_sees_in_use_by_the_same_rule() -> None:
    manifest = inspector_manifest(
        inspector_entry("a", count=2, last_ago=timedelta(hours=1)),
        inspector_entry("b", count=0, last_ago=GRACE + timedelta(seconds=1)),
    )

    references = pulled_references(
        Inventory(manifests=(manifest,)),
        now=NOW,
        safety=config([{"delete": {"untagged": True}}], in_use_grace="7d").safety,
        registry=RegistryCoordinates(ACCOUNT, REGION),
    )

    assert [(reference.digest, [str(w) for w in reference.workloads]) for reference in references] == [
        (digest("a"), ["Inspector: in use by 2 (last 2026-11-30 05:00 UTC)"])
    ]
