"""Where a registry is: the one value that names the registry a plan, a memory, a check or a report is about.

A run over several registries is a list of these. Pure: built by the wiring from its settings and by the CLI from
its arguments or a snapshot; nothing below them assumes the one registry of the process."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from ecr_retention.domain.registry.references import ImageReference, InvalidReference, parse_reference
from ecr_retention.domain.registry.replication import NO_REPLICATION, Replica, ReplicationConfiguration

# The partitions whose Regions carry a prefix of their own (botocore's partitions.json, regionRegex); every other Region
# is in `aws`.
PARTITION_PREFIXES = (
    ("cn-", "aws-cn"),
    ("us-gov-", "aws-us-gov"),
    ("us-iso-", "aws-iso"),
    ("us-isob-", "aws-iso-b"),
    ("eu-isoe-", "aws-iso-e"),
    ("us-isof-", "aws-iso-f"),
    ("eusc-", "aws-eusc"),
)


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

    def known_as(self, registry_id: str | None) -> RegistryCoordinates:
        """These coordinates, with that account when they know none (a policy file's registryId for images that name
        no account)."""
        return replace(self, registry_id=self.registry_id or registry_id)


# A registry nothing is known of (a snapshot read offline without its account): every ECR reference matches it.
UNKNOWN_REGISTRY = RegistryCoordinates()


# --- reading an in-use image string against a registry: the one classification ---------------------------------


@dataclass(frozen=True, slots=True)
class NotAReference:
    """An image string that is no reference; the error says why (a warning quotes it)."""

    image: str
    error: InvalidReference


@dataclass(frozen=True, slots=True)
class NotEcr:
    """A reference of a registry that is not ECR (Docker Hub, ghcr.io, a private host)."""

    reference: ImageReference

    @property
    def looks_like_ecr(self) -> bool:
        """Its host says it is ECR's (`.dkr.ecr.`, `.dkr-ecr.`) but is no ECR host of any partition: a warning names
        it, since a tag reference there protects nothing (docs/safety.md section 32)."""
        return self.reference.looks_like_ecr


@dataclass(frozen=True, slots=True)
class InThisRegistry:
    """An ECR reference of this registry (an unknown account or Region matches)."""

    reference: ImageReference
    ecr_registry: tuple[str, str]  # the (account, Region) the reference names


@dataclass(frozen=True, slots=True)
class InReachedReplica:
    """An ECR reference of a destination this registry's deletions reach (a replica of the same repository with
    delete replication): what is deleted here goes there too."""

    reference: ImageReference
    ecr_registry: tuple[str, str]
    replica: Replica


@dataclass(frozen=True, slots=True)
class InUnreachedReplica:
    """An ECR reference of a destination the repository replicates to without its deletions: that copy stays
    whatever is deleted here."""

    reference: ImageReference
    ecr_registry: tuple[str, str]
    replica: Replica


@dataclass(frozen=True, slots=True)
class InOtherRegistry:
    """An ECR reference of another registry, neither this one nor a replica of the repository: how its tags relate
    to ours is unknown (its digest is still the image's)."""

    reference: ImageReference
    ecr_registry: tuple[str, str]


EcrReading = InThisRegistry | InReachedReplica | InUnreachedReplica | InOtherRegistry
ReferenceReading = NotAReference | NotEcr | EcrReading
# A reference into the registry: what a deletion here removes from under a workload that runs it.
ReferenceHere = InThisRegistry | InReachedReplica


def replica_of(replication: ReplicationConfiguration, repository: str, registry: tuple[str, str]) -> Replica | None:
    """The repository's replica in that registry, if replication sends the repository there."""
    return next((replica for replica in replication.replicas(repository) if replica.registry == registry), None)


def read_reference(image: str, registry: RegistryCoordinates) -> ReferenceReading:
    """The one way an in-use image string is read against a registry (the planner's index, the in-use memory, the
    sentinel and the in-use check, the tagger and the diff): no reference, not ECR, of this registry, of a replica
    our deletions reach or do not reach (its replication rules for the same repository), or of another registry."""
    try:
        reference = parse_reference(image)
    except InvalidReference as error:
        return NotAReference(image, error)
    if reference.account is None or reference.region is None:
        return NotEcr(reference)
    named = (reference.account, reference.region)
    if reference.in_registry(registry.registry_id, registry.region):
        return InThisRegistry(reference, named)
    replica = replica_of(registry.replication, reference.repository, named)
    if replica is None:
        return InOtherRegistry(reference, named)
    if replica.replicates_deletions:
        return InReachedReplica(reference, named, replica)
    return InUnreachedReplica(reference, named, replica)


def reference_into(image: str, registry: RegistryCoordinates) -> ReferenceHere | None:
    """The reading when the image names an ECR repository of this registry or of a destination its deletions reach;
    None for anything else, an image string that is no reference included."""
    reading = read_reference(image, registry)
    return reading if isinstance(reading, ReferenceHere) else None
