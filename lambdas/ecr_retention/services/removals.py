"""The record of removals (`removals/`, domain/in_use/references.py `Removal`): the sentinel writes one object per removal it
sees; the sentinel (other events of the same removal) and the run's in-use check (when and by what an image went)
read them. The one writer and the one reader of that prefix. A removal in another pruned Region is recorded under its
repository's regional name (layout.removals_prefix), so that two Regions' repositories of one name never share one.

Only this deployment's sentinel's records count (SPEC "The sentinel"): each record names its writer, the sentinel's
role (SENTINEL_ROLE_ARN), and a reader counts a record only when that is the role it knows as its deployment's
sentinel; the bucket policy lets no other principal write under removals/, so the name cannot be borrowed. A record
that names another writer, or none (an older release's), is ignored and named: a forged record silences nothing and
tells nothing.

Beside the records, one claim per event that alerts (`AlertClaim`, created with S3's conditional write): one alert per
event id, however often EventBridge or Lambda deliver it.

The record informs, it protects nothing: a record that cannot be read is left out and named, never a failure.
"""

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from typing import Literal, TypeGuard

from pydantic import ValidationError

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.in_use.references import Removal
from ecr_retention.domain.planning.plan_model import PlanModel
from ecr_retention.domain.timestamps import UtcDatetime
from ecr_retention.layout import ALERT_CLAIM_SUFFIX, removal_key, removals_prefix
from ecr_retention.ports import Bucket, ClaimingBucket, StorageUnavailable

logger = logging.getLogger(__name__)

MAX_REMOVAL_BYTES = 64 * 1024  # one removal: a few hundred bytes, 100 tags at most
# The newest this many of a repository are read (the bucket's lifecycle expires older ones anyway), so a repository
# that a native policy emptied does not cost a report step minutes.
MAX_REMOVALS_READ = 1000
READ_THREADS = 16
# Another delivery of the same event holds the claim and has not said it published: wait this long for it (it
# publishes a second or two after it claims), then alert anyway: a second alert is better than none.
CLAIM_WAIT_SECONDS = 20
CLAIM_POLL_SECONDS = 2


def write_removal(bucket: Bucket, removal: Removal, position: int) -> str:
    """One object per removal, named by time, event and position: a retried event writes the same key again."""
    key = removal_key(removal.repository_name, removal.removed_at, removal.event_id, position, removal.region)
    bucket.write(key, _removal_json(removal))
    return key


def create_removal(bucket: ClaimingBucket, removal: Removal, position: int) -> str:
    """The first record of a removal; another delivery of the same event leaves the one already there (which may say
    what that delivery's alert named)."""
    key = removal_key(removal.repository_name, removal.removed_at, removal.event_id, position, removal.region)
    bucket.create(key, _removal_json(removal))
    return key


def _removal_json(removal: Removal) -> bytes:
    return removal.model_dump_json(by_alias=True, exclude_none=True).encode()


@dataclass(frozen=True)
class Ignored:
    """A record under removals/ that this deployment's sentinel did not write: its key and the writer it names."""

    key: str
    writer: str | None

    @property
    def told(self) -> str:
        return f"{self.key} (writer {self.writer or 'not named: an older release, or not a sentinel'})"


@dataclass(frozen=True)
class RemovalsRead:
    """A repository's recorded removals, newest first, that this deployment's sentinel wrote; the keys of those that
    could not be read, and the records it did not write (ignored)."""

    removals: tuple[Removal, ...]
    unreadable: tuple[str, ...] = ()
    ignored: tuple[Ignored, ...] = ()


def read_removals(
    bucket: Bucket, repository: str, days: Iterable[date] = (), *, sentinel: str | None, key: str | None = None
) -> RemovalsRead:
    """The newest MAX_REMOVALS_READ removals recorded for a repository (of these days only, when given: the keys are
    dated) of the registry of that key (registries.PrunedRegistry.key), counting only those `sentinel` (this deployment's
    sentinel role; None: unknown, so none) wrote. StorageUnavailable when the prefix cannot be listed."""
    prefix = removals_prefix(repository, key)
    prefixes = [f"{prefix}{day:%Y%m%d}" for day in days] or [prefix]
    listed = {key for each in prefixes for key in bucket.list_objects(each) if not key.endswith(ALERT_CLAIM_SUFFIX)}
    keys = sorted(listed, reverse=True)[:MAX_REMOVALS_READ]
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        read = list(pool.map(lambda key: _read_removal(bucket, key), keys))
    return _sorted_out(list(zip(keys, read, strict=True)), sentinel)


