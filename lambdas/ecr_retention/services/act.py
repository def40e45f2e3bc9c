"""Every change this tool makes to a registry goes through here, and what the registry did goes into one Ledger
(domain/planning/ledger.py): the run's restores, deletions and archives (`act`, whose ledger the report is built
from), the sentinel's and the `restore` command's restores (`restore`), and the tagger's tags (`tag`). No other
module outside the adapters calls a mutating method of the Registry port (tests/unit/test_mutations_through_act.py).

A run acts on one repository's plan in order: restore the in-use images found archived (RESTORE_BATCH between checks
of the deadline; in a blocked run and a skipped repository too, since restoring deletes nothing), then, when removing
is allowed, re-check the candidates against the registry and delete or archive them wave by wave
(domain/planning/removal_order.py), each wave in batches of at most REMOVAL_BATCH. No call starts when the deadline
is near. The registry's answers are read in one place each: `answers_of` for a batch, `tag_answer` for a tag."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from ecr_retention.defects import Defect, contain
from ecr_retention.domain.planning.ledger import (
    IMMUTABLE_TAG,
    TAG_REFUSED,
    UNANSWERED,
    Action,
    Answer,
    Failure,
    Ledger,
)
from ecr_retention.domain.planning.removal_order import next_wave, removal_parents
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.ports import BatchOutcome, ImageManifest, Registry, TagOutcome

if TYPE_CHECKING:
    # The plan's models for type checking only: the sentinel's restores and the tagger's tags act on no plan, and
    # their functions load none of the planner's models; nor do they load the models of a registry's images.
    from ecr_retention.domain.planning.plan import Decision, RepositoryPlan
    from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot

logger = logging.getLogger(__name__)

REMOVALS: tuple[Action, ...] = ("delete", "archive")  # within a wave, deletions first
# No call starts with less time than this left: one BatchDeleteImage with all its retries takes at most about 70 s
# (aws/clients.py), and the worker must still store its report.
DEADLINE_MARGIN_SECONDS = 90.0
REMOVAL_BATCH = 100  # BatchDeleteImage's limit; the deadline is checked between batches
# UpdateImageStorageClass takes one image per call: the deadline is checked every this many restores.
RESTORE_BATCH = 10
GONE_SINCE_PLAN = "no longer in the repository: removed by someone else since the plan"
OUT_OF_TIME: Failure = ("DeadlineReached", "not attempted: the evaluation ran out of time; the next run takes it up")
DEPENDENCY_CYCLE: Failure = ("DependencyCycle", "manifest references form a cycle; kept")

SecondsLeft = Callable[[], float] | None


def act(
    registry: Registry,
    snapshot: RepositorySnapshot,
    plan: RepositoryPlan,
    *,
    removing: bool,
    seconds_left: SecondsLeft = None,
) -> Ledger:
    """Restore what the plan restores; then, if `removing`, remove what it removes. Never raises for what one image
    or one call did: that is in the ledger (a restore that fails leaves the image kept, and the next run asks again).
    RepositoryGone from the re-check reaches the caller: the repository is gone."""
    restores = [d.image_digest for d in plan.images if d.action == "restore"]
    ledger = restore(registry, plan.repository_name, restores, seconds_left=seconds_left)
    candidates = [d for d in plan.images if d.removes]
    if removing and candidates:
        ledger.removing = True
        remove_candidates(registry, snapshot, plan.repository_name, candidates, ledger, seconds_left=seconds_left)
    return ledger


def answers_of(batch: Sequence[str], outcome: BatchOutcome) -> dict[str, Answer]:
    """The registry's answer to one call, image by image, in the order ECR confirmed them: the one reading of a
    BatchOutcome. An image the answer names twice takes its least favourable answer; an image it does not name is
    `unanswered`."""
    answers = dict.fromkeys(outcome.done, Answer("done"))
    answers.update(dict.fromkeys(outcome.already, Answer("already")))
    answers.update(dict.fromkeys(outcome.already_gone, Answer("gone")))
    answers.update(dict.fromkeys(outcome.unconfirmed, Answer("unconfirmed")))
    answers.update({f.image_digest: Answer("failed", (f.code, f.message)) for f in outcome.failed})
    answers.update({digest: UNANSWERED for digest in batch if digest not in answers})
    return answers


def out_of_time(seconds_left: SecondsLeft) -> bool:
    """Too little of the worker's time is left to start another ECR call (and still store the report)."""
    return seconds_left is not None and seconds_left() < DEADLINE_MARGIN_SECONDS


# --- restores ------------------------------------------------------------------------------------------------------


def restore(registry: Registry, repository: str, digests: Sequence[str], *, seconds_left: SecondsLeft = None) -> Ledger:
    """Ask ECR to restore these images of one repository: with a deadline, RESTORE_BATCH (one call each) between
    checks of it; without one, in one call, so that a call failing after its retries stops the rest (the adapter
    fails them NotAttempted). A restore that fails, or that the deadline leaves unasked (DeadlineReached), goes into
    the ledger, never raised: `Ledger.answer` says what became of each image."""
    ledger = Ledger()
    size = RESTORE_BATCH if seconds_left is not None else max(len(digests), 1)
    for start in range(0, len(digests), size):
        if out_of_time(seconds_left):
            ledger.fail_restores(digests[start:], OUT_OF_TIME)
            break
        batch = digests[start : start + size]
        answer = contain(
            partial(registry.restore_images, repository, batch), log=logger, what=f"restoring in {repository}"
        )
        if isinstance(answer, Defect):
            ledger.fail_restores(batch, ("RestoreFailed", str(answer)))
        else:
            ledger.record("restore", answers_of(batch, answer))
    return ledger


