"""A repository's lease is taken only by an evaluation whose plan changes the registry, and that evaluation reads and
plans again under the lease before it acts (docs/safety.md 12; docs/cost.md: two DynamoDB writes per repository were
half of a daily sweep's overhead while nine evaluations in ten change nothing).

Given the in-memory registry and a lease table that records what is asked of it, when a repository is evaluated,
then a plan that changes nothing takes no lease and reports as before, a dry run never takes one, and a plan that acts
takes it once, reads the repository again under it, acts on what that reading plans, and releases it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from unit.services.test_evaluate import HOST, config, given_an_archived_release_in_use, inventory, manifest, seed_app

from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.snapshot import MemoryManifestCache
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import MUTATING, FakeRegistry, MemoryLeases


@dataclass
class RecordingLeases(MemoryLeases):
    """A lease table that can run something as the lease is taken (another run's work)."""

    meanwhile: list[object] = field(default_factory=list)

    def acquire(self, repository: str, holder: str, seconds: int) -> bool:
        for work in self.meanwhile:
            work()  # type: ignore[operator]
        return super().acquire(repository, holder, seconds)


def changes_under_the_lease(registry: FakeRegistry, leases: MemoryLeases) -> list[tuple[str, str | None]]:
    """Each change the evaluation asks of the registry, with who held app's lease as it asked."""
    asked: list[tuple[str, str | None]] = []
    for name in MUTATING:
        change = getattr(registry, name)

        def recorded(*args: object, _name: str = name, _change: object = change, **kwargs: object) -> object:
            asked.append((_name, leases.held.get("app")))
            return _change(*args, **kwargs)  # type: ignore[operator]

        setattr(registry, name, recorded)
    return asked


def evaluate(
    registry: FakeRegistry, inv: Inventory, leases: RecordingLeases, *, dry_run: bool = False
) -> RepositoryReport:
    inputs = RunInputs(
        replication=RegistryReplication(), run_id="run-1", config=config(dry_run), inventory=inv, dry_run=dry_run
    )
    return evaluate_repository(
        "app", inputs, registry=registry, cache=MemoryManifestCache(), leases=leases, clock=lambda: NOW
    )


def given_a_repository_with_nothing_to_remove() -> FakeRegistry:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    registry.add_image("app", tags=["v3"], pushed_at=NOW - timedelta(days=70), seed="v3")
    registry.add_image("app", tags=["latest"], pushed_at=NOW - timedelta(days=100), seed="latest")
    return registry


def test_an_evaluation_whose_plan_changes_nothing_takes_no_lease() -> None:
    registry = given_a_repository_with_nothing_to_remove()
    leases = RecordingLeases()

    report = evaluate(registry, inventory(manifest()), leases)

    assert leases.taken == []
    assert report.outcome == "ok"
    assert report.deleted == ()
    assert report.kept == 2
    assert registry.mutating_calls == []


def test_a_plan_that_changes_nothing_is_reported_even_while_another_run_holds_the_lease() -> None:
    registry = given_a_repository_with_nothing_to_remove()
    leases = RecordingLeases(held={"app": "another-run"})

    report = evaluate(registry, inventory(manifest()), leases)

    assert report.outcome == "ok"
    assert leases.held == {"app": "another-run"}
    assert registry.mutating_calls == []


def test_a_dry_run_takes_no_lease_and_reports_what_it_would_delete() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)
    leases = RecordingLeases(held={"app": "another-run"})

    report = evaluate(registry, inventory(manifest(f"{HOST}/app:v2")), leases, dry_run=True)

    assert leases.taken == []
    assert {entry.image_digest for entry in report.deleted} == {images["v1"], images["v3"], images["old-untagged"]}
    assert registry.mutating_calls == []


def test_a_plan_that_deletes_takes_the_lease_once_and_releases_it() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)
    leases = RecordingLeases()
    asked = changes_under_the_lease(registry, leases)

    report = evaluate(registry, inventory(manifest(f"{HOST}/app:v2")), leases)

    assert leases.taken == ["app"]
    assert asked  # the deletions, every one asked while this run held the lease
    assert all(holder == "run-1" for _, holder in asked)
    assert leases.held == {}
    assert {entry.image_digest for entry in report.deleted} == {images["v1"], images["v3"], images["old-untagged"]}


def test_a_plan_that_only_restores_takes_the_lease() -> None:
    registry, images = given_an_archived_release_in_use()
    # v2 runs and nothing else may go: a newest v4 and latest kept, the rest in use or young.
    leases = RecordingLeases()
    inputs = RunInputs(
        replication=RegistryReplication(), run_id="run-1", config=config(), inventory=inventory(
            manifest(*(f"{HOST}/app:{tag}" for tag in ("v1", "v2", "v3")), digests=(images["old-untagged"],))
        ), dry_run=False,
    )  # fmt: skip

    asked = changes_under_the_lease(registry, leases)

    report = evaluate_repository(
        "app", inputs, registry=registry, cache=MemoryManifestCache(), leases=leases, clock=lambda: NOW
    )

    assert report.deleted == ()
    assert [entry.image_digest for entry in report.restored] == [images["v2"]]
    assert leases.taken == ["app"]
    assert asked == [("restore_images", "run-1")]
    assert leases.held == {}


def test_what_another_run_changed_before_the_lease_was_taken_is_read_again_and_decides() -> None:
    """Read without the lease, the plan deletes v1, v3 and the old untagged image. Before the lease is granted, another
    run deletes v3 and a release v5 is pushed: v4 is then beyond keep_newest and goes, v3 is not asked for again."""
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)
    leases = RecordingLeases()
    pushed: dict[str, str] = {}
    leases.meanwhile.append(lambda: registry.repositories["app"].pop(images["v3"], None))
    leases.meanwhile.append(
        lambda: pushed.update(v5=registry.add_image("app", tags=["v5"], pushed_at=NOW - timedelta(days=40), seed="v5"))
    )

    report = evaluate(registry, inventory(manifest(f"{HOST}/app:v2")), leases)

    assert {entry.image_digest for entry in report.deleted} == {images["v1"], images["v4"], images["old-untagged"]}
    assert pushed["v5"] in registry.digests("app")
    assert images["v2"] in registry.digests("app")
    assert leases.held == {}


def test_another_evaluation_of_the_same_run_holding_the_lease_keeps_this_one_out() -> None:
    """A batch's invocation that Step Functions gave up on while it still ran, and the fallback evaluating the same
    repository in an invocation of its own: one run, two evaluations; the second is refused as another run would be."""
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)
    leases = RecordingLeases(held={"app": "run-1"})

    report = evaluate(registry, inventory(manifest(f"{HOST}/app:v2")), leases)

    assert report.outcome == "busy"
    assert registry.mutating_calls == []
    assert registry.digests("app") == set(images.values())
    assert leases.held == {"app": "run-1"}
