"""describe-images shapes: timestamps in every form AWS tools write, and snapshots that cannot be right."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from ecr_retention.domain.registry import ImageDetail, Snapshot

DIGEST = "sha256:" + "b" * 64


def detail(**fields: Any) -> ImageDetail:
    return ImageDetail.model_validate({"imageDigest": DIGEST, "imagePushedAt": "2026-01-01T00:00:00Z", **fields})


@pytest.mark.parametrize(
    "pushed",
    ["2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000+00:00", 1767225600, 1767225600.0],
)
def test_timestamps_with_any_offset_or_epoch_seconds_are_held_as_utc(pushed: object) -> None:
    assert detail(imagePushedAt=pushed).image_pushed_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_timestamp_without_offset_is_rejected() -> None:
    with pytest.raises(ValidationError, match="no UTC offset"):
        detail(imagePushedAt="2026-01-01T00:00:00")


def test_null_tags_mean_untagged_and_unknown_aws_fields_are_ignored() -> None:
    image = detail(imageTags=None, imageScanFindingsSummary={"findingSeverityCounts": {}})
    assert image.image_tags == ()


def test_last_activity_is_the_last_pull_or_the_push() -> None:
    assert detail().last_activity == datetime(2026, 1, 1, tzinfo=UTC)
    pulled = detail(lastRecordedPullTime="2026-02-01T00:00:00Z")
    assert pulled.last_activity == datetime(2026, 2, 1, tzinfo=UTC)


def test_invalid_digest_is_rejected() -> None:
    with pytest.raises(ValidationError, match="imageDigest"):
        ImageDetail.model_validate({"imageDigest": "latest", "imagePushedAt": 0})


def test_digest_twice_in_a_repository_is_rejected() -> None:
    image = {"imageDigest": DIGEST, "imagePushedAt": 0}
    with pytest.raises(ValidationError, match="appears twice"):
        Snapshot.model_validate({"repositories": [{"repositoryName": "app", "imageDetails": [image, image]}]})


def test_repository_twice_is_rejected() -> None:
    with pytest.raises(ValidationError, match="repository app appears twice"):
        Snapshot.model_validate({"repositories": [{"repositoryName": "app"}, {"repositoryName": "app"}]})


def test_registry_id_comes_from_image_details_when_absent() -> None:
    image = {"imageDigest": DIGEST, "imagePushedAt": 0, "registryId": "123456789012"}
    snapshot = Snapshot.model_validate({"repositories": [{"repositoryName": "app", "imageDetails": [image]}]})
    assert snapshot.effective_registry_id == "123456789012"


def test_index_manifest_children_must_name_digests() -> None:
    bad = {"repositoryName": "app", "manifests": {DIGEST: {"manifests": [{"size": 1}]}}}
    with pytest.raises(ValidationError, match="must be a list of objects with a digest"):
        Snapshot.model_validate({"repositories": [bad]})


@pytest.mark.parametrize("pushed", [1e20, -1e20, "0001-01-01T00:00:00+01:00"])
def test_timestamps_out_of_range_are_a_validation_error_not_a_crash(pushed: object) -> None:
    with pytest.raises(ValidationError, match="out of range"):
        detail(imagePushedAt=pushed)
