"""A kept snapshot's comparison read (services/swept.py) that fails is a reason to write the snapshot, not to skip it:
a review would otherwise read an older one."""

from __future__ import annotations

from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import RepositorySnapshot
from ecr_retention.layout import repository_snapshot_key
from ecr_retention.ports import StorageUnavailable
from ecr_retention.services.swept import keep_snapshot
from support.builders import NOW
from support.fakes import MemoryBucket


class UnreadableBucket(MemoryBucket):
    """Every GET fails (after the client's retries); PUTs work."""

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        raise StorageUnavailable(f"s3://{self.name}/{key}: GetObject failed: SlowDown")


def test_a_failed_comparison_read_still_writes_the_snapshot() -> None:
    bucket = UnreadableBucket(name="inventory")
    snapshot = RepositorySnapshot(repository_name="app", image_details=())

    warnings = keep_snapshot(bucket, "run-1", snapshot, NOW, registry=RegistryCoordinates("123456789012", "eu-west-1"))

    assert warnings == ()
    assert repository_snapshot_key("app") in bucket.list_objects(repository_snapshot_key("app"))
