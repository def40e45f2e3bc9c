"""Where a deletion reaches: the registry's replication rules (`DescribeRegistry.replicationConfiguration`).

A rule with `deleteReplication.enabled` repeats every deletion and tag removal of the source in each of its
destinations, and so does a native lifecycle expiry. An image that runs in such a destination therefore runs
on the source's copy: it must be protected here as if it ran from here (the specification's "Replicated deletions").
"""

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import ConfigDict, StrictBool, StringConstraints

from ecr_retention.domain.aws_shape import AwsShape

# An AWS account id and a region name, one pattern each for the package (a replication destination, the collector's
# and the stack's regions). [0-9], not \d: pydantic's patterns read \d as any script's digit, and an account id in
# Arabic-Indic digits is no account's id.
AccountId = Annotated[str, StringConstraints(pattern=r"^[0-9]{12}$")]
REGION_PATTERN = r"^[a-z]{2,5}(?:-[a-z]+)+-[0-9]+$"
AwsRegion = Annotated[str, StringConstraints(pattern=REGION_PATTERN)]


class ReplicationShape(AwsShape):
    """A part of `replicationConfiguration`, read strictly: an unknown key is refused, not ignored. The reach of a
    deletion cannot be half understood: a misspelt `deleteReplications` in a snapshot would otherwise be read as
    "no field". From DescribeRegistry an unknown key cannot arrive: botocore hands over only the members of its
    ECR model, which these classes mirror (rules; destinations, repositoryFilters, deleteReplication; region,
    registryId; filter, filterType; enabled). A newer botocore with a new member would block the run, naming the
    key, rather than let this release guess what the member means."""

    model_config = ConfigDict(extra="forbid")


class ReplicationDestination(ReplicationShape):
    region: AwsRegion
    registry_id: AccountId


class RepositoryFilter(ReplicationShape):
    # PREFIX_MATCH is the only filter type ECR has; another would be one this release cannot read, and reading
    # it as "matches nothing" could hide a destination, so it is refused.
    filter: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    filter_type: Literal["PREFIX_MATCH"]


class DeleteReplication(ReplicationShape):
    enabled: StrictBool


class ReplicationRule(ReplicationShape):
    destinations: tuple[ReplicationDestination, ...]
    repository_filters: tuple[RepositoryFilter, ...] = ()
    # Absent (None): not known, and read as replicating deletions, the side that protects more. A rule in a
    # snapshot without it most likely comes from an AWS CLI whose botocore predates ECR's replication of deletions
    # and dropped the field (the plan warns, see rules_without_delete_replication). The live adapter
    # (aws/ecr_registry.py) never leaves it absent: it writes the API's documented meaning of a missing field.
    delete_replication: DeleteReplication | None = None

    def applies_to(self, repository: str) -> bool:
        """A rule without filters replicates every repository; with filters, those whose name has a prefix."""
        return not self.repository_filters or any(
            repository.startswith(rule_filter.filter) for rule_filter in self.repository_filters
        )

    @property
    def replicates_deletions(self) -> bool:
        return self.delete_replication is None or self.delete_replication.enabled


@dataclass(frozen=True, order=True)
class Replica:
    """One destination registry of a repository, and whether the source's deletions reach it."""

    registry_id: str
    region: str
    replicates_deletions: bool

    @property
    def registry(self) -> tuple[str, str]:
        return (self.registry_id, self.region)


class ReplicationConfiguration(ReplicationShape):
    """`replicationConfiguration` exactly as `aws ecr describe-registry` returns it."""

    rules: tuple[ReplicationRule, ...] = ()

    @property
    def rules_without_delete_replication(self) -> tuple[int, ...]:
        """The positions of the rules that say nothing of deletions (read as replicating them)."""
        return tuple(index for index, rule in enumerate(self.rules) if rule.delete_replication is None)

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
    step stores it in the run's `replication.json` (RunReplication), which every evaluation of the run reads."""

    replication_configuration: ReplicationConfiguration = NO_REPLICATION
    problem: str | None = None

    @classmethod
    def unreadable(cls, problem: str) -> "RegistryReplication":
        return cls(problem=problem)


GRANT = 'the role needs ecr:DescribeRegistry, an action without resource-level permissions (Resource "*")'


def unknown_replication(detail: str, *, denied: bool = False) -> RegistryReplication:
    """Why the run deletes nothing. The grant is named only when AWS denied the call: an answer that could not be
    read, or a run file that is missing, is no missing permission, and saying so would send the reader to IAM."""
    grant = f" ({GRANT})" if denied else ""
    return RegistryReplication.unreadable(
        f"the registry's replication configuration is unknown: {detail}; nothing is deleted until it can be read{grant}"
    )


class RunReplication(AwsShape):
    """Every pruned registry's replication as a run's targets step read it, by Region: the run's one
    `replication.json` (services/replication.py), read once by each evaluation and once by the report step."""

    registries: dict[str, RegistryReplication]
