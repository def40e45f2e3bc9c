"""The registry's replication, read once per run: by the targets step (stored as the run's `replication.json`
for every evaluation of the run) and by `ecr-retention run`. Unreadable means blocked, never "no replication"."""

from __future__ import annotations

from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.layout import replication_key
from ecr_retention.loading import validate_as
from ecr_retention.ports import Bucket, Registry, ReplicationUnreadable

MAX_REPLICATION_BYTES = 1024 * 1024  # ECR allows 10 rules of 25 destinations and 100 filters: a few KiB
GRANT = 'the role needs ecr:DescribeRegistry, an action without resource-level permissions (Resource "*")'


def unknown_replication(detail: str, *, denied: bool = False) -> RegistryReplication:
    """Why the run deletes nothing. The grant is named only when AWS denied the call: an answer that could not be
    read, or a run file that is missing, is no missing permission, and saying so would send the reader to IAM."""
    grant = f" ({GRANT})" if denied else ""
    return RegistryReplication.unreadable(
        f"the registry's replication configuration is unknown: {detail}; nothing is deleted until it can be read{grant}"
    )


def read_replication(registry: Registry) -> RegistryReplication:
    try:
        return RegistryReplication(replication_configuration=registry.replication_configuration())
    except ReplicationUnreadable as error:
        return unknown_replication(str(error), denied=error.denied)


def store_replication(bucket: Bucket, run_id: str, replication: RegistryReplication, key: str | None = None) -> str:
    """`key`: the registry's (registries.PrunedRegistry.key; its file names it)."""
    stored = replication_key(run_id, key)
    bucket.write(stored, replication.model_dump_json(by_alias=True).encode())
    return stored


def load_replication(bucket: Bucket, run_id: str, key: str | None = None) -> RegistryReplication:
    """What the targets step read for this run of the registry of that key (registries.PrunedRegistry.key). A file that
    is missing or cannot be read blocks the evaluation: the reach of its deletions would be unknown."""
    stored = replication_key(run_id, key)
    source = f"s3://{bucket.name}/{stored}"
    try:
        body = bucket.read(stored, max_bytes=MAX_REPLICATION_BYTES)
        if body is None:
            return unknown_replication(f"{source} is missing (the targets step stores it)")
        return validate_as(RegistryReplication, parse_json(body.decode("utf-8", errors="replace"), source), source)
    except InputError as error:
        return unknown_replication(str(error))
