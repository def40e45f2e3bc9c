"""A whole run over a realistic registry (support.realistic_registry) through the real adapters on faithful moto.

Given the registry, its rules and two clusters' in-use manifests, when a run sweeps it, then the registry changes
exactly as the plan made beforehand by the offline planner says (no more, no less), nothing protected goes, a
dry run changes nothing in ECR, and the run makes the minimum number of API calls."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from ecr_retention.aws.dynamodb_lease import DynamoDbLeases
from ecr_retention.domain.planning.plan import Decision, Plan
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.scenario import LEASE_TABLE
from support.api_calls import ApiCallRecorder
from support.expectations import (
    assert_registry_is,
    candidates,
    expected_after,
    minimum_calls,
    pages,
    planned,
    readings,
)
from support.pipeline_harness import NOW, Pipeline, build_pipeline, run_cli, write_rules
from support.realistic_registry import BUCKET, BULK_REPOSITORY, EMPTY_REPOSITORY, REGION, UNMANAGED_REPOSITORY

# The rules file: backend keeps the tags frontend still has, so evaluating backend reads frontend's tags.
TAG_SOURCES = {"backend": ("frontend",)}
# What a dry run writes: run state, reports, the manifest cache and the in-use memory (a reading is a reading).
RUN_STATE_PREFIXES = ("runs/", "reports/", "manifests/", "state/in-use-memory.json", "snapshots/")


def decision(plan: Plan, pipeline: Pipeline, label: str) -> Decision:
    digest = pipeline.seeded.digest(label)
    return next(d for repository in plan.repositories for d in repository.images if d.image_digest == digest)


def managed(plan: Plan) -> list[str]:
    return sorted(repository.repository_name for repository in plan.repositories if repository.policy is not None)


def assert_report_follows_plan(report: RunReport, plan: Plan) -> None:
    """Each evaluated repository reports exactly the plan's removals, as done, and nothing failed or cancelled."""
    by_name = {repository.repository_name: repository for repository in report.repositories}
    assert sorted(by_name) == managed(plan)
    for repository_plan in plan.repositories:
        if repository_plan.policy is None:
            continue
        repository = by_name[repository_plan.repository_name]
        summary = repository_plan.summary
        assert {e.image_digest for e in repository.deleted} == planned(plan, "delete")[repository.repository_name]
        assert {e.image_digest for e in repository.archived} == planned(plan, "archive")[repository.repository_name]
        assert (repository.outcome, repository.failed, repository.cancelled) == ("ok", (), ())
        assert (repository.images, repository.kept) == (summary.images, summary.kept)
        assert repository.bytes_reclaimed == summary.bytes_reclaimed


