"""What a registry holds: `describe-images` image details and a snapshot of repositories.

Lean, and checked. A snapshot holds every image of a registry (100,000 in one repository), so its images are read
without a Python call per image and held without per-image bookkeeping: ImageDetail is a pydantic dataclass with
slots, its timestamps in the canonical UTC form are parsed by datetime.fromisoformat called from pydantic, and that no
tag is empty or appears twice is checked once per repository. These lean
models accept and return exactly what their checked twins (`_checked_twins`: the per-image validators the models had
before) do, as the differential tests prove. When they refuse, the twins validate again, so that the error reads as
it always has: the same first problem, in the same words, and the same count of the rest. No caller sees a twin:
there is one image model, ImageDetail."""

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import cache
from itertools import chain, compress
from operator import attrgetter
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.dataclasses import dataclass
from pydantic_core import CoreSchema, core_schema

from ecr_retention.domain.aws_shape import AWS_FIELDS, AwsShape, Lean
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES, Digest
from ecr_retention.domain.registry.replication import NO_REPLICATION, REGION_PATTERN, ReplicationConfiguration
from ecr_retention.domain.timestamps import LeanUtcDatetime, UtcDatetime

_DIGEST = attrgetter("image_digest")
_TAGS = attrgetter("image_tags")


def _no_tags_when_null(value: Any) -> Any:
    return () if value is None else value


def _tags_are_unique(value: tuple[str, ...]) -> tuple[str, ...]:
    if len(set(value)) != len(value):
        raise ValueError("a tag appears twice on one image")
    if any(not tag for tag in value):
        raise ValueError("an image tag is empty")
    return value


def _tags_without_python(checked: CoreSchema) -> CoreSchema:
    """Null is no tags (Python runs for that value only). That no tag is empty or appears twice is left to the document
    (ImagesDocument), which checks all its images in one loop: a length check here would refuse a tag that is no
    valid Unicode (a lone surrogate), which the checked models accept."""
    null = core_schema.chain_schema(
        [core_schema.none_schema(), core_schema.no_info_plain_validator_function(_no_tags_when_null)]
    )
    tags = core_schema.tuple_schema([core_schema.str_schema()], variadic_item_index=0)
    return core_schema.union_schema([tags, null], mode="left_to_right", serialization=checked.get("serialization"))


CheckedTags = Annotated[tuple[str, ...], BeforeValidator(_no_tags_when_null), AfterValidator(_tags_are_unique)]
LeanTags = Annotated[CheckedTags, Lean(_tags_without_python)]


@dataclass(frozen=True, slots=True, kw_only=True, config=AWS_FIELDS)
class ImageDetail:
    """One image (one manifest digest) exactly as `aws ecr describe-images` returns it.

    A pydantic dataclass with slots rather than a model: a model's per-image `__dict__` and set of the fields given
    (which nothing reads) were two thirds of a snapshot's memory. Alone, from an AWS answer (`model_validate`), it is
    checked as before, its tags too; built by hand it leaves the tags' uniqueness to the document that holds it.
    `model_validate`, `model_dump` and `model_copy` work as a model's."""

    registry_id: str | None = None
    repository_name: str | None = None
    image_digest: Digest
    image_tags: LeanTags = ()
    image_size_in_bytes: Annotated[int | None, Field(ge=0)] = None  # a Field() as default would validate it first
    image_pushed_at: LeanUtcDatetime
    last_recorded_pull_time: LeanUtcDatetime | None = None
    image_manifest_media_type: str | None = None
    artifact_media_type: str | None = None
    subject_manifest_digest: Digest | None = None
    image_status: Literal["ACTIVE", "ARCHIVED", "ACTIVATING"] = "ACTIVE"
    last_archived_at: LeanUtcDatetime | None = None
    last_activated_at: LeanUtcDatetime | None = None

    @property
    def last_activity(self) -> datetime:
        """Last recorded pull, or push time when never pulled (how ECR and the rules read pull age)."""
        return self.last_recorded_pull_time or self.image_pushed_at

    @classmethod
    def model_validate(cls, obj: Any) -> "ImageDetail":
        try:
            image = _LEAN_IMAGE.validate_python(obj)
        except ValidationError:
            _raise_as_checked(cls, obj)
            raise
        if len(set(image.image_tags)) != len(image.image_tags) or "" in image.image_tags:
            _raise_as_checked(cls, obj)
        return image

    def model_dump(self, **options: Any) -> dict[str, Any]:
        dumped: dict[str, Any] = _LEAN_IMAGE.dump_python(self, **options)
        return dumped

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> "ImageDetail":
        return replace(self, **(update or {}))


class _LeanDocument(AwsShape):
    """A document of images, validated leanly; refused (by model_validate, which every reader of a file calls), it is
    validated again by its checked twin, which raises the error in its words."""

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Self:
        try:
            return super().model_validate(obj, **options)
        except ValidationError:
            _raise_as_checked(cls, obj, **options)
            raise


def first_repeated_digest(images: Sequence[ImageDetail]) -> tuple[int, str] | None:
    """The first image whose digest an earlier one of the list already has (its index and digest), or None: each image
    is listed once (one set when none repeats, the common case)."""
    if len(set(map(_DIGEST, images))) == len(images):  # no Python frame per image
        return None
    seen: set[str] = set()
    for index, image in enumerate(images):
        if image.image_digest in seen:
            return index, image.image_digest
        seen.add(image.image_digest)
    return None


