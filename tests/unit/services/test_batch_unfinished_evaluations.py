"""A repository of a batch whose evaluation began in this run and never stored its report (its invocation ended: a
timeout, out of memory) is not evaluated again in the run, neither by the fallback (run_batch_member) nor by a batch
run again: its lease names the run, and its failed report says what is missing. A repository whose own report is
stored is skipped by a batch; one that raises gets a failed report naming the error. A batch's first invocation (its
marker written: services.evaluate_step.first_invocation) reads no lease: Step Functions runs the batch's task once."""

from __future__ import annotations

from typing import Any

import pytest

from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.ports import LeaseUnavailable
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.run_files import RunFiles
from ecr_retention.services.evaluate_step import first_invocation, run_batch_member, run_work_batch
from ecr_retention.services.report_step import finish_run
from ecr_retention.workflow_batches import BatchMember
from support.builders import NOW
from support.fakes import MemoryLeases
from tests.unit.services.test_run_and_report import rules, seeded
from tests.unit.services.test_work_batches_run import batches_of


class UnreadableLeases(MemoryLeases):
    def holder(self, repository: str) -> str | None:
        raise LeaseUnavailable(f"lease table leases, repository {repository}: GetItem failed: ThrottlingException")


def adapters_with(leases: MemoryLeases) -> tuple[Any, Adapters]:
    registry, bucket = seeded()
    return registry, Adapters(registry=registry, bucket=bucket, leases=leases, clock=lambda: NOW, renderers=RENDERERS)


def member(run_id: str, repository: str) -> BatchMember:
    return BatchMember(run_id=run_id, repository=repository, trigger="schedule", dry_run=False, after_batch=True)


def test_the_fallback_does_not_evaluate_again_a_repository_whose_batch_ended_during_its_evaluation() -> None:
    leases = MemoryLeases()
    registry, adapters = adapters_with(leases)
    start, _ = batches_of(adapters)
    before = registry.digests("app")
    leases.held["app"] = start.run_id  # the batch's invocation took the lease, then died before it stored a report

    report = run_batch_member(rules(False), adapters, member(start.run_id, "app"))

    assert report is not None
    assert report.outcome == "failed"
    assert registry.digests("app") == before  # nothing acted a second time
    run = finish_run(adapters, start, rules(False))
    app = next(repository for repository in run.repositories if repository.repository_name == "app")
    assert app.outcome == "failed"
    assert "ended" in (app.error or "")
    assert "BatchDeleteImage" in (app.error or "")
    assert "UpdateImageStorageClass" in (app.error or "")
    assert "next run" in (app.error or "")


def test_the_fallback_evaluates_a_repository_whose_lease_another_run_holds_as_before() -> None:
    leases = MemoryLeases()
    _registry, adapters = adapters_with(leases)
    start, _ = batches_of(adapters)
    leases.held["app"] = "another-run"

    report = run_batch_member(rules(False), adapters, member(start.run_id, "app"))

    assert report is not None
    assert report.outcome == "busy"


def test_a_lease_table_that_cannot_be_read_leaves_the_repository_unevaluated_and_says_so() -> None:
    registry, adapters = adapters_with(UnreadableLeases())
    start, _ = batches_of(adapters)
    before = registry.digests("app")

    report = run_batch_member(rules(False), adapters, member(start.run_id, "app"))

    assert report is not None
    assert report.outcome == "failed"
    assert "GetItem failed" in (report.error or "")
    assert registry.digests("app") == before
    assert RunFiles(adapters.bucket, start.run_id).has_report("app")


def test_a_batch_run_again_skips_a_repository_whose_report_is_stored() -> None:
    registry, adapters = adapters_with(MemoryLeases())
    start, [batch] = batches_of(adapters)
    before = registry.digests("app")
    RunFiles(adapters.bucket, start.run_id).store_report(RepositoryReport(repository_name="app", outcome="ok"))

    reports = run_work_batch(rules(False), adapters, batch)

    assert [report.repository_name for report in reports] == ["team-a/api"]
    assert registry.digests("app") == before


class CountingLeases(MemoryLeases):
    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    def holder(self, repository: str) -> str | None:
        self.read.append(repository)
        return super().holder(repository)


