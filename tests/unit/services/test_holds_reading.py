"""How a run reads holds/ (services/inventory.py): the report step, the sentinel and `run` read every hold; one
evaluation reads its repository's holds only, and every object whose key names no image (it may hold any, so it blocks
whoever reads it): one listing, no read of the other repositories' holds. The key names what a hold holds, so both
readings decide a repository alike."""

from __future__ import annotations

from dataclasses import dataclass, field

from ecr_retention.domain.holds.stored import hold_json
from ecr_retention.services.inventory import read_holds_from_bucket
from tests.support.builders import digest
from tests.support.fakes import MemoryBucket
from tests.support.holds import a_hold


@dataclass
class CountingBucket(MemoryBucket):
    reads: list[str] = field(default_factory=list)

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        self.reads.append(key)
        return super().read(key, max_bytes=max_bytes)


def bucket_with_holds() -> CountingBucket:
    bucket = CountingBucket()
    for held in (a_hold("app", "a"), a_hold("web", "b"), a_hold("app", "c", region="us-east-1")):
        bucket.objects[held.image.key] = hold_json(held)
    bucket.objects["holds/notes.json"] = b"{"
    return bucket


def test_an_evaluation_reads_its_repositorys_holds_and_every_key_that_names_no_image() -> None:
    bucket = bucket_with_holds()

    holds = read_holds_from_bucket(bucket, {("eu-west-1", "app")})

    assert [hold.digest for hold in holds.held] == [digest("a")]
    assert list(holds.unreadable) == ["s3://inventory/holds/notes.json"]
    assert sorted(bucket.reads) == [f"holds/eu-west-1/app/{digest('a')}.json", "holds/notes.json"]


def test_the_whole_run_reads_every_hold() -> None:
    holds = read_holds_from_bucket(bucket_with_holds())

    assert sorted(hold.repository for hold in holds.held) == ["app", "app", "web"]


def test_a_hold_stored_under_another_images_key_keeps_the_keys_image() -> None:
    bucket = CountingBucket()
    misplaced = a_hold("web", "b")
    key = f"holds/eu-west-1/app/{digest('a')}.json"
    bucket.objects[key] = hold_json(misplaced)

    holds = read_holds_from_bucket(bucket)
    [malformed] = holds.malformed

    assert [(image.repository, image.digest) for image in malformed.images] == [("app", digest("a"))]
    assert malformed.problem == f"stored at {key}, not at {misplaced.image.key}, the key of the image it names"
