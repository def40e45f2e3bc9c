"""The test support the pipeline's tests rely on: moto made faithful (ecr_retention_dev.emulator) and the API-call
recorder (support.api_calls). What the adapter tests already prove about it is not repeated here."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto.ecr.responses import ECRResponse
from moto.server import ThreadedMotoServer

from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.manifests import sha256_digest
from ecr_retention_dev.emulator.seeding import MotoEcr, iter_details
from support.api_calls import ApiCallRecorder, is_mutating

from .conftest import REGION

REPO = "team-b/worker"


@pytest.fixture
def server() -> Iterator[str]:
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        moto.stop()


def test_seeding_and_fidelity_work_against_a_threaded_moto_server(server: str) -> None:
    client = boto3.client("ecr", region_name=REGION, endpoint_url=server)
    with EcrFidelity() as fidelity:
        seed = MotoEcr(client)
        seed.create_repository(REPO)
        index = seed.push_index(REPO, "v1", pushed_at=datetime(2025, 1, 2, tzinfo=UTC))
        seed.archive(REPO, index.children[1].digest, datetime(2026, 1, 1, tzinfo=UTC))

        pages = list(
            client.get_paginator("describe_images").paginate(
                repositoryName=REPO, filter={"imageStatus": "ANY"}, PaginationConfig={"PageSize": 2}
            )
        )
        deleted = client.batch_delete_image(repositoryName=REPO, imageIds=[{"imageDigest": index.children[0].digest}])

    details = {detail["imageDigest"]: detail for page in pages for detail in page["imageDetails"]}
    assert [len(page["imageDetails"]) for page in pages] == [2, 1]
    assert details[index.digest]["imagePushedAt"] == datetime(2025, 1, 2, tzinfo=UTC)
    assert details[index.children[1].digest]["imageStatus"] == "ARCHIVED"
    assert deleted["failures"][0]["failureCode"] == "ImageReferencedByManifestList"
    assert fidelity.served["DescribeImages"] == 2


def test_list_images_pages_and_filters(fidelity: EcrFidelity, seed: MotoEcr) -> None:
    seed.create_repository(REPO)
    tagged = seed.push_image(REPO, "v1", "latest")
    untagged = seed.push_image(REPO)
    archived = seed.push_image(REPO, "v0")
    seed.archive(REPO, archived.digest, datetime(2026, 1, 1, tzinfo=UTC))

    def listed(**request: Any) -> list[dict[str, str]]:
        pages = seed.client.get_paginator("list_images").paginate(repositoryName=REPO, **request)
        return [image_id for page in pages for image_id in page["imageIds"]]

    assert listed(PaginationConfig={"PageSize": 1}) == [
        {"imageDigest": tagged.digest, "imageTag": "v1"},
        {"imageDigest": tagged.digest, "imageTag": "latest"},
        {"imageDigest": untagged.digest},
    ]
    assert listed(filter={"tagStatus": "UNTAGGED"}) == [{"imageDigest": untagged.digest}]
    assert listed(filter={"imageStatus": "ARCHIVED"}) == [{"imageDigest": archived.digest, "imageTag": "v0"}]


def test_pushed_digests_are_sha256_of_the_manifest_text(fidelity: EcrFidelity, seed: MotoEcr) -> None:
    seed.create_repository(REPO)
    index = seed.push_index(REPO, "v1", docker=True)
    signature = seed.push_signature(REPO, index)

    details = {detail["imageDigest"]: detail for detail in iter_details(seed.client, REPO)}

    for pushed in (index.index, *index.children, signature):
        assert pushed.digest == sha256_digest(pushed.manifest)
        assert pushed.digest in details
    assert details[signature.digest]["imageTags"] == [index.digest.replace(":", "-") + ".sig"]


def test_batch_calls_over_100_ids_are_refused_as_ecr_does(fidelity: EcrFidelity, seed: MotoEcr) -> None:
    seed.create_repository(REPO)
    ids = [{"imageDigest": "sha256:" + f"{number:064x}"} for number in range(101)]

    for call in (seed.client.batch_delete_image, seed.client.batch_get_image, seed.client.describe_images):
        with pytest.raises(seed.client.exceptions.InvalidParameterException, match="less than or equal to 100"):
            call(repositoryName=REPO, imageIds=ids)


def test_fidelity_is_undone_after_the_block() -> None:
    with EcrFidelity():
        assert hasattr(ECRResponse, "update_image_storage_class")
    assert not hasattr(ECRResponse, "update_image_storage_class")


def test_recorder_counts_pages_and_tells_mutating_calls(fidelity: EcrFidelity, seed: MotoEcr) -> None:
    seed.create_repository(REPO)
    seed.seed_images(REPO, 5)
    recorder = ApiCallRecorder()
    client = recorder.attach(boto3.client("ecr", region_name=REGION))

    list(client.get_paginator("describe_images").paginate(repositoryName=REPO, PaginationConfig={"PageSize": 2}))
    assert recorder.mutating("ecr") == []
    client.put_image_tag_mutability(repositoryName=REPO, imageTagMutability="IMMUTABLE")

    assert recorder.counts("ecr") == {"DescribeImages": 3, "PutImageTagMutability": 1}
    assert [call.operation for call in recorder.mutating()] == ["PutImageTagMutability"]
    assert recorder.of("DescribeImages")[1].params["nextToken"]


@pytest.mark.parametrize(
    ("operation", "mutating"),
    [
        ("DescribeImages", False),
        ("BatchGetImage", False),
        ("GetLifecyclePolicy", False),
        ("ListObjectsV2", False),
        ("HeadObject", False),
        ("BatchDeleteImage", True),
        ("PutImage", True),
        ("UpdateImageStorageClass", True),
        ("PutObject", True),
        ("Publish", True),
        ("StartExecution", True),
    ],
)
def test_operations_are_mutating_unless_they_only_read(operation: str, mutating: bool) -> None:
    assert is_mutating(operation) is mutating
