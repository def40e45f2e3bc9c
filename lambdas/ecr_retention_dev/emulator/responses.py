"""ECR's operations as ECR answers them, where moto 5.2.5 answers otherwise (see `fidelity` for the list): each
function replaces the method of moto's `ECRResponse` of the same name while `EcrFidelity` is entered."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.ecr.exceptions import ImageNotFoundException, InvalidParameterException, RepositoryNotFoundException
from moto.ecr.models import Image, Repository, ecr_backends
from moto.ecr.responses import ECRResponse

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention_dev.emulator.images import image_detail, matches_filter, set_extra, storage_status
from ecr_retention_dev.emulator.manifests import IMAGE_MEDIA_TYPES, INDEX_MEDIA_TYPES, sha256_digest
from ecr_retention_dev.emulator.request import backend_of, check_id_count, page_of, paged_result, repository_of


def describe_repositories(response: ECRResponse) -> ActionResult:
    names = response._get_param("repositoryNames")
    if names and (response._get_param("maxResults") is not None or response._get_param("nextToken")):
        raise InvalidParameterException("maxResults and nextToken cannot be used with repositoryNames")
    repositories = backend_of(response).describe_repositories(
        registry_id=response._get_param("registryId"), repository_names=names
    )
    page, next_token = page_of(response, list(repositories), "describe_repositories")
    return paged_result("repositories", page, next_token)


def list_images(response: ECRResponse) -> ActionResult:
    repository = repository_of(response)
    image_filter = response._get_param("filter") or {}
    ids: list[dict[str, str]] = []
    for image in repository.images:
        if matches_filter(image, image_filter):
            digest = image.get_image_digest()
            ids.extend({"imageDigest": digest, "imageTag": tag} for tag in image.image_tags)
            if not image.image_tags:
                ids.append({"imageDigest": digest})
    page, next_token = page_of(response, ids, f"list_images:{repository.name}")
    return paged_result("imageIds", page, next_token)


def finish_restores(repository: Repository, activation_delay: timedelta | None) -> None:
    """ECR finishes a restore within about 20 minutes: an ACTIVATING image whose restore started at least
    `activation_delay` ago is ACTIVE from now on (never, when the delay is None)."""
    if activation_delay is None:
        return
    now = datetime.now(UTC)
    for image in repository.images:
        started = getattr(image, "last_activated_at", None)
        if storage_status(image) == "ACTIVATING" and started is not None and now - started >= activation_delay:
            set_extra(image, image_status="ACTIVE")


def describe_images(response: ECRResponse, activation_delay: timedelta | None = None) -> ActionResult:
    repository = repository_of(response)
    finish_restores(repository, activation_delay)
    image_filter = response._get_param("filter") or {}
    image_ids = response._get_param("imageIds")
    if not image_ids:
        selected = [image for image in repository.images if matches_filter(image, image_filter)]
        page, next_token = page_of(response, selected, f"describe_images:{repository.name}")
        return paged_result("imageDetails", [image_detail(repository, image) for image in page], next_token)
    if response._get_param("maxResults") is not None or response._get_param("nextToken"):
        raise InvalidParameterException("maxResults and nextToken cannot be used with imageIds")
    check_id_count(image_ids)
    found = _images_by_id(repository, image_ids, image_filter)
    return ActionResult({"imageDetails": [image_detail(repository, image) for image in found]})


def _images_by_id(repository: Repository, image_ids: list[dict[str, str]], image_filter: dict[str, str]) -> list[Image]:
    """The images the ids name, each once, in request order; one the filter leaves out is not found, as in ECR."""
    found: list[Image] = []
    for image_id in image_ids:
        image = repository._get_image(image_id.get("imageTag"), image_id.get("imageDigest"))
        if not matches_filter(image, image_filter):
            raise ImageNotFoundException(
                image_id=f"{{imageDigest:'{image.get_image_digest()}', imageTag:'null'}}",
                repository_name=repository.name,
                registry_id=repository.registry_id,
            )
        if image not in found:
            found.append(image)
    return found


def _lookup(repository: Repository, image_id: dict[str, str]) -> Image | None:
    digest, tag = image_id.get("imageDigest"), image_id.get("imageTag")
    for image in repository.images:
        if (digest is None or image.get_image_digest() == digest) and (tag is None or tag in image.image_tags):
            return image
    return None


def _referencing_indexes(repository: Repository, digest: str) -> list[str]:
    holders = []
    for image in repository.images:
        if image.image_manifest_media_type in INDEX_MEDIA_TYPES and image.get_image_digest() != digest:
            entries = json.loads(image.image_manifest).get("manifests", [])
            if any(entry.get("digest") == digest for entry in entries):
                holders.append(image.get_image_digest())
    return holders


def batch_get_image(response: ECRResponse) -> ActionResult:
    repository = repository_of(response)
    image_ids = response._get_param("imageIds") or []
    check_id_count(image_ids)
    accepted = response._get_param("acceptedMediaTypes") or list(IMAGE_MEDIA_TYPES)
    images, failures = [], []
    for image_id in image_ids:
        image, failure = _gettable(repository, image_id, accepted)
        if image is None:
            failures.append(failure)
            continue
        images.append(
            {
                "registryId": repository.registry_id,
                "repositoryName": repository.name,
                "imageId": _answered_id(image, image_id),
                "imageManifest": image.image_manifest,
                "imageManifestMediaType": image.image_manifest_media_type,
            }
        )
    return ActionResult({"images": images, "failures": failures})


def _gettable(
    repository: Repository, image_id: dict[str, str], accepted: list[str]
) -> tuple[Image, None] | tuple[None, dict[str, Any]]:
    """The image BatchGetImage answers for the id (an index's child when index types are not accepted), or its
    failure."""
    image = _lookup(repository, image_id)
    if image is None:
        return None, _failure(image_id, "ImageNotFound", "Requested image not found")
    if storage_status(image) != "ACTIVE":
        return None, _failure(image_id, "ImageInaccessible", "Image is archived")
    if image.image_manifest_media_type not in accepted and image.image_manifest_media_type in INDEX_MEDIA_TYPES:
        image = _platform_child(repository, image)  # what ECR does when the index types are not accepted
    if image is None or image.image_manifest_media_type not in accepted:
        return None, _failure(image_id, "UnsupportedImageType", "Media type not accepted")
    return image, None


def _answered_id(image: Image, image_id: dict[str, str]) -> dict[str, str]:
    """The image's digest, and the tag when the request named one."""
    answered_id = {"imageDigest": image.get_image_digest()}
    if image_id.get("imageTag"):
        answered_id["imageTag"] = image_id["imageTag"]
    return answered_id


def _failure(image_id: dict[str, str], code: str, reason: str) -> dict[str, Any]:
    return {"imageId": image_id, "failureCode": code, "failureReason": reason}


def _platform_child(repository: Repository, index: Image) -> Image | None:
    entries = json.loads(index.image_manifest).get("manifests", [])
    preferred = sorted(entries, key=lambda entry: entry.get("platform") != {"architecture": "amd64", "os": "linux"})
    for entry in preferred:
        child = _lookup(repository, {"imageDigest": entry.get("digest", "")})
        if child is not None:
            return child
    return None


def batch_delete_image(
    response: ECRResponse, *, refusals: Mapping[str, tuple[str, str]], refuse_referenced_children: bool
) -> ActionResult:
    """`refusals`: digest -> (failureCode, failureReason) to report instead of deleting;
    `refuse_referenced_children`: refuse a child an index that stays still lists, as ECR does."""
    repository = repository_of(response)
    image_ids = response._get_param("imageIds") or []
    check_id_count(image_ids)
    deleted: list[dict[str, str]] = []
    failures: list[dict[str, Any]] = []
    for image_id in image_ids:  # in request order: an index listed first frees its children for later entries
        image = _lookup(repository, image_id)
        failure = _refusal(repository, image, image_id, refusals, refuse_referenced_children)
        if failure is not None:
            failures.append(failure)
            continue
        assert image is not None  # a missing image is a failure
        deleted.extend(_delete(repository, image, image_id))
    replicate_deletions(response, repository, deleted)
    return ActionResult({"imageIds": deleted, "failures": failures})


def replicate_deletions(response: ECRResponse, repository: Repository, deleted: list[dict[str, str]]) -> None:
    """What ECR does after a deletion in a repository that a replication rule with deleteReplication sends to other
    registries (of this account): the same ids deleted in each destination's repository of the same name, where
    they are (moto replicates nothing: its other Regions are seeded as replication would have left them)."""
    backend = backend_of(response)
    for region in _deletion_destinations(backend.replication_config, repository.name, backend.account_id):
        destination = ecr_backends[backend.account_id][region].repositories.get(repository.name)
        if destination is None:
            continue
        for image_id in deleted:
            image = _lookup(destination, image_id)
            if image is not None:
                _delete(destination, image, image_id)


def _deletion_destinations(config: Mapping[str, Any], name: str, account: str) -> list[str]:
    """The Regions of this account that a deletion in the repository reaches (PREFIX_MATCH filters; none: every)."""
    regions: list[str] = []
    for rule in config.get("rules", []):
        filters = [entry["filter"] for entry in rule.get("repositoryFilters", [])]
        replicates = rule.get("deleteReplication", {}).get("enabled", False)
        if replicates and (not filters or any(name.startswith(prefix) for prefix in filters)):
            regions.extend(
                destination["region"]
                for destination in rule.get("destinations", [])
                if destination.get("registryId") == account
            )
    return sorted(set(regions))


def _refusal(
    repository: Repository,
    image: Image | None,
    image_id: dict[str, str],
    refusals: Mapping[str, tuple[str, str]],
    refuse_referenced_children: bool,
) -> dict[str, Any] | None:
    """Why BatchDeleteImage fails on the id: not found, refused, or (when asked) a child an index still lists."""
    if image is None:
        return _failure(image_id, "ImageNotFound", "Requested image not found")
    digest = image.get_image_digest()
    if digest in refusals:
        code, reason = refusals[digest]
        return _failure(image_id, code, reason)
    holders = _referencing_indexes(repository, digest) if _removes_image(image, image_id) else []
    if holders and refuse_referenced_children:
        return _failure(
            image_id, "ImageReferencedByManifestList", f"Requested image referenced by manifest list: {holders}"
        )
    return None


def _removes_image(image: Image, image_id: dict[str, str]) -> bool:
    """Deleting the id removes the image (no tag named, or its only tag), not only a tag."""
    return "imageTag" not in image_id or image.image_tags == [image_id["imageTag"]]


def _delete(repository: Repository, image: Image, image_id: dict[str, str]) -> list[dict[str, str]]:
    """Delete the id's tag, or its whole image; the ids deleted, as BatchDeleteImage lists them."""
    digest = image.get_image_digest()
    if not _removes_image(image, image_id):
        image.remove_tag(image_id["imageTag"])
        return [{"imageDigest": digest, "imageTag": image_id["imageTag"]}]
    repository.images.remove(image)
    return [{"imageDigest": digest, "imageTag": tag} for tag in image.image_tags] or [{"imageDigest": digest}]


def put_image(response: ECRResponse) -> ActionResult:
    backend = backend_of(response)
    name = response._get_param("repositoryName")
    repository = backend.repositories.get(name)
    if repository is None:
        raise RepositoryNotFoundException(name, response._get_param("registryId") or backend.account_id)
    text = response._get_param("imageManifest")
    tag = response._get_param("imageTag")
    digest = sha256_digest(text)
    _check_digest(response._get_param("imageDigest"), digest)
    _take_tag(repository, tag, digest)
    image = backend.put_image(name, text, tag, response._get_param("imageManifestMediaType"), digest)
    return ActionResult({"image": image})


def _check_digest(requested: str | None, digest: str) -> None:
    if requested and requested != digest:
        raise JsonRESTError(
            "ImageDigestDoesNotMatchException",
            f"Invalid parameter at 'imageDigest' failed to satisfy constraint: the digest {requested} does not "
            f"match the digest {digest} of the manifest",
        )


def _take_tag(repository: Repository, tag: str | None, digest: str) -> None:
    """The tag moves to the image pushed; the image it leaves stays, untagged if that was its last tag. An
    immutable repository refuses the move."""
    if not tag:
        return
    holder = next((image for image in repository.images if tag in image.image_tags), None)
    if holder is None or holder.get_image_digest() == digest:
        return
    if repository.image_tag_mutability == "IMMUTABLE":
        raise JsonRESTError(
            "ImageTagAlreadyExistsException",
            f"The image tag '{tag}' already exists in the '{repository.name}' repository and cannot be overwritten "
            "because the repository is immutable.",
        )
    holder.remove_tag(tag)
    if not holder.image_tags:
        holder.image_tag = None  # type: ignore[assignment]  # moto's own "untagged"; typed str


def update_image_storage_class(response: ECRResponse) -> ActionResult:
    repository = repository_of(response)
    image_id = response._get_param("imageId") or {}
    image = repository._get_image(image_id.get("imageTag"), image_id.get("imageDigest"))
    target = response._get_param("targetStorageClass")
    now = datetime.now(UTC)
    if target == "ARCHIVE" and storage_status(image) != "ARCHIVED":
        set_extra(image, image_status="ARCHIVED", last_archived_at=now)
    elif target == "STANDARD" and storage_status(image) == "ARCHIVED":
        set_extra(image, image_status="ACTIVATING", last_activated_at=now)
    elif target not in ("ARCHIVE", "STANDARD"):
        raise InvalidParameterException(f"Invalid parameter at 'targetStorageClass': {target}")
    return ActionResult(
        {
            "registryId": repository.registry_id,
            "repositoryName": repository.name,
            "imageId": {"imageDigest": image.get_image_digest()},
            "imageStatus": storage_status(image),
        }
    )


def put_lifecycle_policy(response: ECRResponse) -> ActionResult:
    """Validated with ECR's rules as the project models them (domain.lifecycle: transitions, tagPatternList, storage
    classes); moto's validator knows only expire and tagPrefixList."""
    repository = repository_of(response)
    text = str(response._get_param("lifecyclePolicyText") or "")
    try:
        parse_policy(text, "lifecyclePolicyText")
    except InputError as error:
        raise InvalidParameterException(
            f"Invalid parameter at 'LifecyclePolicyText' failed to satisfy constraint: "
            f"'Lifecycle policy validation failure: {error}'"
        ) from None
    repository.lifecycle_policy = text
    return ActionResult(
        {"registryId": repository.registry_id, "repositoryName": repository.name, "lifecyclePolicyText": text}
    )
