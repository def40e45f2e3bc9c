"""The workflow's records on the wire (ecr_retention.workflow): camelCase keys, the run record as the targets step
always wrote it, and what the report step refuses."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from ecr_retention.handlers.evaluate import RepositoryEvaluated
from ecr_retention.run_records import RUN_RECORD_FIELDS, RunRecord, RunReported
from ecr_retention.workflow import WorkItem

STARTED = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
RECORD = RunRecord(
    run_id="20261130T030000Z-schedule-1a2b3c4d",
    trigger="schedule",
    dry_run=False,
    started_at=STARTED,
    targets_key="runs/20261130T030000Z-schedule-1a2b3c4d/targets.json",
    count=1,
    bucket="inventory-bucket",
    batches_key="runs/20261130T030000Z-schedule-1a2b3c4d/batches.json",
)


def test_the_run_record_keeps_its_wire_shape_and_reads_back() -> None:
    assert RECORD.to_wire() == {
        "runId": "20261130T030000Z-schedule-1a2b3c4d",
        "trigger": "schedule",
        "dryRun": False,
        "startedAt": "2026-11-30T03:00:00+00:00",
        "targetsKey": "runs/20261130T030000Z-schedule-1a2b3c4d/targets.json",
        "count": 1,
        "bucket": "inventory-bucket",
        "batchesKey": "runs/20261130T030000Z-schedule-1a2b3c4d/batches.json",
    }
    assert RunRecord.model_validate(RECORD.to_wire()) == RECORD
    assert tuple(RECORD.to_wire()) == RUN_RECORD_FIELDS


def test_a_run_record_without_its_bucket_is_still_read() -> None:
    wire = RECORD.to_wire()
    del wire["bucket"]
    assert RunRecord.model_validate(wire).bucket is None


def test_a_run_record_written_before_batches_is_still_read() -> None:
    wire = RECORD.to_wire()
    del wire["batchesKey"]
    assert RunRecord.model_validate(wire).batches_key is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("startedAt", "2026-11-30T03:00:00"), ("dryRun", "false"), ("count", -1), ("runId", "../x"), ("mapError", {})],
)
def test_the_run_record_refuses_what_a_hand_made_input_may_carry(field: str, value: object) -> None:
    with pytest.raises(ValidationError):
        RunRecord.model_validate({**RECORD.to_wire(), field: value})


def test_the_work_items_are_written_as_before() -> None:
    item = WorkItem(run_id="r-1", repository="app", trigger="push", dry_run=True)
    assert json.dumps([item.to_wire()]) == '[{"runId": "r-1", "repository": "app", "trigger": "push", "dryRun": true}]'


def test_the_steps_outputs_are_camel_case() -> None:
    assert RepositoryEvaluated(repository="app", outcome="ok", deleted=2, failed=0).to_wire() == {
        "repository": "app",
        "outcome": "ok",
        "deleted": 2,
        "failed": 0,
    }
    assert RunReported(run_id="r-1", outcome="ok", report_url="s3://b/k").to_wire() == {
        "runId": "r-1",
        "outcome": "ok",
        "reportKey": "s3://b/k",
    }
