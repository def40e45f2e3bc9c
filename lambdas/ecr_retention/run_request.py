"""What starts a run of the pruning workflow (RunRequest: the state machine's input, from the schedule, the push
function or the collector). Apart from the run's other records (run_records.py) and the Map's (workflow.py): neither
the evaluate nor the report step builds it at its cold start (tests/unit/test_handler_imports.py). Dependency-free as
workflow.py."""

from typing import Annotated, Any, Literal

from pydantic import Field

from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.workflow import RepositoryName, WireRecord


class RunRequest(WireRecord):
    """The state machine's input: `{"trigger": "schedule"}` from the schedule, or the pushed repositories (of the
    home Region's registry, or of `region`'s, another Region the deployment prunes)."""

    trigger: Literal["schedule", "push"] = "schedule"
    repositories: Annotated[tuple[RepositoryName, ...], Field(min_length=1, max_length=10_000)] | None = None
    region: AwsRegion | None = None

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
