"""A dry run's sweep reads each repository's native lifecycle policy on the worker that listed it, right after the
listing (listed_ahead.py ListedAhead): the evaluation asks for it once it has planned, and asked in turn that small
read waited behind the listings under way. The same calls, each once; its error is the caller's, as the port's."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from ecr_retention.listed_ahead import ListedAhead, listed_ahead
from ecr_retention.ports import RepositoryGone
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry

ORDER = ("app", "team-a/api", "team-a/web")
POLICY = '{"rules": [{"rulePriority": 1, "selection": {"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14}, "action": {"type": "expire"}}]}'


class PolicyThreads(FakeRegistry):
    """The fake registry, noting which thread read each lifecycle policy, and failing the reads it is told to."""

    def __init__(self, failing: dict[str, Exception] | None = None) -> None:
        super().__init__(registry_id=ACCOUNT, region=REGION)
        self.failing = failing or {}
        self.policy_read_by: list[tuple[str, str]] = []
        for name in ORDER:
            self.add_image(name, tags=["v1"], pushed_at=NOW - timedelta(days=40), seed=name)
        self.lifecycle_policies["team-a/api"] = POLICY

    def lifecycle_policy(self, repository: str) -> str | None:
        self.policy_read_by.append((repository, threading.current_thread().name))
        if repository in self.failing:
            raise self.failing[repository]
        return super().lifecycle_policy(repository)


def test_the_worker_that_lists_a_repository_reads_its_policy_and_the_caller_gets_that_answer_once() -> None:
    registry = PolicyThreads()

    with listed_ahead(registry, ORDER, dry_run=True) as ahead:
        assert isinstance(ahead, ListedAhead)
        answers = {}
        for name in ORDER:
            ahead.describe_images(name)
            answers[name] = ahead.lifecycle_policy(name)
        asked_again = ahead.lifecycle_policy("team-a/api")

    assert answers == {"app": None, "team-a/api": POLICY, "team-a/web": None}
    assert asked_again == POLICY
    main = threading.main_thread().name
    read_ahead = [(name, thread) for name, thread in registry.policy_read_by if thread != main]
    assert sorted(name for name, _ in read_ahead) == sorted(ORDER)  # each once, on a worker
    assert all(thread.startswith("listed-ahead") for _, thread in read_ahead)
    assert registry.policy_read_by[-1] == ("team-a/api", main)  # a second ask is the port's, made when asked
    assert registry.operations()["lifecycle_policy"] == len(ORDER) + 1


@pytest.mark.parametrize("failure", [RepositoryGone("team-a/api"), RuntimeError("an answer no adapter expects")])
def test_a_policy_read_ahead_that_fails_raises_its_error_to_the_caller_that_asks(failure: Exception) -> None:
    registry = PolicyThreads({"team-a/api": failure})

    with listed_ahead(registry, ORDER, dry_run=True) as ahead:
        images = ahead.describe_images("team-a/api")  # the listing itself succeeded
        with pytest.raises(type(failure)) as raised:
            ahead.lifecycle_policy("team-a/api")

    assert raised.value is failure
    assert images == FakeRegistry.describe_images(registry, "team-a/api")


def test_a_listing_made_ahead_that_fails_reads_no_policy_and_the_caller_s_read_is_the_port_s() -> None:
    registry = PolicyThreads()
    registry.repositories.pop("team-a/api")  # listing it raises RepositoryGone

    with listed_ahead(registry, ORDER, dry_run=True) as ahead:
        with pytest.raises(RepositoryGone):
            ahead.describe_images("team-a/api")
        with pytest.raises(RepositoryGone):
            ahead.lifecycle_policy("team-a/api")

    assert ("team-a/api", threading.main_thread().name) in registry.policy_read_by
    assert [name for name, _ in registry.policy_read_by].count("team-a/api") == 1


def test_a_run_that_acts_reads_each_policy_when_it_asks() -> None:
    registry = PolicyThreads()

    with listed_ahead(registry, ORDER, dry_run=False) as port:
        assert port is registry
        port.lifecycle_policy("app")

    assert registry.policy_read_by == [("app", threading.main_thread().name)]
