"""An image in moto's ECR backend as ECR describes it: what moto's `Image` lacks (storage status, last pull, archive
and restore times, kept as extra attributes) and the detail DescribeImages reports (sizes, artifact type, subject).
Shared by the seeding helpers (`MotoEcr`) and the faithful responses."""

from __future__ import annotations

import json
from typing import Any

from moto.ecr.models import Image, Repository


def set_extra(image: Image, **values: object) -> None:
    """Attributes moto's Image does not have (pull time, storage class), which `image_detail` and `storage_status` report."""
    for name, value in values.items():
        setattr(image, name, value)


def storage_status(image: Image) -> str:
    return str(getattr(image, "image_status", "ACTIVE"))


def matches_filter(image: Image, image_filter: dict[str, str]) -> bool:
    wanted_status = image_filter.get("imageStatus", "ACTIVE")
    if wanted_status != "ANY" and storage_status(image) != wanted_status:
        return False
    tag_status = image_filter.get("tagStatus", "ANY")
    if tag_status == "TAGGED":
        return bool(image.image_tags)
    if tag_status == "UNTAGGED":
        return not image.image_tags
    return True


def image_detail(repository: Repository, image: Image) -> dict[str, Any]:
    manifest = json.loads(image.image_manifest)
    detail: dict[str, Any] = {
        "registryId": repository.registry_id,
        "repositoryName": repository.name,
        "imageDigest": image.get_image_digest(),
        "imagePushedAt": image.image_pushed_at,
        "imageManifestMediaType": image.image_manifest_media_type,
        "imageStatus": storage_status(image),
    }
    if image.image_tags:
        detail["imageTags"] = list(image.image_tags)
    size = _size(repository, manifest)
    if size is not None:
        detail["imageSizeInBytes"] = size
    artifact_type = manifest.get("artifactType") or manifest.get("config", {}).get("mediaType")
    if artifact_type:
        detail["artifactMediaType"] = artifact_type
    subject = manifest.get("subject", {}).get("digest")
    if subject:
        detail["subjectManifestDigest"] = subject
    for attribute, key in (
        ("last_recorded_pull_time", "lastRecordedPullTime"),
        ("last_archived_at", "lastArchivedAt"),
        ("last_activated_at", "lastActivatedAt"),
    ):
        value = getattr(image, attribute, None)
        if value is not None:
            detail[key] = value
    return detail


def _size(repository: Repository, manifest: dict[str, Any]) -> int | None:
    if "layers" in manifest:
        return sum(int(layer.get("size", 0)) for layer in manifest["layers"])
    children = {entry.get("digest") for entry in manifest.get("manifests", [])}
    sizes = [
        _size(repository, json.loads(image.image_manifest))
        for image in repository.images
        if image.get_image_digest() in children
    ]
    known = [size for size in sizes if size is not None]
    return max(known) if known else None
