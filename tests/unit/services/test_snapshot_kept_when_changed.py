"""An evaluation rewrites its repository's kept snapshot (snapshots/<hash>.json) only when what a review reads of it
changed, or when the stored one was read SNAPSHOT_REWRITTEN_AFTER or longer before (services/swept.py): a GET to
compare instead of a PUT. A review (`plan --bucket`) reads the same repositories either way."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from ecr_retention.cdk.constants import SNAPSHOT_RETENTION_DAYS
from ecr_retention.layout import SNAPSHOTS_PREFIX, repository_snapshot_key
from ecr_retention.services.evaluate_step import run_work_batch
from ecr_retention.services.swept import SNAPSHOT_REWRITTEN_AFTER, load_swept_registry
from support.builders import NOW
from tests.unit.services.test_run_and_report import rules, seeded
from tests.unit.services.test_work_batches_run import adapters_of, batches_of


class CountingWrites:
    """The fake bucket, counting the writes under snapshots/."""

    def __init__(self, bucket: Any) -> None:
        self.bucket = bucket
        self.snapshot_writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bucket, name)

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        if key.startswith(SNAPSHOTS_PREFIX):
            self.snapshot_writes += 1
        self.bucket.write(key, body, content_type=content_type)


def sweep(adapters: Any, dry_run: bool = False) -> None:
    _, [batch] = batches_of(adapters)
    run_work_batch(rules(dry_run), adapters, batch)


def test_an_unchanged_repository_keeps_its_stored_snapshot_and_a_review_reads_the_same_registry() -> None:
    registry, bucket = seeded()
    counting = CountingWrites(bucket)
    adapters = adapters_of(registry, counting)
    sweep(adapters)
    first = dict(bucket.objects)
    writes = counting.snapshot_writes
    reviewed = load_swept_registry(bucket).snapshot

    sweep(adapters)

    assert writes == 2
    assert counting.snapshot_writes == writes  # nothing changed: nothing rewritten
    assert {key: body for key, body in bucket.objects.items() if key.startswith(SNAPSHOTS_PREFIX)} == {
        key: body for key, body in first.items() if key.startswith(SNAPSHOTS_PREFIX)
    }
    assert load_swept_registry(bucket).snapshot == reviewed


def test_a_repository_that_changed_has_its_snapshot_rewritten() -> None:
    registry, bucket = seeded()
    counting = CountingWrites(bucket)
    adapters = adapters_of(registry, counting)
    sweep(adapters, dry_run=True)  # kept as read, before anything is deleted
    before = bucket.objects[repository_snapshot_key("app")]

    sweep(adapters)  # deletes

    assert counting.snapshot_writes == 4
    assert bucket.objects[repository_snapshot_key("app")] != before
    kept = {repo.repository_name: repo for repo in load_swept_registry(bucket).snapshot.repositories}
    assert {image.image_digest for image in kept["app"].image_details} == set(registry.digests("app"))


def test_an_unchanged_snapshot_read_long_ago_is_rewritten_with_its_new_read_time() -> None:
    registry, bucket = seeded()
    counting = CountingWrites(bucket)
    adapters = adapters_of(registry, counting)
    sweep(adapters)
    later = dataclasses.replace(adapters, clock=lambda: NOW + SNAPSHOT_REWRITTEN_AFTER + timedelta(seconds=1))

    sweep(later, dry_run=True)

    assert counting.snapshot_writes == 4
    assert set(load_swept_registry(bucket).read_at.values()) == {NOW + SNAPSHOT_REWRITTEN_AFTER + timedelta(seconds=1)}


def test_a_stored_snapshot_that_cannot_be_read_is_rewritten() -> None:
    registry, bucket = seeded()
    counting = CountingWrites(bucket)
    adapters = adapters_of(registry, counting)
    sweep(adapters)
    bucket.objects[repository_snapshot_key("app")] = b"{not json"

    sweep(adapters)

    assert counting.snapshot_writes == 3
    assert [repo.repository_name for repo in load_swept_registry(bucket).snapshot.repositories] == ["app", "team-a/api"]


def test_an_unchanged_snapshot_is_rewritten_well_before_the_bucket_expires_it() -> None:
    assert timedelta(days=SNAPSHOT_RETENTION_DAYS) >= 2 * SNAPSHOT_REWRITTEN_AFTER
