"""Two runs on one repository at once (the schedule's sweep and a push's run), through the real adapters on faithful
moto with the real DynamoDB leases: each image is reported deleted by at most one of them, nothing protected goes,
and the registry ends as one run alone leaves it.

- With the lease table, the second run finds the repository's lease held and reports it busy without a call to ECR,
  however the two interleave (here the first is held inside its evaluation while the second tries).
- Without it (two CLI runs without --lease-table, or a lease that expired mid-evaluation), the worst interleaving:
  both plan and re-check before either deletes. The second run's deletions then find nothing to delete, which it
  reports as already gone, never as deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ecr_retention.aws.clients import ClientFactory
from ecr_retention.aws.dynamodb_lease import DynamoDbLeases
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.snapshot import BucketManifestCache
from ecr_retention_dev.scenario import LEASE_TABLE
from support.api_calls import ApiCallRecorder
from support.expectations import assert_registry_is, expected_after, planned
from support.pipeline_harness import NOW, Pipeline
from support.realistic_registry import ACCOUNT, BUCKET, REGION

REPOSITORY = "app"


def evaluator(
    pipeline: Pipeline, run_id: str, *, leases: bool
) -> tuple[Callable[[], RepositoryReport], ApiCallRecorder]:
    """One run's evaluation of app, with clients of its own (so its calls are counted apart)."""
    recorder = ApiCallRecorder()
    clients = ClientFactory(on_create=recorder.attach)
    bucket = S3Bucket(BUCKET, clients.client("s3", REGION))
    evaluation = RunInputs(
        replication=RegistryReplication(),
        run_id=run_id,
        config=pipeline.config(dry_run=False),
        inventory=read_inventory_from_bucket(bucket),
        dry_run=False,
    )

    def evaluate() -> RepositoryReport:
        return evaluate_repository(
            REPOSITORY,
            evaluation,
            registry=EcrRegistry(clients.client("ecr", REGION), ACCOUNT, REGION),
            cache=BucketManifestCache(bucket),
            leases=DynamoDbLeases(LEASE_TABLE, clients.client("dynamodb", REGION), clock=lambda: NOW)
            if leases
            else None,
            clock=lambda: NOW,
        )

    return evaluate, recorder


def deleted(report: RepositoryReport) -> list[str]:
    return [entry.image_digest for entry in report.deleted]


def assert_nothing_kept_changed(pipeline: Pipeline, plan: Any, before: dict[str, Any], after: dict[str, Any]) -> None:
    [app] = [r for r in plan.repositories if r.repository_name == REPOSITORY]
    for kept in (d.image_digest for d in app.images if d.action == "keep"):
        assert after[REPOSITORY][kept] == before[REPOSITORY][kept], pipeline.seeded.label_of(kept)


def test_a_push_run_during_a_scheduled_run_finds_the_repository_busy_and_touches_nothing(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=False)
    plan = pipeline.plan(config)
    before = pipeline.state()
    scheduled, scheduled_calls = evaluator(pipeline, "20261130T030000Z-schedule-aaaa0001", leases=True)
    pushed, pushed_calls = evaluator(pipeline, "20261130T030002Z-push-bbbb0002", leases=True)
    inside, tried = threading.Event(), threading.Event()

    def hold_the_scheduled_run() -> None:
        """The scheduled run holds app's lease and has read app; the push run tries now."""
        inside.set()
        assert tried.wait(timeout=30)

    pipeline.fidelity.before("GetLifecyclePolicy", hold_the_scheduled_run)
    reports: dict[str, RepositoryReport] = {}
    first = threading.Thread(target=lambda: reports.update(scheduled=scheduled()))
    first.start()
    assert inside.wait(timeout=30)
    second = threading.Thread(target=lambda: reports.update(pushed=pushed()))
    second.start()
    second.join(timeout=30)
    tried.set()
    first.join(timeout=60)

    assert reports["pushed"].outcome == "busy"
    # It read the repository (no lease is needed to read), found that its plan acts, and was refused the lease.
    assert pushed_calls.counts("ecr") == {"DescribeImages": 1}
    assert pushed_calls.counts("dynamodb") == {"PutItem": 1}  # the refused lease; nothing to release
    assert reports["scheduled"].outcome == "ok"
    assert set(deleted(reports["scheduled"])) == planned(plan, "delete")[REPOSITORY]
    after = pipeline.state()
    assert_nothing_kept_changed(pipeline, plan, before, after)
    expected = expected_after(before, plan)
    assert_registry_is(
        {REPOSITORY: after[REPOSITORY]}, {REPOSITORY: expected[REPOSITORY]}, archived=planned(plan, "archive")
    )
    assert scheduled_calls.mutating("ecr")


def test_two_runs_without_leases_that_both_plan_before_either_deletes_never_both_claim_a_deletion(
    pipeline: Pipeline,
) -> None:
    config = pipeline.config(dry_run=False)
    plan = pipeline.plan(config)
    before = pipeline.state()
    first, _ = evaluator(pipeline, "20261130T030000Z-cli-aaaa0001", leases=False)
    second, _ = evaluator(pipeline, "20261130T030001Z-cli-bbbb0002", leases=False)
    reports: dict[str, RepositoryReport] = {}
    # The first run has planned and re-checked app; right before its first BatchDeleteImage reaches ECR, the
    # second run plans, re-checks and deletes everything.
    pipeline.fidelity.before("BatchDeleteImage", lambda: reports.update(second=second()))

    reports["first"] = first()

    both = deleted(reports["first"]) + deleted(reports["second"])
    assert len(both) == len(set(both)), "an image reported deleted by both runs"
    assert set(deleted(reports["second"])) == planned(plan, "delete")[REPOSITORY]
    assert deleted(reports["first"]) == []
    assert {e.image_digest for e in reports["first"].cancelled} == planned(plan, "delete")[REPOSITORY]
    assert all("already gone" in e.detail for e in reports["first"].cancelled)
    assert reports["first"].failed == ()
    after = pipeline.state()
    assert_nothing_kept_changed(pipeline, plan, before, after)
    expected = expected_after(before, plan)
    assert_registry_is(
        {REPOSITORY: after[REPOSITORY]}, {REPOSITORY: expected[REPOSITORY]}, archived=planned(plan, "archive")
    )
