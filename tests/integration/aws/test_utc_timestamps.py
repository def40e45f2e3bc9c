"""The clients the factory makes read an AWS answer's timestamps as aware UTC datetimes (clients.utc_timestamp): epoch
seconds straight into UTC, every other form as botocore reads it. The instant is botocore's own reading's, so the
images the adapter returns are the same values a default boto3 client's answer gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.utils import parse_timestamp

from ecr_retention.aws.clients import ClientFactory, utc_timestamp
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention_dev.emulator.seeding import MotoEcr

from .conftest import ACCOUNT, REGION


@pytest.mark.parametrize("seconds", [0, 1_764_482_400, 1_764_482_400.123456, 1_764_482_400.0000005, 2**31 + 0.5])
def test_epoch_seconds_are_read_as_the_same_instant_in_utc(seconds: float) -> None:
    read = utc_timestamp(seconds)

    assert read == parse_timestamp(seconds)
    assert read.tzinfo is UTC


@pytest.mark.parametrize("value", ["2026-11-30T06:00:00Z", "2026-11-30T06:00:00.000Z", "Sun, 30 Nov 2026 06:00:00 GMT"])
def test_other_forms_are_read_as_botocore_reads_them(value: str) -> None:
    assert utc_timestamp(value) == parse_timestamp(value)
    assert utc_timestamp(value).utcoffset() == timedelta(0)


@pytest.mark.parametrize("value", [1e20, True])
def test_what_cannot_be_read_in_utc_is_left_to_botocore(value: Any) -> None:
    try:
        expected: object = parse_timestamp(value)
    except Exception as error:
        with pytest.raises(type(error)):
            utc_timestamp(value)
    else:
        assert utc_timestamp(value) == expected


def test_the_images_of_an_answer_are_the_ones_a_default_client_reads(seed: MotoEcr, clients: ClientFactory) -> None:
    seed.create_repository("app")
    seed.seed_images("app", 3, newest=datetime(2026, 11, 30, 6, tzinfo=UTC))
    adapter = EcrRegistry(clients.client("ecr", REGION), ACCOUNT, REGION)
    default_client = boto3.client("ecr", region_name=REGION)
    answered = default_client.describe_images(repositoryName="app", filter={"imageStatus": "ANY"})["imageDetails"]

    images = adapter.describe_images("app")

    assert sorted(images, key=lambda image: image.image_digest) == sorted(
        (ImageDetail.model_validate(detail) for detail in answered), key=lambda image: image.image_digest
    )
    assert {image.image_pushed_at.tzinfo for image in images} == {UTC}
    raw = clients.client("ecr", REGION).describe_images(repositoryName="app")["imageDetails"]
    assert {detail["imagePushedAt"].tzinfo for detail in raw} == {UTC}
