"""What an evaluation reads of holds/ (services/evaluate_step.py, services/inventory.py): its own repository's holds and those
of the same repository in each replica its deletions reach (a hold there keeps the image here, docs/holds.md); and a
batch, which reads the inventory once for up to 50 repositories, reads the holds of a later repository again right
before it removes anything, so that a hold placed meanwhile keeps its image (docs/safety.md invariants 36 and 37)."""

from __future__ import annotations

from typing import Any

from ecr_retention.domain.holds.stored import Hold, hold_json
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.layout import HOLDS_PREFIX
from ecr_retention.ports import StorageUnavailable
from ecr_retention.services.evaluate_step import run_work_batch
from ecr_retention.services.report_step import finish_run
from support.builders import ACCOUNT, replication_rule
from tests.support.holds import a_hold
from tests.unit.services.test_batch_reads_the_inventory_once import held_release
from tests.unit.services.test_run_and_report import rules, run_workflow, seeded
from tests.unit.services.test_work_batches_run import adapters_of, batches_of


class HoldPlacedAfterListing:
    """The fake bucket; right after its `after`-th listing of holds/, someone places `hold` (written as `hold add`
    writes it); the listing numbered `fail` (if any) fails as S3 would."""

    def __init__(self, bucket: Any, hold: Hold | None = None, *, after: int = 1, fail: int | None = None) -> None:
        self.bucket = bucket
        self.hold = hold
        self.after = after
        self.fail = fail
        self.holds_listings = 0
        self.listed: list[str] = []  # the prefixes under holds/ listed, in order

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bucket, name)

    def place(self) -> None:
        assert self.hold is not None
        self.bucket.objects[self.hold.image.key] = hold_json(self.hold)

    def list_objects(self, prefix: str) -> dict[str, int]:
        if not prefix.startswith(HOLDS_PREFIX):
            return dict(self.bucket.list_objects(prefix))
        self.holds_listings += 1
        self.listed.append(prefix)
        if self.holds_listings == self.fail:
            raise StorageUnavailable(f"s3://inventory/{prefix}: SlowDown")
        listed = dict(self.bucket.list_objects(prefix))
        if self.hold is not None and self.holds_listings == self.after:
            self.place()
        return listed


def replicating(delete: bool) -> ReplicationConfiguration:
    return ReplicationConfiguration.model_validate({"rules": [replication_rule(("us-east-1", ACCOUNT), delete=delete)]})


def test_a_hold_in_a_replica_the_deletions_reach_keeps_the_image_an_evaluation_deletes_otherwise() -> None:
    registry, bucket = seeded()
    registry.replication = replicating(delete=True)
    held = held_release(registry, "team-a/api", "v2").model_copy(update={"region": "us-east-1"})
    bucket.objects[held.image.key] = hold_json(held)

    _, report = run_workflow(rules(False), adapters_of(registry, bucket))

    assert held.digest in registry.digests("team-a/api")
    [api] = [repo for repo in report.repositories if repo.repository_name == "team-a/api"]
    assert api.deleted
    assert held.digest not in {image.image_digest for image in api.deleted}
    [kept] = [image for image in api.kept_images if image.image_digest == held.digest]
    assert (kept.kind, kept.detail.split(" by ")[0]) == ("hold", "held in us-east-1 (a deletion here reaches it)")


def test_a_hold_in_a_replica_without_delete_replication_keeps_nothing_in_the_source() -> None:
    registry, bucket = seeded()
    registry.replication = replicating(delete=False)
    held = held_release(registry, "team-a/api", "v2").model_copy(update={"region": "us-east-1"})
    bucket.objects[held.image.key] = hold_json(held)

    run_workflow(rules(False), adapters_of(registry, bucket))

    assert held.digest not in registry.digests("team-a/api")


def test_a_batch_reads_the_holds_of_the_replicas_its_repositories_deletions_reach() -> None:
    registry, bucket = seeded()
    registry.replication = replicating(delete=True)
    held = held_release(registry, "team-a/api", "v2").model_copy(update={"region": "us-east-1"})
    bucket.objects[held.image.key] = hold_json(held)
    adapters = adapters_of(registry, bucket)
    _, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert held.digest in registry.digests("team-a/api")