def test_a_run_changes_the_registry_exactly_as_planned(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(config)

    report = run_pipeline(config, pipeline.adapters())

    removals = candidates(plan)
    assert all(removals[name] for name in managed(plan) if name not in ("release/payments", EMPTY_REPOSITORY))
    assert sum(len(r) for r in removals.values()) == 751  # 745 deletions, 6 archives: far from a vacuous check
    assert_registry_is(pipeline.state(), expected_after(before, plan), archived=planned(plan, "archive"))
    assert report.outcome == "ok"
    assert_report_follows_plan(report, plan)
    assert report.totals.deleted == 745
    assert report.totals.archived == 6
    assert pipeline.report(report.report_url or "") == report.to_json_dict()
    [message] = pipeline.messages()
    assert message["Subject"] == "ecr-retention run ok: deleted 745 images (14.2 GiB) in 8 repositories"
    assert {name: value["Value"] for name, value in message["MessageAttributes"].items()} == {
        "dry_run": "false",
        "outcome": "ok",
    }
    assert report.run_id in message["Message"]
    assert report.report_url in message["Message"]


def test_nothing_in_use_young_kept_by_a_rule_or_referenced_is_removed(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(config)

    run_pipeline(config, pipeline.adapters())

    after = pipeline.state()
    protected = {
        # running: in prod, by digest in dev, a preview by tag, the image-swapper cache, a canary, a template by tag
        "in-use": ["app v1.0.5", "app v1.0.2", "app pr-104", "nginx 1.14.2", "payments v3.1.0", "runtime 3.0.0"],
        "min-age": ["app untagged young"],
        "keep-rule": ["app dev", "app v1.0.11", "nginx 1.21", "backend v2.0", "backend v2.4"],
        # the amd64 child listed by a kept index and by a deleted one; the kept index's own child
        "index-child": ["runtime shared amd64", "runtime 3.0.0 arm64"],
        "referrer": ["app v1.0.11 signature", "runtime 3.0.0 signature", "runtime 3.0.0 sbom"],
    }
    # Each of these a delete or archive rule marks: only the guard or keep rule saved it.
    marked = {"app v1.0.5", "app v1.0.2", "app pr-104", "nginx 1.14.2", "app dev", "backend v2.0", "backend v2.4"}
    marked |= {"runtime shared amd64", "runtime 3.0.0 arm64", "runtime 3.0.0 sbom"}
    for kind, labels in protected.items():
        for label in labels:
            planned_for = decision(plan, pipeline, label)
            repository, digest = pipeline.seeded.repository_of(label), pipeline.seeded.digest(label)
            assert planned_for.action == "keep", label
            assert kind in {reason.kind for reason in planned_for.reasons}, label
            assert (label in marked) == any(r.kind == "delete-rule" for r in planned_for.reasons), label
            assert after[repository][digest] == before[repository][digest], label
    young = decision(plan, pipeline, "app untagged young")
    assert young.image_tags == ()  # the untagged rule selects it; only min_age keeps it
    assert NOW - young.image_pushed_at < timedelta(days=1)
    # What lives and dies with a removed parent went with it; what a kept parent needs stayed.
    for label in (
        "runtime 2.1.0 arm64",
        "runtime 2.1.0 attestation",
        "runtime 2.0.0 signature",
        "runtime 2.0.0 sbom",
        "app v1.0.0 signature",
    ):
        assert pipeline.seeded.digest(label) not in after[pipeline.seeded.repository_of(label)], label
    for label in ("app pr-101", "app pr-101 signature"):  # a signature goes to the archive with its subject
        assert after["app"][pipeline.seeded.digest(label)]["imageStatus"] == "ARCHIVED", label
    # An archived image is not archived again; a repository no policy matches is never read or changed.
    assert after["app"][pipeline.seeded.digest("app pr-100")] == before["app"][pipeline.seeded.digest("app pr-100")]
    assert pipeline.seeded.digest("app pr-100") not in {
        call.params["imageId"]["imageDigest"] for call in pipeline.recorder.of("UpdateImageStorageClass")
    }
    assert after[UNMANAGED_REPOSITORY] == before[UNMANAGED_REPOSITORY]
    assert not [c for c in pipeline.recorder.calls if c.params.get("repositoryName") == UNMANAGED_REPOSITORY]


def print_api_calls(
    title: str, actual: Counter[str], minimum: Counter[str], listing: int, rechecks: int, other: Counter[str]
) -> None:
    rows = [(operation, actual[operation], minimum[operation]) for operation in sorted(minimum | actual)]
    print(f"\nAPI calls (actual/minimum) of a full sweep: {title}")
    for operation, count, least in rows:
        print(f"  {operation:<26} {count:>4} / {least}")
    print(f"  {'  of which DescribeImages':<26} {listing:>4} listing pages, {rechecks} re-checks by imageIds")
    print("  other services: " + ", ".join(f"{op} {n}" for op, n in sorted(other.items())))


def test_a_sweep_makes_the_minimum_api_calls_and_reads_each_index_manifest_once(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=False)
    snapshot = pipeline.snapshot()
    plan = pipeline.plan(config, snapshot)
    minimum = minimum_calls(snapshot, plan, tag_sources=TAG_SOURCES)

    run_pipeline(config, pipeline.adapters())

    actual = pipeline.recorder.counts("ecr")
    describe = pipeline.recorder.of("DescribeImages")
    listing = [call for call in describe if "imageIds" not in call.params]
    rechecks = [call for call in describe if "imageIds" in call.params]
    other = pipeline.recorder.counts() - actual
    sizes = [len(repository.image_details) for repository in snapshot.repositories]
    title = (
        f"{len(sizes)} repositories ({len(managed(plan))} evaluated), {sum(sizes):,} images (the largest {max(sizes):,}), "
        f"{sum(len(r) for r in candidates(plan).values())} removals"
    )
    print_api_calls(title, actual, minimum, len(listing), len(rechecks), other)
    assert actual == minimum
    by_name = {repository.repository_name: repository for repository in snapshot.repositories}
    read = {repository.repository_name: readings(repository) for repository in plan.repositories}
    assert len(listing) == sum(read[name] * pages(by_name[name]) for name in managed(plan)) + read["backend"] * pages(
        by_name["frontend"]
    )
    # 1,050 images: two pages a reading
    assert Counter(call.params["repositoryName"] for call in listing)[BULK_REPOSITORY] == 2 * read[BULK_REPOSITORY]
    assert all(
        call.params["maxResults"] == 1000 and call.params["filter"] == {"imageStatus": "ANY"} for call in listing
    )
    assert all(len(call.params["imageIds"]) <= 100 for call in rechecks + pipeline.recorder.of("BatchDeleteImage"))
    # The other services: the inventory (manifests, in-use memory and holds) listed and read once, each index manifest looked
    # up in the cache and stored once, one report (JSON, page, sheet), the memory written once, one summary.
    indexes = sum(
        1
        for repository in snapshot.repositories
        for image in repository.image_details
        if image.image_manifest_media_type in INDEX_MEDIA_TYPES
    )
    assert indexes == 3
    assert other == Counter(
        {
            # in-use/, and holds/ (none here: nothing to read); each repository whose plan acts lists its own holds
            # again right before it acts (docs/safety.md 37)
            "ListObjectsV2": 2 + sum(1 for repository in plan.repositories if readings(repository) == 2),
            "ListObjectVersions": 1,  # no memory yet: never written, or deleted? (services/inventory.read_run_inventory)
            # the two in-use manifests, the memory (none yet), the cache misses, each repository's kept snapshot
            # (none yet: read to compare before it is written, services/swept.py)
            "GetObject": 2 + 1 + indexes + len(managed(plan)),
            # the cache misses, the report, its page and its sheet, the memory, each repository's kept snapshot
            "PutObject": indexes + 3 + 1 + len(managed(plan)),
            "Publish": 1,
            # a lease taken and released for each repository whose plan acts, none for one that changes nothing
            "PutItem": sum(1 for repository in plan.repositories if readings(repository) == 2),
            "DeleteItem": sum(1 for repository in plan.repositories if readings(repository) == 2),
        }
    )

    pipeline.recorder.clear()
    snapshot = pipeline.snapshot()
    plan = pipeline.plan(config, snapshot)
    run_pipeline(config, pipeline.adapters())

    cached = {image.image_digest for repository in snapshot.repositories for image in repository.image_details}
    assert pipeline.recorder.counts("ecr") == minimum_calls(
        snapshot, plan, tag_sources=TAG_SOURCES, cached_indexes=cached
    )
    assert pipeline.recorder.counts("ecr")["BatchGetImage"] == 0  # the manifest cache in the bucket answered


def assert_dry_run_changed_nothing_in_ecr(pipeline: Pipeline, before: dict[str, dict[str, dict[str, object]]]) -> None:
    recorder: ApiCallRecorder = pipeline.recorder
    assert recorder.mutating("ecr") == []
    assert [c for c in recorder.of("DescribeImages") if "imageIds" in c.params] == []  # no re-check either
    writes = recorder.mutating("s3")
    assert {call.operation for call in writes} == {"PutObject"}
    assert all(call.params["Key"].startswith(RUN_STATE_PREFIXES) for call in writes)
    assert {call.operation for call in recorder.mutating()} <= {"PutObject", "Publish", "PutItem", "DeleteItem"}
    assert pipeline.state() == before


def test_dry_run_by_the_rules_file_changes_nothing_in_ecr_and_reports_what_would_go(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=True)
    before = pipeline.state()
    plan = pipeline.plan(config)

    report = run_pipeline(config, pipeline.adapters())

    assert_dry_run_changed_nothing_in_ecr(pipeline, before)
    assert report.dry_run
    assert_report_follows_plan(report, plan)
    [message] = pipeline.messages()
    assert message["Subject"].startswith("ecr-retention dry run ok: would delete 745 images")
    assert message["MessageAttributes"]["dry_run"]["Value"] == "true"


def test_dry_run_forced_on_the_command_line_changes_nothing_in_ecr(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = write_rules(tmp_path, dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(pipeline.config(dry_run=False))

    result = run_cli(
        pipeline.recorder,
        capsys,
        "run",
        "--config",
        str(rules),
        "--bucket",
        BUCKET,
        "--topic-arn",
        pipeline.topic_arn,
        "--lease-table",
        LEASE_TABLE,
        "--dry-run",
        "--format",
        "json",
    )

    assert (result.code, result.stderr) == (0, "")
    assert_dry_run_changed_nothing_in_ecr(pipeline, before)
    report = RunReport.model_validate(json.loads(result.stdout))
    assert report.dry_run
    assert report.trigger == "cli"
    assert_report_follows_plan(report, plan)
    assert pipeline.report(report.report_url or "") == json.loads(result.stdout)


def test_the_workflow_steps_change_the_registry_as_planned_and_leave_a_busy_repository_alone(
    pipeline: Pipeline,
) -> None:
    config = pipeline.config(dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(config)
    adapters = pipeline.adapters()
    busy = "docker.io/library/nginx"
    other_run = DynamoDbLeases(LEASE_TABLE, boto3.client("dynamodb", region_name=REGION))
    assert other_run.acquire(busy, "20261130T050000Z-schedule-0badc0de", 900)

    start = start_run(config, adapters, trigger="schedule")
    items = json.loads(pipeline.s3.get_object(Bucket=BUCKET, Key=start.targets_key)["Body"].read())
    for item in items:
        run_work_item(config, adapters, run_id=item["runId"], repository=item["repository"], dry_run=item["dryRun"])
    report = finish_run(adapters, start, config)

    assert [item["repository"] for item in items] == managed(plan)
    assert len(pipeline.keys(f"runs/{start.run_id}/repositories/")) == len(items)
    assert_registry_is(
        pipeline.state(), expected_after(before, plan, untouched={busy}), archived=planned(plan, "archive")
    )
    outcomes = {repository.repository_name: repository.outcome for repository in report.repositories}
    assert outcomes == {name: ("busy" if name == busy else "ok") for name in managed(plan)}
    assert report.outcome == "partial"
    assert report.trigger == "schedule"
    # The busy repository was read (no lease is needed to read) and, its plan acting, refused the lease: nothing changed.
    touched = [c for c in pipeline.recorder.calls if c.params.get("repositoryName") == busy]
    assert touched
    assert {c.operation for c in touched} == {"DescribeImages"}


def test_a_stale_manifest_of_an_expected_cluster_blocks_every_deletion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws(), EcrFidelity() as fidelity:
        pipeline = build_pipeline(fidelity, dev_generated_ago=timedelta(hours=7))
        before = pipeline.state()

        result = run_cli(
            pipeline.recorder,
            capsys,
            "run",
            "--config",
            str(write_rules(tmp_path, dry_run=False)),
            "--bucket",
            BUCKET,
            "--topic-arn",
            pipeline.topic_arn,
            "--format",
            "json",
        )

        assert result.code == 1
        report = json.loads(result.stdout)
        assert report["outcome"] == "blocked"
        assert len(report["blocked"]) == 1
        assert "cluster dev" in report["blocked"][0]
        assert {repository["outcome"] for repository in report["repositories"]} == {"blocked"}
        assert pipeline.recorder.mutating("ecr") == []
        assert pipeline.state() == before
        [message] = pipeline.messages()
        assert message["Subject"].startswith("ecr-retention run BLOCKED: nothing deleted")
        assert message["MessageAttributes"]["outcome"]["Value"] == "blocked"
