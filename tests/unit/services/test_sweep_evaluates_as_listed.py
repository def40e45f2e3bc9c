"""A dry run's sweep evaluates its repositories as their listings end (listed_ahead.py ListedAhead.as_listed), not
waiting for a large repository's listing while the small ones listed beside it are ready: the repositories after it
are planned meanwhile, and the large one is planned while the next listings are made. Each repository is evaluated
once, and the run's report lists them in the sweep's order, as evaluating them in turn does."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.listed_ahead import ListedAhead, as_listed, listed_ahead
from ecr_retention.services import run as run_service
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry
from tests.unit.services.test_sweep_lists_ahead import (
    REPOSITORIES,
    ThreadsSeen,
    port_itself,
    registry_of,
    sweep,
    the_same_run,
)

ORDER = ("large", "b", "c", "d", "e")
WAIT = 10  # seconds: a bound for the events below, never reached when the code is right


class HeldLarge(FakeRegistry):
    """The fake registry, whose listing of `large` ends only once released."""

    def __init__(self) -> None:
        super().__init__(registry_id=ACCOUNT, region=REGION)
        self.release_large = threading.Event()
        for name in ORDER:
            self.add_image(name, tags=["v1"], pushed_at=NOW - timedelta(days=40), seed=name)

    def describe_images(self, repository: str) -> list[ImageDetail]:
        if repository == "large":
            assert self.release_large.wait(timeout=WAIT)
        return super().describe_images(repository)


def test_the_repositories_listed_beside_a_large_one_come_first_and_the_large_one_once_listed() -> None:
    registry = HeldLarge()
    given = []

    with listed_ahead(registry, ORDER, dry_run=True) as ahead:
        assert isinstance(ahead, ListedAhead)
        for name in ahead.as_listed():
            given.append(name)
            ahead.describe_images(name)
            if name == "c":  # b and c were listed beside large (three ahead): large is let go now
                registry.release_large.set()

    assert given[:2] == ["b", "c"]
    assert sorted(given) == sorted(ORDER)  # each once
    assert registry.operations()["describe_images"] == len(ORDER)


def test_a_repository_listed_out_of_its_turn_is_still_given_once() -> None:
    registry = HeldLarge()
    registry.release_large.set()
    given = []

    with listed_ahead(registry, ORDER, dry_run=True, ahead=1) as ahead:
        assert isinstance(ahead, ListedAhead)
        for name in ahead.as_listed():
            given.append(name)
            ahead.describe_images(name)
            if name == "large":
                ahead.describe_images("c")  # another repository's evaluation reads c's images (tag_in_repositories)

    assert sorted(given) == sorted(ORDER)
    assert len(given) == len(set(given))


def test_a_run_that_acts_evaluates_in_the_sweep_s_order() -> None:
    registry = HeldLarge()

    with listed_ahead(registry, ORDER, dry_run=False) as port:
        assert list(as_listed(port, ORDER)) == list(ORDER)


class FirstHeld(ThreadsSeen):
    """The fake registry of test_sweep_lists_ahead, whose listing of `app` (the sweep's first) ends only once
    released."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__(registry_id=ACCOUNT, region=REGION)
        self.release = release

    def describe_images(self, repository: str) -> list[ImageDetail]:
        if repository == "app":
            assert self.release.wait(timeout=WAIT)
        return super().describe_images(repository)


def test_the_sweep_plans_the_later_repositories_while_the_first_is_listed_and_reports_in_its_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    evaluated: list[str] = []
    evaluate = run_service.evaluate_repository

    def noted(name: str, *args: Any, **kwargs: Any) -> Any:
        evaluated.append(name)
        if name == "team-a/web":
            release.set()  # the first repository's listing ends only once two after it were evaluated
        return evaluate(name, *args, **kwargs)

    seeded_like, bucket = registry_of()
    ahead = FirstHeld(release)
    ahead.repositories = seeded_like.repositories
    monkeypatch.setattr("ecr_retention.services.run.evaluate_repository", noted)
    report = sweep(ahead, bucket)
    monkeypatch.setattr("ecr_retention.services.run.listed_ahead", port_itself)
    in_turn, in_turn_bucket = registry_of()
    expected = sweep(in_turn, in_turn_bucket)

    swept = [name for name in REPOSITORIES if name.startswith(("app", "team-"))]
    assert evaluated[:2] == ["team-a/api", "team-a/web"]  # planned while app was listed
    assert sorted(evaluated[: len(swept)]) == sorted(swept)  # each once
    assert the_same_run(report) == the_same_run(expected)
    assert [repository.repository_name for repository in report.repositories] == swept
    assert ahead.operations() == in_turn.operations()
