"""The run's own records of the pruning workflow: what the targets step hands on and the report step receives
(RunRecord, with the work items in the bucket: WorkItems), and what the report step returns (RunReported). What starts
a run is in run_request.py.

Apart from the Map's items and results (workflow.py) so that the evaluate step, the Map's worker, builds none of them
at its cold start (tests/unit/test_handler_imports.py). Dependency-free as workflow.py: the CDK app reads the run
record's fields from here (infra/pruning_workflow.py)."""

from datetime import datetime

from pydantic import AwareDatetime, Field, NonNegativeInt, RootModel, StrictBool, field_serializer

from ecr_retention.domain.reporting.outcomes import RunOutcome, Trigger
from ecr_retention.workflow import RunId, WireRecord, WorkItem


class WorkItems(RootModel[list[WorkItem]]):
    """A run's work items, as the targets step writes them to `runs/<runId>/targets.json` (each WorkItem.to_wire()) and
    the report step reads them back."""


class RunRecord(WireRecord):
    """What the targets step hands the workflow, and the report step's input: small, whatever the number of
    repositories (the work items are in the bucket, at targets_key)."""

    run_id: RunId
    trigger: Trigger
    dry_run: StrictBool
    started_at: AwareDatetime  # the targets step's clock, UTC
    targets_key: str
    count: NonNegativeInt
    bucket: str | None = None  # the bucket targets_key is in; absent from a record written before it was added
    # The Map's items (WorkBatch), beside targets_key in the bucket; None where no state machine reads them (the CLI).
    batches_key: str | None = None

    @field_serializer("started_at")
    def _started_at(self, started_at: datetime) -> str:
        return started_at.isoformat()  # "+00:00", as the record always said, rather than pydantic's "Z"


# The report step's input is the targets step's record, field by field (infra/pruning_workflow.py).
RUN_RECORD_FIELDS: tuple[str, ...] = tuple(field.alias or name for name, field in RunRecord.model_fields.items())


class RunReported(WireRecord):
    """What the report step returns, the execution's output."""

    run_id: str
    outcome: RunOutcome
    report_url: str | None = Field(alias="reportKey")  # s3://bucket/reports/...: where the run report is
