"""benchmarks/cost_bench.py prints apart, of a run's S3 requests, those for what the product promises rather than for
the orchestration (docs/cost.md): the PUT-class requests each changed repository makes (its own report, its snapshot,
its holds listed again before it acts, what it deletes told to the replicas' evaluations) and each repository's kept
snapshot read. The requests are told apart here, by the layout that names their keys."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest

from ecr_retention import layout
from support.benchmark_scripts import benchmark_script

RUN = "20261205T031500Z-schedule-0a1b2c3d"


@pytest.fixture
def cost_bench() -> Iterator[ModuleType]:
    with benchmark_script("cost_bench") as module:
        yield module


@pytest.fixture
def change_write(cost_bench: ModuleType) -> Callable[[str, dict[str, Any]], bool]:
    purpose_of = cost_bench.purpose_of_this_tree()

    def is_change_write(operation: str, parameters: dict[str, Any]) -> bool:
        return bool(purpose_of(operation, parameters) == cost_bench.CHANGE_WRITES)

    return is_change_write


@pytest.mark.parametrize("key", ["us-east-1", None])
def test_a_repositorys_own_report_snapshot_and_deletions_told_to_replicas_are_its_changes_writes(
    change_write: Callable[[str, dict[str, Any]], bool], key: str | None
) -> None:
    for written in (
        layout.repository_report_key(RUN, "team/app", key),
        layout.repository_snapshot_key("team/app", key),
        layout.replicated_deletions_key(RUN, "team/app", key),
    ):
        assert change_write("PutObject", {"Bucket": "inventory", "Key": written}), written


def test_a_batchs_and_the_runs_own_objects_are_the_orchestrations(
    change_write: Callable[[str, dict[str, Any]], bool],
) -> None:
    for written in (
        layout.batch_reports_key(RUN, "team/app", part=2),
        layout.batch_begun_key(RUN, "team/app"),
        layout.targets_key(RUN),
        layout.batches_key(RUN),
        layout.replication_key(RUN),
        layout.run_report_key(RUN, datetime(2026, 12, 5, 3, 15, tzinfo=UTC)),
        layout.IN_USE_MEMORY_KEY,
    ):
        assert not change_write("PutObject", {"Bucket": "inventory", "Key": written}), written


def test_only_a_listing_of_holds_read_again_before_acting_is_a_changes_write(
    cost_bench: ModuleType, change_write: Callable[[str, dict[str, Any]], bool]
) -> None:
    listing = {"Bucket": "inventory", "Prefix": f"{layout.HOLDS_PREFIX}eu-west-1/team/app/"}
    assert not change_write("ListObjectsV2", listing)  # a batch's reading of the inventory
    cost_bench._where.reading_holds_again = True
    try:
        assert change_write("ListObjectsV2", listing)
    finally:
        cost_bench._where.reading_holds_again = False


def test_a_kept_snapshot_read_is_told_apart_and_no_other_read_is(cost_bench: ModuleType) -> None:
    purpose_of = cost_bench.purpose_of_this_tree()
    snapshot = {"Bucket": "inventory", "Key": layout.repository_snapshot_key("team/app")}
    assert purpose_of("GetObject", snapshot) == cost_bench.SNAPSHOT_READS
    for read in (layout.repository_report_key(RUN, "team/app"), layout.IN_USE_MEMORY_KEY, layout.replication_key(RUN)):
        assert purpose_of("GetObject", {"Bucket": "inventory", "Key": read}) is None, read
