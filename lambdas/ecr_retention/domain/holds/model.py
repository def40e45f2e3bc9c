"""A hold: a person pins one image for a time (`ecr-retention hold add`), with an owner, a reason and an end.

One object per hold in the inventory bucket (`holds/<region>/<repository>/<digest>.json`, layout.hold_key), written
only by the roles the stack names as holders. A hold placed by tag records the digest the tag pointed to then: it
holds that image, wherever the tag goes afterwards. Pure: read here, protected by in domain/holds/protection.py; a
hold as stored, and how one object is parsed, in domain/holds/stored.py, loaded where there is an object to read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ecr_retention.domain.errors import InputError
from ecr_retention.layout import HOLDS_PREFIX, hold_key

if TYPE_CHECKING:
    from ecr_retention.domain.holds.stored import Hold, MalformedHold

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
    from ecr_retention.domain.holds.stored import names_an_image  # a key to read: the hold models with it

    image = HeldImage(region, "/".join(repository), digest)
    return image if names_an_image(image) else None


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
        from ecr_retention.domain.holds.stored import MalformedHold, parse_hold  # an object to read: no hold, none

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
