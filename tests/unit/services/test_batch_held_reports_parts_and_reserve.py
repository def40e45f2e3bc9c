"""A batch's held reports go out in parts of a bounded size (run_files.HeldReports), all read back by load_reports;
a batch keeps a reserve of its invocation learned from its slowest repository (services.evaluate_step.BatchReserve)."""

from __future__ import annotations

from typing import Any

import pytest

from ecr_retention.layout import BATCH_REPORTS_PREFIX, repository_reports_prefix
from ecr_retention.run_files import MAX_BATCH_REPORTS_PART_BYTES, MAX_REPOSITORY_REPORT_BYTES, RunFiles
from ecr_retention.services import evaluate_step
from ecr_retention.services.act import DEADLINE_MARGIN_SECONDS
from ecr_retention.services.evaluate_step import BATCH_RESERVE_SECONDS, BatchOutOfTime, run_work_batch
from tests.unit.services.test_run_and_report import rules, seeded
from tests.unit.services.test_work_batches_run import adapters_of, batches_of


def test_held_reports_past_the_bound_go_out_in_parts_and_every_part_is_read_back() -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, [batch] = batches_of(adapters)

    run_work_batch(rules(True), adapters, batch, part_bytes=1)  # a dry run: every report is held

    prefix = f"{repository_reports_prefix(start.run_id)}{BATCH_REPORTS_PREFIX}"
    assert len(bucket.list_objects(prefix)) == len(batch.repositories) == 2
    reports = RunFiles(bucket, start.run_id).load_reports()
    assert sorted(report.repository_name for report in reports) == sorted(batch.repositories)


def test_held_reports_under_the_bound_are_one_object() -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, [batch] = batches_of(adapters)

    run_work_batch(rules(True), adapters, batch)

    prefix = f"{repository_reports_prefix(start.run_id)}{BATCH_REPORTS_PREFIX}"
    assert len(bucket.list_objects(prefix)) == 1


def test_a_part_stays_far_under_what_the_report_step_reads() -> None:
    assert MAX_BATCH_REPORTS_PART_BYTES * 4 <= MAX_REPOSITORY_REPORT_BYTES


def test_the_least_reserve_outlasts_the_deadline_margin_of_a_late_repository() -> None:
    assert BATCH_RESERVE_SECONDS - DEADLINE_MARGIN_SECONDS >= 180


def test_a_batch_keeps_three_times_its_slowest_repository_in_reserve(monkeypatch: pytest.MonkeyPatch) -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    _, [batch] = batches_of(adapters)
    remaining = {"seconds": 500.0}
    evaluate = evaluate_step.run_work_item

    def slow(*args: Any, **kwargs: Any) -> Any:
        remaining["seconds"] -= 120  # app takes two minutes: 380 s left, under 90 + 3 x 120
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(evaluate_step, "run_work_item", slow)

    with pytest.raises(BatchOutOfTime, match="team-a/api"):
        run_work_batch(rules(False), adapters, batch, seconds_left=lambda: remaining["seconds"])
    assert RunFiles(bucket, batch.run_id).has_report("app")
