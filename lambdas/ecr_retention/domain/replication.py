"""Where a deletion reaches: the registry's replication rules (`DescribeRegistry.replicationConfiguration`).

A rule with `deleteReplication.enabled` repeats every deletion and tag removal of the source in each of its
destinations, and so does a native lifecycle expiry. An image that runs in such a destination therefore runs
on the source's copy: it must be protected here as if it ran from here (shared/SPEC.md, "Replicated deletions").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import StrictBool, StringConstraints

from ecr_retention.domain.aws_shape import AwsShape

AccountId = Annotated[str, StringConstraints(pattern=r"^\d{12}$")]
RegionName = Annotated[str, StringConstraints(pattern=r"^[a-z]{2,5}(?:-[a-z]+)+-\d+$")]


class ReplicationDestination(AwsShape):
    region: RegionName
    registry_id: AccountId


class RepositoryFilter(AwsShape):
    # PREFIX_MATCH is the only filter type ECR has; another would be one this release cannot read, and reading
    # it as "matches nothing" could hide a destination, so it is refused.
    filter: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    filter_type: Literal["PREFIX_MATCH"]


class DeleteReplication(AwsShape):
    enabled: StrictBool


class ReplicationRule(AwsShape):
    destinations: tuple[ReplicationDestination, ...]
    repository_filters: tuple[RepositoryFilter, ...] = ()
    delete_replication: DeleteReplication | None = None

    def applies_to(self, repository: str) -> bool:
        """A rule without filters replicates every repository; with filters, those whose name has a prefix."""
        return not self.repository_filters or any(
            repository.startswith(rule_filter.filter) for rule_filter in self.repository_filters
        )

    @property
    def replicates_deletions(self) -> bool:
        return self.delete_replication is not None and self.delete_replication.enabled


@dataclass(frozen=True, order=True)
class Replica:
    """One destination registry of a repository, and whether the source's deletions reach it."""

    registry_id: str
    region: str
    replicates_deletions: bool

    @property
    def registry(self) -> tuple[str, str]:
        return (self.registry_id, self.region)


class ReplicationConfiguration(AwsShape):
    """`replicationConfiguration` exactly as `aws ecr describe-registry` returns it."""

    rules: tuple[ReplicationRule, ...] = ()

    def replicas(self, repository: str) -> tuple[Replica, ...]:
        """The repository's destinations, each once: deletions reach it when any rule that sends the repository
        there replicates deletions. Sorted by account and region."""
        reach: dict[tuple[str, str], bool] = {}
        for rule in self.rules:
            if not rule.applies_to(repository):
                continue
            for destination in rule.destinations:
                key = (destination.registry_id, destination.region)
                reach[key] = reach.get(key, False) or rule.replicates_deletions
        return tuple(sorted(Replica(account, region, deletes) for (account, region), deletes in reach.items()))

    def deletion_reach(self, repository: str) -> tuple[Replica, ...]:
        """Where a deletion in this repository also deletes."""
        return tuple(replica for replica in self.replicas(repository) if replica.replicates_deletions)


NO_REPLICATION = ReplicationConfiguration()


class RegistryReplication(AwsShape):
    """What a run knows of its registry's replication: the configuration, or why it could not be read (then
    the run deletes nothing: a deletion whose reach is unknown may remove what another Region runs). The targets
    step stores it as the run's `replication.json`, which every evaluation of the run reads."""

    replication_configuration: ReplicationConfiguration = NO_REPLICATION
    problem: str | None = None

    @classmethod
    def unreadable(cls, problem: str) -> RegistryReplication:
        return cls(problem=problem)
