"""Keep each repository's snapshot in the bucket as its evaluation read it, and read them back as one registry for
a review that has S3 read access only (`plan --bucket`, `diff --bucket`). domain/registry/swept.py holds the shape."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from ecr_retention.domain.errors import InputError, describe_validation_error, parse_json
from ecr_retention.domain.limits import SNAPSHOT
from ecr_retention.domain.planning.ledger import Ledger
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot
from ecr_retention.domain.registry.swept import SweptRegistry, SweptRepository, registry_of
from ecr_retention.domain.timestamps import parse_timestamp
from ecr_retention.layout import SNAPSHOTS_PREFIX, repository_snapshot_key
from ecr_retention.ports import Bucket, StorageUnavailable

# A kept snapshot that the evaluation finds as it is stored (the same images, replication and registry: only when and by
# which run it was read differ) is not written again until it is this old: a GET to compare costs a twelfth of the PUT
# it saves (docs/cost.md), and its read_at, which a review prints ("read ... to ..."), lags by at most this much.
SNAPSHOT_REWRITTEN_AFTER = timedelta(days=7)


def keep_snapshot(
    bucket: Bucket,
    run_id: str,
    snapshot: RepositorySnapshot,
    read_at: datetime,
    *,
    registry: RegistryCoordinates,
    replication_problem: str | None = None,
    key: str | None = None,
) -> tuple[str, ...]:
    """Overwrite the repository's kept snapshot. A review is not worth an evaluation: a write that fails is a
        warning of the repository's report (returned), and the evaluation goes on. `replication_problem`: why the run
        could not read the registry's replication rules (kept instead of them, so that a review warns of it). `key`:
    the registry's (registries.PrunedRegistry.key; the snapshot's key names it)."""
    swept = SweptRepository(
        registry_id=registry.registry_id,
        region=registry.region,
        replication=None if replication_problem else registry.replication,
        replication_problem=replication_problem,
        read_at=read_at,
        run_id=run_id,
        repositories=(snapshot,),
    )
    written = WrittenSnapshot.of(swept)
    stored = repository_snapshot_key(snapshot.repository_name, key)
    try:
        if not _kept_as_it_is(bucket, stored, swept, written):
            bucket.write(stored, written.body)
    except StorageUnavailable as error:  # the write's (the comparison's read failing is a reason to write)
        return (f"its snapshot could not be kept for reviews (plan --bucket, diff --bucket): {error}",)
    return ()


def _fields(swept: SweptRepository) -> dict[str, Any]:
    """The kept object's JSON fields, as the object holds them."""
    fields: dict[str, Any] = swept.model_dump(mode="json", by_alias=True, exclude_none=True)
    return fields


def _body(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields).encode()


@dataclass(frozen=True)
class WrittenSnapshot:
    """A snapshot's kept object as keep_snapshot writes it (`body`: json.dumps of its `fields`), and `read_part`: the
    body's bytes before `"readAt": ` (every field a review reads, and the ", " after the last), with which every object
    written of the same repository, registry and replication begins, whenever and by whichever run it was read
    (json.dumps writes a dict's items in order, joined by ", "); `last`: the names of the fields from readAt on. No
    read_part for fields that do not end with readAt and what follows it (the stored object is then read as a
    snapshot to compare)."""

    fields: dict[str, Any]
    body: bytes
    read_part: bytes | None = None
    last: tuple[str, ...] = ()

    @classmethod
    def of(cls, swept: SweptRepository) -> WrittenSnapshot:
        fields = _fields(swept)
        body = _body(fields)
        names = tuple(fields)
        if "readAt" not in names[1:]:
            return cls(fields, body)
        last = names[names.index("readAt") :]
        after_read = _body({name: fields[name] for name in last})  # {"readAt": ..., "runId": ...}
        read_part = body[: len(body) - len(after_read) + 1]
        if not (body.endswith(after_read[1:]) and read_part.endswith(b", ")):
            return cls(fields, body)
        return cls(fields, body, read_part, last)

    def read_at_of(self, found: bytes) -> object | None:
        """When the stored object `found` was read, if it is, byte for byte, these fields as keep_snapshot writes them
        but for when and by which run (a string) it was read; None otherwise. The part a review reads is compared as
        bytes, and only the few dozen after it are read as JSON: the answer reading the whole object as JSON gives,
        without reading megabytes of images. (Bytes that json.dumps wrote hold no key twice: the strict reading,
        parse_json, is for the others.)"""
        if self.read_part is None or not found.startswith(self.read_part):
            return None
        after_read = found[len(self.read_part) :]
        try:
            found_last = json.loads(b"{" + after_read)
        except (ValueError, RecursionError):
            return None
        if not isinstance(found_last.get("runId"), str) or "readAt" not in found_last:
            return None
        read_by = {name: self.fields[name] for name in self.last}
        read_by.update(readAt=found_last["readAt"], runId=found_last["runId"])
        return found_last["readAt"] if _body(read_by)[1:] == after_read else None


def _kept_as_it_is(bucket: Bucket, key: str, swept: SweptRepository, written: WrittenSnapshot) -> bool:
    """Whether the object at `key` holds this snapshot already, read by an earlier run less than
    SNAPSHOT_REWRITTEN_AFTER before: then a review reads the same repository from it. An object that is missing or
    cannot be read (unreadable, or its GET failed) is rewritten.

    The common case, the very bytes this snapshot is written as but for when and by which run it was read, is told
    without reading the object as a snapshot (WrittenSnapshot.read_at_of); any other object is read as one
    (read_swept) and compared as this snapshot would be written (an older writer's may differ in form only)."""
    source = f"s3://{bucket.name}/{key}"
    try:
        found = bucket.read(key, max_bytes=SNAPSHOT.max_bytes)
    except StorageUnavailable:
        return False
    if found is None:
        return False
    read_at = written.read_at_of(found)
    if read_at is not None:
        return _read_recently(read_at, swept.read_at)
    try:
        kept = read_swept(source, found)
    except InputError:
        return False
    if swept.read_at - kept.read_at >= SNAPSHOT_REWRITTEN_AFTER:
        return False
    return _fields(kept.model_copy(update={"read_at": swept.read_at, "run_id": swept.run_id})) == written.fields


