"""Remove a repository's candidates: re-check them against the registry, then delete or archive them wave by wave
(domain/removal_order.py), each wave in batches of at most REMOVAL_BATCH, and no batch started when the deadline is
near. What the registry did is kept digest by digest in a RemovalOutcome, which the report is built from."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from ecr_retention.domain.plan import Decision, RepositoryPlan
from ecr_retention.domain.planner import short
from ecr_retention.domain.registry import ImageDetail, RepositorySnapshot
from ecr_retention.domain.removal_order import next_wave, removal_parents
from ecr_retention.ports import BatchOutcome, Registry
from ecr_retention.services.defects import Defect, contain

logger = logging.getLogger(__name__)

Action = Literal["delete", "archive"]
ACTIONS: tuple[Action, ...] = ("delete", "archive")  # within a wave, deletions first
# No removal call starts with less time than this left: one BatchDeleteImage with all its retries takes
# at most about 70 s (aws/clients.py), and the worker must still store its report.
DEADLINE_MARGIN_SECONDS = 90.0
REMOVAL_BATCH = 100  # BatchDeleteImage's limit; the deadline is checked between batches
GONE_SINCE_PLAN = "no longer in the repository: removed by someone else since the plan"
UNCONFIRMED = (
    "NotConfirmed",
    "gone, but not confirmed deleted by this run: ECR answered ImageNotFound to a retry of the call, whose earlier "
    "attempt may have deleted it before its answer was lost",
)
OUT_OF_TIME = ("DeadlineReached", "not attempted: the evaluation ran out of time; the next run takes it up")
DEPENDENCY_CYCLE = ("DependencyCycle", "manifest references form a cycle; kept")
NO_ANSWER = ("NoAnswer", "the registry's answer did not mention this image")


@dataclass
class RemovalOutcome:
    """What the registry did with the candidates, digest by digest."""

    deleted: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    cancelled: dict[str, str] = field(default_factory=dict)  # digest -> why (tag-changed)
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # digest -> (error code, detail)
    # action -> (code, why), set when a call of that action failed after its retries (nothing further of it
    # is attempted in this run), or for both actions when time ran out.
    stopped: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Candidates known to be absent from the repository, whoever removed them: such an index or subject holds
    # nothing any more, so the children and referrers planned to go with it still go.
    gone: set[str] = field(default_factory=set)

    @property
    def not_removed(self) -> set[str]:
        return self.cancelled.keys() | self.failed.keys()

    def fail(self, digests: Collection[str], failure: tuple[str, str]) -> None:
        self.failed.update(dict.fromkeys(digests, failure))

    def record(self, action: Action, batch: Sequence[str], answer: BatchOutcome) -> None:
        """The registry's answer to one batch, image by image."""
        (self.deleted if action == "delete" else self.archived).extend(answer.done)
        for digest in answer.already_gone:
            self.cancelled[digest] = "already gone when the registry was asked to remove it"
        for digest in answer.unconfirmed:
            self.failed[digest] = UNCONFIRMED
        self.gone.update(answer.already_gone, answer.unconfirmed)
        for failure in answer.failed:
            self.failed[failure.image_digest] = (failure.code, failure.message)
        if answer.stopped and action not in self.stopped:
            code = next((f.code for f in answer.failed if f.code != "NotAttempted"), "NotAttempted")
            self.stopped[action] = ("NotAttempted", f"not attempted: an earlier {action} call failed with {code}")
        answered = {*answer.done, *answer.already_gone, *answer.unconfirmed, *(f.image_digest for f in answer.failed)}
        # an adapter that forgets an image must not make it look done
        self.fail([digest for digest in batch if digest not in answered], NO_ANSWER)


def out_of_time(seconds_left: Callable[[], float] | None) -> bool:
    """Too little of the worker's time is left to start another ECR call (and still store the report)."""
    return seconds_left is not None and seconds_left() < DEADLINE_MARGIN_SECONDS


