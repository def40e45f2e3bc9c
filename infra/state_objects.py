"""The inventory bucket's state objects, one entry each: its key pattern, the roles that read it (with why, for a
pattern holding a wildcard: cdk-nag's acknowledgement), the one role the bucket policy lets write it, and whether only
the break-glass role deletes it.

The evaluate role's reads (infra/pruning_workflow.py), the reviewers' reads (infra/reviewers.py) and the bucket
policy's writer bindings and its protection-state deletions (infra/inventory_bucket.py) are derived from these
entries: a new state object (a new protection source's hold files, say) is one entry here.

Not derived, and so not declared as such: the writes each role's own identity policy grants, the reads of the other
roles (the report step, the sentinel, the state machine), the told deletions (runs/*/deletions/*: read by the
evaluations only when a run prunes several Regions), and the writers of in-use/ (each exporter session to its own
manifest), of manifests/ and of removals/ (bound by their own statements, once the sentinel exists).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ecr_retention import layout
from ecr_retention.cdk import constants

# The roles an entry names: the reading roles, and the writers the bucket policy binds keys to.
Reader = Literal["evaluate", "reviewers"]
Writer = Literal["report", "targets", "evaluate", "workflow"]

# The bucket policy's statement binding each writer's keys to it, in the policy's order: whatever identity policies
# say (administrators included), s3:PutObject on these keys is denied to every principal but the writer.
WRITER_BINDINGS: dict[Writer, str] = {
    "report": "InUseMemoryWritesOnlyByTheReportStep",
    "targets": "RunTargetsOnlyByTheTargetsStep",
    "evaluate": "RepositoryRunStateOnlyByTheEvaluations",
    "workflow": "MapResultsOnlyByTheWorkflow",
}


@dataclass(frozen=True, slots=True)
class StateObject:
    key: str  # its key pattern
    name: str  # as a role's description names it
    # Each role that reads it, with why it may read every key of a pattern holding a wildcard (None for one key).
    reads: Mapping[Reader, str | None] = field(default_factory=dict)
    writer: Writer | None = None  # the one role the bucket policy lets write it; None: bound elsewhere, or not at all
    bound_as: str | None = None  # the pattern the writer binding names, when wider than the key
    deleted_only_by_break_glass: bool = False

    @property
    def binding(self) -> str:
        return self.bound_as or self.key


_RUNS = constants.RUNS_PREFIX

# In the order the reviewers' ListBucket names their prefixes.
STATE_OBJECTS: tuple[StateObject, ...] = (
    StateObject(f"{_RUNS}*/targets.json", "the run's targets", writer="targets"),
    StateObject(f"{_RUNS}*/batches.json", "the run's batches of targets", writer="targets"),
    # runs/*/replication*.json: the binding still covers the per-Region replication files of older runs.
    StateObject(
        f"{_RUNS}*/replication.json",
        "the run's replication record",
        reads={"evaluate": "Each evaluation reads the replication rules its run's targets step read."},
        writer="targets",
        bound_as=f"{_RUNS}*/replication*.json",
    ),
    StateObject(f"{_RUNS}*/repositories/*", "the repository reports", writer="evaluate"),
    StateObject(f"{_RUNS}*/batches/*", "the batches begun", writer="evaluate"),
    StateObject(f"{_RUNS}*/deletions/*", "the told deletions", writer="evaluate"),
    StateObject(
        f"{layout.SNAPSHOTS_PREFIX}*",
        "the registry's snapshots",
        reads={
            "evaluate": "Each evaluation reads its repository's kept snapshot, to write it only when it changed.",
            "reviewers": "Every repository's snapshot as the last sweep read it: a review plans them all.",
        },
        writer="evaluate",
        deleted_only_by_break_glass=True,
    ),
    StateObject(f"{constants.MAP_RESULTS_PREFIX}/*", "the map results", writer="workflow"),
    # A run's files, each declared above: only the break-glass role deletes any of them.
    StateObject(f"{_RUNS}*", "the run's files", deleted_only_by_break_glass=True),
    StateObject(
        f"{constants.MANIFEST_CACHE_PREFIX}*",
        "the manifest cache",
        reads={"evaluate": "Index manifests are cached by digest: any digest may be read or written."},
    ),
    StateObject(
        f"{constants.IN_USE_PREFIX}*",
        "the in-use manifests",
        reads={
            "evaluate": "Every cluster's in-use manifest is read: each one protects its images.",
            "reviewers": "Every cluster's in-use manifest: each one protects its images in the review's plans.",
        },
        deleted_only_by_break_glass=True,
    ),
    # The holds (docs/holds.md) keep images for a time: read by every evaluation and review, written only by the
    # holders and deleted only by them and the break-glass role (infra/inventory_bucket.py bind_holds_to_holders).
    StateObject(
        f"{constants.HOLDS_PREFIX}*",
        "the holds",
        reads={
            "evaluate": "Every hold is read: each one keeps its image.",
            "reviewers": "Every hold: each one keeps its image in the review's plans.",
        },
    ),
    # The in-use memory protects what the manifests named in the last safety.in_use_grace: read, and written only by
    # the report step.
    StateObject(
        layout.IN_USE_MEMORY_KEY,
        "the in-use memory",
        reads={"evaluate": None, "reviewers": None},
        writer="report",
        deleted_only_by_break_glass=True,
    ),
)


def read_by(reader: Reader) -> list[StateObject]:
    return [entry for entry in STATE_OBJECTS if reader in entry.reads]


def read_keys(reader: Reader) -> list[str]:
    """The key patterns the role reads (s3:GetObject)."""
    return [entry.key for entry in read_by(reader)]


def read_names(reader: Reader) -> str:
    """What the role reads, as its description says: `a, b and c`."""
    *first, last = [entry.name for entry in read_by(reader)]
    return f"{', '.join(first)} and {last}" if first else last


def read_reasons(reader: Reader) -> dict[str, str]:
    """Why the role reads each wildcard pattern it reads: cdk-nag's acknowledgements."""
    return {entry.key: why for entry in read_by(reader) if (why := entry.reads[reader]) is not None}


def bound_keys(writer: Writer) -> list[str]:
    """The key patterns the bucket policy lets only this writer write."""
    return [entry.binding for entry in STATE_OBJECTS if entry.writer == writer]


def deleted_only_by_break_glass() -> list[str]:
    return [entry.key for entry in STATE_OBJECTS if entry.deleted_only_by_break_glass]
