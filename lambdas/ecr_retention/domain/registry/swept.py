"""The registry as the pipeline last read it: each evaluation keeps the snapshot of its repository in the bucket
(`snapshots/<hash>.json`), so that a review (`plan --bucket`, `diff --bucket`) needs S3 read access only, never ECR.

One object per repository is the `ecr-retention snapshot` format with one repository (`plan --snapshot` reads it as
it is), the registry's replication rules of that run, and when and by which run it was read."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Self

from pydantic import model_validator

from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.timestamps import UtcDatetime


class SweptRepository(Snapshot):
    """One repository as one evaluation read it."""

    read_at: UtcDatetime
    run_id: str
    # The run could not read the registry's replication rules (it deleted nothing): `replication` is then absent,
    # and a plan of this snapshot says that where deletions replicate to is not known.
    replication_problem: str | None = None

    @model_validator(mode="after")
    def _one_repository(self) -> Self:
        if len(self.repositories) != 1:
            raise ValueError(f"a swept snapshot holds one repository, not {len(self.repositories)}")
        return self

    @property
    def repository_name(self) -> str:
        return self.repositories[0].repository_name


@dataclass(frozen=True)
class SweptRegistry:
    """Every kept repository snapshot, put together as one registry snapshot; when each repository was read."""

    snapshot: Snapshot
    read_at: dict[str, datetime] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def registry_of(swept: Sequence[SweptRepository]) -> SweptRegistry:
    """The newest run's registry id, region and replication rules stand for the registry (each run reads them once);
    a newest run that could not read the replication rules is a warning: the plan then assumes none."""
    ordered = sorted(swept, key=lambda repository: repository.read_at)
    newest = ordered[-1] if ordered else None
    snapshot = Snapshot(
        registry_id=newest.registry_id if newest else None,
        region=newest.region if newest else None,
        replication=newest.replication if newest else None,
        repositories=tuple(sorted((r.repositories[0] for r in ordered), key=lambda r: r.repository_name)),
    )
    return SweptRegistry(
        snapshot=snapshot,
        read_at={r.repository_name: r.read_at for r in ordered},
        warnings=_replication_warnings(newest),
    )


def _replication_warnings(newest: SweptRepository | None) -> tuple[str, ...]:
    if newest is None or newest.replication_problem is None:
        return ()
    return (
        f"the last sweep could not read the registry's replication rules ({newest.replication_problem}): "
        "this plan assumes deletions replicate nowhere",
    )
