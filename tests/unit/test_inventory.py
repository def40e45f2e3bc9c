"""In-use manifests are safety inputs: read strictly, and every file that cannot be read is named."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from ecr_retention.domain.errors import InputError, describe_validation_error
from ecr_retention.domain.inventory.manifest import InUseManifest, read_inventory

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


# --- read_inventory: one rule for the CLI directory and the S3 prefix ------------------------------


def document(source: str, **fields: Any) -> tuple[str, bytes]:
    return source, json.dumps(manifest(**fields)).encode()


def test_readable_manifests_stand_for_the_cluster_their_file_names() -> None:
    inventory = read_inventory([document("in-use/prod.json"), document("in-use/dev.json", cluster="dev")])
    assert sorted(m.cluster for m in inventory.manifests) == ["dev", "prod"]
    assert inventory.problems == {}
    assert inventory.misfiled == {}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            b'{"schemaVersion": 1,',
            "invalid JSON (line 1, column 21): Expecting property name enclosed in double quotes",
        ),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"[]", "an in-use manifest is a JSON object"),
        (json.dumps({k: v for k, v in manifest().items() if k != "images"}).encode(), "images: required but missing"),
        (json.dumps(manifest(complete="true")).encode(), "complete: should be a boolean, not a string"),
        (json.dumps(manifest(schemaVersion=2)).encode(), "schemaVersion: unsupported schemaVersion 2"),
        (
            json.dumps(manifest()).replace('"images"', '"images": [], "images"').encode(),
            "key 'images' appears twice in one object",
        ),
    ],
)
def test_an_unreadable_manifest_is_a_problem_named_by_its_file(raw: bytes, expected: str) -> None:
    inventory = read_inventory([("in-use/prod.json", raw), document("in-use/dev.json", cluster="dev")])
    assert list(inventory.problems) == ["in-use/prod.json"]
    assert inventory.problems["in-use/prod.json"].startswith(expected)
    assert [m.cluster for m in inventory.manifests] == ["dev"]


def test_a_document_its_reader_could_not_read_is_a_problem() -> None:
    too_large = InputError("in-use/prod.json: 70.0 MiB is larger than the 64 MiB limit for an in-use manifest")
    inventory = read_inventory([("in-use/prod.json", too_large)])
    assert inventory.problems == {"in-use/prod.json": "70.0 MiB is larger than the 64 MiB limit for an in-use manifest"}


def test_two_files_standing_for_one_cluster_make_the_second_a_problem() -> None:
    inventory = read_inventory([document("b/prod.json"), document("a/prod.json")])
    assert inventory.problems == {"b/prod.json": "cluster prod already has a manifest in a/prod.json"}
    assert len(inventory.manifests) == 1


def test_a_manifest_declaring_another_cluster_than_its_file_name_is_misfiled_but_kept() -> None:
    inventory = read_inventory([document("in-use/prod.json", cluster="staging")])
    assert inventory.manifests == ()
    assert [(source, m.cluster) for source, m in inventory.misfiled.items()] == [("in-use/prod.json", "staging")]
    assert [read.manifest.cluster for read in inventory.protecting] == ["staging"]
