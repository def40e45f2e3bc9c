"""One hold as stored (holds/<region>/<repository>/<digest>.json, layout.hold_key): the strict model (Hold), its JSON,
how one object is parsed, and what a key must be to name an image; and what a run makes of an object that is no
valid hold (MalformedHold). Loaded where a hold object is read or written (domain/holds/model.py read_holds and
held_image_of_key, the CLI's hold commands): a run or a sentinel event that finds no hold builds none of its models."""

from dataclasses import dataclass
from typing import Annotated, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    StrictInt,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ecr_retention.domain.errors import InputError, parse_strictly
from ecr_retention.domain.holds.model import HeldImage
from ecr_retention.domain.inventory.clusters import ACCOUNT_PATTERN
from ecr_retention.domain.registry.digests import Digest
from ecr_retention.domain.registry.replication import REGION_PATTERN, AwsRegion
from ecr_retention.domain.timestamps import UtcDatetime, format_timestamp

# ECR's repository name pattern (CreateRepository), up to 256 characters.
REPOSITORY_PATTERN = r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$"
RepositoryName = Annotated[str, StringConstraints(pattern=REPOSITORY_PATTERN, min_length=2, max_length=256)]
AccountId = Annotated[str, StringConstraints(pattern=f"^{ACCOUNT_PATTERN}$")]
# ECR's tag pattern, up to 128 characters.
TagName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")]
Owner = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
HoldReason = Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"^[^\x00-\x1f\x7f]+$")]


def _supported_schema_version(version: int) -> int:
    if version != 1:
        raise ValueError(f"unsupported schemaVersion {version}; this release reads 1")
    return version


SchemaVersion = Annotated[StrictInt, AfterValidator(_supported_schema_version)]


class Hold(BaseModel):
    """One hold as stored: strict, as a manifest is, because it decides what must not be deleted."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid", strict=True)

    schema_version: SchemaVersion
    registry_id: AccountId
    region: AwsRegion
    repository: RepositoryName
    digest: Digest
    tag: TagName | None = None  # the tag it was placed by (the digest is the one it pointed to then)
    owner: Owner
    reason: HoldReason
    created_at: UtcDatetime
    until: UtcDatetime

    @model_validator(mode="after")
    def _ends_after_it_starts(self) -> Self:
        if self.until <= self.created_at:
            raise ValueError(f"until {format_timestamp(self.until)} is not after createdAt")
        return self

    @property
    def image(self) -> HeldImage:
        return HeldImage(self.region, self.repository, self.digest)

    @property
    def placed_on(self) -> str:
        """The image as the hold was placed: `app:1.2 (sha256:...)` by tag, `app@sha256:...` by digest."""
        if self.tag is None:
            return f"{self.repository}@{self.digest}"
        return f"{self.repository}:{self.tag} ({self.digest})"


def hold_json(hold: Hold) -> bytes:
    return hold.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")


@dataclass(frozen=True, slots=True)
class MalformedHold:
    """An object under holds/ that is no valid hold, but whose key (or body) names the image it holds: it keeps
    protecting that image, with no end, until it is fixed or removed, and every run says so."""

    source: str
    images: tuple[HeldImage, ...]
    problem: str


def names_an_image(image: HeldImage) -> bool:
    try:
        _HeldImageShape(region=image.region, repository=image.repository, digest=image.digest)
    except ValidationError:
        return False
    return True


class _HeldImageShape(BaseModel):
    model_config = ConfigDict(strict=True)

    region: Annotated[str, StringConstraints(pattern=REGION_PATTERN)]
    repository: RepositoryName
    digest: Digest


def parse_hold(source: str, raw: bytes | InputError) -> Hold:
    """One hold, strictly; InputError("<source>: <problem>") when it cannot be trusted."""
    return parse_strictly(source, raw, Hold, "a hold is a JSON object with repository, digest, owner, reason and until")
