"""Keep each repository's snapshot in the bucket as its evaluation read it, and read them back as one registry for
a review that has S3 read access only (`plan --bucket`, `diff --bucket`). domain/swept.py holds the shape."""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import ValidationError

from ecr_retention.domain.errors import InputError, describe_validation_error, parse_json
from ecr_retention.domain.limits import SNAPSHOT
from ecr_retention.domain.registry import RepositorySnapshot
from ecr_retention.domain.replication import RegistryReplication
from ecr_retention.domain.swept import SweptRegistry, SweptRepository, registry_of
from ecr_retention.layout import SNAPSHOTS_PREFIX, repository_snapshot_key
from ecr_retention.ports import Bucket, StorageUnavailable


def keep_snapshot(
    bucket: Bucket,
    run_id: str,
    snapshot: RepositorySnapshot,
    read_at: datetime,
    *,
    registry_id: str,
    region: str,
    replication: RegistryReplication,
) -> tuple[str, ...]:
    """Overwrite the repository's kept snapshot. A review is not worth an evaluation: a write that fails is a
    warning of the repository's report (returned), and the evaluation goes on."""
    swept = SweptRepository(
        registry_id=registry_id,
        region=region,
        replication=None if replication.problem else replication.replication_configuration,
        replication_problem=replication.problem,
        read_at=read_at,
        run_id=run_id,
        repositories=(snapshot,),
    )
    body = json.dumps(swept.model_dump(mode="json", by_alias=True, exclude_none=True)).encode()
    try:
        bucket.write(repository_snapshot_key(snapshot.repository_name), body)
    except StorageUnavailable as error:
        return (f"its snapshot could not be kept for reviews (plan --bucket, diff --bucket): {error}",)
    return ()


def load_swept_registry(bucket: Bucket) -> SweptRegistry:
    """Every kept snapshot, as one registry. Raises InputError naming an object that cannot be read (the review
    would otherwise leave a repository out without a word) and StorageUnavailable."""
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
    return registry_of(swept)


def read_swept(source: str, body: bytes) -> SweptRepository:
    data = parse_json(body.decode("utf-8", errors="replace"), source)
    try:
        return SweptRepository.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {describe_validation_error(error, SweptRepository)}") from None
