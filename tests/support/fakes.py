"""In-memory implementations of the ports, for service tests: a registry that behaves like ECR where it
matters to a pruner (an index's children cannot be deleted while it exists, failures per image, every call
recorded), a bucket, a notifier and leases."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.ports import (
    BatchOutcome,
    DeleteMarker,
    ImageFailure,
    ImageManifest,
    ImagesUnreadable,
    ReplicationUnreadable,
    RepositoriesUnlistable,
    RepositoryGone,
    TagOutcome,
    TemplatesUnreadable,
)

MUTATING = frozenset({"delete_images", "archive_images", "restore_images", "put_tag"})


@dataclass
class StoredImage:
    detail: ImageDetail
    manifest: str


@dataclass
class FakeRegistry:
    registry_id: str = "123456789012"
    region: str = "eu-west-1"
    repositories: dict[str, dict[str, StoredImage]] = field(default_factory=dict)
    immutable: set[str] = field(default_factory=set)
    lifecycle_policies: dict[str, str] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (operation, repository)
    # digest -> failure code that delete_images reports for it (e.g. KmsError)
    delete_failures: dict[str, str] = field(default_factory=dict)
    # digests whose deletion happens but whose answer is lost: reported `unconfirmed`, as the adapter reports an
    # ImageNotFound answered to a retried call
    lost_answers: set[str] = field(default_factory=set)
    # called before each operation, e.g. to move a tag between the plan and the delete
    before: dict[str, Any] = field(default_factory=dict)
    replication: ReplicationConfiguration = field(default_factory=ReplicationConfiguration)
    # set: replication_configuration raises ReplicationUnreadable with this message (DescribeRegistry denied, ...)
    replication_problem: str | None = None
    # the registry's repository creation templates; `templates_failure` makes creation_templates raise it
    templates: list[RepositoryCreationTemplate] = field(default_factory=list)
    templates_failure: str | None = None
    # digest -> error code that restore_images fails it with (e.g. KmsException)
    restore_failures: dict[str, str] = field(default_factory=dict)
    # repository -> the message describe_images_by_id raises ImagesUnreadable with (throttled, denied)
    lookup_failures: dict[str, str] = field(default_factory=dict)
    # set: repository_names raises RepositoriesUnlistable with this message (DescribeRepositories denied, an outage)
    listing_failure: str | None = None

    # --- seeding -------------------------------------------------------------------------------

    def add_image(
        self,
        repository: str,
        *,
        tags: Sequence[str] = (),
        pushed_at: datetime,
        manifest: Mapping[str, Any] | None = None,
        size: int = 1000,
        media_type: str = "application/vnd.oci.image.manifest.v1+json",
        seed: str = "",
    ) -> str:
        body = manifest or {
            "schemaVersion": 2,
            "mediaType": media_type,
            "config": {"digest": "sha256:" + hashlib.sha256(f"config {repository} {seed} {tags}".encode()).hexdigest()},
            "layers": [],
        }
        text = json.dumps(body, sort_keys=True)
        digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        detail = ImageDetail(
            registry_id=self.registry_id,
            repository_name=repository,
            image_digest=digest,
            image_tags=tuple(tags),
            image_size_in_bytes=size,
            image_pushed_at=pushed_at,
            image_manifest_media_type=str(body.get("mediaType", media_type)),
        )
        self.repositories.setdefault(repository, {})[digest] = StoredImage(detail, text)
        return digest

    def add_index(self, repository: str, children: Sequence[str], *, tags: Sequence[str], pushed_at: datetime) -> str:
        media_type = "application/vnd.oci.image.index.v1+json"
        manifest = {
            "schemaVersion": 2,
            "mediaType": media_type,
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": c} for c in children],
        }
        return self.add_image(repository, tags=tags, pushed_at=pushed_at, manifest=manifest, media_type=media_type)

    def add_referrer(self, repository: str, subject: str, *, pushed_at: datetime, seed: str = "") -> str:
        """An OCI 1.1 referrer (an SBOM): untagged, its manifest names its subject, and ECR reports
        subjectManifestDigest whether or not the subject is still there."""
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": "application/spdx+json",
            "config": {"digest": "sha256:" + hashlib.sha256(f"sbom {seed}".encode()).hexdigest()},
            "layers": [],
            "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": subject},
        }
        digest = self.add_image(repository, pushed_at=pushed_at, manifest=manifest, seed=seed)
        stored = self.repositories[repository][digest]
        stored.detail = stored.detail.model_copy(update={"subject_manifest_digest": subject})
        return digest

    def set_tags(self, repository: str, digest: str, tags: Sequence[str]) -> None:
        stored = self.repositories[repository][digest]
        stored.detail = stored.detail.model_copy(update={"image_tags": tuple(tags)})

    def digests(self, repository: str) -> set[str]:
        return set(self.repositories.get(repository, {}))

    def tags(self, repository: str) -> list[str]:
        return sorted(
            tag for stored in self.repositories.get(repository, {}).values() for tag in stored.detail.image_tags
        )

    def count(self, operation: str) -> int:
        return sum(1 for op, _ in self.calls if op == operation)

    @property
    def mutating_calls(self) -> list[tuple[str, str]]:
        return [call for call in self.calls if call[0] in MUTATING]

    def operations(self) -> Counter[str]:
        return Counter(op for op, _ in self.calls)

    # --- ports.Registry ------------------------------------------------------------------------

    def _record(self, operation: str, repository: str) -> dict[str, StoredImage]:
        self.calls.append((operation, repository))
        hook = self.before.pop(operation, None)
        if hook is not None:
            hook(self)
        if repository not in self.repositories:
            raise RepositoryGone(repository)
        return self.repositories[repository]

    def repository_names(self) -> list[str]:
        self.calls.append(("repository_names", ""))
        if self.listing_failure is not None:
            raise RepositoriesUnlistable(self.listing_failure)
        return sorted(self.repositories)

    def describe_images(self, repository: str) -> list[ImageDetail]:
        images = self._record("describe_images", repository)
        return [stored.detail for stored in images.values()]

    def describe_image_ids(self, repository: str, digests: Sequence[str]) -> dict[str, ImageDetail]:
        images = self._record("describe_image_ids", repository)
        return {d: images[d].detail for d in digests if d in images}

    def describe_images_by_id(self, repository: str, image_ids: Sequence[Mapping[str, str]]) -> list[ImageDetail]:
        """One recorded call per 100 ids, as the adapter makes them when nothing is missing."""
        for _ in range(0, max(len(image_ids), 1), 100):
            images = self._record("describe_images_by_id", repository)
        if repository in self.lookup_failures:
            raise ImagesUnreadable(f"repository {repository}: {self.lookup_failures[repository]}")
        return [
            stored.detail
            for stored in images.values()
            if any(
                stored.detail.image_digest == image_id.get("imageDigest")
                or image_id.get("imageTag") in stored.detail.image_tags
                for image_id in image_ids
            )
        ]

    def get_manifests(
        self, repository: str, digests: Sequence[str], media_types: Sequence[str]
    ) -> dict[str, ImageManifest]:
        images = self._record("get_manifests", repository)
        found = {}
        for digest in digests:
            stored = images.get(digest)
            if stored is not None and stored.detail.image_manifest_media_type in media_types:
                found[digest] = ImageManifest(digest, stored.detail.image_manifest_media_type or "", stored.manifest)
        return found

    def lifecycle_policy(self, repository: str) -> str | None:
        self._record("lifecycle_policy", repository)
        return self.lifecycle_policies.get(repository)

    def replication_configuration(self) -> ReplicationConfiguration:
        self.calls.append(("replication_configuration", ""))
        if self.replication_problem is not None:  # denied as the adapter tells it: from AWS's error code
            raise ReplicationUnreadable(self.replication_problem, denied="AccessDenied" in self.replication_problem)
        return self.replication

    def creation_templates(self) -> list[RepositoryCreationTemplate]:
        self.calls.append(("creation_templates", ""))
        if self.templates_failure is not None:
            raise TemplatesUnreadable(self.templates_failure)
        return list(self.templates)

    @staticmethod
    def _children(digest: str, stored: StoredImage) -> list[str]:
        """The other images an index lists (none for an image that is no index)."""
        if stored.detail.image_manifest_media_type not in INDEX_MEDIA_TYPES:
            return []
        listed = (child["digest"] for child in json.loads(stored.manifest).get("manifests", []))
        return [child for child in listed if child != digest]

    def _references(self, images: dict[str, StoredImage]) -> Counter[str]:
        """digest -> how many indexes of the repository list it: counted once per call, not once per image (a
        sweep of 100,000 images spent minutes re-reading every index for every deletion)."""
        return Counter(child for digest, stored in images.items() for child in self._children(digest, stored))

    def delete_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        done: list[str] = []
        gone: list[str] = []
        failed: list[ImageFailure] = []
        unconfirmed: list[str] = []
        for start in range(0, len(digests), 100):
            images = self._record("delete_images", repository)
            references = self._references(images)
            for digest in digests[start : start + 100]:
                if digest not in images:
                    gone.append(digest)
                elif digest in self.delete_failures:
                    failed.append(ImageFailure(digest, self.delete_failures[digest], "injected"))
                elif references[digest] > 0:
                    failed.append(ImageFailure(digest, "ImageReferencedByManifestList", "referenced by an index"))
                else:
                    references.subtract(self._children(digest, images.pop(digest)))
                    (unconfirmed if digest in self.lost_answers else done).append(digest)
        return BatchOutcome(tuple(done), tuple(gone), tuple(failed), unconfirmed=tuple(unconfirmed))

    def archive_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        done, gone = [], []
        for digest in digests:
            images = self._record("archive_images", repository)
            if digest not in images:
                gone.append(digest)
                continue
            stored = images[digest]
            stored.detail = stored.detail.model_copy(update={"image_status": "ARCHIVED"})
            done.append(digest)
        return BatchOutcome(tuple(done), tuple(gone), ())

    def archive(self, repository: str, digest: str, when: datetime) -> None:
        stored = self.repositories[repository][digest]
        stored.detail = stored.detail.model_copy(update={"image_status": "ARCHIVED", "last_archived_at": when})

    def activate(self, repository: str, digest: str) -> None:
        """A restore ECR has finished: ACTIVATING becomes ACTIVE."""
        stored = self.repositories[repository][digest]
        stored.detail = stored.detail.model_copy(update={"image_status": "ACTIVE"})

    def restore_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        done: list[str] = []
        gone: list[str] = []
        already: list[str] = []
        failed: list[ImageFailure] = []
        for digest in dict.fromkeys(digests):
            images = self._record("restore_images", repository)
            stored = images.get(digest)
            if stored is None:
                gone.append(digest)
            elif digest in self.restore_failures:
                failed.append(ImageFailure(digest, self.restore_failures[digest], "injected"))
            elif stored.detail.image_status == "ACTIVE":
                already.append(digest)
            else:
                stored.detail = stored.detail.model_copy(update={"image_status": "ACTIVATING"})
                done.append(digest)
        return BatchOutcome(tuple(done), tuple(gone), tuple(failed), already=tuple(already))

    def put_tag(self, repository: str, manifest: ImageManifest, tag: str) -> TagOutcome:
        images = self._record("put_tag", repository)
        stored = images.get(manifest.image_digest)
        if stored is None or stored.manifest != manifest.text:
            return TagOutcome("failed", "ImageDigestDoesNotMatchException")
        if tag in stored.detail.image_tags:
            return TagOutcome("already-tagged")  # as the adapter answers ImageAlreadyExistsException
        if repository in self.immutable:
            return TagOutcome("immutable", "ImageTagAlreadyExistsException: the repository's tags are immutable")
        for other in images.values():  # a tag moves to its new image, as in a mutable repository
            if tag in other.detail.image_tags:
                other.detail = other.detail.model_copy(
                    update={"image_tags": tuple(t for t in other.detail.image_tags if t != tag)}
                )
        stored.detail = stored.detail.model_copy(update={"image_tags": (*stored.detail.image_tags, tag)})
        return TagOutcome("tagged")


@dataclass
class MemoryBucket:
    name: str = "inventory"
    objects: dict[str, bytes] = field(default_factory=dict)
    # Keys whose latest version is a delete marker (ports.VersionedBucket).
    delete_markers: dict[str, DeleteMarker] = field(default_factory=dict)

    def delete_marker(self, key: str) -> DeleteMarker | None:
        return None if key in self.objects else self.delete_markers.get(key)

    def list_objects(self, prefix: str) -> dict[str, int]:
        return {key: len(body) for key, body in sorted(self.objects.items()) if key.startswith(prefix)}

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        body = self.objects.get(key)
        if body is not None and len(body) > max_bytes:
            raise InputError(f"s3://{self.name}/{key}: {len(body)} bytes is larger than the {max_bytes} byte limit")
        return body

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        self.objects[key] = body

    def create(self, key: str, body: bytes, *, content_type: str = "application/json") -> bool:
        if key in self.objects:
            return False
        self.objects[key] = body
        return True

    def write_json(self, key: str, data: Any) -> None:
        self.objects[key] = json.dumps(data).encode()


@dataclass
class RecordingNotifier:
    messages: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    report_locations: list[str | None] = field(default_factory=list)

    def publish(
        self, subject: str, message: str, attributes: Mapping[str, str], *, report_location: str | None = None
    ) -> None:
        self.messages.append((subject, message, dict(attributes)))
        self.report_locations.append(report_location)


@dataclass
class MemoryLeases:
    held: dict[str, str] = field(default_factory=dict)
    taken: list[str] = field(default_factory=list)  # every lease asked for, in order, granted or not

    def acquire(self, repository: str, holder: str, seconds: int) -> bool:
        self.taken.append(repository)
        if repository in self.held:  # held, by another run or another evaluation of this one (aws/dynamodb_lease.py)
            return False
        self.held[repository] = holder
        return True

    def release(self, repository: str, holder: str) -> None:
        if self.held.get(repository) == holder:
            del self.held[repository]

    def holder(self, repository: str) -> str | None:
        return self.held.get(repository)
