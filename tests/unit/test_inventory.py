"""In-use manifests are safety inputs: read strictly, and every file that cannot be read is named."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ecr_retention.domain.errors import describe_validation_error
from ecr_retention.domain.inventory import InUseManifest

DIGEST = "sha256:" + "a" * 64


def entry(**fields: Any) -> dict[str, Any]:
    return {
        "image": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:1.0",
        "digest": DIGEST,
        "namespace": "prod",
        "workload": "Deployment/app",
        "container": "app",
        "source": "pod",
        **fields,
    }


def manifest(**fields: Any) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "cluster": "prod",
        "generatedAt": "2026-11-30T05:00:00Z",
        "complete": True,
        "images": [entry()],
        **fields,
    }


def problem_of(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        InUseManifest.model_validate(data)
    return describe_validation_error(caught.value, InUseManifest)


def test_manifest_reads_every_field() -> None:
    read = InUseManifest.model_validate(manifest(generatedAt=1796014800))
    assert (read.cluster, read.complete, read.images[0].digest) == ("prod", True, DIGEST)


def test_manifest_without_images_is_an_error_not_an_empty_list() -> None:
    data = manifest()
    del data["images"]
    assert problem_of(data) == "images: required but missing"


def test_manifest_with_an_empty_images_list_is_valid() -> None:
    assert InUseManifest.model_validate(manifest(images=[])).images == ()


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"complete": "true"}, "complete: should be a boolean, not a string"),
        ({"complete": 1}, "complete: should be a boolean, not a number"),
        ({"schemaVersion": "1"}, "schemaVersion: should be a whole number, not a string"),
        ({"schemaVersion": True}, "schemaVersion: should be a whole number, not a boolean"),
        ({"schemaVersion": 1.0}, "schemaVersion: should be a whole number, not a number"),
        ({"schemaVersion": 2}, "schemaVersion: unsupported schemaVersion 2; this release reads 1"),
        ({"cluster": 7}, "cluster: should be a string, not a number"),
        ({"images": {"image": "nginx"}}, "images: should be a list, not an object"),
        ({"images": [entry(namespace=5)]}, "images[0].namespace: should be a string, not a number"),
        ({"images": [entry(image=None)]}, "images[0].image: should be a string, not null"),
        ({"images": [entry(digest=12)]}, "images[0].digest: should be a string, not a number"),
        ({"images": [entry(source="Pod")]}, "images[0].source"),
        ({"generatedAt": True}, "generatedAt: invalid timestamp True"),
    ],
)
def test_manifest_fields_are_not_coerced(fields: dict[str, Any], expected: str) -> None:
    assert problem_of(manifest(**fields)).startswith(expected)
