"""The manifest cache in the bucket (`manifests/<digest>.json`, services/snapshot.py BucketManifestCache) is untrusted:
an entry is used only when the sha256 of its exact bytes is the digest in its key. A planted entry that leaves out a
child, or one too large to be a manifest ECR served, is a miss: the evaluation reads the index from ECR again, the
warning names the key, and nothing stops."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest

from ecr_retention.ports import StorageUnavailable
from ecr_retention.services.snapshot import MAX_MANIFEST_BYTES, BucketManifestCache, snapshot_repository
from support.fakes import FakeRegistry, MemoryBucket

PUSHED = datetime(2026, 11, 1, tzinfo=UTC)


def multi_arch() -> tuple[FakeRegistry, str, list[str]]:
    registry = FakeRegistry()
    children = [registry.add_image("app", pushed_at=PUSHED, seed=arch) for arch in ("amd64", "arm64")]
    index = registry.add_index("app", children, tags=("v1",), pushed_at=PUSHED)
    return registry, index, children


def test_a_planted_cache_entry_that_hides_a_child_is_not_used_and_the_warning_names_its_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given whoever could write manifests/ planted, under the index's digest, an index that lists only one child
    registry, index, children = multi_arch()
    bucket = MemoryBucket()
    planted = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}
    planted["manifests"] = [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": children[0]}]
    key = f"manifests/{index}.json"
    bucket.objects[key] = json.dumps(planted).encode()
    # When the evaluation snapshots the repository
    with caplog.at_level(logging.WARNING):
        snapshot = snapshot_repository(registry, "app", BucketManifestCache(bucket))
    # Then the index's children are ECR's, both of them, read with BatchGetImage as on a miss
    listed = [child["digest"] for child in snapshot.manifests[index]["manifests"]]
    assert listed == children
    assert registry.count("get_manifests") == 1
    # And the warning names the entry; the cache now holds ECR's text
    assert any(key in record.getMessage() and "sha256" in record.getMessage() for record in caplog.records)
    assert bucket.objects[key] == registry.repositories["app"][index].manifest.encode()


def test_a_cache_entry_too_large_for_a_manifest_is_a_miss_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    # Given a planted entry over ECR's 4 MiB manifest limit (today: InputError, and the evaluation or the sentinel stops)
    registry, index, children = multi_arch()
    bucket = MemoryBucket()
    key = f"manifests/{index}.json"
    bucket.objects[key] = b" " * (MAX_MANIFEST_BYTES + 1)
    with caplog.at_level(logging.WARNING):
        snapshot = snapshot_repository(registry, "app", BucketManifestCache(bucket))
    assert [child["digest"] for child in snapshot.manifests[index]["manifests"]] == children
    assert any(key in record.getMessage() for record in caplog.records)


def test_a_genuine_cache_entry_saves_the_call_to_ecr() -> None:
    registry, index, children = multi_arch()
    bucket = MemoryBucket()
    bucket.objects[f"manifests/{index}.json"] = registry.repositories["app"][index].manifest.encode()
    snapshot = snapshot_repository(registry, "app", BucketManifestCache(bucket))
    assert [child["digest"] for child in snapshot.manifests[index]["manifests"]] == children
    assert registry.count("get_manifests") == 0


class RefusingBucket(MemoryBucket):
    """The bucket as an operator's `ecr-retention run` meets it: the bucket policy refuses writes to manifests/."""

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        raise StorageUnavailable(f"PutObject s3://{self.name}/{key}: AccessDenied")


def test_a_cache_the_bucket_policy_refuses_to_write_is_a_warning_and_the_snapshot_is_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry, index, children = multi_arch()
    with caplog.at_level(logging.WARNING):
        snapshot = snapshot_repository(registry, "app", BucketManifestCache(RefusingBucket()))
    assert [child["digest"] for child in snapshot.manifests[index]["manifests"]] == children
    assert any("AccessDenied" in record.getMessage() for record in caplog.records)
