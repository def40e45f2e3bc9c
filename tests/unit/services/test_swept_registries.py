"""`plan --bucket` of a deployment that prunes several Regions: without --region, the kept snapshots grouped by their
registry (account, Region), one registry each, never merged into one; a review of one registry (`diff`) names its
Region with --region, and without it one clear line lists the Regions (services/swept.py)."""

from __future__ import annotations

import json

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.layout import repository_snapshot_key
from ecr_retention.services.swept import load_swept_registries, load_swept_registry
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


def two_regions() -> MemoryBucket:
    bucket = MemoryBucket(name="inventory")
    kept(bucket, "eu-west-1", "app", None)
    kept(bucket, "us-east-1", "app", "us-east-1")
    kept(bucket, "us-east-1", "edge", "us-east-1")
    return bucket


def test_a_review_of_several_regions_names_one() -> None:
    with pytest.raises(InputError) as refused:
        load_swept_registry(two_regions())
    assert str(refused.value) == (
        "s3://inventory/snapshots/ holds the registries of several Regions (eu-west-1, us-east-1): name one with --region"
    )


def test_the_region_named_is_the_registry_planned() -> None:
    other = load_swept_registry(two_regions(), "us-east-1").snapshot
    home = load_swept_registry(two_regions(), "eu-west-1").snapshot

    assert (other.region, [r.repository_name for r in other.repositories]) == ("us-east-1", ["app", "edge"])
    assert (home.region, [r.repository_name for r in home.repositories]) == ("eu-west-1", ["app"])


def test_a_region_without_snapshots_is_one_clear_line() -> None:
    with pytest.raises(InputError, match=r"--region: s3://inventory/snapshots/ holds no snapshot of ap-south-1"):
        load_swept_registry(two_regions(), "ap-south-1")
