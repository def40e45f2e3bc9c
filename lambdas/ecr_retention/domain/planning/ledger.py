"""What this tool did to one repository's images, digest by digest: the registry's answer to each restore, deletion,
archive and tag it asked for, and the removals it cancelled or failed before asking. services/act.py, the one caller
of the registry's mutations, fills it; the repository report (domain/reporting/report.py `repository_report`), the
sentinel's heal, the restore command and the tagger read it. Pure: no I/O.

One vocabulary for every answer (`Answer`), whatever the call: what ECR confirmed is `done`, and nothing else ever
counts as done."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Action = Literal["restore", "delete", "archive", "tag"]
Failure = tuple[str, str]  # (code, detail), as the report's errorCode and detail
AnswerKind = Literal[
    "done",  # ECR confirmed it: deleted, archived, or restoring (ACTIVATING)
    # a restore asked of an image already ACTIVE or ACTIVATING, or a tag the image carries already: nothing to do
    "already",
    "gone",  # ImageNotFound: absent before the call
    # ImageNotFound in the answer to a retried call: absent now, perhaps deleted by an earlier attempt of the same
    # call whose answer was lost; neither done nor someone else's removal
    "unconfirmed",
    # ECR refused it, or the call failed after its retries, or (Ledger.answer) the call was not made or raised
    # (`failure` says which)
    "failed",
    "unanswered",  # the answer did not mention the image: an adapter that forgets an image must not make it look done
]

NO_ANSWER: Failure = ("NoAnswer", "the registry's answer did not mention this image")
UNCONFIRMED_REMOVAL: Failure = (
    "NotConfirmed",
    "gone, but not confirmed deleted by this run: ECR answered ImageNotFound to a retry of the call, whose earlier "
    "attempt may have deleted it before its answer was lost",
)
GONE_BEFORE_REMOVAL = "already gone when the registry was asked to remove it"
# The failure codes of a tag (services/act.py tag_answer): PutImage in an IMMUTABLE repository whose tag another image
# carries, and any other PutImage failure (its detail names ECR's code).
IMMUTABLE_TAG = "ImageTagAlreadyExistsException"
TAG_REFUSED = "TagFailed"
RESTORE_FAILURES: Mapping[AnswerKind, Failure] = {
    "gone": ("ImageNotFound", "no longer in the repository: it could not be restored"),
    "unconfirmed": ("NotConfirmed", "the registry did not confirm the restore"),
    "unanswered": NO_ANSWER,
}


@dataclass(frozen=True)
class Answer:
    """The registry's answer about one image of one call."""

    kind: AnswerKind
    failure: Failure | None = None  # for `failed`: ECR's code and message


UNANSWERED = Answer("unanswered")


@dataclass
class Ledger:
    """What became of each image this tool meant to change in one repository.

    `removing` says whether the removals were attempted at all: without it (a dry run, a blocked run, a skipped
    repository, nothing to remove) the report shows what the plan would do."""

    answers: dict[str, Answer] = field(default_factory=dict)  # every answer of the registry, by digest
    restore_failed: dict[str, Failure] = field(default_factory=dict)
    removing: bool = False
    deleted: list[str] = field(default_factory=list)  # in the order ECR confirmed them
    archived: list[str] = field(default_factory=list)
    cancelled: dict[str, str] = field(default_factory=dict)  # digest -> why it was left alone (tag-changed)
    failed: dict[str, Failure] = field(default_factory=dict)  # removals that failed, digest -> failure
    # action -> failure, set when a call of that action failed after its retries (nothing further of it is attempted
    # in this run), or for both removals when time ran out.
    stopped: dict[Action, Failure] = field(default_factory=dict)
    # Candidates known to be absent from the repository, whoever removed them: such an index or subject holds
    # nothing any more, so the children and referrers planned to go with it still go.
    gone: set[str] = field(default_factory=set)

    @property
    def not_removed(self) -> set[str]:
        return self.cancelled.keys() | self.failed.keys()

    def answer(self, digest: str) -> Answer:
        """What became of the change asked for `digest`: the registry's answer; or `failed`, with why, when the
        registry was not asked (DeadlineReached) or its call raised (RestoreFailed); or `unanswered`."""
        answered = self.answers.get(digest)
        if answered is not None:
            return answered
        failure = self.restore_failed.get(digest) or self.failed.get(digest)
        return UNANSWERED if failure is None else Answer("failed", failure)

    def fail_restores(self, digests: Collection[str], failure: Failure) -> None:
        """Restores the run did not get the registry to start, each with why."""
        self.restore_failed.update(dict.fromkeys(digests, failure))

    def fail_removals(self, digests: Collection[str], failure: Failure) -> None:
        """Removals the run did not get the registry to make, each with why."""
        self.failed.update(dict.fromkeys(digests, failure))

    def stop_removals(self, failure: Failure) -> None:
        """Nothing further is removed in this run: what is left is failed with `failure`."""
        self.stopped.update({"delete": failure, "archive": failure})

    def record(self, action: Action, answers: Mapping[str, Answer], *, stopped: bool = False) -> None:
        """The registry's answer to one call of `action`, image by image; `stopped`: the call failed after its
        retries, and nothing further of this action is attempted. A tag's answer is all there is to know of it."""
        self.answers.update(answers)
        if action == "restore":
            self._record_restores(answers)
        elif action != "tag":
            self._record_removals(action, answers)
            if stopped and action not in self.stopped:
                self.stopped[action] = _not_attempted_after(action, answers.values())

    def _record_restores(self, answers: Mapping[str, Answer]) -> None:
        for digest, answer in answers.items():
            failure = answer.failure or RESTORE_FAILURES.get(answer.kind)
            if failure is not None:
                self.restore_failed[digest] = failure

    def _record_removals(self, action: Action, answers: Mapping[str, Answer]) -> None:
        done = self.deleted if action == "delete" else self.archived
        for digest, answer in answers.items():
            if answer.kind == "done":
                done.append(digest)
            else:
                self._record_not_removed(digest, answer)
        self.gone.update(digest for digest, answer in answers.items() if answer.kind in ("gone", "unconfirmed"))

    def _record_not_removed(self, digest: str, answer: Answer) -> None:
        if answer.kind == "gone":
            self.cancelled[digest] = GONE_BEFORE_REMOVAL
        elif answer.kind == "unconfirmed":
            self.failed[digest] = UNCONFIRMED_REMOVAL
        else:
            self.failed[digest] = answer.failure or NO_ANSWER


def _not_attempted_after(action: Action, answers: Iterable[Answer]) -> Failure:
    code = next(
        (a.failure[0] for a in answers if a.failure is not None and a.failure[0] != "NotAttempted"), "NotAttempted"
    )
    return ("NotAttempted", f"not attempted: an earlier {action} call failed with {code}")