def _read_recently(stored_read_at: Any, read_at: datetime) -> bool:
    """Whether the stored snapshot was read less than SNAPSHOT_REWRITTEN_AFTER before `read_at` (one it cannot tell
    when was read is not)."""
    try:
        kept_at = parse_timestamp(stored_read_at)
    except ValueError:
        return False
    return read_at - kept_at < SNAPSHOT_REWRITTEN_AFTER


def as_left(snapshot: RepositorySnapshot, ledger: Ledger | None, now: datetime) -> RepositorySnapshot:
    """The repository as the evaluation left it, so that a review does not count again what is gone: what ECR
    confirmed deleted (or found gone) is left out, what it archived is ARCHIVED since now, and what it restores is
    ACTIVE (a restore takes minutes; a review comes later)."""
    if ledger is None:
        return snapshot
    gone, archived = {*ledger.deleted, *ledger.gone}, set(ledger.archived)
    restored = {digest for digest, answer in ledger.answers.items() if answer.kind in ("done", "already")} - archived
    images = tuple(
        _as_left(image, now, archived=archived, restored=restored)
        for image in snapshot.image_details
        if image.image_digest not in gone
    )
    return snapshot.model_copy(update={"image_details": images})


def _as_left(image: ImageDetail, now: datetime, *, archived: set[str], restored: set[str]) -> ImageDetail:
    if image.image_digest in archived:
        return image.model_copy(update={"image_status": "ARCHIVED", "last_archived_at": now})
    if image.image_digest in restored:
        return image.model_copy(update={"image_status": "ACTIVE", "last_activated_at": now})
    return image


class ListedFirst:
    """The bucket as the reviewers' role reads it: its s3:ListBucket is narrowed to the prefixes it may read, so S3
    answers a missing object (the memory before the first run) with AccessDenied, not NoSuchKey. An object is read
    only when a listing shows it; read-only."""

    def __init__(self, bucket: Bucket) -> None:
        self._bucket = bucket
        self._listed: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self._bucket.name

    def list_objects(self, prefix: str) -> dict[str, int]:
        objects = self._bucket.list_objects(prefix)
        self._listed.update(objects)
        return objects

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        if key not in self._listed and key not in self.list_objects(key):
            return None
        return self._bucket.read(key, max_bytes=max_bytes)

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        raise PermissionError(f"s3://{self.name}/{key}: a review writes nothing")


def load_swept_registry(bucket: Bucket, region: str | None = None) -> SweptRegistry:
    """Every kept snapshot of one registry, as one registry: of `region`'s, or of the one Region the bucket holds
    snapshots of (a deployment that prunes several keeps each Region's; the review names one). Raises InputError
    naming an object that cannot be read (the review would otherwise leave a repository out without a word), or the
    Regions to choose from, and StorageUnavailable."""
    swept = read_kept_snapshots(bucket)
    return registry_of(of_one_region(swept, region, f"s3://{bucket.name}/{SNAPSHOTS_PREFIX}"))


def load_swept_registries(bucket: Bucket) -> tuple[SweptRegistry, ...]:
    """Every kept snapshot, grouped by its registry (account, Region) into one registry each, never merged: the
    home Region's first when there is one of unknown Region (kept before snapshots named it), then by Region."""
    groups: dict[tuple[str, str], list[SweptRepository]] = {}
    for repository in read_kept_snapshots(bucket):
        groups.setdefault((repository.region or "", repository.registry_id or ""), []).append(repository)
    return tuple(registry_of(groups[where]) for where in sorted(groups))


def read_kept_snapshots(bucket: Bucket) -> list[SweptRepository]:
    """Raises InputError when there is none, or one cannot be read."""
    swept = []
    for key in sorted(bucket.list_objects(SNAPSHOTS_PREFIX)):
        source = f"s3://{bucket.name}/{key}"
        body = bucket.read(key, max_bytes=SNAPSHOT.max_bytes)
        if body is not None:  # overwritten or expired between the listing and the read
            swept.append(read_swept(source, body))
    if not swept:
        raise InputError(
            f"s3://{bucket.name}/{SNAPSHOTS_PREFIX}: no repository snapshot yet; a sweep of this release writes them"
        )
    return swept


def of_one_region(swept: list[SweptRepository], region: str | None, source: str) -> list[SweptRepository]:
    """The kept snapshots of `region`'s registry, or of the only Region they are of."""
    regions = sorted({repository.region or "" for repository in swept})
    if region is not None:
        chosen = [repository for repository in swept if repository.region == region]
        if not chosen:
            raise InputError(f"--region: {source} holds no snapshot of {region} (it holds {', '.join(regions)})")
        return chosen
    if len(regions) > 1:
        raise InputError(
            f"{source} holds the registries of several Regions ({', '.join(regions)}): name one with --region"
        )
    return swept


def read_swept(source: str, body: bytes) -> SweptRepository:
    data = parse_json(body.decode("utf-8", errors="replace"), source)
    try:
        return SweptRepository.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {describe_validation_error(error, SweptRepository)}") from None
