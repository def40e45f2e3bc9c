"""Replication between two registries the run prunes (SPEC "Several Regions"): a deletion in the source that replicates
to the destination is planned once, by the source's rules, with the destination's in-use protection (the source's
RegistryCoordinates read references into its delete-replicating destinations as its own). The destination's own rules
neither delete nor count the images the source decides: the source holds them, or this run's evaluation of the source
said before acting that it deletes them (`runs/<runId>/deletions/`), so that the two evaluations, which run at the same
time in the workflow's Map, agree whichever lists the other first."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.planning.plan import RepositoryPlan
from ecr_retention.domain.planning.replicas import deciders_of
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.layout import replicated_deletions_key
from ecr_retention.ports import Bucket, RepositoryGone, StorageUnavailable
from ecr_retention.registries import PrunedRegistry

MAX_DELETIONS_BYTES = 16 * 1024 * 1024  # 100,000 digests of 71 characters, quoted


def decided_by_sources(
    config: RetentionConfig,
    others: Sequence[PrunedRegistry],
    here: RegistryCoordinates,
    repository: str,
    run_files: Bucket | None,
    run_id: str,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The repository's images that a source registry of the run decides (digest -> the source's Region), and the
    warning of a cycle of replication this registry decides: the sources are domain/planning/replicas.py's
    `deciders_of` (as offline reviews choose them). Of each source, the images its repository of the same name holds
    (one DescribeImages listing of it), and those this run's evaluation of the source said it deletes. Listed first,
    read second: a deletion the listing missed was told before it was made. A source whose repository no policy
    manages decides nothing (and the functions may not read it)."""
    deciders = deciders_of(config, [here, *(other.coordinates for other in others)], here, repository)
    deciding = {(source.registry_id, source.region) for source in deciders.sources}
    decided: dict[str, str] = {}
    for source in (other for other in others if other.located in deciding):
        told = _told_deletions(run_files, run_id, repository, source.key)
        decided.update(dict.fromkeys((*_held(source, repository), *told), source.region))
    return decided, tuple(warning for warning in (deciders.warning,) if warning)


def _held(source: PrunedRegistry, repository: str) -> list[str]:
    """The digests the source's repository of that name holds (none when it is gone)."""
    try:
        return [image.image_digest for image in source.port.describe_images(repository)]
    except RepositoryGone:
        return []


def _told_deletions(run_files: Bucket | None, run_id: str, repository: str, key: str | None) -> list[str]:
    if run_files is None:
        return []
    key = replicated_deletions_key(run_id, repository, key)
    source = f"s3://{run_files.name}/{key}"
    body = run_files.read(key, max_bytes=MAX_DELETIONS_BYTES)
    if body is None:
        return []
    return _digests(parse_json(body.decode("utf-8", errors="replace"), source), source)


def _digests(data: object, source: str) -> list[str]:
    if isinstance(data, list) and all(isinstance(digest, str) for digest in data):
        return data
    raise InputError(f"{source}: not a list of image digests")


def _replicates_to_any(plan: RepositoryPlan, others: Sequence[PrunedRegistry]) -> bool:
    destinations = {(replica.registry_id, replica.region) for replica in plan.deletion_replicates_to}
    return any(other.located in destinations for other in others)


def tell_deletions(
    run_files: Bucket | None,
    run_id: str,
    plan: RepositoryPlan,
    others: Sequence[PrunedRegistry],
    key: str | None,
) -> tuple[str, ...]:
    """Before acting: the digests the plan deletes, for the evaluations of the run's destinations this repository's
    deletions replicate to. A write that fails is a warning (the destination may then count a replicated deletion as
    its own: nothing more is deleted than the source's rules delete)."""
    deleting = [decision.image_digest for decision in plan.images if decision.action == "delete"]
    if run_files is None or not deleting or not _replicates_to_any(plan, others):
        return ()
    told = replicated_deletions_key(run_id, plan.repository_name, key)
    try:
        run_files.write(told, json.dumps(deleting).encode())
    except StorageUnavailable as error:
        return (f"its replicated deletions could not be told to the destinations this run also prunes: {error}",)
    return ()
