"""The one reading of the registry's batch answer (services/act.py answers_of) and the ledger it fills
(domain/planning/ledger.py): nothing counts as done unless ECR said so, whatever the call."""

from __future__ import annotations

from ecr_retention.domain.planning.ledger import NO_ANSWER, UNCONFIRMED_REMOVAL, Answer, Ledger
from ecr_retention.ports import BatchOutcome, ImageFailure
from ecr_retention.services.act import answers_of

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
