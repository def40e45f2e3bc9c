"""A batch of repositories in one invocation (services.evaluate_step.run_work_batch, run_batch_member), on the fakes: the same
result as one invocation per repository, the run's replication record read once, each repository in its own guard,
no repository started with less than its reserve left, and a batch's repository never evaluated twice."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecr_retention.layout import replication_key
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services import evaluate_step
from ecr_retention.services.evaluate_step import BATCH_RESERVE_SECONDS, BatchOutOfTime, run_batch_member, run_work_batch
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.targets_step import start_run
from ecr_retention.workflow_batches import BatchMember, WorkBatch
from support.builders import NOW
from tests.unit.services.test_run_and_report import rules, run_workflow, seeded


class CountingBucket:
    """The fake bucket, counting its reads by key."""

    def __init__(self, bucket: Any) -> None:
        self.bucket = bucket
        self.reads: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bucket, name)

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        self.reads[key] = self.reads.get(key, 0) + 1
        body: bytes | None = self.bucket.read(key, max_bytes=max_bytes)
        return body


def adapters_of(registry: Any, bucket: Any) -> Adapters:
    return Adapters(registry=registry, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)


def batches_of(adapters: Adapters) -> tuple[Any, list[WorkBatch]]:
    start = start_run(rules(False), adapters, trigger="schedule", workers=10)
    assert start.batches_key is not None
    body = adapters.bucket.read(start.batches_key, max_bytes=1 << 20) or b"[]"
    return start, [WorkBatch.model_validate(batch) for batch in json.loads(body)]


def test_a_batch_deletes_and_reports_as_one_invocation_per_repository_did() -> None:
    one_by_one_registry, one_by_one_bucket = seeded()
    _, one_by_one = run_workflow(rules(False), adapters_of(one_by_one_registry, one_by_one_bucket))
    registry, bucket = seeded()
    counting = CountingBucket(bucket)
    adapters = adapters_of(registry, counting)
    start, [batch] = batches_of(adapters)

    reports = run_work_batch(rules(False), adapters, batch)

    assert batch.repositories == ("app", "team-a/api")
    assert [report.repository_name for report in reports] == ["app", "team-a/api"]
    assert counting.reads[replication_key(start.run_id)] == 1  # the run's record, once for the batch
    assert {name: registry.digests(name) for name in registry.repositories} == {
        name: one_by_one_registry.digests(name) for name in one_by_one_registry.repositories
    }
    assert finish_run(adapters, start, rules(False)).totals == one_by_one.totals


def test_a_repository_that_raises_fails_alone_and_the_batch_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, [batch] = batches_of(adapters)
    evaluate = evaluate_step.run_work_item

    def raising_for_app(*args: Any, **kwargs: Any) -> Any:
        if kwargs["repository"] == "app":
            raise RuntimeError("a defect")
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(evaluate_step, "run_work_item", raising_for_app)

    reports = run_work_batch(rules(False), adapters, batch)

    assert [report.repository_name for report in reports] == ["app", "team-a/api"]
    report = finish_run(adapters, start, rules(False))
    assert [(r.repository_name, r.outcome) for r in report.repositories] == [("app", "failed"), ("team-a/api", "ok")]
    # Its failed report is stored, naming the error (so the fallback does not evaluate it again).
    assert "raised RuntimeError: a defect" in (report.repositories[0].error or "")


def test_a_batch_starts_no_repository_with_less_than_its_reserve_left(monkeypatch: pytest.MonkeyPatch) -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, [batch] = batches_of(adapters)
    remaining = {"seconds": 600.0}
    evaluated: list[str] = []
    evaluate = evaluate_step.run_work_item

    def slow_app(*args: Any, **kwargs: Any) -> Any:
        evaluated.append(kwargs["repository"])
        report = evaluate(*args, **kwargs)
        remaining["seconds"] = BATCH_RESERVE_SECONDS - 1  # app took all but the reserve
        return report

    monkeypatch.setattr(evaluate_step, "run_work_item", slow_app)

    with pytest.raises(BatchOutOfTime, match="1 repositories left to their own invocations: team-a/api"):
        run_work_batch(rules(False), adapters, batch, seconds_left=lambda: remaining["seconds"])

    assert evaluated == ["app"]
    report = finish_run(adapters, start, rules(False))
    assert [(r.repository_name, r.outcome) for r in report.repositories] == [("app", "ok"), ("team-a/api", "failed")]


def test_a_member_of_a_batch_that_reported_it_is_not_evaluated_again() -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, [batch] = batches_of(adapters)
    run_work_batch(rules(False), adapters, batch)
    after_batch = registry.digests("app")
    reported = bucket.objects.copy()

    member = BatchMember(run_id=start.run_id, repository="app", trigger="schedule", dry_run=False, after_batch=True)

    assert run_batch_member(rules(False), adapters, member) is None
    assert registry.digests("app") == after_batch
    assert bucket.objects == reported  # its report, of what the batch deleted, stands


def test_a_member_without_a_report_is_evaluated() -> None:
    registry, bucket = seeded()
    adapters = adapters_of(registry, bucket)
    start, _ = batches_of(adapters)
    member = BatchMember(run_id=start.run_id, repository="app", trigger="schedule", dry_run=False, after_batch=True)

    report = run_batch_member(rules(False), adapters, member)

    assert report is not None
    assert report.repository_name == "app"
    assert report.outcome == "ok"
    assert report.deleted