def test_a_hold_placed_after_the_batchs_reading_keeps_the_image_a_later_repository_deletes_otherwise() -> None:
    registry, bucket = seeded()
    held = held_release(registry, "team-a/api", "v2")  # the rules delete it otherwise
    placing = HoldPlacedAfterListing(bucket, held)
    adapters = adapters_of(registry, placing)
    start, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert batch.repositories == ("app", "team-a/api")
    assert placing.listed == ["holds/", "holds/eu-west-1/team-a/api/"]  # the batch's, then team-a/api's own
    assert held.digest in registry.digests("team-a/api")
    assert len(registry.digests("team-a/api")) == 2  # v5 (newest) and the held v2; the rest deleted as planned
    [api] = [r for r in finish_run(adapters, start, rules(False)).repositories if r.repository_name == "team-a/api"]
    [kept] = [image for image in api.kept_images if image.image_digest == held.digest]
    assert kept.kind == "hold"


def test_a_hold_placed_in_a_reached_replica_after_the_batchs_reading_keeps_the_sources_image() -> None:
    registry, bucket = seeded()
    registry.replication = replicating(delete=True)
    held = held_release(registry, "team-a/api", "v2").model_copy(update={"region": "us-east-1"})
    placing = HoldPlacedAfterListing(bucket, held)
    adapters = adapters_of(registry, placing)
    _, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert held.digest in registry.digests("team-a/api")
    assert placing.listed[1:] == ["holds/eu-west-1/team-a/api/", "holds/us-east-1/team-a/api/"]


class ObjectPlacedAfterListing(HoldPlacedAfterListing):
    """As HoldPlacedAfterListing, placing an object that is no hold, at a key that names no image."""

    def __init__(self, bucket: Any, key: str) -> None:
        super().__init__(bucket, a_hold("any", "x"))
        self.key = key

    def place(self) -> None:
        self.bucket.objects[self.key] = b"{"


def test_an_unreadable_object_placed_under_a_later_repositorys_prefix_blocks_its_removals() -> None:
    registry, bucket = seeded()
    before = registry.digests("team-a/api")
    adapters = adapters_of(registry, ObjectPlacedAfterListing(bucket, "holds/eu-west-1/team-a/api/notes.json"))
    start, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert registry.digests("team-a/api") == before
    [api] = [r for r in finish_run(adapters, start, rules(False)).repositories if r.repository_name == "team-a/api"]
    assert any("notes.json: unreadable hold" in blocked for blocked in api.blocked)


def test_holds_that_cannot_be_read_again_fail_that_repository_alone_and_it_deletes_nothing() -> None:
    registry, bucket = seeded()
    before = registry.digests("team-a/api")
    failing = HoldPlacedAfterListing(bucket, fail=2)
    adapters = adapters_of(registry, failing)
    start, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert registry.digests("team-a/api") == before
    assert len(registry.digests("app")) == 2  # the first repository acted on the batch's fresh reading
    report = finish_run(adapters, start, rules(False))
    assert [(r.repository_name, r.outcome, r.error) for r in report.repositories] == [
        ("app", "ok", None),
        (
            "team-a/api",
            "failed",
            "StorageUnavailable: its holds could not be read again before acting, so nothing was done: "
            "s3://inventory/holds/eu-west-1/team-a/api/: SlowDown",
        ),
    ]


def test_the_first_repository_of_a_batch_and_a_dry_run_read_the_holds_once() -> None:
    registry, bucket = seeded()
    counting = HoldPlacedAfterListing(bucket)
    adapters = adapters_of(registry, counting)
    _, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch.model_copy(update={"repositories": ("app",)}))
    run_work_batch(rules(True), adapters, batch.model_copy(update={"dry_run": True}))

    assert counting.holds_listings == 2  # one per batch: neither re-read


def test_unchanged_holds_leave_a_later_repositorys_plan_as_the_batchs_reading_made_it() -> None:
    one_by_one_registry, one_by_one_bucket = seeded()
    one_held = a_hold("app", "x")  # a hold on an image no repository has: read, and changes nothing
    one_by_one_bucket.objects[one_held.image.key] = hold_json(one_held)
    run_workflow(rules(False), adapters_of(one_by_one_registry, one_by_one_bucket))
    registry, bucket = seeded()
    bucket.objects[one_held.image.key] = hold_json(one_held)
    adapters = adapters_of(registry, bucket)
    _, [batch] = batches_of(adapters)

    run_work_batch(rules(False), adapters, batch)

    assert {name: registry.digests(name) for name in registry.repositories} == {
        name: one_by_one_registry.digests(name) for name in one_by_one_registry.repositories
    }
