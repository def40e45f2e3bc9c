"""The run's in-use check on faithful moto (SPEC "The sentinel", finding in-use-missing): something else deleted an
image dev runs from a managed repository, and dev also runs a tag of an unmanaged repository that does not exist. A
deletion run reports both (the first with when and by what, from the sentinel's record of removals), in the report,
the sheet, the page and the summary, and changes the registry exactly as its plan says: the finding decides nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from ecr_retention.domain.in_use.references import Removal
from ecr_retention.layout import removal_key
from ecr_retention.services.run import run_pipeline
from ecr_retention_dev.scenario import in_use_entry
from support.expectations import assert_registry_is, expected_after, planned
from support.pipeline_harness import NOW, Pipeline
from support.realistic_registry import BUCKET, HOST, UNMANAGED_REPOSITORY

SENTINEL_ROLE = "arn:aws:iam::123456789012:role/ecr-retention-Sentinel"  # `run --sentinel-role`


def deleted_by_another_tool(pipeline: Pipeline, repository: str, tag: str) -> str:
    """What a native lifecycle expiry does: the image carrying the tag is gone; its digest is returned."""
    [detail] = pipeline.ecr.describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])["imageDetails"]
    digest: str = detail["imageDigest"]
    pipeline.ecr.batch_delete_image(repositoryName=repository, imageIds=[{"imageDigest": digest}])
    return digest


def dev_also_runs(pipeline: Pipeline, *entries: dict[str, object]) -> None:
    key = "in-use/dev.json"
    document = json.loads(pipeline.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    document["images"].extend(entries)
    pipeline.s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(document).encode())


def test_a_deletion_run_reports_what_another_tool_removed_and_changes_nothing_else(pipeline: Pipeline) -> None:
    # Given lifecycle rule 1 of app's policy deleted the image of app:pr-104, which dev runs, and the sentinel
    # recorded it; and dev runs sandbox/scratch:nightly, a tag no image of that unmanaged repository carries
    removed_at = NOW - timedelta(hours=3)
    digest = deleted_by_another_tool(pipeline, "app", "pr-104")
    removal = Removal(
        repository_name="app",
        image_digest=digest,
        image_tags=("pr-104",),
        action="deleted",
        cause="lifecycle",
        rule_priority=1,
        removed_at=removed_at,
        event_id="4f0c",
        writer=SENTINEL_ROLE,
    )
    pipeline.s3.put_object(
        Bucket=BUCKET,
        Key=removal_key("app", removed_at, removal.event_id, 0),
        Body=removal.model_dump_json(by_alias=True).encode(),
    )
    dev_also_runs(pipeline, in_use_entry(f"{HOST}/{UNMANAGED_REPOSITORY}:nightly", "tools", "CronJob/scratch"))
    config = pipeline.config(dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(config)

    # When a deletion run sweeps the registry
    report = run_pipeline(config, replace(pipeline.adapters(), sentinel_role=SENTINEL_ROLE))

    # Then both references are missing: app's from its evaluation's snapshot, sandbox/scratch's from one lookup
    assert [(f.repository_name, f.image, f.missing) for f in report.in_use_missing] == [
        ("app", "app:pr-104", "tag"),
        (UNMANAGED_REPOSITORY, f"{UNMANAGED_REPOSITORY}:nightly", "tag"),
    ]
    app, scratch = report.in_use_missing
    assert app.detail == (
        "the next pull of dev: preview-104/Deployment/app (pod) fails: app:pr-104 no longer exists "
        f"(deleted {removed_at:%Y-%m-%d %H:%M} UTC by lifecycle rule 1 of app's policy)"
    )
    assert scratch.removed is None
    lookups = [
        c for c in pipeline.recorder.of("DescribeImages") if c.params.get("repositoryName") == UNMANAGED_REPOSITORY
    ]
    assert [c.params["imageIds"] for c in lookups] == [[{"imageTag": "nightly"}]]
    # And the finding decided nothing: the registry changed exactly as the plan says, and the outcome is ok
    assert_registry_is(pipeline.state(), expected_after(before, plan), archived=planned(plan, "archive"))
    assert report.outcome == "ok"
    # And it is in the stored report, the sheet, the page and the summary
    stored = pipeline.report(report.report_url or "")
    assert [f["image"] for f in stored["inUseMissing"]] == ["app:pr-104", f"{UNMANAGED_REPOSITORY}:nightly"]
    stem = (report.report_url or "").removeprefix(f"s3://{BUCKET}/").removesuffix(".json")
    sheet = pipeline.s3.get_object(Bucket=BUCKET, Key=f"{stem}.csv")["Body"].read().decode()
    assert "app,,pr-104,,,in-use-missing,in-use-missing,," in sheet
    page = pipeline.s3.get_object(Bucket=BUCKET, Key=f"{stem}.html")["Body"].read().decode()
    assert 'data-check="in-use-missing"' in page
    assert "In-use images missing: 2" in page
    [message] = pipeline.messages()
    assert "In-use images MISSING from the registry (2): the next pull fails" in message["Message"]
