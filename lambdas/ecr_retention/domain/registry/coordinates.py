"""Where a registry is: the one value that names the registry a plan, a memory, a check or a report is about.

A run over several registries is a list of these. Pure: built by the wiring from its settings and by the CLI from
its arguments or a snapshot; nothing below them assumes the one registry of the process."""

from __future__ import annotations

from dataclasses import dataclass

from ecr_retention.domain.registry.replication import NO_REPLICATION, ReplicationConfiguration

# The partitions whose Regions carry a prefix of their own; every other Region is in `aws`.
PARTITION_PREFIXES = (("cn-", "aws-cn"), ("us-gov-", "aws-us-gov"), ("us-iso-", "aws-iso"), ("us-isob-", "aws-iso-b"))


def partition_of(region: str) -> str:
    return next((partition for prefix, partition in PARTITION_PREFIXES if region.startswith(prefix)), "aws")


@dataclass(frozen=True)
class RegistryCoordinates:
    """A registry's account (None when unknown, e.g. a snapshot read offline), Region and replication rules."""

    registry_id: str | None = None
    region: str | None = None
    replication: ReplicationConfiguration = NO_REPLICATION

    @property
    def partition(self) -> str | None:
        return None if self.region is None else partition_of(self.region)
