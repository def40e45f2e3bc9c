"""What a registry holds: `describe-images` image details and a snapshot of repositories."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import Field, StringConstraints, field_validator, model_validator

from ecr_retention.domain.aws_shape import AwsShape
from ecr_retention.domain.replication import ReplicationConfiguration
from ecr_retention.domain.timestamps import UtcDatetime

Digest = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")]

INDEX_MEDIA_TYPES = frozenset(
    {
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    }
)


class ImageDetail(AwsShape):
    """One image (one manifest digest) exactly as `aws ecr describe-images` returns it."""

    registry_id: str | None = None
    repository_name: str | None = None
    image_digest: Digest
    image_tags: tuple[str, ...] = ()
    image_size_in_bytes: int | None = Field(default=None, ge=0)
    image_pushed_at: UtcDatetime
    last_recorded_pull_time: UtcDatetime | None = None
    image_manifest_media_type: str | None = None
    artifact_media_type: str | None = None
    subject_manifest_digest: Digest | None = None
    image_status: Literal["ACTIVE", "ARCHIVED", "ACTIVATING"] = "ACTIVE"
    last_archived_at: UtcDatetime | None = None
    last_activated_at: UtcDatetime | None = None

    @field_validator("image_tags", mode="before")
    @classmethod
    def _tags_may_be_null(cls, value: Any) -> Any:
        return () if value is None else value

    @field_validator("image_tags")
    @classmethod
    def _tags_are_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("a tag appears twice on one image")
        if any(not tag for tag in value):
            raise ValueError("an image tag is empty")
        return value

    @property
    def last_activity(self) -> datetime:
        """Last recorded pull, or push time when never pulled (how ECR and the rules read pull age)."""
        return self.last_recorded_pull_time or self.image_pushed_at


class ImagesDocument(AwsShape):
    """`aws ecr describe-images` output. `manifests` (image index digest -> its manifest JSON) is our
    optional addition, so that the children of indexes are known offline."""

    image_details: tuple[ImageDetail, ...] = ()
    manifests: dict[Digest, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _digests_are_unique(self) -> Self:
        seen: set[str] = set()
        for index, image in enumerate(self.image_details):
            if image.image_digest in seen:
                raise ValueError(f"imageDetails[{index}]: digest {image.image_digest} appears twice")
            seen.add(image.image_digest)
        for digest, manifest in self.manifests.items():
            children = manifest.get("manifests", [])
            if not isinstance(children, list) or not all(
                isinstance(child, dict) and isinstance(child.get("digest"), str) for child in children
            ):
                raise ValueError(f"manifests[{digest}]: 'manifests' must be a list of objects with a digest")
        return self

    def children_of(self, index_digest: str) -> tuple[str, ...] | None:
        """Digests an index references, or None when its manifest is not in the document."""
        manifest = self.manifests.get(index_digest)
        if manifest is None:
            return None
        return tuple(child["digest"] for child in manifest.get("manifests", []))

    @property
    def image_repository_name(self) -> str | None:
        """The repository the image details name, when they all name the same one."""
        names = {image.repository_name for image in self.image_details if image.repository_name}
        return names.pop() if len(names) == 1 else None

    @property
    def image_registry_id(self) -> str | None:
        ids = {image.registry_id for image in self.image_details if image.registry_id}
        return ids.pop() if len(ids) == 1 else None


class RepositorySnapshot(ImagesDocument):
    """One repository of a snapshot: its name and its describe-images output."""

    repository_name: Annotated[str, StringConstraints(min_length=2, max_length=256)]


def is_index(image: ImageDetail, repository: RepositorySnapshot) -> bool:
    manifest = repository.manifests.get(image.image_digest)
    if manifest is not None:
        return "manifests" in manifest
    return image.image_manifest_media_type in INDEX_MEDIA_TYPES


class Snapshot(AwsShape):
    """A registry as `ecr-retention snapshot` writes it and `plan` reads it."""

    registry_id: str | None = None
    region: str | None = None
    # describe-registry's replicationConfiguration; absent: planned as a registry without replication.
    replication: ReplicationConfiguration | None = None
    repositories: tuple[RepositorySnapshot, ...] = ()

    @model_validator(mode="after")
    def _names_are_unique(self) -> Snapshot:
        counts = Counter(repo.repository_name for repo in self.repositories)
        duplicates = sorted(name for name, count in counts.items() if count > 1)
        if duplicates:
            raise ValueError(f"repository {duplicates[0]} appears twice")
        return self

    @property
    def effective_registry_id(self) -> str | None:
        if self.registry_id:
            return self.registry_id
        ids = {image.registry_id for repo in self.repositories for image in repo.image_details if image.registry_id}
        return ids.pop() if len(ids) == 1 else None
