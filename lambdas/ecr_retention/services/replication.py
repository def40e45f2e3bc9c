"""Each pruned registry's replication, read once per run: by the targets step (stored, every Region's, as the run's one
`replication.json` for every evaluation of the run) and by `ecr-retention run`. Unreadable means blocked, never "no replication"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.registry.replication import RegistryReplication, RunReplication
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


def store_replication(bucket: Bucket, run_id: str, replication: Mapping[str, RegistryReplication]) -> str:
    """The run's one replication record: every pruned registry's, by Region."""
    key = replication_key(run_id)
    bucket.write(key, RunReplication(registries=dict(replication)).model_dump_json(by_alias=True).encode())
    return key


@dataclass(frozen=True)
class StoredReplication:
    """What the targets step read for this run, as an evaluation or the report step reads it back (one read): the
    record, or why there is none (then every registry's replication is unknown)."""

    source: str
    record: RunReplication | None = None
    problem: str | None = None

    def of(self, region: str) -> RegistryReplication:
        """The registry's of `region`. A record that is missing, cannot be read or names no such Region blocks the
        evaluation: the reach of its deletions would be unknown."""
        if self.record is None:
            return unknown_replication(str(self.problem))
        found = self.record.registries.get(region)
        return found if found is not None else unknown_replication(f"{self.source} names no registry of {region}")


def load_replication(bucket: Bucket, run_id: str) -> StoredReplication:
    """The run's replication record, read once."""
    key = replication_key(run_id)
    source = f"s3://{bucket.name}/{key}"
    try:
        body = bucket.read(key, max_bytes=MAX_REPLICATION_BYTES)
        if body is None:
            return StoredReplication(source, problem=f"{source} is missing (the targets step stores it)")
        record = validate_as(RunReplication, parse_json(body.decode("utf-8", errors="replace"), source), source)
    except InputError as error:
        return StoredReplication(source, problem=str(error))
    return StoredReplication(source, record)
