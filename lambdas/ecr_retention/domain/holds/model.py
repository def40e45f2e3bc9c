"""A hold: a person pins one image for a time (`ecr-retention hold add`), with an owner, a reason and an end.

One object per hold in the inventory bucket (`holds/<region>/<repository>/<digest>.json`, layout.hold_key), written
only by the roles the stack names as holders. A hold placed by tag records the digest the tag pointed to then: it
holds that image, wherever the tag goes afterwards. Pure: read here, protected by in domain/holds/protection.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import PurePosixPath
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
from ecr_retention.domain.inventory.clusters import ACCOUNT_PATTERN
from ecr_retention.domain.registry.digests import Digest
from ecr_retention.domain.registry.replication import REGION_PATTERN, AwsRegion
from ecr_retention.domain.timestamps import UtcDatetime, format_timestamp
from ecr_retention.layout import HOLDS_PREFIX, hold_key

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

# How many holds one repository may have (the longest a hold lasts is the rules file's: config.DEFAULT_MAX_HOLD).
MAX_HOLDS_PER_REPOSITORY = 50
# Holds that end within this are named in the run's summary, so that their owners can extend them in time.
ENDING_SOON = timedelta(days=7)


@dataclass(frozen=True, order=True, slots=True)
class HeldImage:
    """What a hold names: one image of one repository of one Region's registry (of the deployment's account)."""

    region: str
    repository: str
    digest: str

    @property
    def key(self) -> str:
        return hold_key(self.region, self.repository, self.digest)

    def __str__(self) -> str:
        return f"{self.repository}@{self.digest} in {self.region}"


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


@dataclass(frozen=True)
class Holds:
    """Every hold a run could read; `unreadable`: the objects that name no image (source -> problem), which block the
    run as an unreadable manifest does, since they may hold any image."""

    held: tuple[Hold, ...] = ()
    malformed: tuple[MalformedHold, ...] = ()
    unreadable: Mapping[str, str] = field(default_factory=dict)
    # The objects read, by source, so that a listing can name them (hold list).
    sources: Mapping[HeldImage, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.held or self.malformed or self.unreadable)


NO_HOLDS = Holds()

# One document under holds/: its source (a key, or a file offline), its key relative to the bucket (a file's path
# below the holds folder, prefixed holds/), and its bytes or the InputError that stopped its reader.
HoldDocument = tuple[str, str, bytes | InputError]


def held_image_of_key(key: str) -> HeldImage | None:
    """`holds/eu-west-1/team/app/sha256:ab.json` -> that image; None for a key of another shape."""
    if not key.startswith(HOLDS_PREFIX) or not key.endswith(".json"):
        return None
    parts = PurePosixPath(key.removeprefix(HOLDS_PREFIX).removesuffix(".json")).parts
    if len(parts) < 3:
        return None
    region, *repository, digest = parts
    image = HeldImage(region, "/".join(repository), digest)
    return image if _names_an_image(image) else None


def _names_an_image(image: HeldImage) -> bool:
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


def read_holds(documents: Iterable[HoldDocument]) -> Holds:
    """Every hold object, whatever the door (the bucket's holds/, a folder offline). Fail closed: an object that is
    no valid hold protects the image its key names (malformed); one whose key names none either blocks (unreadable).
    The key names what a hold holds (an evaluation reads its own repository's keys only): a valid hold stored under
    another image's key is malformed and keeps the key's image; one under a key that names no image keeps its own."""
    held: list[Hold] = []
    malformed: list[MalformedHold] = []
    unreadable: dict[str, str] = {}
    sources: dict[HeldImage, str] = {}
    for source, key, raw in sorted(documents, key=lambda document: document[1]):
        keyed = held_image_of_key(key)
        try:
            hold = parse_hold(source, raw)
        except InputError as error:
            problem = str(error).removeprefix(f"{source}: ")
            if keyed is None:
                unreadable[source] = problem
            else:
                malformed.append(MalformedHold(source, (keyed,), problem))
                sources[keyed] = source
            continue
        sources[hold.image] = source
        if keyed == hold.image:
            held.append(hold)
            continue
        images = (hold.image,) if keyed is None else (keyed,)
        problem = f"stored at {key}, not at {hold.image.key}, the key of the image it names"
        malformed.append(MalformedHold(source, images, problem))
    return Holds(tuple(held), tuple(malformed), unreadable, sources)


def holds_in_force(holds: Holds, now: datetime) -> list[Hold]:
    """The valid holds that have not ended."""
    return [hold for hold in holds.held if hold.until > now]
