"""`plan --bucket` of a deployment that prunes several Regions, without --region: the kept snapshots grouped by
their registry (account, Region), one registry each, never merged into one (services/swept.py)."""

from __future__ import annotations

import json

from ecr_retention.layout import repository_snapshot_key
from ecr_retention.services.swept import load_swept_registries
from support.builders import ACCOUNT, NOW, image, repository
from support.fakes import MemoryBucket


def kept(bucket: MemoryBucket, region: str, name: str, other_region: str | None) -> None:
    swept = {
        "registryId": ACCOUNT,
        "region": region,
        "readAt": NOW.isoformat(),
        "runId": "r",
        "repositories": [repository(name, image(f"{region}{name}", "v1"))],
    }
    bucket.write(repository_snapshot_key(name, other_region), json.dumps(swept).encode())


def test_the_kept_snapshots_of_two_regions_are_two_registries() -> None:
    bucket = MemoryBucket(name="inventory")
    kept(bucket, "eu-west-1", "app", None)
    kept(bucket, "us-east-1", "app", "us-east-1")
    kept(bucket, "us-east-1", "edge", "us-east-1")

    registries = load_swept_registries(bucket)

    planned = [(r.snapshot.region, [repo.repository_name for repo in r.snapshot.repositories]) for r in registries]
    assert planned == [("eu-west-1", ["app"]), ("us-east-1", ["app", "edge"])]
    assert [sorted(r.read_at) for r in registries] == [["app"], ["app", "edge"]]


def test_the_kept_snapshots_of_one_region_are_one_registry() -> None:
    bucket = MemoryBucket(name="inventory")
    kept(bucket, "eu-west-1", "app", None)
    kept(bucket, "eu-west-1", "web", None)

    (registry,) = load_swept_registries(bucket)

    assert (registry.snapshot.region, len(registry.snapshot.repositories)) == ("eu-west-1", 2)
