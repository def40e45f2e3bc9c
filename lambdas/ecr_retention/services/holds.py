"""`ecr-retention hold add | list | remove`: place a hold on an image (resolved in ECR, written once under holds/ with
a conditional write), list the holds, and lift one. Bad input (no such image, an end in the past or past
safety.max_hold, a repository at its cap, a hold already there) is one InputError line; nothing is written then."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError

from ecr_retention.domain.durations import format_duration
from ecr_retention.domain.errors import InputError, describe_validation_error
from ecr_retention.domain.holds.model import MAX_HOLDS_PER_REPOSITORY, HeldImage, Holds
from ecr_retention.domain.holds.stored import Hold, hold_json
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.timestamps import format_timestamp
from ecr_retention.layout import HOLDS_PREFIX
from ecr_retention.ports import HoldingBucket, Registry, RepositoryGone
from ecr_retention.services.inventory import read_holds_from_bucket


@dataclass(frozen=True)
class HoldRequest:
    """What `hold add` asks: an image by tag or digest, until when, why, and by whom."""

    repository: str
    tag: str | None
    digest: str | None
    until: datetime
    reason: str
    owner: str


def place_hold(
    request: HoldRequest, *, registry: Registry, bucket: HoldingBucket, now: datetime, max_hold: timedelta
) -> Hold:
    """Check the request, resolve the image in ECR (a tag to the digest it points to now), and write the hold once."""
    _check_until(request.until, now, max_hold)
    image = _resolve(registry, request)
    try:
        hold = Hold(
            schema_version=1,
            registry_id=registry.registry_id,
            region=registry.region,
            repository=request.repository,
            digest=image.image_digest,
            tag=request.tag,
            owner=request.owner,
            reason=request.reason,
            created_at=now,
            until=request.until,
        )
    except ValidationError as error:  # --reason or --owner out of the hold's bounds: one line, nothing written
        raise InputError(f"hold add: {describe_validation_error(error, Hold)}") from None
    _check_cap(bucket, hold.image)
    if not bucket.create(hold.image.key, hold_json(hold)):
        raise InputError(
            f"{hold.placed_on} in {hold.region} is held already (s3://{bucket.name}/{hold.image.key}): "
            "`ecr-retention hold list` shows it; remove it first to place another"
        )
    return hold


def _check_until(until: datetime, now: datetime, max_hold: timedelta) -> None:
    if until <= now:
        raise InputError(f"--until: {format_timestamp(until)} is not in the future")
    if until - now > max_hold:
        raise InputError(
            f"--until: {format_timestamp(until)} is more than safety.max_hold {format_duration(max_hold)} away (the "
            f"longest hold ends {format_timestamp(now + max_hold)}); extend a hold by placing a new one before it ends"
        )


def _resolve(registry: Registry, request: HoldRequest) -> ImageDetail:
    image_id = {"imageTag": request.tag} if request.tag is not None else {"imageDigest": request.digest or ""}
    named = (
        f"{request.repository}:{request.tag}" if request.tag is not None else f"{request.repository}@{request.digest}"
    )
    try:
        found = registry.describe_images_by_id(request.repository, [image_id])
    except RepositoryGone:
        raise InputError(f"{named}: no repository {request.repository} in {registry.region}") from None
    if not found:
        raise InputError(f"{named}: no such image in {registry.region}")
    return found[0]


def _check_cap(bucket: HoldingBucket, image: HeldImage) -> None:
    prefix = f"{HOLDS_PREFIX}{image.region}/{image.repository}/"
    # a sub-repository's holds (team/app/worker under team/app) have a slash after the prefix
    held = [key for key in bucket.list_objects(prefix) if "/" not in key.removeprefix(prefix)]
    if len(held) >= MAX_HOLDS_PER_REPOSITORY:
        raise InputError(
            f"{image.repository} in {image.region} has {len(held)} holds, the most one repository may have "
            f"({MAX_HOLDS_PER_REPOSITORY}): remove one first"
        )


def list_holds(bucket: HoldingBucket) -> Holds:
    return read_holds_from_bucket(bucket)


def remove_hold(bucket: HoldingBucket, region: str, repository: str, *, tag: str | None, digest: str | None) -> str:
    """Lift the hold of one image, named by digest or by the tag it was placed by (wherever that tag points now); the
    key removed. InputError when there is no such hold."""
    if digest is not None:
        image = HeldImage(region, repository, digest)
    else:
        placed = [
            hold.image
            for hold in list_holds(bucket).held
            if (hold.region, hold.repository, hold.tag) == (region, repository, tag)
        ]
        if not placed:
            raise InputError(f"{repository}:{tag} in {region}: no hold was placed by this tag; name it by digest")
        if len(placed) > 1:  # the tag moved between two holds: which one is meant is the person's call, not ours
            digests = ", ".join(sorted(image.digest for image in placed))
            raise InputError(
                f"{repository}:{tag} in {region}: {len(placed)} holds were placed by this tag ({digests}); name one "
                "by digest"
            )
        image = placed[0]
    if image.key not in bucket.list_objects(image.key):
        raise InputError(f"{image} has no hold (s3://{bucket.name}/{image.key})")
    bucket.delete(image.key)
    return image.key
