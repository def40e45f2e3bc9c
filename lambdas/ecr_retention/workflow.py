"""The records of the pruning workflow's Map, one pydantic model each: its work items, and the size of its batches
(the batches themselves, what the evaluate step is given, are in workflow_batches.py, so that the report step, which
reads work items only, builds neither of their models); camelCase on the wire, as every event here (WireRecord). What
starts a run is in run_request.py, the run's own records (the run record the targets step returns and the report step receives, what the
report step returns) in run_records.py, what the evaluate step returns in handlers/evaluate.py. And the names of runs: the run ids (made here, for a sweep, a push
and a tagger run, and read back here) and the executions' names.

Dependency-free (pydantic and the domain only): the CDK app may read it without importing boto3 or Powertools."""

import hashlib
import re
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StrictBool, StringConstraints
from pydantic.alias_generators import to_camel

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.domain.reporting.outcomes import Trigger

RepositoryName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._/-]{1,255}$")]
# Loose: the ids below, and whatever an operator gives a hand-started execution.
RunId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,100}$")]

# A run's id starts with its start (UTC), which dates its report (layout.run_report_key), and ends with 8 hex
# digits that keep two runs of the same second apart.
RUN_TIME = "%Y%m%dT%H%M%SZ"
PIPELINE_RUN_ID = re.compile(r"^(\d{8}T\d{6}Z)-[a-z-]+-[0-9a-f]{8}$")


def _distinct() -> str:
    return uuid.uuid4().hex[:8]


def new_run_id(started_at: datetime, trigger: Trigger) -> str:
    """A sweep's or a push's run: `YYYYMMDDTHHMMSSZ-<trigger>-<8 hex>`."""
    return f"{started_at:{RUN_TIME}}-{trigger}-{_distinct()}"


def new_tag_run_id(now: datetime) -> str:
    """A tagger run: `tag-YYYYMMDDTHHMMSSZ-<8 hex>`."""
    return f"tag-{now:{RUN_TIME}}-{_distinct()}"


def run_started_at(run_id: str) -> datetime:
    """The start of a pipeline run, from its id (new_run_id): where its report is."""
    match = PIPELINE_RUN_ID.match(run_id)
    if match is None:
        raise InputError(f"--run: {run_id!r} is not a run id (such as 20261201T030000Z-schedule-1a2b3c4d)")
    try:
        return datetime.strptime(match[1] + "+0000", "%Y%m%dT%H%M%SZ%z")
    except ValueError:
        raise InputError(f"--run: {run_id!r} does not start with a valid date and time") from None


# Execution names: 1 to 80 characters. Step Functions accepts more than these, but CloudWatch Logs and
# X-Ray only work with names made of letters, digits, '-' and '_'.
MAX_NAME_CHARS = 80
NAME_CHARACTERS = re.compile(r"[A-Za-z0-9_-]+")
NOT_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")
NAME_HASH_CHARS = 16


def execution_name(name: str) -> str:
    """A valid execution name, the same for the same `name`. A name that is already valid is kept; any other
    is cleaned and cut, with a hash of the original appended so that two names never meet in one cleaned one."""
    if NAME_CHARACTERS.fullmatch(name) and len(name) <= MAX_NAME_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:NAME_HASH_CHARS]
    cleaned = NOT_NAME_CHARACTERS.sub("-", name).strip("-")[: MAX_NAME_CHARS - NAME_HASH_CHARS - 1].rstrip("-")
    return f"{cleaned}-{digest}" if cleaned else digest


def batch_execution_name(prefix: str, keys: Iterable[str]) -> str:
    """A name for a batch of work identified by `keys` (e.g. the SQS message ids of a push batch): the same set
    of keys in any order gives the same name, so a redelivered batch meets the execution it already started."""
    digest = hashlib.sha256("\n".join(sorted(set(keys))).encode("utf-8")).hexdigest()[:32]
    return execution_name(f"{prefix}-{digest}")


class WireRecord(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields refused, as a hand-made input may have them."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class WorkItem(WireRecord):
    """One item of the Map: evaluate this repository (of the home Region's registry, or of `region`'s) for this run."""

    run_id: RunId
    repository: RepositoryName
    trigger: Trigger
    # Strict, as the rules file's dry_run: "false", "no" or 0 is a broken input, not permission to delete.
    dry_run: StrictBool
    region: AwsRegion | None = None  # None: the home Region (the functions' own); written only for another

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# The Map's items in the workflow: batches of the run's work items, so that one child execution and one invocation
# serve several repositories (docs/cost.md: the orchestration of a sweep costs less than the evaluations' compute).
# A batch's two state transitions and its reading of the inventory are shared by its repositories: at 200 they come to
# a twentieth of a repository's compute. A repository takes a fraction of a second at 20 ms an AWS call, so 200 take
# about a minute of the evaluate function's 600 s (a batch of large repositories stops at
# services.evaluate_step.BATCH_RESERVE_SECONDS and leaves the rest to invocations of their own). Batches are made smaller, down
# to 50, while the run has fewer than two batches for each of the Map's workers, so that a small sweep still spreads
# over every worker (repositories_per_batch).
MIN_REPOSITORIES_PER_BATCH = 50
MAX_REPOSITORIES_PER_BATCH = 200
BATCHES_PER_WORKER = 2


def repositories_per_batch(repositories: int, workers: int) -> int:
    """The batch size of a run of this many repositories on a Map of this many workers: two batches a worker, each of
    MIN_REPOSITORIES_PER_BATCH to MAX_REPOSITORIES_PER_BATCH repositories."""
    wanted = -(-repositories // (BATCHES_PER_WORKER * max(workers, 1)))
    return max(MIN_REPOSITORIES_PER_BATCH, min(MAX_REPOSITORIES_PER_BATCH, wanted))
