"""Whether an evaluation's kept snapshot is stored already (services/swept.py `_kept_as_it_is`) is told from the stored
bytes when they are the very bytes it would write but for when and by which run it was read, and by reading the object
as a snapshot otherwise. Either way the answer is the one the reading as a snapshot gives (`as_a_snapshot` below, the
comparison as it was before): the same objects rewritten, the same left as they are."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.domain.registry.swept import SweptRepository
from ecr_retention.layout import repository_snapshot_key
from ecr_retention.services.swept import (
    SNAPSHOT_REWRITTEN_AFTER,
    WrittenSnapshot,
    _fields,
    _kept_as_it_is,
    keep_snapshot,
    read_swept,
)
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryBucket

KEY = repository_snapshot_key("team-a/api")
REPLICATED = ReplicationConfiguration.model_validate(
    {"rules": [{"destinations": [{"region": "us-east-1", "registryId": ACCOUNT}]}]}
)


def snapshot() -> RepositorySnapshot:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    child = registry.add_image("team-a/api", pushed_at=NOW - timedelta(days=3), seed="child")
    registry.add_index("team-a/api", [child], tags=["v2", "latest"], pushed_at=NOW - timedelta(days=2))
    registry.add_image("team-a/api", tags=["v1"], pushed_at=NOW - timedelta(days=40), seed="old")
    registry.archive("team-a/api", child, NOW - timedelta(days=1))
    images = registry.describe_images("team-a/api")
    pulled = images[-1].model_copy(update={"last_recorded_pull_time": NOW - timedelta(hours=5, microseconds=7)})
    index = next(image for image in images if image.image_tags)
    return RepositorySnapshot(
        repository_name="team-a/api",
        image_details=(*images[:-1], pulled),
        manifests={index.image_digest: json.loads(registry.repositories["team-a/api"][index.image_digest].manifest)},
    )


def swept(read_at: datetime, run_id: str, *, problem: str | None = None) -> SweptRepository:
    return SweptRepository(
        registry_id=ACCOUNT,
        region=REGION,
        replication=None if problem else REPLICATED,
        replication_problem=problem,
        read_at=read_at,
        run_id=run_id,
        repositories=(snapshot(),),
    )


def as_a_snapshot(bucket: MemoryBucket, key: str, fresh: SweptRepository) -> bool:
    """The comparison as it was: the stored object read as a snapshot, then written as this one would be."""
    found = bucket.objects.get(key)
    if found is None:
        return False
    try:
        kept = read_swept(f"s3://{bucket.name}/{key}", found)
    except InputError:
        return False
    if fresh.read_at - kept.read_at >= SNAPSHOT_REWRITTEN_AFTER:
        return False
    rewritten = kept.model_copy(update={"read_at": fresh.read_at, "run_id": fresh.run_id})
    return json.dumps(_fields(rewritten)).encode() == json.dumps(_fields(fresh)).encode()


def written(earlier: SweptRepository) -> bytes:
    return json.dumps(_fields(earlier)).encode()


def edited(earlier: SweptRepository, **changes: Any) -> bytes:
    fields = _fields(earlier)
    fields.update(changes)
    return json.dumps(fields).encode()


STORED = {
    "as written an hour before": lambda: written(swept(NOW - timedelta(hours=1), "earlier")),
    "as written just under a week before": lambda: written(
        swept(NOW - SNAPSHOT_REWRITTEN_AFTER + timedelta(microseconds=1), "earlier")
    ),
    "as written a week before": lambda: written(swept(NOW - SNAPSHOT_REWRITTEN_AFTER, "earlier")),
    "as written, another writer's indentation and key order": lambda: json.dumps(
        _fields(swept(NOW - timedelta(hours=1), "earlier")), indent=2, sort_keys=True
    ).encode(),
    "read at in another offset's form": lambda: edited(
        swept(NOW - timedelta(hours=1), "earlier"), readAt=(NOW - timedelta(hours=1)).isoformat()
    ),
    "read at a time no tool writes": lambda: edited(swept(NOW - timedelta(hours=1), "earlier"), readAt="yesterday"),
    "read at missing": lambda: json.dumps(
        {k: v for k, v in _fields(swept(NOW - timedelta(hours=1), "earlier")).items() if k != "readAt"}
    ).encode(),
    "a run id that is a number": lambda: edited(swept(NOW - timedelta(hours=1), "earlier"), runId=7),
    "another replication": lambda: written(swept(NOW - timedelta(hours=1), "earlier", problem="AccessDenied")),
    "an image fewer": lambda: edited(
        swept(NOW - timedelta(hours=1), "earlier"),
        repositories=[
            {
                **_fields(swept(NOW, "x"))["repositories"][0],
                "imageDetails": _fields(swept(NOW, "x"))["repositories"][0]["imageDetails"][1:],
            }
        ],
    ),
    "a key written twice": lambda: written(swept(NOW - timedelta(hours=1), "earlier"))[:-1] + b', "runId": "again"}',
    "no JSON": lambda: b"{not json",
    "JSON but no object": lambda: b"[]",
}


@pytest.mark.parametrize("stored", sorted(STORED))
def test_the_stored_snapshot_is_kept_or_rewritten_as_reading_it_as_a_snapshot_decides(stored: str) -> None:
    bucket = MemoryBucket()
    bucket.objects[KEY] = STORED[stored]()
    fresh = swept(NOW, "this-run")

    assert _kept_as_it_is(bucket, KEY, fresh, WrittenSnapshot.of(fresh)) == as_a_snapshot(bucket, KEY, fresh)


def test_a_snapshot_stored_by_another_writer_in_another_form_is_not_rewritten() -> None:
    bucket = MemoryBucket()
    earlier = swept(NOW - timedelta(hours=1), "earlier")
    bucket.objects[KEY] = json.dumps(_fields(earlier), indent=2, sort_keys=True).encode()
    before = bucket.objects[KEY]

    warnings = keep_snapshot(
        bucket, "this-run", snapshot(), NOW, registry=RegistryCoordinates(ACCOUNT, REGION, REPLICATED)
    )

    assert warnings == ()
    assert bucket.objects[KEY] == before


def test_a_snapshot_rewritten_is_written_as_before() -> None:
    bucket = MemoryBucket()
    coordinates = RegistryCoordinates(ACCOUNT, REGION, REPLICATED)

    keep_snapshot(bucket, "this-run", snapshot(), NOW, registry=coordinates)

    assert (
        bucket.objects[KEY]
        == json.dumps(swept(NOW, "this-run").model_dump(mode="json", by_alias=True, exclude_none=True)).encode()
    )
    assert read_swept("s3://inventory/" + KEY, bucket.objects[KEY]).repositories[0].image_details == tuple(
        ImageDetail.model_validate(image.model_dump(mode="json", by_alias=True)) for image in snapshot().image_details
    )
