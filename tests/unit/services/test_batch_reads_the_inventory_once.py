"""A batch's invocation reads the in-use inventory once, on its first repository's evaluation, and shares it with
the others of the batch (services.evaluate_step.BatchInventory): what they decide is what one reading per repository decided;
a reading that fails fails one repository alone and the next reads again; nothing is kept across batches."""

from __future__ import annotations

from typing import Any

from ecr_retention.domain.holds.stored import hold_json
from ecr_retention.layout import HOLDS_PREFIX, IN_USE_MEMORY_KEY, IN_USE_PREFIX
from ecr_retention.ports import StorageUnavailable
from ecr_retention.services.evaluate_step import run_work_batch
from ecr_retention.services.report_step import finish_run
from tests.support.holds import a_hold
from tests.unit.services.test_run_and_report import rules, run_workflow, seeded
from tests.unit.services.test_work_batches_run import adapters_of, batches_of


class CountingListings:
    """The fake bucket, counting the listings of in-use/ and the reads of the memory; the first `failures` listings
    of in-use/ fail as S3 would."""

    def __init__(self, bucket: Any, failures: int = 0) -> None:
        self.bucket = bucket
        self.in_use_listings = 0
        self.holds_listings = 0
        self.memory_reads = 0
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bucket, name)

    def list_objects(self, prefix: str) -> dict[str, int]:
        self.holds_listings += prefix == HOLDS_PREFIX
        if prefix == IN_USE_PREFIX:
            self.in_use_listings += 1
            if self.failures:
                self.failures -= 1
                raise StorageUnavailable(f"s3://inventory/{prefix}: SlowDown")
        listed: dict[str, int] = self.bucket.list_objects(prefix)
        return listed

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        if key == IN_USE_MEMORY_KEY:
            self.memory_reads += 1
        body: bytes | None = self.bucket.read(key, max_bytes=max_bytes)
        return body


def test_a_batch_lists_the_in_use_manifests_once_and_decides_as_one_reading_per_repository_did() -> None:
    one_by_one_registry, one_by_one_bucket = seeded()
    _, one_by_one = run_workflow(rules(False), adapters_of(one_by_one_registry, one_by_one_bucket))
    registry, bucket = seeded()
    counting = CountingListings(bucket)
    adapters = adapters_of(registry, counting)
    start, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert len(batch.repositories) == 2
    assert (counting.in_use_listings, counting.holds_listings, counting.memory_reads) == (1, 1, 1)
    assert {name: registry.digests(name) for name in registry.repositories} == {
        name: one_by_one_registry.digests(name) for name in one_by_one_registry.repositories
    }
    assert finish_run(adapters, start, rules(False)).totals == one_by_one.totals


def test_an_inventory_that_cannot_be_read_fails_one_repository_and_the_next_reads_it_again() -> None:
    registry, bucket = seeded()
    counting = CountingListings(bucket, failures=1)
    adapters = adapters_of(registry, counting)
    start, [batch] = batches_of(adapters)

    reports = run_work_batch(rules(False), adapters, batch)

    # app's failed report names the error (services.evaluate_step._raised_in_batch).
    assert [(report.repository_name, report.outcome) for report in reports] == [("app", "failed"), ("team-a/api", "ok")]
    assert "StorageUnavailable" in (reports[0].error or "")
    assert counting.in_use_listings == 2
    report = finish_run(adapters, start, rules(False))
    assert [(r.repository_name, r.outcome) for r in report.repositories] == [("app", "failed"), ("team-a/api", "ok")]


def test_each_batch_reads_the_inventory_anew() -> None:
    registry, bucket = seeded()
    counting = CountingListings(bucket)
    adapters = adapters_of(registry, counting)
    _, [batch] = batches_of(adapters)
    first, second = (batch.model_copy(update={"repositories": (name,)}) for name in batch.repositories)

    run_work_batch(rules(False), adapters, first)
    run_work_batch(rules(False), adapters, second)

    assert counting.in_use_listings == 2


def held_release(registry: Any, repository: str, tag: str) -> Any:
    """A hold on the image `tag` names in `repository` (the seeded registry's releases are images of their own)."""
    [found] = [d for d, stored in registry.repositories[repository].items() if tag in stored.detail.image_tags]
    return a_hold(repository, tag).model_copy(update={"digest": found})


def test_a_batch_reads_the_holds_of_its_repositories_and_each_protects_its_own_image() -> None:
    one_by_one_registry, one_by_one_bucket = seeded()
    held = held_release(one_by_one_registry, "team-a/api", "v2")  # the rules delete it otherwise
    one_by_one_bucket.objects[held.image.key] = hold_json(held)
    run_workflow(rules(False), adapters_of(one_by_one_registry, one_by_one_bucket))
    registry, bucket = seeded()
    bucket.objects[held.image.key] = hold_json(held)
    counting = CountingListings(bucket)
    adapters = adapters_of(registry, counting)
    _, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert counting.holds_listings == 1
    assert held.digest in registry.digests("team-a/api")
    assert {name: registry.digests(name) for name in registry.repositories} == {
        name: one_by_one_registry.digests(name) for name in one_by_one_registry.repositories
    }