def recheck(registry: Registry, repository: str, candidates: Sequence[Decision]) -> dict[str, str]:
    """Re-read the candidates right before acting: an image whose tags changed since the plan (or that is
    gone, or being restored, or that left the archive it was to be deleted from) is not touched in this run.
    Returns digest -> why it is cancelled."""
    current = registry.describe_image_ids(repository, [d.image_digest for d in candidates])
    cancelled = {}
    for decision in candidates:
        image: ImageDetail | None = current.get(decision.image_digest)
        if image is None:
            cancelled[decision.image_digest] = GONE_SINCE_PLAN
        elif set(image.image_tags) != set(decision.image_tags):
            before = ", ".join(decision.image_tags) or "<untagged>"
            after = ", ".join(sorted(image.image_tags)) or "<untagged>"
            cancelled[decision.image_digest] = f"tags changed since the plan ({before} -> {after}); kept this run"
        elif image.image_status == "ACTIVATING":
            cancelled[decision.image_digest] = "being restored from archive since the plan; kept this run"
        elif decision.quarantine_stage == "leaves" and image.image_status != "ARCHIVED":
            # restored since the plan (by hand, by a push): its quarantine is over, it is no longer to be deleted
            cancelled[decision.image_digest] = f"{image.image_status} since the plan, no longer in quarantine; kept"
    return cancelled


def remove_candidates(
    registry: Registry,
    snapshot: RepositorySnapshot,
    plan: RepositoryPlan,
    candidates: Sequence[Decision],
    *,
    seconds_left: Callable[[], float] | None = None,
) -> RemovalOutcome:
    """Re-check the candidates, then delete or archive them wave by wave (domain.removal_order.next_wave)."""
    repository = plan.repository_name
    outcome = RemovalOutcome(cancelled=recheck(registry, repository, candidates))
    outcome.gone = {digest for digest, why in outcome.cancelled.items() if why == GONE_SINCE_PLAN}
    by_digest = {d.image_digest: d for d in candidates}
    parents = removal_parents(snapshot, list(by_digest))
    remaining = [d.image_digest for d in candidates]
    while remaining:
        wave = next_wave(remaining, parents, not_removed=outcome.not_removed, gone=outcome.gone)
        for digest, parent in wave.stays.items():
            outcome.failed[digest] = (
                "ParentNotRemoved",
                f"{short(parent)} was not removed, so this image stays with it",
            )
        if wave.only_cycles_left:
            outcome.fail(wave.waiting, DEPENDENCY_CYCLE)
            break
        remove_wave(registry, repository, [by_digest[d] for d in wave.ready], outcome, seconds_left=seconds_left)
        remaining = list(wave.waiting)
    return outcome


def remove_wave(
    registry: Registry,
    repository: str,
    wave: Sequence[Decision],
    outcome: RemovalOutcome,
    *,
    seconds_left: Callable[[], float] | None,
) -> None:
    """The wave's deletions, then its archives, batch by batch. Before each batch, the deadline: with less than
    DEADLINE_MARGIN_SECONDS left, nothing further is attempted and the rest is failed (DeadlineReached). A call
    that raises what no adapter anticipated keeps what was done on record: its batch's fate is unknown, so it is
    failed, and nothing further is attempted."""
    for action in ACTIONS:
        for batch in _batches([d.image_digest for d in wave if d.action == action]):
            if out_of_time(seconds_left):
                outcome.stopped.update(delete=OUT_OF_TIME, archive=OUT_OF_TIME)
            if action in outcome.stopped:
                outcome.fail(batch, outcome.stopped[action])
                continue
            removed = contain(
                partial(remove_batch, registry, repository, batch, outcome, action),
                log=logger,
                what=f"removing images of {repository}",
            )
            if isinstance(removed, Defect):
                unknown = (removed.kind, "the call failed; whether it removed them is unknown")
                outcome.fail(batch, unknown)
                outcome.stopped.update(delete=unknown, archive=unknown)


def remove_batch(
    registry: Registry, repository: str, batch: list[str], outcome: RemovalOutcome, action: Action
) -> None:
    """One registry call for one batch of one action; its answer goes into `outcome`."""
    if not batch:
        return
    answer = (
        registry.delete_images(repository, batch) if action == "delete" else registry.archive_images(repository, batch)
    )
    outcome.record(action, batch, answer)


def _batches(digests: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(digests), REMOVAL_BATCH):
        yield digests[start : start + REMOVAL_BATCH]
