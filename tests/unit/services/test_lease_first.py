"""A repository expected to act takes its lease before its first reading, which is then the one under the lease: a
batch's evaluation follows LEASE_FIRST_AFTER in a row that changed their registry (services.evaluate_step.ActingStreak), so a
sweep where every repository changes reads most of them once, not twice (docs/cost.md), and what acts is still
planned from a reading under the lease (docs/safety.md 12).

Given the in-memory registry and lease table, when a repository is evaluated with lease_first, then it is read once,
while the lease is held, and acts as an evaluation without lease_first would; a lease another run holds leaves it to
the reading without the lease (reported as it would be without lease_first); and a batch whose repositories all act
takes the lease first for each after the first three."""

from __future__ import annotations

from datetime import timedelta

from unit.services.test_evaluate import HOST, config, inventory, manifest, seed_app

from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.evaluate_step import LEASE_FIRST_AFTER, ActingStreak, run_work_batch
from ecr_retention.services.snapshot import MemoryManifestCache
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryLeases
from tests.unit.services.test_batch_unfinished_evaluations import adapters_with
from tests.unit.services.test_run_and_report import rules
from tests.unit.services.test_work_batches_run import batches_of


def evaluate(registry: FakeRegistry, leases: MemoryLeases, *, lease_first: bool) -> RepositoryReport:
    inputs = RunInputs(
        replication=RegistryReplication(),
        run_id="run-1",
        config=config(),
        inventory=inventory(manifest(f"{HOST}/app:v2")),
        dry_run=False,
    )
    return evaluate_repository(
        "app",
        inputs,
        registry=registry,
        cache=MemoryManifestCache(),
        leases=leases,
        clock=lambda: NOW,
        lease_first=lease_first,
    )


def given_app() -> tuple[FakeRegistry, dict[str, str]]:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    return registry, seed_app(registry)


def readings_under_the_lease(registry: FakeRegistry, leases: MemoryLeases) -> list[str | None]:
    """Who held app's lease at each listing of the repository."""
    holders: list[str | None] = []
    describe = registry.describe_images

    def recorded(repository: str) -> object:
        holders.append(leases.held.get(repository))
        return describe(repository)

    registry.describe_images = recorded  # type: ignore[method-assign]
    return holders


def test_an_evaluation_that_takes_the_lease_first_reads_once_under_it_and_acts_as_one_that_does_not() -> None:
    first, images = given_app()
    second, _ = given_app()
    leases, other_leases = MemoryLeases(), MemoryLeases()
    holders = readings_under_the_lease(first, leases)

    leased_first = evaluate(first, leases, lease_first=True)
    read_twice = evaluate(second, other_leases, lease_first=False)

    assert holders == ["run-1"]
    assert second.count("describe_images") == 2
    assert leases.held == {}
    assert {entry.image_digest for entry in leased_first.deleted} == {
        images["v1"],
        images["v3"],
        images["old-untagged"],
    }
    assert leased_first.model_dump(exclude={"evaluated_at"}) == read_twice.model_dump(exclude={"evaluated_at"})
    assert first.digests("app") == second.digests("app")


def test_a_lease_another_run_holds_leaves_a_plan_that_acts_busy_and_the_registry_unchanged() -> None:
    registry, images = given_app()
    leases = MemoryLeases(held={"app": "another-run"})

    report = evaluate(registry, leases, lease_first=True)

    assert report.outcome == "busy"
    assert registry.mutating_calls == []
    assert registry.digests("app") == set(images.values())
    assert leases.held == {"app": "another-run"}


def test_a_lease_another_run_holds_still_reports_a_plan_that_changes_nothing() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    registry.add_image("app", tags=["latest"], pushed_at=NOW - timedelta(days=100), seed="latest")
    leases = MemoryLeases(held={"app": "another-run"})

    report = evaluate(registry, leases, lease_first=True)

    assert report.outcome == "ok"
    assert report.kept == 1
    assert registry.mutating_calls == []


def test_a_streak_of_evaluations_that_acted_makes_the_next_take_its_lease_first() -> None:
    registry, _ = given_app()
    deleting = evaluate(registry, MemoryLeases(), lease_first=False)
    unchanged = RepositoryReport(repository_name="web", outcome="ok")
    busy = RepositoryReport(repository_name="api", outcome="busy")
    streak = ActingStreak()

    seen = []
    for reports in ([deleting], [deleting], [deleting], [deleting], [unchanged], [deleting], [busy]):
        seen.append(streak.lease_first())
        streak.saw(reports)

    assert deleting.deleted
    assert LEASE_FIRST_AFTER == 3
    assert seen == [False, False, False, True, True, False, False]
    assert not streak.lease_first()


def test_a_batch_whose_repositories_all_act_reads_each_after_the_first_three_once() -> None:
    leases = MemoryLeases()
    registry, adapters = adapters_with(leases)
    for team in "bcdef":
        for n in range(1, 6):
            registry.add_image(
                f"team-{team}/api", tags=[f"v{n}"], pushed_at=NOW - timedelta(days=100 - n), seed=f"{team}{n}"
            )
    _start, [batch] = batches_of(adapters)

    reports = run_work_batch(rules(False), adapters, batch)

    assert len(batch.repositories) == 7
    assert all(report.deleted for report in reports)
    # The first three read without the lease and again under it; the other four once, under it.
    assert registry.count("describe_images") == 3 * 2 + 4
    assert leases.held == {}
