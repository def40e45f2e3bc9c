"""Read the in-use inventory from the bucket: every `in-use/*.json`, size-capped before it is read, then
parsed by the same strict reader as `plan --manifests` uses offline (domain.inventory.manifest.read_inventory), and the
in-use memory beside it (`state/in-use-memory.json`, the pipeline's own state)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from functools import partial

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.holds.model import Holds, held_image_of_key, read_holds
from ecr_retention.domain.inventory.manifest import (
    Inventory,
    ManifestDocument,
    read_inventory,
    spoke_account_of_source,
    with_memory,
)
from ecr_retention.domain.limits import (
    HOLD_OBJECT,
    IN_USE_MANIFEST,
    IN_USE_MEMORY,
    SPOKE_FOLDER,
    SPOKE_FOLDER_FILES,
    format_limit,
)
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.domain.timestamps import format_timestamp
from ecr_retention.layout import (
    HOLDS_PREFIX,
    IN_USE_MEMORY_KEY,
    IN_USE_PREFIX,
    MEMORY_FILE,
    hold_prefix,
    memory_deletion_acknowledgement_key,
)
from ecr_retention.ports import Bucket, StorageUnavailable, VersionedBucket

MISNAMED = "not stored as <cluster>.json, the only name a manifest is read under; rename or remove it"


def read_inventory_from_bucket(bucket: Bucket, prefix: str = IN_USE_PREFIX) -> Inventory:
    """An object that cannot be read (too large, not JSON, wrong schema, not named `<cluster>.json`) is a problem of
    the inventory named by its key, which blocks every deletion of the run: its images may be running (a spoke's
    cluster that no safety list names only warns: domain/in_use/index.py). So is a memory that cannot be read.

    A spoke account's folder (in-use/<account>/) is read up to SPOKE_FOLDER_FILES objects and SPOKE_FOLDER's bytes, in
    key order; each object past that is not read, a problem of its key: it blocks the run when its cluster is listed
    (fail closed), it warns otherwise. So no writer of a spoke can make every run read without end."""
    documents: list[ManifestDocument] = []
    folders: dict[str, _FolderUse] = defaultdict(_FolderUse)
    for key in sorted(bucket.list_objects(prefix)):
        if key.endswith("/"):  # a folder marker (the S3 console's "Create folder"): no object of anyone's
            continue
        if not key.endswith(".json"):  # a manifest under another name would protect nothing without a word
            documents.append((key, InputError(f"{key}: {MISNAMED}")))
            continue
        account = spoke_account_of_source(key)
        read = _read_manifest(bucket, key) if account is None else folders[account].read(bucket, key, account)
        if read is not None:  # replaced between the listing and the read: the next run sees it
            documents.append((key, read))
    return with_memory(read_inventory(documents), f"s3://{bucket.name}/{IN_USE_MEMORY_KEY}", read_memory(bucket))


# (Region, repository): the holds one evaluation reads.
HeldRepository = tuple[str, str]


def holds_read_by(region: str, repository: str, replication: ReplicationConfiguration) -> set[HeldRepository]:
    """The holds one repository's evaluation reads: its own, and those of the same repository in each Region its
    deletions reach (the replication rules' deletion_reach): a hold there keeps the image here
    (domain/holds/protection.py held_in_reach)."""
    return {(region, repository), *((replica.region, repository) for replica in replication.deletion_reach(repository))}


def holds_read_again(
    bucket: Bucket, region: str, replication: ReplicationConfiguration
) -> Callable[[str, Holds], Holds | None]:
    """How a repository of one Region's registry reads its holds again before it acts (services.evaluate.HoldsReadAgain):
    its own and those of the replicas its deletions reach (holds_read_by), compared with the reading its evaluation
    decided on."""

    def again(repository: str, read: Holds) -> Holds | None:
        return holds_changed_since(bucket, holds_read_by(region, repository, replication), read)

    return again


def holds_changed_since(bucket: Bucket, of: Collection[HeldRepository], read: Holds) -> Holds | None:
    """The holds of `of` read again now (one listing of each repository's own prefix, holds/<region>/<repository>/,
    and a read of each of its holds), when they differ from those an earlier reading (a batch's, minutes old) had under
    those prefixes: that reading with its part under them replaced by this one. None when they agree. A reading that
    fails raises StorageUnavailable, saying so: the caller acts on nothing (the repository fails alone)."""
    try:
        listed = {key for region, name in sorted(of) for key in bucket.list_objects(hold_prefix(region, name))}
        documents = [(_source(bucket, key), key, _read_hold(bucket, key)) for key in sorted(listed) if _mine(key, of)]
    except StorageUnavailable as error:
        raise StorageUnavailable(
            f"its holds could not be read again before acting, so nothing was done: {error}"
        ) from error
    fresh = read_holds(documents)
    mine = partial(_mine, of=of)
    if _part(fresh, bucket, mine) == _part(read, bucket, mine):
        return None
    rest = _part(read, bucket, lambda key: not mine(key))
    return Holds(
        held=(*rest.held, *fresh.held),
        malformed=(*rest.malformed, *fresh.malformed),
        unreadable={**rest.unreadable, **fresh.unreadable},
        sources={**rest.sources, **fresh.sources},
    )


def _mine(key: str, of: Collection[HeldRepository]) -> bool:
    """Whether a key is one that a listing of the prefixes of `of` reads: a hold of one of those repositories, or an
    object under one of their prefixes whose key names no image."""
    image = held_image_of_key(key)
    if image is not None:
        return (image.region, image.repository) in of
    return not key.endswith("/") and any(key.startswith(hold_prefix(region, name)) for region, name in of)


def _part(holds: Holds, bucket: Bucket, keep: Callable[[str], bool]) -> Holds:
    """The part of a reading of the bucket's holds/ whose keys `keep` keeps."""

    def kept(source: str) -> bool:
        return keep(source.removeprefix(f"s3://{bucket.name}/"))

    return Holds(
        held=tuple(hold for hold in holds.held if keep(hold.image.key)),  # a valid hold is read at its image's key
        malformed=tuple(malformed for malformed in holds.malformed if kept(malformed.source)),
        unreadable=_by_source(holds.unreadable, kept),
        sources={image: source for image, source in holds.sources.items() if kept(source)},
    )


def _by_source(problems: Mapping[str, str], kept: Callable[[str], bool]) -> dict[str, str]:
    return {source: problem for source, problem in problems.items() if kept(source)}


def _source(bucket: Bucket, key: str) -> str:
    return f"s3://{bucket.name}/{key}"


def read_inventory_with_holds(bucket: Bucket, of: Collection[HeldRepository] | None = None) -> Inventory:
    """As read_inventory_from_bucket, with the holds (holds/) beside the manifests: what decides a plan, and what the
    sentinel matches a removal against. The tagger reads no holds (it tags what runs). `of`: see read_holds_from_bucket."""
    return replace(read_inventory_from_bucket(bucket), holds=read_holds_from_bucket(bucket, of))


def read_run_inventory(bucket: VersionedBucket, of: Collection[HeldRepository] | None = None) -> Inventory:
    """The inventory a run decides on (the evaluations, the report step, `ecr-retention run`): as
    read_inventory_with_holds, and a memory that is missing because it was deleted blocks like an unreadable one,
    until that deletion is acknowledged; otherwise every image it alone protected would be deleted as on a first run.
    The report step then leaves it unwritten (services/memory.py), so the block holds until someone acts. `of`: the
    repositories of one evaluation (or of one batch's: services.evaluate_step.BatchInventory), whose holds alone it reads."""
    inventory = read_inventory_with_holds(bucket, of)
    if inventory.memory is not None or inventory.memory_problem is not None:
        return inventory
    deleted = deleted_memory(bucket)
    return inventory if deleted is None else replace(inventory, memory_problem=deleted)


def read_holds_from_bucket(bucket: Bucket, of: Collection[HeldRepository] | None = None) -> Holds:
    """Every object under holds/, size-capped, read as domain/holds/model.py reads them (fail closed: an object that
    is no valid hold keeps the image its key names, or blocks the run when its key names none). `of` (each a Region and
    a repository): an evaluation of those repositories (one, or a batch's) reads their holds only, and every object
    whose key names no image (it may hold any): one listing, and no read of the other repositories' holds, however
    many there are."""
    keys = (key for key in sorted(bucket.list_objects(HOLDS_PREFIX)) if not key.endswith("/"))
    return read_holds((_source(bucket, key), key, _read_hold(bucket, key)) for key in keys if _wanted(key, of))


def _wanted(key: str, of: Collection[HeldRepository] | None) -> bool:
    image = held_image_of_key(key)
    return of is None or image is None or (image.region, image.repository) in of


def _read_hold(bucket: Bucket, key: str) -> bytes | InputError:
    try:
        body = bucket.read(key, max_bytes=HOLD_OBJECT.max_bytes)
    except InputError as error:
        return error
    # removed between the listing and the read: read as what it was, an object whose key names the image
    return InputError(f"s3://{bucket.name}/{key}: removed while it was read") if body is None else body


def deleted_memory(bucket: VersionedBucket) -> str | None:
    """Why a missing memory blocks (one line), or None: never written (the first run), or deleted with its deletion
    acknowledged (an object named by the delete marker's version id, layout.memory_deletion_acknowledgement_key). A
    check that cannot be made blocks too: the memory may have protected images."""
    source = f"s3://{bucket.name}/{IN_USE_MEMORY_KEY}"
    try:
        marker = bucket.delete_marker(IN_USE_MEMORY_KEY)
        if marker is None:
            return None
        acknowledgement = memory_deletion_acknowledgement_key(marker.version_id)
        if acknowledgement in bucket.list_objects(acknowledgement):
            return None
    except StorageUnavailable as error:
        return f"{source}: the in-use memory is missing, and whether it was deleted cannot be told ({error})"
    return (
        f"{source}: the in-use memory was deleted at {format_timestamp(marker.deleted_at)} (its latest version is a delete "
        f"marker), not never written: restore it, or acknowledge the deletion with `aws s3api put-object --bucket "
        f"{bucket.name} --key {acknowledgement}` (docs/operations.md)"
    )


def _read_manifest(bucket: Bucket, key: str) -> bytes | InputError | None:
    try:
        return bucket.read(key, max_bytes=IN_USE_MANIFEST.max_bytes)
    except InputError as error:
        return error


@dataclass
class _FolderUse:
    """What one spoke account's folder has had read so far in this run."""

    files: int = 0
    size: int = 0

    def read(self, bucket: Bucket, key: str, account: str) -> bytes | InputError | None:
        if self.files >= SPOKE_FOLDER_FILES or self.size >= SPOKE_FOLDER.max_bytes:
            return InputError(
                f"{key}: not read: {IN_USE_PREFIX}{account}/ is over the cap of a spoke account's folder "
                f"({SPOKE_FOLDER_FILES} manifests, {format_limit(SPOKE_FOLDER.max_bytes)})"
            )
        self.files += 1
        body = _read_manifest(bucket, key)
        if isinstance(body, bytes):
            self.size += len(body)
        return body


def read_memory(bucket: Bucket) -> bytes | InputError | None:
    """The memory's bytes (None before the first run wrote it), or the InputError that stopped the read."""
    try:
        return bucket.read(IN_USE_MEMORY_KEY, max_bytes=IN_USE_MEMORY.max_bytes)
    except InputError as error:
        return error


def inventory_objects(bucket: Bucket, prefix: str = IN_USE_PREFIX) -> dict[str, bytes]:
    """The inventory as stored, byte for byte, for an offline plan to read as the pipeline does: each object under
    in-use/ by its file name, a spoke's as `<account>/<file name>` (its cluster is `<account>/<name>`), and the memory
    as MEMORY_FILE. Raises InputError when two keys share a name (in-use/team/prod.json and in-use/prod.json) or an
    object is over its cap."""
    objects: dict[str, bytes] = {}
    for key in sorted(bucket.list_objects(prefix)):
        file_name = key.rsplit("/", 1)[-1]
        if not file_name:
            continue
        account = spoke_account_of_source(key)
        name = file_name if account is None else f"{account}/{file_name}"
        if name in objects:
            raise InputError(f"s3://{bucket.name}/{key}: another object under {prefix} has the file name {name}")
        body = bucket.read(key, max_bytes=IN_USE_MANIFEST.max_bytes)
        if body is not None:
            objects[name] = body
    memory = bucket.read(IN_USE_MEMORY_KEY, max_bytes=IN_USE_MEMORY.max_bytes)
    if memory is not None:
        objects[MEMORY_FILE] = memory
    return objects
