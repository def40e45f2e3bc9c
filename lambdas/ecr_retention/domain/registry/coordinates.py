"""Where a registry is: the one value that names the registry a plan, a memory, a check or a report is about.

A run over several registries is a list of these. Pure: built by the wiring from its settings and by the CLI from
its arguments or a snapshot; nothing below them assumes the one registry of the process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ecr_retention.domain.registry.references import ImageReference, InvalidReference, parse_reference
from ecr_retention.domain.registry.replication import NO_REPLICATION, Replica, ReplicationConfiguration

# The partitions whose Regions carry a prefix of their own; every other Region is in `aws`.
PARTITION_PREFIXES = (("cn-", "aws-cn"), ("us-gov-", "aws-us-gov"), ("us-iso-", "aws-iso"), ("us-isob-", "aws-iso-b"))


def partition_of(region: str) -> str:
    return next((partition for prefix, partition in PARTITION_PREFIXES if region.startswith(prefix)), "aws")


class Located(Protocol):
    """What names a registry: the Registry port (ports.py) has both."""

    @property
    def registry_id(self) -> str: ...

    @property
    def region(self) -> str: ...


@dataclass(frozen=True)
class RegistryCoordinates:
    """A registry's account (None when unknown, e.g. a snapshot read offline), Region and replication rules."""

    registry_id: str | None = None
    region: str | None = None
    replication: ReplicationConfiguration = NO_REPLICATION

    @property
    def partition(self) -> str | None:
        return None if self.region is None else partition_of(self.region)

    @classmethod
    def of(cls, registry: Located, replication: ReplicationConfiguration = NO_REPLICATION) -> RegistryCoordinates:
        """The coordinates of a registry port (its account and Region) with the replication rules read of it."""
        return cls(registry_id=registry.registry_id, region=registry.region, replication=replication)


# A registry nothing is known of (a snapshot read offline without its account): every ECR reference matches it.
UNKNOWN_REGISTRY = RegistryCoordinates()


@dataclass(frozen=True, slots=True)
class ReferenceHere:
    """An in-use reference into a registry: parsed (its registry, repository, tag and digest), and, when it names a
    destination the registry's deletions reach rather than the registry itself, that replica."""

    reference: ImageReference
    replica: Replica | None = None


def replica_of(replication: ReplicationConfiguration, repository: str, registry: tuple[str, str]) -> Replica | None:
    """The repository's replica in that registry, if replication sends the repository there."""
    return next((replica for replica in replication.replicas(repository) if replica.registry == registry), None)


def reference_into(image: str, registry: RegistryCoordinates) -> ReferenceHere | None:
    """The one way an in-use image string is read against a registry (the planner's index, the in-use memory, the
    sentinel, the in-use check and the diff): the reference when it names an ECR repository of this registry (an
    unknown account or Region matches) or of a destination its deletions reach (a replica with delete replication of
    the same repository); None for anything else, an image string that is no reference included."""
    try:
        reference = parse_reference(image)
    except InvalidReference:
        return None
    if reference.account is None or reference.region is None:
        return None
    if reference.in_registry(registry.registry_id, registry.region):
        return ReferenceHere(reference)
    replica = replica_of(registry.replication, reference.repository, (reference.account, reference.region))
    if replica is None or not replica.replicates_deletions:
        return None
    return ReferenceHere(reference, replica)
