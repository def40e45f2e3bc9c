"""A collection that could not read everything keeps protecting what the manifest it replaces named: the references
it did not read again are carried over, and the manifest stays `complete: false` (services.aws_inventory
carried_forward). A complete collection replaces the previous manifest whole."""

from __future__ import annotations

from datetime import timedelta

from ecr_retention.domain.inventory.manifest import (
    InUseImage,
    InUseManifest,
    manifest_json,
    parse_manifest,
    read_inventory,
)
from ecr_retention.services.aws_inventory import BucketManifestStore, ManifestCollection, stored_collection
from support.builders import HOST, NOW, config, digest, image, plan, repository, snapshot
from support.fakes import MemoryBucket

CLUSTER = "prod-eks"


def use(reference: str, workload: str = "Deployment/web") -> InUseImage:
    return InUseImage(image=reference, namespace="shop", workload=workload, container="web", source="pod")


def manifest(*images: InUseImage, complete: bool = True, age: timedelta = timedelta(0)) -> InUseManifest:
    return InUseManifest(
        schema_version=1, cluster=CLUSTER, generated_at=NOW - age, complete=complete, images=tuple(images)
    )


def given_a_previous_manifest(*images: InUseImage) -> tuple[BucketManifestStore, MemoryBucket]:
    bucket = MemoryBucket()
    bucket.objects[f"in-use/{CLUSTER}.json"] = manifest_json(manifest(*images, age=timedelta(hours=1)))
    return BucketManifestStore(bucket), bucket


def stored(bucket: MemoryBucket) -> InUseManifest:
    return parse_manifest("stored", bucket.objects[f"in-use/{CLUSTER}.json"])


def test_an_incomplete_collection_keeps_the_references_it_did_not_read_again() -> None:
    web, api = use(f"{HOST}/web:v1"), use(f"{HOST}/api:v2", "Deployment/api")
    store, bucket = given_a_previous_manifest(web, api)
    failed = ManifestCollection(
        manifest=manifest(web, complete=False), problems=("cluster prod-eks: listing pods failed",)
    )

    result = stored_collection(failed, store)

    assert stored(bucket).complete is False
    assert stored(bucket).images == (web, api)
    assert result.problems[-1].startswith("1 image reference carried over from the previous manifest (generated ")
    assert result.location == f"s3://inventory/in-use/{CLUSTER}.json"


def test_a_carried_reference_still_protects_its_image_when_the_cluster_is_not_expected() -> None:
    store, bucket = given_a_previous_manifest(use(f"{HOST}/app@{digest('a')}"))
    stored_collection(ManifestCollection(manifest=manifest(complete=False), problems=("unreachable",)), store)

    inventory = read_inventory([(f"in-use/{CLUSTER}.json", bucket.objects[f"in-use/{CLUSTER}.json"])])
    rules = config([{"delete": {"tags": ["*"], "older_than": "30d"}}])  # the cluster is not in safety.clusters
    result = plan(rules, snapshot(repository("app", image("a", "v1"))), *inventory.manifests)
    assert result.repositories[0].images[0].action == "keep"
    assert result.repositories[0].images[0].main_reason.kind == "in-use"


def test_a_complete_collection_replaces_the_previous_manifest_whole() -> None:
    store, bucket = given_a_previous_manifest(use(f"{HOST}/web:v1"), use(f"{HOST}/api:v2"))

    result = stored_collection(ManifestCollection(manifest=manifest(use(f"{HOST}/web:v2"))), store)

    assert stored(bucket).images == (use(f"{HOST}/web:v2"),)
    assert stored(bucket).complete is True
    assert result.problems == ()


def test_without_a_previous_manifest_nothing_is_carried() -> None:
    bucket = MemoryBucket()
    result = stored_collection(
        ManifestCollection(manifest=manifest(complete=False), problems=("unreachable",)), BucketManifestStore(bucket)
    )

    assert stored(bucket).images == ()
    assert result.problems == ("unreachable",)


def test_an_incomplete_collection_is_never_stored_over_a_manifest_that_cannot_be_read() -> None:
    # Given an unreadable dev.json (it blocks runs), when the collector cannot reach the cluster, then the unreadable
    # manifest stays: an empty incomplete one over it would unprotect what it may name once it blocks no more.
    bucket = MemoryBucket()
    bucket.objects[f"in-use/{CLUSTER}.json"] = b"{not json"

    result = stored_collection(
        ManifestCollection(manifest=manifest(complete=False), problems=("unreachable",)), BucketManifestStore(bucket)
    )

    assert bucket.objects[f"in-use/{CLUSTER}.json"] == b"{not json"
    assert result.location is None
    assert result.store_error is not None
    assert result.store_error.startswith("not stored: the previous manifest is unreadable (s3://inventory/")
    assert result.store_error.endswith("the previous one stays in place")


def test_a_complete_collection_replaces_a_manifest_that_cannot_be_read() -> None:
    bucket = MemoryBucket()
    bucket.objects[f"in-use/{CLUSTER}.json"] = b"{not json"

    result = stored_collection(
        ManifestCollection(manifest=manifest(use(f"{HOST}/web:v1"))), BucketManifestStore(bucket)
    )

    assert stored(bucket).images == (use(f"{HOST}/web:v1"),)
    assert result.store_error is None
