"""Each pruned registry's replication, read once per run from ECR: by the targets step (stored, every Region's, in the
run's one `replication.json`: run_files.py) and by `ecr-retention run`. Unreadable means blocked, never "no
replication"."""

from __future__ import annotations

from ecr_retention.domain.registry.replication import RegistryReplication, unknown_replication
from ecr_retention.ports import Registry, ReplicationUnreadable


def read_replication(registry: Registry) -> RegistryReplication:
    try:
        return RegistryReplication(replication_configuration=registry.replication_configuration())
    except ReplicationUnreadable as error:
        return unknown_replication(str(error), denied=error.denied)
