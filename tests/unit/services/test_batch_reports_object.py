"""A batch stores the reports of its repositories that changed nothing in one object at its end
(runs/<runId>/repositories/batch-<hash>.json), and the report of one that changed something at once, in its own
object, before the next repository starts (services.evaluate_step.changed_nothing): the run's report reads both as it read one
object per repository; a batch whose invocation crashes leaves its unchanged repositories to invocations of their own,
and one that runs out of time stores its held reports each in its own object, where those invocations look."""

from __future__ import annotations

from fnmatch import fnmatch
from typing import Any

import pytest

from ecr_retention.cdk import state_objects
from ecr_retention.layout import (
    BATCH_REPORTS_PREFIX,
    batch_reports_key,
    repository_report_key,
    repository_reports_prefix,
)
from ecr_retention.run_files import RunFiles
from ecr_retention.services import evaluate_step
from ecr_retention.services.evaluate_step import BATCH_RESERVE_SECONDS, BatchOutOfTime, run_batch_member, run_work_batch
from ecr_retention.services.report_step import finish_run
from ecr_retention.workflow_batches import BatchMember
from tests.unit.services.test_run_and_report import rules, run_workflow, seeded
from tests.unit.services.test_work_batches_run import adapters_of, batches_of


class Crash(BaseException):
    """What an invocation that runs out of memory or time is to the batch: nothing catches it."""


def stored_reports(bucket: Any, run_id: str) -> list[str]:
    prefix = repository_reports_prefix(run_id)
    return [key.removeprefix(prefix) for key in sorted(bucket.objects) if key.startswith(prefix)]


def swept_once() -> tuple[Any, Any, Any]:
    """The seeded registry after a first run deleted what the rules delete: a second run changes nothing."""
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    _start, [batch] = batches_of(adapters)
    run_work_batch(rules(False), adapters, batch)
    return registry, bucket, adapters


def test_a_batch_whose_repositories_changed_nothing_stores_one_object_and_reports_as_one_object_each_did() -> None:
    one_by_one_registry, one_by_one_bucket = seeded()
    one_by_one = adapters_of(one_by_one_registry, one_by_one_bucket)
    run_workflow(rules(False), one_by_one)
    _, expected = run_workflow(rules(False), one_by_one)
    _, bucket, adapters = swept_once()
    start, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    [stored] = stored_reports(bucket, start.run_id)
    assert stored.startswith(BATCH_REPORTS_PREFIX)
    report = finish_run(adapters, start, rules(False))
    assert [(r.repository_name, r.outcome, len(r.deleted)) for r in report.repositories] == [
        (r.repository_name, r.outcome, len(r.deleted)) for r in expected.repositories
    ]
    assert report.totals == expected.totals
    assert [(r.repository_name, r.outcome) for r in report.repositories] == [("app", "ok"), ("team-a/api", "ok")]


def test_a_repository_that_deleted_has_its_report_stored_before_the_next_repository_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, [batch] = batches_of(adapters)
    evaluate = evaluate_step.run_work_item
    stored_when_next_started: list[bool] = []

    def watching(*args: Any, **kwargs: Any) -> Any:
        if kwargs["repository"] == "team-a/api":
            stored_when_next_started.append(repository_report_key(start.run_id, "app") in bucket.objects)
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(evaluate_step, "run_work_item", watching)

    [app, api] = run_work_batch(rules(False), adapters, batch)

    assert app.deleted
    assert api.deleted
    assert stored_when_next_started == [True]
    assert not any(key.startswith(BATCH_REPORTS_PREFIX) for key in stored_reports(bucket, start.run_id))


def test_a_dry_run_batch_stores_one_object_whatever_its_plans_would_delete() -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, [batch] = batches_of(adapters)
    before = {name: registry.digests(name) for name in registry.repositories}

    reports = run_work_batch(rules(True), adapters, batch)

    assert all(report.deleted for report in reports)  # what the run would delete
    assert {name: registry.digests(name) for name in registry.repositories} == before
    [stored] = stored_reports(bucket, start.run_id)
    assert stored.startswith(BATCH_REPORTS_PREFIX)


def test_a_crashed_batch_leaves_its_unchanged_repositories_to_their_own_invocations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _registry, bucket, adapters = swept_once()
    start, [batch] = batches_of(adapters)
    evaluate = evaluate_step.run_work_item

    def crashing_on_api(*args: Any, **kwargs: Any) -> Any:
        if kwargs["repository"] == "team-a/api":
            raise Crash
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(evaluate_step, "run_work_item", crashing_on_api)
    with pytest.raises(Crash):
        run_work_batch(rules(False), adapters, batch)
    monkeypatch.setattr(evaluate_step, "run_work_item", evaluate)

    assert stored_reports(bucket, start.run_id) == []  # app's report was held, and lost with the invocation
    members = [
        BatchMember(run_id=start.run_id, repository=name, trigger="schedule", dry_run=False, after_batch=True)
        for name in batch.repositories
    ]
    alone = [run_batch_member(rules(False), adapters, member) for member in members]

    assert [report.repository_name for report in alone if report is not None] == ["app", "team-a/api"]
    report = finish_run(adapters, start, rules(False))
    assert [(r.repository_name, r.outcome) for r in report.repositories] == [("app", "ok"), ("team-a/api", "ok")]


def test_a_batch_out_of_time_stores_its_held_reports_where_the_invocations_of_the_rest_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _registry, bucket, adapters = swept_once()
    start, [batch] = batches_of(adapters)
    remaining = {"seconds": 600.0}
    evaluate = evaluate_step.run_work_item

    def slow_app(*args: Any, **kwargs: Any) -> Any:
        report = evaluate(*args, **kwargs)
        remaining["seconds"] = BATCH_RESERVE_SECONDS - 1
        return report

    monkeypatch.setattr(evaluate_step, "run_work_item", slow_app)
    with pytest.raises(BatchOutOfTime):
        run_work_batch(rules(False), adapters, batch, seconds_left=lambda: remaining["seconds"])

    assert RunFiles(bucket, start.run_id).has_report("app")
    member = BatchMember(run_id=start.run_id, repository="app", trigger="schedule", dry_run=False, after_batch=True)
    assert run_batch_member(rules(False), adapters, member) is None


def test_a_repository_evaluated_alone_after_its_batch_stored_its_object_is_reported_once() -> None:
    _, bucket, adapters = swept_once()
    start, [batch] = batches_of(adapters)
    run_work_batch(rules(False), adapters, batch)
    member = BatchMember(run_id=start.run_id, repository="app", trigger="schedule", dry_run=False, after_batch=True)

    again = run_batch_member(rules(False), adapters, member)  # the batch's object is not where a member looks

    assert again is not None
    reports = RunFiles(bucket, start.run_id).load_reports()
    assert [report.repository_name for report in reports].count("app") == 1
    assert next(report for report in reports if report.repository_name == "app") == again


def test_a_batchs_reports_object_is_a_key_the_bucket_policy_lets_only_the_evaluations_write() -> None:
    key = batch_reports_key("20261205T030000Z-schedule-0a1b2c3d", "team-a/api", "us-east-1")

    assert [pattern for pattern in state_objects.bound_keys("evaluate") if fnmatch(key, pattern)] == [
        "runs/*/repositories/*"
    ]
    assert not any(
        fnmatch(key, pattern)
        for writer in state_objects.WRITER_BINDINGS
        if writer != "evaluate"
        for pattern in state_objects.bound_keys(writer)
    )