def test_a_batch_run_again_does_not_evaluate_a_repository_whose_evaluation_this_run_began() -> None:
    leases = MemoryLeases()
    registry, adapters = adapters_with(leases)
    start, [batch] = batches_of(adapters)
    before = registry.digests("app")
    # An earlier invocation of the batch began (its marker), took app's lease and died before it stored a report.
    assert first_invocation(adapters.bucket, batch)
    leases.held["app"] = start.run_id

    reports = run_work_batch(rules(False), adapters, batch)

    assert [(report.repository_name, report.outcome) for report in reports] == [("app", "failed"), ("team-a/api", "ok")]
    assert registry.digests("app") == before
    assert RunFiles(adapters.bucket, start.run_id).has_report("app")


def test_a_repository_that_raises_in_a_batch_is_not_evaluated_again_by_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ecr_retention.services import evaluate_step

    registry, adapters = adapters_with(MemoryLeases())
    start, [batch] = batches_of(adapters)
    evaluate = evaluate_step.run_work_item

    def raising_for_app(*args: Any, **kwargs: Any) -> Any:
        if kwargs["repository"] == "app":
            raise RuntimeError("a defect")
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(evaluate_step, "run_work_item", raising_for_app)
    run_work_batch(rules(False), adapters, batch)
    monkeypatch.setattr(evaluate_step, "run_work_item", evaluate)
    before = registry.digests("app")

    assert run_batch_member(rules(False), adapters, member(start.run_id, "app")) is None
    assert registry.digests("app") == before
    [stored] = [r for r in RunFiles(adapters.bucket, start.run_id).load_reports() if r.repository_name == "app"]
    assert stored.outcome == "failed"
    assert "RuntimeError: a defect" in (stored.error or "")


def test_a_batchs_first_invocation_reads_no_lease() -> None:
    leases = CountingLeases()
    _registry, adapters = adapters_with(leases)
    _start, [batch] = batches_of(adapters)

    first = run_work_batch(rules(False), adapters, batch)

    assert [report.outcome for report in first] == ["ok", "ok"]
    assert leases.read == []
    assert not first_invocation(adapters.bucket, batch)  # its marker is written, once


def test_a_later_invocation_of_a_batch_reads_the_lease_of_each_repository_without_a_report() -> None:
    leases = CountingLeases()
    _registry, adapters = adapters_with(leases)
    _start, [batch] = batches_of(adapters)
    assert first_invocation(adapters.bucket, batch)  # an earlier invocation began, and stored no report

    run_work_batch(rules(False), adapters, batch)

    assert leases.read == list(batch.repositories)


def test_a_batch_whose_marker_cannot_be_written_fails_its_invocation_before_evaluating_anything() -> None:
    from ecr_retention.ports import StorageUnavailable

    registry, adapters = adapters_with(MemoryLeases())
    _start, [batch] = batches_of(adapters)
    before = {name: registry.digests(name) for name in batch.repositories}

    def unwritable(key: str, body: bytes, *, content_type: str = "application/json") -> bool:
        raise StorageUnavailable(f"s3://bucket/{key}: PutObject failed: SlowDown")

    adapters.bucket.create = unwritable  # type: ignore[method-assign]

    with pytest.raises(StorageUnavailable):
        run_work_batch(rules(False), adapters, batch)
    assert {name: registry.digests(name) for name in batch.repositories} == before


class ReportBeforeRelease(MemoryLeases):
    """A lease table that records, at each release, whether the repository's own report was stored already."""

    def __init__(self, files: list[RunFiles]) -> None:
        super().__init__()
        self.files = files
        self.stored_at_release: list[bool] = []

    def release(self, repository: str, holder: str) -> None:
        self.stored_at_release.append(self.files[0].has_report(repository))
        super().release(repository, holder)


def test_a_repository_that_acted_has_its_report_stored_before_its_lease_is_released() -> None:
    """An invocation that ends between the two leaves either the report of what was done, or the lease that tells the
    fallback the evaluation began: never neither."""
    files: list[RunFiles] = []
    leases = ReportBeforeRelease(files)
    registry, adapters = adapters_with(leases)
    start, [batch] = batches_of(adapters)
    files.append(RunFiles(adapters.bucket, start.run_id))
    before = {name: registry.digests(name) for name in batch.repositories}

    reports = run_work_batch(rules(False), adapters, batch)

    assert [report.deleted != () for report in reports] == [True, True]  # both acted, each under its lease
    assert leases.stored_at_release == [True, True]
    assert all(registry.digests(name) != before[name] for name in batch.repositories)
    run = finish_run(adapters, start, rules(False))
    assert [repository.outcome for repository in run.repositories] == ["ok", "ok"]
