"""A dry run's sweep lists one repository more ahead than it lists at once (listed_ahead.py LISTINGS_AHEAD,
LISTINGS_AT_ONCE): while it plans a repository it has just been given (a large one, listed long), the next listing is
under way instead of both workers holding listings nobody has asked for yet; ECR still answers no more than two
DescribeImages of the sweep at a time, and each repository is listed once."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.listed_ahead import LISTINGS_AHEAD, LISTINGS_AT_ONCE, ListedAhead, listed_ahead
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry

ORDER = ("large", "b", "c", "d", "e", "f", "g", "h")
WAIT = 10  # seconds: a bound for the events below, never reached when the code is right


class Watched(FakeRegistry):
    """The fake registry, noting each listing's start and how many run at once; `large` is listed only once released."""

    def __init__(self) -> None:
        super().__init__(registry_id=ACCOUNT, region=REGION)
        self.started: dict[str, threading.Event] = {name: threading.Event() for name in ORDER}
        self.release_large = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most_at_once = 0
        self.listed: list[str] = []
        for name in ORDER:
            self.add_image(name, tags=["v1"], pushed_at=NOW - timedelta(days=40), seed=name)

    def describe_images(self, repository: str) -> list[ImageDetail]:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.listed.append(repository)
        self.started[repository].set()
        try:
            if repository == "large":
                self.release_large.wait(timeout=WAIT)
            time.sleep(0.01)  # long enough for the other workers to be listing too
            return super().describe_images(repository)
        finally:
            with self.lock:
                self.running -= 1


def test_the_sweep_lists_three_repositories_ahead_two_at_a_time() -> None:
    assert (LISTINGS_AHEAD, LISTINGS_AT_ONCE) == (3, 2)


def test_the_next_listing_begins_while_the_sweep_plans_the_large_repository_it_was_given() -> None:
    registry = Watched()

    with listed_ahead(registry, ORDER, dry_run=True) as ahead:
        assert isinstance(ahead, ListedAhead)
        assert registry.started["c"].wait(timeout=WAIT)  # listed while the large one still is
        assert not registry.started["d"].is_set()  # three ahead at most: large, b, c
        registry.release_large.set()
        ahead.describe_images("large")
        # The sweep now plans the large repository: d is listed meanwhile, before b is asked for.
        assert registry.started["d"].wait(timeout=WAIT)
        for name in ORDER[1:]:
            assert ahead.describe_images(name) == FakeRegistry.describe_images(registry, name)

    assert sorted(registry.listed) == sorted(ORDER)  # each once


def test_no_more_than_two_listings_of_the_sweep_are_made_at_once() -> None:
    registry = Watched()
    registry.release_large.set()

    with listed_ahead(registry, ORDER, dry_run=True) as ahead:
        for name in ORDER:
            ahead.describe_images(name)

    assert registry.most_at_once <= 2  # the first test sees two at once: large and b, then c
    assert sorted(registry.listed) == sorted(ORDER)
