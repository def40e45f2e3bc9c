"""Replication between two registries the run prunes (SPEC "Several Regions"): a deletion in the source that replicates
to the destination is planned once, by the source's rules, with the destination's in-use protection (the source's
RegistryCoordinates read references into its delete-replicating destinations as its own). The destination's own rules
neither delete nor count the images the source decides: the source holds them, or this run's evaluation of the source
said before acting that it deletes them (`runs/<runId>/deletions/`), so that the two evaluations, which run at the same
time in the workflow's Map, agree whichever lists the other first."""

from __future__ import annotations

from collections.abc import Sequence

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.planning.plan import RepositoryPlan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.ports import RepositoryGone, StorageUnavailable
from ecr_retention.registries import PrunedRegistry, deciding_sources
from ecr_retention.run_files import RunFiles


def decided_by_sources(
    config: RetentionConfig,
    others: Sequence[PrunedRegistry],
    here: RegistryCoordinates,
    repository: str,
    run_files: RunFiles | None,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The repository's images that a source registry of the run decides (digest -> the source's Region), and the
    warning of a cycle of replication this registry decides: the sources are domain/planning/replicas.py's
    `deciders_of` (as offline reviews choose them). Of each source, the images its repository of the same name holds
    (one DescribeImages listing of it), and those this run's evaluation of the source said it deletes. Listed first,
    read second: a deletion the listing missed was told before it was made. A source whose repository no policy
    manages decides nothing (and the functions may not read it)."""
    sources, warning = deciding_sources(config, here, others, repository)
    decided: dict[str, str] = {}
    for source in sources:
        told = _told(run_files, repository, source.key)
        decided.update(dict.fromkeys((*_held(source, repository), *told), source.region))
    return decided, tuple(found for found in (warning,) if found)


def _told(run_files: RunFiles | None, repository: str, key: str | None) -> list[str]:
    """What this run's evaluation of the source's repository said it deletes (nothing, outside a run)."""
    return [] if run_files is None else run_files.told_deletions(repository, key)


def _held(source: PrunedRegistry, repository: str) -> list[str]:
    """The digests the source's repository of that name holds (none when it is gone)."""
    try:
        return [image.image_digest for image in source.port.describe_images(repository)]
    except RepositoryGone:
        return []


def _replicates_to_any(plan: RepositoryPlan, others: Sequence[PrunedRegistry]) -> bool:
    destinations = {(replica.registry_id, replica.region) for replica in plan.deletion_replicates_to}
    return any(other.located in destinations for other in others)


def tell_deletions(
    run_files: RunFiles | None,
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
    try:
        run_files.tell_deletions(plan.repository_name, key, deleting)
    except StorageUnavailable as error:
        return (f"its replicated deletions could not be told to the destinations this run also prunes: {error}",)
    return ()
