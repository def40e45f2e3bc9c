"""The Map's batches (ecr_retention.workflow_batches.WorkBatch): the run's work items in order, of the size
repositories_per_batch gives a run and its Map's workers, never two registries in one; and what the evaluate step
accepts on the wire."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ecr_retention.workflow import (
    MAX_REPOSITORIES_PER_BATCH,
    MIN_REPOSITORIES_PER_BATCH,
    WorkItem,
    repositories_per_batch,
)
from ecr_retention.workflow_batches import BatchMember, WorkBatch

RUN = "20261130T030000Z-schedule-1a2b3c4d"


def item(name: str, region: str | None = None) -> WorkItem:
    return WorkItem(run_id=RUN, repository=name, trigger="schedule", dry_run=False, region=region)


def test_the_items_are_batched_in_order_by_count() -> None:
    items = [item(f"repo-{n:03d}") for n in range(2 * MIN_REPOSITORIES_PER_BATCH + 5)]

    batches = WorkBatch.of(items)

    assert [len(batch.repositories) for batch in batches] == [MIN_REPOSITORIES_PER_BATCH, MIN_REPOSITORIES_PER_BATCH, 5]
    assert [item for batch in batches for item in batch.items()] == items


def test_a_batch_never_holds_two_registries() -> None:
    items = [item("aa"), item("bb"), item("cc", "us-east-1"), item("dd", "us-east-1"), item("ee")]

    batches = WorkBatch.of(items, size=10)

    assert [(batch.region, batch.repositories) for batch in batches] == [
        (None, ("aa", "bb")),
        ("us-east-1", ("cc", "dd")),
        (None, ("ee",)),
    ]


def test_no_items_make_no_batches() -> None:
    assert WorkBatch.of([]) == []


def test_a_batch_always_says_its_region_on_the_wire() -> None:
    """The state machine's fallback passes `$.region` on to each repository's invocation: it must be there."""
    [batch] = WorkBatch.of([item("app")])

    assert batch.to_wire() == {
        "runId": RUN,
        "trigger": "schedule",
        "dryRun": False,
        "region": None,
        "repositories": ["app"],
    }
    assert WorkBatch.model_validate(batch.to_wire()) == batch


def test_a_batch_larger_than_the_workflows_is_refused() -> None:
    with pytest.raises(ValidationError):
        WorkBatch(
            run_id=RUN,
            trigger="schedule",
            dry_run=False,
            region=None,
            repositories=tuple(f"r{n:03d}" for n in range(MAX_REPOSITORIES_PER_BATCH + 1)),
        )


@pytest.mark.parametrize(
    ("repositories", "workers", "size"),
    [
        (10, 10, 50),  # a small run: batches of the least size
        (1_000, 10, 50),  # 20 batches: two for each worker
        (4_000, 10, 200),
        (10_000, 10, 200),  # 50 batches of the largest size; more workers would not finish it sooner
        (10_000, 100, 50),  # 200 batches: two for each of 100 workers
        (10_000, 40, 125),
        (0, 10, 50),
    ],
)
def test_a_runs_batches_are_two_a_worker_within_the_least_and_largest_size(
    repositories: int, workers: int, size: int
) -> None:
    assert repositories_per_batch(repositories, workers) == size


def test_a_batch_member_is_its_repositorys_work_item() -> None:
    wire = {"runId": RUN, "trigger": "push", "dryRun": True, "region": "us-east-1", "repository": "app",
            "afterBatch": True}  # fmt: skip

    member = BatchMember.model_validate(wire)

    assert member.item() == WorkItem(run_id=RUN, repository="app", trigger="push", dry_run=True, region="us-east-1")


@pytest.mark.parametrize("after_batch", [False, "true", None])
def test_a_batch_member_must_say_it_comes_after_its_batch(after_batch: object) -> None:
    wire = {"runId": RUN, "trigger": "push", "dryRun": True, "repository": "app", "afterBatch": after_batch}

    with pytest.raises(ValidationError):
        BatchMember.model_validate(wire)
