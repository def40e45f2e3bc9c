"""The Map's items: a run's work items in batches (WorkBatch), as the targets step writes them and the evaluate step is
given them, and a repository of a batch that ended early (BatchMember). Apart from the work items (workflow.py), so
that the report step, which reads work items only, builds neither model at its cold start
(tests/unit/test_handler_imports.py); their size is workflow.repositories_per_batch's."""

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import Field, StrictBool

from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.domain.reporting.outcomes import Trigger
from ecr_retention.workflow import (
    MAX_REPOSITORIES_PER_BATCH,
    MIN_REPOSITORIES_PER_BATCH,
    RepositoryName,
    RunId,
    WireRecord,
    WorkItem,
)


class WorkBatch(WireRecord):
    """One item of the workflow's Map: evaluate these repositories (of one registry) for this run, each on its own
    (services.evaluate_step.run_work_batch). `region` is always on the wire (null: the home Region) so that the state machine's
    fallback can pass it on to each repository's own invocation."""

    run_id: RunId
    trigger: Trigger
    dry_run: StrictBool
    region: AwsRegion | None
    repositories: Annotated[tuple[RepositoryName, ...], Field(min_length=1, max_length=MAX_REPOSITORIES_PER_BATCH)]

    @classmethod
    def of(cls, items: Iterable[WorkItem], size: int = MIN_REPOSITORIES_PER_BATCH) -> "list[WorkBatch]":
        """The items in batches of at most `size`, each of one registry, in the items' order."""
        batches: list[WorkBatch] = []
        for item in items:
            last = batches[-1] if batches else None
            if last is not None and last.region == item.region and len(last.repositories) < size:
                batches[-1] = last.model_copy(update={"repositories": (*last.repositories, item.repository)})
            else:
                batches.append(
                    cls(run_id=item.run_id, trigger=item.trigger, dry_run=item.dry_run, region=item.region,
                        repositories=(item.repository,))
                )  # fmt: skip
        return batches

    def items(self) -> list[WorkItem]:
        return [
            WorkItem(
                run_id=self.run_id, repository=name, trigger=self.trigger, dry_run=self.dry_run, region=self.region
            )
            for name in self.repositories
        ]


class BatchMember(WireRecord):
    """One repository of a batch whose invocation ended before it reported every repository (it crashed, timed out,
    or stopped before its time ran out): evaluated in an invocation of its own unless its report is stored already."""

    run_id: RunId
    repository: RepositoryName
    trigger: Trigger
    dry_run: StrictBool
    region: AwsRegion | None = None
    after_batch: Literal[True]

    def item(self) -> WorkItem:
        return WorkItem(
            run_id=self.run_id,
            repository=self.repository,
            trigger=self.trigger,
            dry_run=self.dry_run,
            region=self.region,
        )