class ImagesDocument(_LeanDocument):
    """`aws ecr describe-images` output. `manifests` (image index digest -> its manifest JSON) is our
    optional addition, so that the children of indexes are known offline."""

    image_details: tuple[ImageDetail, ...] = ()
    manifests: dict[Digest, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _digests_are_unique(self) -> Self:
        repeated = first_repeated_digest(self.image_details)
        if repeated is not None:
            index, digest = repeated
            raise ValueError(f"imageDetails[{index}]: digest {digest} appears twice")
        return self

    @model_validator(mode="after")
    def _no_tag_is_empty_or_twice(self) -> Self:
        """Lean images leave these checks to their document: one loop, not a Python validator per image. (A refusal
        is worded by the checked twin, which says where.)"""
        every_tags = list(map(_TAGS, self.image_details))
        several_tags = compress(every_tags, map((1).__lt__, map(len, every_tags)))  # no Python frame per image
        if any(len(set(tags)) != len(tags) for tags in several_tags):
            raise ValueError("a tag appears twice on one image")
        if "" in chain.from_iterable(every_tags):
            raise ValueError("an image tag is empty")
        return self

    @model_validator(mode="after")
    def _index_manifests_name_their_children(self) -> Self:
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


_REGION = re.compile(REGION_PATTERN)
_ACCOUNT = re.compile(r"[0-9]{12}")  # [0-9]: \d matches the digits of any script


def _a_region(value: str) -> str:
    """A snapshot's `region`, in the words of `--region` (commands/aws_session.py region_options)."""
    if not _REGION.fullmatch(value):  # fullmatch: `$` lets a final line break through
        raise ValueError(f"{value!r} is not an AWS Region (such as us-east-1)")
    return value


def _an_account(value: str) -> str:
    if not _ACCOUNT.fullmatch(value):
        raise ValueError(f"{value!r} is not an AWS account id (12 digits, such as 123456789012)")
    return value


SnapshotRegion = Annotated[str, AfterValidator(_a_region)]
SnapshotAccount = Annotated[str, AfterValidator(_an_account)]


class Snapshot(_LeanDocument):
    """A registry as `ecr-retention snapshot` writes it and `plan` reads it. Its coordinates are checked as `--region`
    is (issue 44): a Region in capitals, an empty one or an account id of 5 digits would name no registry, so that no
    reference would protect its images by tag and no scoped policy would apply; absent, they stay unknown."""

    registry_id: SnapshotAccount | None = None
    region: SnapshotRegion | None = None
    # describe-registry's replicationConfiguration; absent: planned as a registry without replication.
    replication: ReplicationConfiguration | None = None
    repositories: tuple[RepositorySnapshot, ...] = ()

    @model_validator(mode="after")
    def _names_are_unique(self) -> "Snapshot":
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

    @property
    def registry(self) -> RegistryCoordinates:
        """The registry the snapshot is of; without replication rules, planned as a registry that has none."""
        return RegistryCoordinates(self.effective_registry_id, self.region, self.replication or NO_REPLICATION)


class RegistrySnapshots(_LeanDocument):
    """Several registries in one snapshot file (`snapshot --region A --region B`): `{"registries": [<a snapshot>,
    ...]}`, each entry the one-registry snapshot as it is, at most one entry per Region. A file of one registry stays
    the one-registry object."""

    registries: tuple[Snapshot, ...]

    @model_validator(mode="after")
    def _one_registry_per_region(self) -> "RegistrySnapshots":
        if not self.registries:
            raise ValueError("a snapshot of several registries lists at least one")
        counts = Counter(registry.region for registry in self.registries)
        if counts[None]:
            raise ValueError("each registry of a snapshot of several names its region")
        duplicates = sorted(str(region) for region, count in counts.items() if count > 1)
        if duplicates:
            raise ValueError(f"region {duplicates[0]} appears twice: one registry per Region")
        return self


_LEAN_IMAGE = TypeAdapter(ImageDetail)


def _raise_as_checked(model: type[Any], obj: Any, **options: Any) -> None:
    """Validate `obj` as the checked twin of `model` does: it raises the error the lean models found, in its words."""
    twin = _checked_twins().get(model)
    if twin is not None:
        twin.validate_python(obj, **options)


@cache
def _checked_twins() -> dict[type[Any], TypeAdapter[Any]]:
    """Each lean model's twin, with the per-image validators it had before: UtcDatetime's parse_timestamp and the tags'
    checks. Built on the first refusal, not at import: a handler's cold start pays for what it uses."""

    @dataclass(frozen=True, kw_only=True, config=AWS_FIELDS)
    class CheckedImageDetail(ImageDetail):
        image_tags: CheckedTags = ()
        image_pushed_at: UtcDatetime
        last_recorded_pull_time: UtcDatetime | None = None
        last_archived_at: UtcDatetime | None = None
        last_activated_at: UtcDatetime | None = None

    class CheckedImagesDocument(ImagesDocument):
        image_details: tuple[CheckedImageDetail, ...] = ()

    class CheckedRepositorySnapshot(RepositorySnapshot):
        image_details: tuple[CheckedImageDetail, ...] = ()

    class CheckedSnapshot(Snapshot):
        repositories: tuple[CheckedRepositorySnapshot, ...] = ()

    class CheckedRegistrySnapshots(RegistrySnapshots):
        registries: tuple[CheckedSnapshot, ...]

    return {
        ImageDetail: TypeAdapter(CheckedImageDetail),
        ImagesDocument: TypeAdapter(CheckedImagesDocument),
        RepositorySnapshot: TypeAdapter(CheckedRepositorySnapshot),
        Snapshot: TypeAdapter(CheckedSnapshot),
        RegistrySnapshots: TypeAdapter(CheckedRegistrySnapshots),
    }
