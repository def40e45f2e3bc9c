"""Each evaluation keeps its repository's snapshot in the bucket (snapshots/<hash>.json, issue 28), so that a review
plans the registry as the last sweep saw it with S3 read access only. On faithful moto, through the real adapters."""

from __future__ import annotations

import json

from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.layout import repository_snapshot_key
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.swept import ListedFirst, load_swept_registry
from support.pipeline_harness import NOW, Pipeline


def images_of(snapshot: Snapshot) -> dict[str, set[str]]:
    return {
        repo.repository_name: {image.image_digest for image in repo.image_details} for repo in snapshot.repositories
    }


def decisions(pipeline: Pipeline, snapshot: Snapshot) -> dict[str, dict[str, str]]:
    config = pipeline.config(dry_run=True)
    plan = plan_registry(config, snapshot, read_inventory_from_bucket(pipeline.bucket()), NOW)
    return {
        repo.repository_name: {d.image_digest: d.action for d in repo.images}
        for repo in plan.repositories
        if repo.policy is not None
    }


def test_a_dry_run_keeps_each_managed_repository_as_it_read_it(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=True)
    report = run_pipeline(config, pipeline.adapters())
    evaluated = sorted(r.repository_name for r in report.repositories if r.outcome == "ok")

    assert sorted(pipeline.keys("snapshots/")) == sorted(repository_snapshot_key(name) for name in evaluated)
    stored = json.loads(
        pipeline.s3.get_object(Bucket=pipeline.bucket().name, Key=repository_snapshot_key(evaluated[0]))["Body"].read()
    )
    assert stored["readAt"] == f"{NOW:%Y-%m-%dT%H:%M:%SZ}"
    assert stored["runId"] == report.run_id
    assert stored["replication"] == {"rules": []}  # the snapshot format: plan --snapshot reads it as it is
    assert [repo["repositoryName"] for repo in stored["repositories"]] == [evaluated[0]]

    swept = load_swept_registry(pipeline.bucket())
    fresh = pipeline.snapshot()
    assert sorted(swept.read_at) == evaluated
    assert images_of(swept.snapshot) == {name: ids for name, ids in images_of(fresh).items() if name in evaluated}
    # The same inputs, the same plan as the planner on a snapshot read from ECR now.
    assert decisions(pipeline, swept.snapshot) == decisions(pipeline, fresh)


def test_after_a_real_run_the_kept_snapshot_is_the_registry_it_left(pipeline: Pipeline) -> None:
    report = run_pipeline(pipeline.config(dry_run=False), pipeline.adapters())
    assert any(repository.deleted for repository in report.repositories)

    swept = load_swept_registry(pipeline.bucket()).snapshot
    fresh = images_of(pipeline.snapshot())
    assert images_of(swept) == {name: fresh[name] for name in images_of(swept)}  # nothing deleted is counted again
    archived = {e.image_digest for r in report.repositories for e in r.archived}
    statuses = {i.image_digest: i.image_status for repo in swept.repositories for i in repo.image_details}
    assert all(statuses[digest] == "ARCHIVED" for digest in archived)


def test_a_review_reads_an_object_only_when_a_listing_shows_it(pipeline: Pipeline) -> None:
    """The reviewers' ListBucket is narrowed by prefix: S3 answers a missing memory with AccessDenied, so it is
    looked for first."""
    run_pipeline(pipeline.config(dry_run=True), pipeline.adapters())
    pipeline.s3.delete_object(Bucket=pipeline.bucket().name, Key="state/in-use-memory.json")
    bucket = ListedFirst(pipeline.bucket())
    assert bucket.read("state/in-use-memory.json", max_bytes=1024) is None
    assert read_inventory_from_bucket(bucket).manifests
    assert load_swept_registry(bucket).read_at
