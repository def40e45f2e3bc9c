"""The one reading of the registry's answers (services/act.py answers_of for a batch, tag_answer for a tag) and the
ledger they fill (domain/planning/ledger.py): nothing counts as done unless ECR said so, whatever the call."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ecr_retention.domain.planning.ledger import (
    IMMUTABLE_TAG,
    NO_ANSWER,
    TAG_REFUSED,
    UNANSWERED,
    UNCONFIRMED_REMOVAL,
    Answer,
    Ledger,
)
from ecr_retention.ports import BatchOutcome, ImageFailure, TagOutcome
from ecr_retention.services.act import RESTORE_BATCH, answers_of, restore, tag, tag_answer
from support.builders import NOW
from support.fakes import FakeRegistry

BATCH = ["sha256:a", "sha256:b", "sha256:c", "sha256:d", "sha256:e", "sha256:f"]


def test_each_image_gets_one_answer_in_the_order_ecr_confirmed_them_and_a_forgotten_one_is_unanswered() -> None:
    answer = BatchOutcome(
        done=("sha256:c", "sha256:a"),
        already_gone=("sha256:b",),
        unconfirmed=("sha256:d",),
        failed=(ImageFailure("sha256:e", "KmsError", "denied"),),
    )

    answers = answers_of(BATCH, answer)

    assert list(answers) == ["sha256:c", "sha256:a", "sha256:b", "sha256:d", "sha256:e", "sha256:f"]
    assert [a.kind for a in answers.values()] == ["done", "done", "gone", "unconfirmed", "failed", "unanswered"]
    assert answers["sha256:e"].failure == ("KmsError", "denied")


def test_an_image_named_twice_takes_its_least_favourable_answer() -> None:
    answer = BatchOutcome(done=("sha256:a",), failed=(ImageFailure("sha256:a", "KmsError", "denied"),))

    assert answers_of(["sha256:a"], answer) == {"sha256:a": Answer("failed", ("KmsError", "denied"))}


def test_removals_are_done_only_when_confirmed_and_a_stopped_call_names_the_first_real_failure() -> None:
    ledger = Ledger()
    answer = BatchOutcome(
        done=("sha256:a",),
        already_gone=("sha256:b",),
        unconfirmed=("sha256:c",),
        failed=(
            ImageFailure("sha256:d", "ThrottlingException", "slow down"),
            ImageFailure("sha256:e", "NotAttempted", "not attempted"),
        ),
        stopped=True,
    )

    ledger.record("delete", answers_of(BATCH, answer), stopped=answer.stopped)

    assert ledger.deleted == ["sha256:a"]
    assert ledger.archived == []
    assert ledger.cancelled == {"sha256:b": "already gone when the registry was asked to remove it"}
    assert ledger.failed == {
        "sha256:c": UNCONFIRMED_REMOVAL,
        "sha256:d": ("ThrottlingException", "slow down"),
        "sha256:e": ("NotAttempted", "not attempted"),
        "sha256:f": NO_ANSWER,
    }
    assert ledger.gone == {"sha256:b", "sha256:c"}
    assert ledger.stopped == {
        "delete": ("NotAttempted", "not attempted: an earlier delete call failed with ThrottlingException")
    }


def test_restores_fail_when_the_image_is_gone_unconfirmed_refused_or_forgotten_and_not_when_already_restoring() -> None:
    ledger = Ledger()
    answer = BatchOutcome(
        done=("sha256:a",),
        already=("sha256:b",),
        already_gone=("sha256:c",),
        unconfirmed=("sha256:d",),
        failed=(ImageFailure("sha256:e", "KmsException", "denied"),),
    )

    ledger.record("restore", answers_of(BATCH, answer))

    assert {d: code for d, (code, _) in ledger.restore_failed.items()} == {
        "sha256:c": "ImageNotFound",
        "sha256:d": "NotConfirmed",
        "sha256:e": "KmsException",
        "sha256:f": "NoAnswer",
    }
    assert (ledger.deleted, ledger.failed, ledger.removing) == ([], {}, False)


def _archived_registry(count: int) -> tuple[FakeRegistry, list[str]]:
    registry = FakeRegistry()
    digests = [registry.add_image("app", tags=[f"r{n}"], pushed_at=NOW, seed=f"r{n}") for n in range(count)]
    for digest in digests:
        registry.archive("app", digest, NOW)
    return registry, digests


def test_a_restore_without_a_deadline_is_one_call_so_a_stopped_call_stops_the_rest() -> None:
    registry, digests = _archived_registry(RESTORE_BATCH + 2)
    asked: list[list[str]] = []
    real = registry.restore_images

    def restore_images(repository: str, batch: Sequence[str]) -> BatchOutcome:
        asked.append(list(batch))
        return real(repository, batch)

    registry.restore_images = restore_images  # type: ignore[method-assign]

    ledger = restore(registry, "app", digests)

    assert asked == [digests]
    assert [ledger.answer(d).kind for d in digests] == ["done"] * len(digests)
    assert ledger.restore_failed == {}


def test_a_restore_call_that_raises_is_in_the_ledger_as_failed_and_never_raised() -> None:
    registry, digests = _archived_registry(2)

    def restore_images(repository: str, batch: Sequence[str]) -> BatchOutcome:
        raise RuntimeError("the adapter broke")

    registry.restore_images = restore_images  # type: ignore[method-assign]

    ledger = restore(registry, "app", digests)

    assert {d: ledger.answer(d) for d in digests} == dict.fromkeys(
        digests, Answer("failed", ("RestoreFailed", "RuntimeError: the adapter broke"))
    )
    assert ledger.answers == {}  # the registry answered nothing
    assert ledger.answer("sha256:never-asked") == UNANSWERED


def test_restoring_nothing_calls_nothing() -> None:
    registry, _ = _archived_registry(1)

    assert restore(registry, "app", []) == Ledger()
    assert registry.mutating_calls == []


@pytest.mark.parametrize(
    ("outcome", "answer"),
    [
        (TagOutcome("tagged"), Answer("done")),
        (TagOutcome("already-tagged"), Answer("already")),
        (
            TagOutcome("immutable", "the tag is on another image"),
            Answer("failed", (IMMUTABLE_TAG, "the tag is on another image")),
        ),
        (
            TagOutcome("failed", "AccessDeniedException: no"),
            Answer("failed", (TAG_REFUSED, "AccessDeniedException: no")),
        ),
    ],
)
def test_a_tag_outcome_is_read_into_the_ledger_s_answers(outcome: TagOutcome, answer: Answer) -> None:
    assert tag_answer(outcome) == answer


def test_a_tag_goes_into_a_ledger_of_its_own_and_changes_nothing_else() -> None:
    registry = FakeRegistry()
    digest = registry.add_image("app", tags=["v1"], pushed_at=NOW, seed="v1")
    manifest = registry.get_manifests("app", [digest], ["application/vnd.oci.image.manifest.v1+json"])[digest]

    ledger = tag(registry, "app", manifest, "keep-1")

    assert ledger.answers == {digest: Answer("done")}
    assert (ledger.deleted, ledger.archived, ledger.failed, ledger.restore_failed, ledger.gone) == (
        [],
        [],
        {},
        {},
        set(),
    )
    assert "keep-1" in registry.repositories["app"][digest].detail.image_tags
