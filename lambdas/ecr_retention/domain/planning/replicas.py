"""Replication between two registries a run prunes, decided one way for the run and for the offline reviews (`plan`,
`diff` of a snapshot of several Regions): SPEC "Several Regions". A repository's images replicated into a pruned
registry from a pruned source whose deletions of it replicate there are the source's to decide (the destination's
rules neither delete nor count them: guards.defer_to_sources), with the destination's in-use protection.

Replication both ways (or round a cycle) between pruned registries would leave each side to the other, and the
repository would never be pruned. Then one side decides by its own rules: the registry of the cycle whose Region
sorts first. Both doors reach the same choice without knowing which Region is the deployment's home (a snapshot file
does not say), and it does not move when a Region is added to or removed from the deployment outside the cycle. The
deciding side says so once, in its repository's warnings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.planning.managed import managed_in
from ecr_retention.domain.registry.coordinates import RegistryCoordinates

if TYPE_CHECKING:
    from ecr_retention.domain.registry.images import Snapshot

Located = tuple[str, str]  # (account, Region)


@dataclass(frozen=True)
class Deciders:
    """Who decides a repository's replicas in one pruned registry: the sources (by their coordinates), and the
    warning this registry's plan carries when it decides a cycle of replication by its own rules."""

    sources: tuple[RegistryCoordinates, ...] = ()
    warning: str | None = None


def _located(registry: RegistryCoordinates) -> Located | None:
    if registry.registry_id is None or registry.region is None:
        return None
    return (registry.registry_id, registry.region)


def _edges(
    config: RetentionConfig, registries: Sequence[RegistryCoordinates], repository: str
) -> dict[Located, set[Located]]:
    """Source -> the pruned registries its deletions of the repository replicate to, where a policy manages it there."""
    known = {where for where in map(_located, registries) if where is not None}
    edges: dict[Located, set[Located]] = {where: set() for where in known}
    for registry in registries:
        source = _located(registry)
        if source is None or not managed_in(config, repository, registry.region):
            continue
        reach = {replica.registry for replica in registry.replication.deletion_reach(repository)}
        edges[source] = (reach & known) - {source}
    return edges


def _reachable(edges: Mapping[Located, set[Located]], start: Located) -> set[Located]:
    seen, waiting = {start}, [start]
    while waiting:
        for following in edges.get(waiting.pop(), ()):
            if following not in seen:
                seen.add(following)
                waiting.append(following)
    return seen


def deciders_of(
    config: RetentionConfig, registries: Sequence[RegistryCoordinates], here: RegistryCoordinates, repository: str
) -> Deciders:
    """The pruned registries (`registries`, `here` among them) whose rules decide the repository's replicas in `here`:
    each source whose deletions of it replicate here and which a policy manages it in; within a cycle of such
    replication, the Region that sorts first defers to none of the cycle (module docstring)."""
    where = _located(here)
    if where is None:
        return Deciders()
    edges = _edges(config, registries, repository)
    cycle = _cycle_of(edges, where)
    deciding = len(cycle) > 1 and cycle[0] == where
    excluded = set(cycle) if deciding else set()
    sources = tuple(registry for registry in registries if _feeds(edges, registry, where, excluded))
    warning = cycle_warning(repository, [region for _, region in cycle]) if deciding else None
    return Deciders(sources, warning)


def _cycle_of(edges: Mapping[Located, set[Located]], where: Located) -> list[Located]:
    """The registries on a cycle of replication with this one (itself among them), sorted."""
    return sorted(other for other in _reachable(edges, where) if where in _reachable(edges, other))


def _feeds(
    edges: Mapping[Located, set[Located]], registry: RegistryCoordinates, where: Located, excluded: set[Located]
) -> bool:
    place = _located(registry)
    return place is not None and place not in excluded and where in edges.get(place, ())


def cycle_warning(repository: str, regions: Iterable[str]) -> str:
    first, *others = regions
    return (
        f"{repository} replicates its deletions both ways between the pruned Regions {', '.join([first, *others])}: "
        f"{first}'s rules decide it (the Region that sorts first), and {', '.join(others)} leave{'s' if len(others) == 1 else ''} "
        "to them the replicas"
    )


@dataclass(frozen=True)
class Replicas:
    """A registry's replicas decided elsewhere, by repository (digest -> the source's Region), and the warnings of the
    cycles it decides."""

    decided: Mapping[str, Mapping[str, str]]
    warnings: tuple[str, ...] = ()


def replicas_of_snapshots(config: RetentionConfig, snapshots: Sequence[Snapshot], here: Snapshot) -> Replicas:
    """Offline (a snapshot of several Regions): what `deciders_of` leaves to a source, read from the source's snapshot
    of the same repository, as the run reads it from the source's registry."""
    registries = [snapshot.registry for snapshot in snapshots]
    decided: dict[str, dict[str, str]] = {}
    warnings: list[str] = []
    for repository in here.repositories:
        name = repository.repository_name
        if not managed_in(config, name, here.region):
            continue
        deciders = deciders_of(config, registries, here.registry, name)
        warnings.extend([deciders.warning] if deciders.warning else [])
        decided[name] = {
            digest: str(source.region) for source in deciders.sources for digest in _held(snapshots, source, name)
        }
    return Replicas(decided, tuple(warnings))


def _held(snapshots: Sequence[Snapshot], source: RegistryCoordinates, repository: str) -> list[str]:
    """The digests the source's snapshot holds in the repository of that name."""
    snapshot = next(snapshot for snapshot in snapshots if snapshot.registry == source)
    copy = next((repo for repo in snapshot.repositories if repo.repository_name == repository), None)
    return [] if copy is None else [image.image_digest for image in copy.image_details]
