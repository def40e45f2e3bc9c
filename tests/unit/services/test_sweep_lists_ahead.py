"""A dry run's sweep (`ecr-retention run --dry-run`, run_pipeline) lists each repository's images on a worker thread
while it plans the one before (listed_ahead.py): the same calls, each once, the same report. A run that acts reads
each repository right before it plans it, as before."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.listed_ahead import DryRunOnly, ListedAhead, listed_ahead
from ecr_retention.ports import ImageManifest, Registry, RepositoryGone
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.run import run_pipeline
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryBucket, MemoryLeases, RecordingNotifier
from tests.unit.services.test_run_and_report import rules, seeded

REPOSITORIES = ("app", "team-a/api", "team-a/web", "team-b/batch", "team-b/cron")


class ThreadsSeen(FakeRegistry):
    """The fake registry, noting which thread made each DescribeImages, and failing the listings it is told to."""

    def __init__(self, failing: dict[str, Exception] | None = None, **fields: Any) -> None:
        super().__init__(**fields)
        self.failing = failing or {}
        self.listed_by: list[tuple[str, str]] = []

    def describe_images(self, repository: str) -> list[ImageDetail]:
        self.listed_by.append((repository, threading.current_thread().name))
        if repository in self.failing:
            self.calls.append(("describe_images", repository))
            raise self.failing[repository]
        return super().describe_images(repository)


def registry_of(failing: dict[str, Exception] | None = None) -> tuple[ThreadsSeen, MemoryBucket]:
    seeded_registry, bucket = seeded()
    registry = ThreadsSeen(failing, registry_id=ACCOUNT, region=REGION)
    for repository in REPOSITORIES:
        for n in range(1, 6):
            registry.add_image(
                repository, tags=[f"v{n}"], pushed_at=NOW - timedelta(days=100 - n), size=n * 1000, seed=f"{n}"
            )
    assert seeded_registry.repositories.keys() <= {*REPOSITORIES, "unmanaged"}
    return registry, bucket


def sweep(registry: FakeRegistry, bucket: MemoryBucket, *, dry_run: bool = True, **more: Any) -> RunReport:
    adapters = Adapters(
        registry=registry, bucket=bucket, notifier=RecordingNotifier(), clock=lambda: NOW, renderers=RENDERERS, **more
    )
    return run_pipeline(rules(dry_run=dry_run), adapters)


@contextmanager
def port_itself(port: Registry, order: Sequence[str], *, dry_run: bool) -> Iterator[Registry]:
    yield port


def the_same_run(report: RunReport) -> dict[str, Any]:
    """A report as its run found things: its run id (random) and where it is stored left out."""
    return report.model_dump(mode="json", exclude={"run_id", "report_url"})


def test_a_dry_run_lists_each_repository_once_on_a_worker_and_reports_what_listing_as_it_plans_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ahead, ahead_bucket = registry_of()
    report = sweep(ahead, ahead_bucket)
    monkeypatch.setattr("ecr_retention.services.run.listed_ahead", port_itself)
    in_turn, in_turn_bucket = registry_of()
    expected = sweep(in_turn, in_turn_bucket)

    assert the_same_run(report) == the_same_run(expected)
    assert ahead.operations() == in_turn.operations()
    assert [repository for repository, _ in ahead.listed_by] == [
        name for name in REPOSITORIES if name.startswith(("app", "team-"))
    ]
    assert all(thread.startswith("listed-ahead") for _, thread in ahead.listed_by)
    assert all(thread == threading.main_thread().name for _, thread in in_turn.listed_by)
    assert ahead.mutating_calls == []


@pytest.mark.parametrize(
    ("failure", "outcome"),
    [(RepositoryGone("team-a/api"), "gone"), (RuntimeError("an answer no adapter expects"), "failed")],
)
def test_a_listing_made_ahead_that_fails_is_its_repository_s_outcome_alone(
    monkeypatch: pytest.MonkeyPatch, failure: Exception, outcome: str
) -> None:
    ahead, bucket = registry_of({"team-a/api": failure})
    report = sweep(ahead, bucket)
    monkeypatch.setattr("ecr_retention.services.run.listed_ahead", port_itself)
    in_turn, in_turn_bucket = registry_of({"team-a/api": failure})

    assert the_same_run(report) == the_same_run(sweep(in_turn, in_turn_bucket))
    outcomes = {repository.repository_name: repository.outcome for repository in report.repositories}
    assert outcomes["team-a/api"] == outcome
    assert {name: result for name, result in outcomes.items() if name != "team-a/api"} == dict.fromkeys(
        ("app", "team-a/web", "team-b/batch", "team-b/cron"), "ok"
    )
    assert ahead.operations() == in_turn.operations()


def test_a_run_that_acts_lists_each_repository_right_before_it_plans_it() -> None:
    registry, bucket = registry_of()

    report = sweep(registry, bucket, dry_run=False)

    assert report.totals.deleted > 0
    assert all(thread == threading.main_thread().name for _, thread in registry.listed_by)
    listed_and_deleted = [call for call in registry.calls if call[0] in ("describe_images", "delete_images")]
    assert [repository for _, repository in listed_and_deleted] == sorted(
        [repository for _, repository in listed_and_deleted], key=REPOSITORIES.index
    )  # one repository listed, then deleted from, before the next is listed


def test_a_dry_run_with_a_lease_table_lists_ahead_and_takes_no_lease() -> None:
    registry, bucket = registry_of()
    leases = MemoryLeases()

    sweep(registry, bucket, leases=leases)

    assert registry.listed_by
    assert all(thread.startswith("listed-ahead") for _, thread in registry.listed_by)
    assert leases.taken == []


def test_a_registry_listed_ahead_refuses_every_change_before_it_reaches_the_registry() -> None:
    registry, _ = registry_of()
    manifest = ImageManifest("sha256:" + "0" * 64, "application/vnd.oci.image.manifest.v1+json", "{}")

    with listed_ahead(registry, ["app", "team-a/api"], dry_run=True) as ahead:
        assert isinstance(ahead, ListedAhead)
        for change in (
            lambda: ahead.delete_images("app", ["sha256:" + "0" * 64]),
            lambda: ahead.archive_images("app", ["sha256:" + "0" * 64]),
            lambda: ahead.restore_images("app", ["sha256:" + "0" * 64]),
            lambda: ahead.put_tag("app", manifest, "kept"),
        ):
            with pytest.raises(DryRunOnly):
                change()

    assert registry.mutating_calls == []


def test_a_sweep_that_ends_early_begins_no_listing_beyond_those_already_asked_for() -> None:
    started = threading.Event()
    release = threading.Event()
    done = threading.Event()

    class Slow(ThreadsSeen):
        def describe_images(self, repository: str) -> list[ImageDetail]:
            started.set()
            release.wait(timeout=10)
            try:
                return super().describe_images(repository)
            finally:
                done.set()

    registry = Slow(registry_id=ACCOUNT, region=REGION)
    for repository in REPOSITORIES:
        registry.add_image(repository, tags=["v1"], pushed_at=NOW - timedelta(days=40))

    with listed_ahead(registry, REPOSITORIES, dry_run=True, ahead=1) as ahead:
        assert isinstance(ahead, ListedAhead)
        assert started.wait(timeout=10)
    release.set()
    assert done.wait(timeout=10)

    assert [repository for repository, _ in registry.listed_by] == ["app"]


def test_a_repository_asked_for_out_of_order_or_again_is_read_when_asked() -> None:
    registry, _ = registry_of()

    with listed_ahead(registry, ["app", "team-a/api", "team-a/web"], dry_run=True, ahead=1) as ahead:
        first = ahead.describe_images("app")
        elsewhere = ahead.describe_images("team-b/cron")  # not in the order: read now, by the caller
        again = ahead.describe_images("app")  # asked a second time: read again, now

    main = threading.main_thread().name
    assert first == again == registry.describe_images("app")
    assert elsewhere == registry.describe_images("team-b/cron")
    assert ("team-b/cron", main) in registry.listed_by
    assert [thread for repository, thread in registry.listed_by if repository == "app"][1] == main
