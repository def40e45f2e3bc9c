"""The kept snapshots of a deployment that prunes several Regions: a review plans one Region's registry, named with
--region; without it, one clear line lists the Regions (services/swept.py)."""

from __future__ import annotations

import json

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.layout import repository_snapshot_key
from ecr_retention.services.swept import load_swept_registry
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
