"""A registry this deployment prunes, as one value: its port (the regional client), its coordinates (account, Region,
partition and, once a run read them, its replication rules) and the key it gives the run's files, leases, snapshots
and records (layout.regional_name: none for the home Region, so a deployment of one Region keeps its keys). And the
one collection of them (PRUNED_REGIONS; `run --region`): the run's Adapters, the sentinel's ports and the tagger's
wiring all hold a `Registries`, so "the registry of Region R", "every pruned registry" and "the registries elsewhere"
have one answer each."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.replication import NO_REPLICATION, ReplicationConfiguration
from ecr_retention.ports import Registry


@dataclass(frozen=True)
class PrunedRegistry:
    """One pruned registry. `home`: the home Region's (the functions' own; the CLI's, the standard AWS configuration's);
    `several`: the deployment prunes more than one Region (then what it tells people names the Region). `replication`:
    the registry's rules as this run read them (services/replication.py), none until then."""

    port: Registry
    home: bool = True
    several: bool = False
    replication: ReplicationConfiguration = NO_REPLICATION

    @property
    def region(self) -> str:
        return self.port.region

    @property
    def registry_id(self) -> str:
        return self.port.registry_id

    @property
    def key(self) -> str | None:
        """What names the registry's run files, leases, kept snapshots and records of removals: None for the home
        Region's (the keys a deployment of one Region has), the Region for another's."""
        return None if self.home else self.port.region

    @property
    def named(self) -> str | None:
        """The Region a text people read names: None when the deployment prunes one Region."""
        return self.port.region if self.several else None

    @property
    def coordinates(self) -> RegistryCoordinates:
        """The registry's account, Region and replication rules, as the domain reads references against them."""
        return RegistryCoordinates(self.port.registry_id, self.port.region, self.replication)

    @property
    def located(self) -> tuple[str, str]:
        """(account, Region): how a replication rule names it."""
        return (self.port.registry_id, self.port.region)

    def reading(self, replication: ReplicationConfiguration) -> PrunedRegistry:
        """This registry with the replication rules the run read of it."""
        return replace(self, replication=replication)


@dataclass(frozen=True)
class Registries:
    """Every registry the deployment prunes: the home Region's first, then the others in the deployment's order."""

    members: tuple[PrunedRegistry, ...]

    @classmethod
    def of(cls, home: Registry, others: tuple[Registry, ...] = ()) -> Registries:
        several = bool(others)
        return cls(
            (
                PrunedRegistry(home, home=True, several=several),
                *(PrunedRegistry(other, home=False, several=several) for other in others),
            )
        )

    def __iter__(self) -> Iterator[PrunedRegistry]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)

    @property
    def home(self) -> PrunedRegistry:
        return self.members[0]

    @property
    def several(self) -> bool:
        return len(self.members) > 1

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(member.region for member in self.members)

    def in_region(self, region: str) -> PrunedRegistry | None:
        """The registry of `region`; None when the deployment does not prune it."""
        return next((member for member in self.members if member.region == region), None)

    def elsewhere(self, pruned: PrunedRegistry) -> tuple[PrunedRegistry, ...]:
        """The registries the run prunes but this one."""
        return tuple(member for member in self.members if member.region != pruned.region)

    def located_elsewhere(self, pruned: PrunedRegistry) -> frozenset[tuple[str, str]]:
        """The (account, Region) of the registries the run prunes but this one: replicas whose references those
        registries' own checks already count."""
        return frozenset(member.located for member in self.elsewhere(pruned))

    def reading(self, replication: Mapping[str, ReplicationConfiguration]) -> Registries:
        """These registries with the replication rules the run read of each, by Region (none where it read none)."""
        return Registries(
            tuple(member.reading(replication.get(member.region, NO_REPLICATION)) for member in self.members)
        )


def deciding_sources(
    config: RetentionConfig, here: RegistryCoordinates, others: Iterable[PrunedRegistry], repository: str
) -> tuple[tuple[PrunedRegistry, ...], str | None]:
    """Of the run's other registries (their replication rules read), those whose rules decide the repository's replicas
    here (domain/planning/replicas.py `deciders_of`, as the offline reviews choose them), and the warning of a cycle of
    replication that this registry decides. The evaluation's and the sentinel's one answer."""
    # Loaded here: the report step never asks, the sentinel only for a deletion of an in-use image in a deployment of
    # several Regions, and the evaluation has the planner (which loads it) already.
    from ecr_retention.domain.planning.replicas import deciders_of

    others = tuple(others)
    deciders = deciders_of(config, [here, *(other.coordinates for other in others)], here, repository)
    deciding = {(source.registry_id, source.region) for source in deciders.sources}
    return tuple(other for other in others if other.located in deciding), deciders.warning