# --- tags ----------------------------------------------------------------------------------------------------------


def tag(registry: Registry, repository: str, manifest: ImageManifest, new_tag: str) -> Ledger:
    """PutImage of the image's exact manifest under `new_tag`: the ledger holds the registry's answer about it."""
    ledger = Ledger()
    ledger.record("tag", {manifest.image_digest: tag_answer(registry.put_tag(repository, manifest, new_tag))})
    return ledger


def tag_answer(outcome: TagOutcome) -> Answer:
    """The registry's answer to one PutImage, in the ledger's words: the one reading of a TagOutcome. ECR's
    refusal to move a tag in an immutable repository is a failure of its own (IMMUTABLE_TAG)."""
    if outcome.status == "tagged":
        return Answer("done")
    if outcome.status == "already-tagged":
        return Answer("already")
    return Answer("failed", (IMMUTABLE_TAG if outcome.status == "immutable" else TAG_REFUSED, outcome.detail))


# --- removals ------------------------------------------------------------------------------------------------------


def recheck(registry: Registry, repository: str, candidates: Sequence[Decision]) -> dict[str, str]:
    """Re-read the candidates right before acting: an image whose tags changed since the plan (or that is
    gone, or being restored, or that left the archive it was to be deleted from) is not touched in this run.
    Returns digest -> why it is cancelled."""
    current = registry.describe_image_ids(repository, [d.image_digest for d in candidates])
    cancelled = {}
    for decision in candidates:
        why = _changed_since_plan(decision, current.get(decision.image_digest))
        if why is not None:
            cancelled[decision.image_digest] = why
    return cancelled


def _changed_since_plan(decision: Decision, image: ImageDetail | None) -> str | None:
    if image is None:
        return GONE_SINCE_PLAN
    if set(image.image_tags) != set(decision.image_tags):
        before = ", ".join(decision.image_tags) or "<untagged>"
        after = ", ".join(sorted(image.image_tags)) or "<untagged>"
        return f"tags changed since the plan ({before} -> {after}); kept this run"
    if image.image_status == "ACTIVATING":
        return "being restored from archive since the plan; kept this run"
    if decision.quarantine_stage == "leaves" and image.image_status != "ARCHIVED":
        # restored since the plan (by hand, by a push): its quarantine is over, it is no longer to be deleted
        return f"{image.image_status} since the plan, no longer in quarantine; kept"
    return None


def remove_candidates(
    registry: Registry,
    snapshot: RepositorySnapshot,
    repository: str,
    candidates: Sequence[Decision],
    ledger: Ledger,
    *,
    seconds_left: SecondsLeft = None,
) -> None:
    """Re-check the candidates, then delete or archive them wave by wave (domain.planning.removal_order.next_wave)."""
    ledger.cancelled.update(recheck(registry, repository, candidates))
    ledger.gone.update(digest for digest, why in ledger.cancelled.items() if why == GONE_SINCE_PLAN)
    by_digest = {d.image_digest: d for d in candidates}
    parents = removal_parents(snapshot, list(by_digest))
    remaining = list(by_digest)
    while remaining:
        wave = next_wave(remaining, parents, not_removed=ledger.not_removed, gone=ledger.gone)
        for digest, parent in wave.stays.items():
            ledger.failed[digest] = (
                "ParentNotRemoved",
                f"{short_digest(parent)} was not removed, so this image stays with it",
            )
        if wave.only_cycles_left:
            ledger.fail_removals(wave.waiting, DEPENDENCY_CYCLE)
            return
        remove_wave(registry, repository, [by_digest[d] for d in wave.ready], ledger, seconds_left=seconds_left)
        remaining = list(wave.waiting)


def remove_wave(
    registry: Registry, repository: str, wave: Sequence[Decision], ledger: Ledger, *, seconds_left: SecondsLeft
) -> None:
    """The wave's deletions, then its archives, batch by batch. Before each batch, the deadline: with less than
    DEADLINE_MARGIN_SECONDS left, nothing further is attempted and the rest is failed (DeadlineReached). A call
    that raises what no adapter anticipated keeps what was done on record: its batch's fate is unknown, so it is
    failed, and nothing further is attempted."""
    for action in REMOVALS:
        for batch in _batches([d.image_digest for d in wave if d.action == action]):
            if out_of_time(seconds_left):
                ledger.stop_removals(OUT_OF_TIME)
            if action in ledger.stopped:
                ledger.fail_removals(batch, ledger.stopped[action])
                continue
            removed = contain(
                partial(remove_batch, registry, repository, batch, ledger, action),
                log=logger,
                what=f"removing images of {repository}",
            )
            if isinstance(removed, Defect):
                unknown = (removed.kind, "the call failed; whether it removed them is unknown")
                ledger.fail_removals(batch, unknown)
                ledger.stop_removals(unknown)


def remove_batch(registry: Registry, repository: str, batch: list[str], ledger: Ledger, action: Action) -> None:
    """One registry call for one batch of one removal; its answer goes into the ledger."""
    remove = registry.delete_images if action == "delete" else registry.archive_images
    answer = remove(repository, batch)
    ledger.record(action, answers_of(batch, answer), stopped=answer.stopped)


def _batches(digests: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(digests), REMOVAL_BATCH):
        yield digests[start : start + REMOVAL_BATCH]