def _sorted_out(read: list[tuple[str, Removal | None]], sentinel: str | None) -> RemovalsRead:
    """The records `sentinel` wrote, those that could not be read, and those it did not write (each logged)."""
    ignored = tuple(Ignored(key, removal.writer) for key, removal in read if _foreign(removal, sentinel))
    for each in ignored:
        logger.warning("the recorded removal %s was not written by this deployment's sentinel: ignored", each.told)
    return RemovalsRead(
        removals=tuple(removal for _, removal in read if _sentinels(removal, sentinel)),
        unreadable=tuple(key for key, removal in read if removal is None),
        ignored=ignored,
    )


def _foreign(removal: Removal | None, sentinel: str | None) -> TypeGuard[Removal]:
    """A record read, but not written by this deployment's sentinel."""
    return removal is not None and not _ours(removal.writer, sentinel)


def _sentinels(removal: Removal | None, sentinel: str | None) -> TypeGuard[Removal]:
    """A record read and written by this deployment's sentinel."""
    return removal is not None and _ours(removal.writer, sentinel)


def _ours(writer: str | None, sentinel: str | None) -> bool:
    return sentinel is not None and writer == sentinel


def _read_removal(bucket: Bucket, key: str) -> Removal | None:
    try:
        body = bucket.read(key, max_bytes=MAX_REMOVAL_BYTES)
        return None if body is None else Removal.model_validate_json(body)
    except (StorageUnavailable, InputError, ValidationError) as error:
        logger.warning("the recorded removal %s cannot be read: %s", key, error)
        return None


# --- one alert per event ------------------------------------------------------------------------------------------

ClaimState = Literal["claimed", "published", "released"]


class AlertClaim(PlanModel):
    """The claim of one event's alert (`layout.alert_claim_key`): created once, by the first delivery that has
    something to alert (S3 If-None-Match), then marked `published` once the alert is out, or `released` when
    publishing failed (a retry then alerts)."""

    schema_version: Literal[1] = 1
    event_id: str
    writer: str | None = None
    state: ClaimState
    at: UtcDatetime


@dataclass(frozen=True)
class AlertClaims:
    """Where an event's claim is, who this deployment's sentinel is, and how to wait for another delivery."""

    bucket: ClaimingBucket
    key: str
    sentinel: str | None
    sleep: Callable[[float], None]

    def claim(self, claim: AlertClaim) -> AlertClaim | None:
        """None when this delivery is to publish; else the claim of the delivery that published the event's alert.
        A claim this deployment's sentinel did not write is ignored (and logged); one still `claimed` after
        CLAIM_WAIT_SECONDS is a delivery that died: this one publishes."""
        if self.bucket.create(self.key, claim.model_dump_json(by_alias=True, exclude_none=True).encode()):
            return None
        for _ in range(CLAIM_WAIT_SECONDS // CLAIM_POLL_SECONDS):
            held = self._held()
            if held is None or held.state == "released":
                break
            if held.state == "published":
                return held
            self.sleep(CLAIM_POLL_SECONDS)
        self.mark(claim)
        return None

    def mark(self, claim: AlertClaim) -> None:
        self.bucket.write(self.key, claim.model_dump_json(by_alias=True, exclude_none=True).encode())

    def _held(self) -> AlertClaim | None:
        """The claim there now, when this deployment's sentinel wrote it and it can be read."""
        try:
            body = self.bucket.read(self.key, max_bytes=MAX_REMOVAL_BYTES)
            held = None if body is None else AlertClaim.model_validate_json(body)
        except (StorageUnavailable, InputError, ValidationError) as error:
            logger.warning("the alert claim %s cannot be read: %s", self.key, error)
            return None
        if held is not None and not _ours(held.writer, self.sentinel):
            logger.warning("the alert claim %s was not written by this deployment's sentinel: ignored", self.key)
            return None
        return held
