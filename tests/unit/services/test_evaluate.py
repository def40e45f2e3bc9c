"""evaluate_repository against the in-memory registry: the one code path that deletes.

Given a registry and an inventory, when a repository is evaluated, then exactly the planned images go,
nothing protected is touched, and the report says exactly what happened."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta

import pytest

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.ports import BatchOutcome, LeaseUnavailable
from ecr_retention.services.act import RESTORE_BATCH, restore
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.snapshot import MemoryManifestCache
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryLeases

HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
IN_USE = Reason(kind="in-use", detail="prod: prod/Deployment/app (pod)")

RULES = """
version: 1
dry_run: {dry_run}
safety: {{min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod]}}
policies:
  - repositories: ["app"]
    rules:
      - keep: {{tags: [latest]}}
      - delete: {{tags: ["v*"], older_than: 30d, keep_newest: 1}}
      - delete: {{untagged: true, older_than: 1d}}
"""


def evaluation_of(config: RetentionConfig, *, run_id: str = "r") -> RunInputs:
    """A run's evaluation of a registry without replication, with no in-use manifest."""
    return RunInputs(
        run_id=run_id, config=config, inventory=Inventory(), dry_run=False, replication=RegistryReplication()
    )


def config(dry_run: bool = False):  # type: ignore[no-untyped-def]
    return parse_config(RULES.format(dry_run=str(dry_run).lower()))


def manifest(*images: str, generated_ago: timedelta = timedelta(minutes=10), digests: tuple[str, ...] = ()) -> bytes:
    entries = [
        {"image": image, "namespace": "prod", "workload": "Deployment/app", "container": "app", "source": "pod"}
        for image in images
    ]
    entries += [
        {
            "image": f"{HOST}/app@{d}",
            "digest": d,
            "namespace": "prod",
            "workload": "Deployment/app",
            "container": "app",
            "source": "pod",
        }
        for d in digests
    ]
    return json.dumps(
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": (NOW - generated_ago).isoformat(),
            "complete": True,
            "images": entries,
        }
    ).encode()


def inventory(*documents: bytes) -> Inventory:
    from ecr_retention.domain.inventory.manifest import read_inventory

    return read_inventory([("in-use/prod.json", body) for body in documents])


@pytest.fixture
def registry() -> FakeRegistry:
    return FakeRegistry(registry_id=ACCOUNT, region=REGION)


def evaluate(registry: FakeRegistry, inv: Inventory, *, dry_run: bool = False, leases: MemoryLeases | None = None):  # type: ignore[no-untyped-def]
    evaluation = RunInputs(
        replication=RegistryReplication(), run_id="run-1", config=config(dry_run), inventory=inv, dry_run=dry_run
    )
    return evaluate_repository(
        "app", evaluation, registry=registry, cache=MemoryManifestCache(), leases=leases, clock=lambda: NOW
    )


def seed_app(registry: FakeRegistry) -> dict[str, str]:
    days = lambda n: NOW - timedelta(days=n)  # noqa: E731
    return {
        "v1": registry.add_image("app", tags=["v1"], pushed_at=days(90), size=500, seed="v1"),
        "v2": registry.add_image("app", tags=["v2"], pushed_at=days(80), size=400, seed="v2"),
        "v3": registry.add_image("app", tags=["v3"], pushed_at=days(70), size=300, seed="v3"),
        "latest": registry.add_image("app", tags=["v0", "latest"], pushed_at=days(100), seed="latest"),
        "v4": registry.add_image("app", tags=["v4"], pushed_at=days(60), seed="v4"),
        "young": registry.add_image("app", pushed_at=NOW - timedelta(hours=2), seed="young"),
        "old-untagged": registry.add_image("app", pushed_at=days(5), size=50, seed="untagged"),
    }


def test_run_deletes_exactly_the_planned_images_and_nothing_in_use(registry: FakeRegistry) -> None:
    images = seed_app(registry)
    inv = inventory(manifest(f"{HOST}/app:v2"))

    report = evaluate(registry, inv)

    gone = {images["v1"], images["v3"], images["old-untagged"]}
    assert {e.image_digest for e in report.deleted} == gone
    assert registry.digests("app") == set(images.values()) - gone
    assert report.outcome == "ok"
    assert report.bytes_reclaimed == 500 + 300 + 50
    assert report.protected_in_use == 1
    assert report.kept == 4
    assert not report.failed
    assert not report.cancelled


def test_dry_run_makes_no_mutating_call_and_lists_what_would_go(registry: FakeRegistry) -> None:
    images = seed_app(registry)

    report = evaluate(registry, inventory(manifest()), dry_run=True)

    assert registry.mutating_calls == []
    assert registry.count("describe_image_ids") == 0
    assert {e.image_digest for e in report.deleted} == {
        images["v1"],
        images["v2"],
        images["v3"],
        images["old-untagged"],
    }
    assert registry.digests("app") == set(images.values())


def test_rules_file_dry_run_cannot_be_overridden_by_the_caller(registry: FakeRegistry) -> None:
    with pytest.raises(ValueError, match="dry_run: true"):
        RunInputs(
            replication=RegistryReplication(),
            run_id="r",
            config=config(dry_run=True),
            inventory=Inventory(),
            dry_run=False,
        )


def test_stale_inventory_blocks_every_deletion(registry: FakeRegistry) -> None:
    images = seed_app(registry)

    report = evaluate(registry, inventory(manifest(generated_ago=timedelta(hours=7))))

    assert report.outcome == "blocked"
    assert report.blocked
    assert "prod" in report.blocked[0]
    assert registry.mutating_calls == []
    assert registry.digests("app") == set(images.values())


def test_missing_inventory_blocks_every_deletion(registry: FakeRegistry) -> None:
    seed_app(registry)

    report = evaluate(registry, Inventory())

    assert report.outcome == "blocked"
    assert registry.mutating_calls == []


def test_a_repository_over_max_delete_fraction_is_skipped_without_a_recheck_or_a_removal(
    registry: FakeRegistry,
) -> None:
    images = seed_app(registry)
    evaluation = RunInputs(
        replication=RegistryReplication(),
        run_id="run-1",
        config=config().model_copy(update={"safety": config().safety.model_copy(update={"max_delete_fraction": 0.25})}),
        inventory=inventory(manifest()),
        dry_run=False,
    )

    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    assert report.outcome == "skipped"
    assert report.skipped is not None
    assert "max_delete_fraction 0.25" in report.skipped
    assert (report.deleted, report.archived, report.failed) == ((), (), ())
    assert registry.count("describe_image_ids") == 0
    assert registry.mutating_calls == []
    assert registry.digests("app") == set(images.values())


def test_tag_moved_between_plan_and_delete_cancels_that_deletion(registry: FakeRegistry) -> None:
    images = seed_app(registry)
    # Someone tags v1 `latest-good` after the plan, right before the re-check.
    registry.before["describe_image_ids"] = lambda r: r.set_tags("app", images["v1"], ["v1", "latest-good"])

    report = evaluate(registry, inventory(manifest()))

    assert images["v1"] in registry.digests("app")
    cancelled = {e.image_digest: e for e in report.cancelled}
    assert cancelled[images["v1"]].kind == "tag-changed"
    assert "latest-good" in cancelled[images["v1"]].detail
    assert images["v1"] not in {e.image_digest for e in report.deleted}


def test_partial_failure_is_reported_and_never_counted_as_deleted(registry: FakeRegistry) -> None:
    images = seed_app(registry)
    registry.delete_failures[images["v3"]] = "KmsError"

    report = evaluate(registry, inventory(manifest()))

    assert report.outcome == "partial"
    assert [(e.image_digest, e.error_code, e.kind) for e in report.failed] == [
        (images["v3"], "KmsError", "delete-failed")
    ]
    assert images["v3"] not in {e.image_digest for e in report.deleted}
    assert images["v3"] in registry.digests("app")
    assert report.bytes_reclaimed == 500 + 400 + 50


def test_repository_deleted_before_evaluation_is_reported_gone(registry: FakeRegistry) -> None:
    report = evaluate(registry, inventory(manifest()))

    assert report.outcome == "gone"
    assert registry.mutating_calls == []


def test_repository_deleted_between_plan_and_delete_deletes_nothing_and_says_so(registry: FakeRegistry) -> None:
    seed_app(registry)
    registry.before["describe_image_ids"] = lambda r: r.repositories.pop("app")

    report = evaluate(registry, inventory(manifest()))

    assert report.outcome == "gone"
    assert not report.deleted


def test_held_lease_reports_busy_and_touches_nothing(registry: FakeRegistry) -> None:
    seed_app(registry)
    leases = MemoryLeases(held={"app": "another-run"})

    report = evaluate(registry, inventory(manifest()), leases=leases)

    assert report.outcome == "busy"
    # It read the repository (no lease is needed to read), found that its plan deletes, and was refused the lease.
    assert registry.calls == [("describe_images", "app")]
    assert leases.held == {"app": "another-run"}


def test_lease_is_released_after_the_evaluation(registry: FakeRegistry) -> None:
    seed_app(registry)
    leases = MemoryLeases()

    evaluate(registry, inventory(manifest()), leases=leases)

    assert leases.held == {}


class BrokenLeases(MemoryLeases):
    """A lease table that cannot be reached (after the client's retries) for taking or for releasing."""

    def __init__(self, *, acquire: bool = True, release: bool = True) -> None:
        super().__init__()
        self.acquire_works, self.release_works = acquire, release

    def acquire(self, repository: str, holder: str, seconds: int) -> bool:
        if not self.acquire_works:
            raise LeaseUnavailable("lease table leases, repository app: PutItem failed: ThrottlingException")
        return super().acquire(repository, holder, seconds)

    def release(self, repository: str, holder: str) -> None:
        if not self.release_works:
            raise LeaseUnavailable("lease table leases, repository app: DeleteItem failed: ThrottlingException")
        super().release(repository, holder)


def test_a_lease_that_cannot_be_taken_fails_the_repository_alone_and_touches_nothing(registry: FakeRegistry) -> None:
    images = seed_app(registry)

    report = evaluate(registry, inventory(manifest()), leases=BrokenLeases(acquire=False))

    assert report.outcome == "failed"
    assert "PutItem failed: ThrottlingException" in (report.error or "")
    assert registry.mutating_calls == []
    assert registry.digests("app") == set(images.values())


def test_a_lease_that_cannot_be_released_keeps_the_report_of_what_was_deleted(registry: FakeRegistry) -> None:
    seed_app(registry)

    report = evaluate(registry, inventory(manifest(f"{HOST}/app:v2")), leases=BrokenLeases(release=False))

    assert len(report.deleted) == 3
    assert {e.image_digest for e in report.deleted}.isdisjoint(registry.digests("app"))
    assert report.outcome == "ok"
    assert any("DeleteItem failed" in warning and "expires" in warning for warning in report.warnings)


MULTI_ARCH_RULES = """
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 1, inventory_max_age: 6h, clusters: []}
policies:
  - repositories: ["app"]
    rules:
      - keep: {tags: [stable]}
      - delete: {tags: ["v*"], older_than: 30d}
"""


def test_index_goes_before_its_children_and_a_shared_child_stays_with_the_kept_index(registry: FakeRegistry) -> None:
    old = NOW - timedelta(days=90)
    amd, arm, shared = (registry.add_image("app", pushed_at=old, seed=s) for s in ("amd", "arm", "shared"))
    old_index = registry.add_index("app", [amd, shared], tags=["v1"], pushed_at=old)
    kept_index = registry.add_index("app", [arm, shared], tags=["stable"], pushed_at=old)
    signature = registry.add_image("app", tags=[f"sha256-{old_index.split(':')[1]}.sig"], pushed_at=old, seed="sig")
    evaluation = evaluation_of(parse_config(MULTI_ARCH_RULES))

    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    assert {e.image_digest for e in report.deleted} == {old_index, amd, signature}
    assert registry.digests("app") == {kept_index, arm, shared}
    assert not report.failed
    # indexes and subjects first, in their own call; then what goes with them
    assert registry.count("delete_images") == 2


def test_a_failed_index_deletion_keeps_its_children_and_referrers(registry: FakeRegistry) -> None:
    old = NOW - timedelta(days=90)
    amd = registry.add_image("app", pushed_at=old, seed="amd")
    index = registry.add_index("app", [amd], tags=["v1"], pushed_at=old)
    signature = registry.add_image("app", tags=[f"sha256-{index.split(':')[1]}.sig"], pushed_at=old, seed="sig")
    registry.delete_failures[index] = "KmsError"
    evaluation = evaluation_of(parse_config(MULTI_ARCH_RULES))

    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    assert registry.digests("app") == {index, amd, signature}
    assert {e.image_digest: e.error_code for e in report.failed} == {
        index: "KmsError",
        amd: "ParentNotRemoved",
        signature: "ParentNotRemoved",
    }
    assert report.deleted == ()
    assert report.outcome == "partial"


def test_the_next_run_removes_the_oci_referrers_a_killed_run_left_and_keeps_the_cosign_signatures(
    registry: FakeRegistry,
) -> None:
    # What a run killed between its waves leaves: the subject went, its referrers did not.
    old = NOW - timedelta(days=90)
    kept = registry.add_image("app", tags=["stable"], pushed_at=old, seed="stable")
    gone = "sha256:" + "0" * 64
    sbom = registry.add_referrer("app", gone, pushed_at=old, seed="sbom")
    signature = registry.add_image("app", tags=[f"sha256-{'0' * 64}.sig"], pushed_at=old, seed="sig")
    sbom_signature = registry.add_referrer("app", sbom, pushed_at=old, seed="sbom-signature")
    evaluation = evaluation_of(parse_config(MULTI_ARCH_RULES))

    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    assert registry.digests("app") == {kept, signature}  # no rule selects the cosign signature
    deleted = {e.image_digest: e for e in report.deleted}
    assert deleted.keys() == {sbom, sbom_signature}
    assert (deleted[sbom].kind, deleted[sbom].detail) == (
        "referrer",
        "its subject 000000000000 is gone from the repository",
    )
    assert report.failed == ()
    assert report.cancelled == ()
    # re-checked like every candidate; the orphan has no parent, so it goes in the first wave, its referrer after it
    assert registry.count("describe_image_ids") == 1
    assert registry.count("delete_images") == 2


def test_a_deletion_whose_answer_was_lost_is_reported_failed_not_confirmed_never_deleted_or_cancelled(
    registry: FakeRegistry,
) -> None:
    images = seed_app(registry)
    registry.lost_answers.add(images["v1"])

    report = evaluate(registry, inventory(manifest()))

    assert images["v1"] not in registry.digests("app")
    assert images["v1"] not in {e.image_digest for e in (*report.deleted, *report.cancelled)}
    [failed] = report.failed
    assert (failed.image_digest, failed.kind, failed.error_code) == (images["v1"], "delete-failed", "NotConfirmed")
    assert "answer was lost" in failed.detail
    assert report.outcome == "partial"
    assert report.bytes_reclaimed == 400 + 300 + 50  # v2, v3 and the old untagged image; not v1's 500


def test_children_and_referrers_of_an_index_whose_deletion_answer_was_lost_still_go_as_planned(
    registry: FakeRegistry,
) -> None:
    old = NOW - timedelta(days=90)
    amd = registry.add_image("app", pushed_at=old, seed="amd")
    index = registry.add_index("app", [amd], tags=["v1"], pushed_at=old)
    signature = registry.add_image("app", tags=[f"sha256-{index.split(':')[1]}.sig"], pushed_at=old, seed="sig")
    registry.lost_answers.add(index)
    evaluation = evaluation_of(parse_config(MULTI_ARCH_RULES))

    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    # The index is gone (whoever removed it): it holds nothing any more, so the plan's removals go on without it.
    assert registry.digests("app") == set()
    assert {e.image_digest for e in report.deleted} == {amd, signature}
    assert {e.image_digest: e.error_code for e in report.failed} == {index: "NotConfirmed"}


def test_children_of_an_index_removed_by_someone_else_since_the_plan_still_go_as_planned(
    registry: FakeRegistry,
) -> None:
    old = NOW - timedelta(days=90)
    amd = registry.add_image("app", pushed_at=old, seed="amd")
    index = registry.add_index("app", [amd], tags=["v1"], pushed_at=old)
    registry.before["describe_image_ids"] = lambda r: r.repositories["app"].pop(index)
    evaluation = evaluation_of(parse_config(MULTI_ARCH_RULES))

    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    assert registry.digests("app") == set()
    assert [e.image_digest for e in report.deleted] == [amd]
    assert [(e.image_digest, e.kind) for e in report.cancelled] == [(index, "tag-changed")]
    assert report.failed == ()


def test_unmanaged_repository_is_not_even_read(registry: FakeRegistry) -> None:
    registry.add_image("other", tags=["v1"], pushed_at=NOW - timedelta(days=90))
    evaluation = evaluation_of(config())

    report = evaluate_repository("other", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    assert report.outcome == "unmanaged"
    assert registry.calls == []


BULK_RULES = """
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 1, inventory_max_age: 6h, clusters: []}
policies:
  - repositories: ["app"]
    rules:
      - delete: {tags: ["v*"], older_than: 30d}
"""


def test_a_worker_near_its_deadline_stops_deleting_and_the_next_run_converges(registry: FakeRegistry) -> None:
    digests = {
        registry.add_image("app", tags=[f"v{n}"], pushed_at=NOW - timedelta(days=40 + n), seed=str(n))
        for n in range(250)
    }
    evaluation = evaluation_of(parse_config(BULK_RULES), run_id="r1")
    budget = iter([600.0, 30.0, 30.0])  # time enough for the first batch of 100, then under the margin

    first = evaluate_repository(
        "app",
        evaluation,
        registry=registry,
        cache=MemoryManifestCache(),
        clock=lambda: NOW,
        seconds_left=lambda: next(budget),
    )

    assert len(first.deleted) == 100
    assert {e.error_code for e in first.failed} == {"DeadlineReached"}
    assert len(first.failed) == 150
    assert registry.count("delete_images") == 1
    assert registry.digests("app") == digests - {e.image_digest for e in first.deleted}
    assert first.outcome == "partial"

    second = evaluate_repository(
        "app",
        evaluation_of(parse_config(BULK_RULES), run_id="r2"),
        registry=registry,
        cache=MemoryManifestCache(),
        clock=lambda: NOW,
        seconds_left=lambda: 600.0,
    )

    assert len(second.deleted) == 150
    assert second.outcome == "ok"
    assert registry.digests("app") == set()


class CrashingRegistry(FakeRegistry):
    """Removes the first batch, then fails in a way no adapter anticipated."""

    def delete_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        if self.count("delete_images"):
            self.calls.append(("delete_images", repository))
            raise RuntimeError("connection reset while reading the answer")
        return super().delete_images(repository, digests)


def test_an_unexpected_failure_mid_run_keeps_what_was_deleted_on_record() -> None:
    registry = CrashingRegistry(registry_id=ACCOUNT, region=REGION)
    for n in range(250):
        registry.add_image("app", tags=[f"v{n}"], pushed_at=NOW - timedelta(days=40 + n), seed=str(n))
    evaluation = evaluation_of(parse_config(BULK_RULES), run_id="r1")

    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    gone = {e.image_digest for e in report.deleted}
    assert len(gone) == 100
    assert gone.isdisjoint(registry.digests("app"))
    assert {e.error_code for e in report.failed} == {"RuntimeError"}
    assert len(report.failed) == 150
    assert registry.count("delete_images") == 2  # nothing more after the failure
    assert report.outcome == "partial"


class BrokenDoctorRegistry(FakeRegistry):
    def lifecycle_policy(self, repository: str) -> str | None:
        self._record("lifecycle_policy", repository)
        return '{"rules": [{"rulePriority": 1, "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1}, "action": {"type": "expire"}}]}'


def test_a_lifecycle_diagnosis_that_fails_does_not_stop_pruning(monkeypatch: pytest.MonkeyPatch) -> None:
    # services.evaluate imports the doctor when a repository has a native policy: the doctor's own function is broken.
    from ecr_retention.domain.doctor import diagnosis as module

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("doctor defect")

    monkeypatch.setattr(module, "diagnose_repository", broken)
    registry = BrokenDoctorRegistry(registry_id=ACCOUNT, region=REGION)
    seed_app(registry)

    report = evaluate(registry, inventory(manifest()))

    assert report.outcome == "ok"
    assert len(report.deleted) == 4
    assert any("could not be diagnosed" in w for w in report.warnings)


# --- in-use images found archived: restored (restoring deletes nothing) ---------------------------


def evaluate_with(registry: FakeRegistry, inv: Inventory, *, dry_run: bool = False, **safety: object):  # type: ignore[no-untyped-def]
    cfg = config(dry_run)
    cfg = cfg.model_copy(update={"safety": cfg.safety.model_copy(update=safety)})
    evaluation = RunInputs(
        replication=RegistryReplication(), run_id="run-1", config=cfg, inventory=inv, dry_run=dry_run
    )
    return evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)


def given_an_archived_release_in_use() -> tuple[FakeRegistry, dict[str, str]]:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)
    registry.archive("app", images["v2"], NOW - timedelta(days=10))
    return registry, images


def status(registry: FakeRegistry, digest: str) -> str:
    return registry.repositories["app"][digest].detail.image_status


def test_a_run_restores_the_archived_image_a_tag_reference_runs_and_deletes_as_planned() -> None:
    registry, images = given_an_archived_release_in_use()

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")))

    assert status(registry, images["v2"]) == "ACTIVATING"
    assert [e.image_digest for e in report.restored] == [images["v2"]]
    assert [e.image_digest for e in report.in_use_archived] == [images["v2"]]
    assert "prod: prod/Deployment/app (pod)" in report.restored[0].detail
    gone = {images["v1"], images["v3"], images["old-untagged"]}
    assert {e.image_digest for e in report.deleted} == gone  # the same deletions as without the archive
    assert report.outcome == "ok"
    assert report.kept == 4


def test_a_dry_run_reports_would_restore_and_makes_no_call() -> None:
    registry, images = given_an_archived_release_in_use()

    report = evaluate_with(registry, inventory(manifest(digests=(images["v2"],))), dry_run=True)

    assert registry.mutating_calls == []
    assert status(registry, images["v2"]) == "ARCHIVED"
    assert [e.image_digest for e in report.restored] == [images["v2"]]


def test_a_blocked_run_still_restores_and_deletes_nothing() -> None:
    registry, images = given_an_archived_release_in_use()

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2", generated_ago=timedelta(hours=7))))

    assert report.outcome == "blocked"
    assert [op for op, _ in registry.calls if op in ("delete_images", "archive_images")] == []
    assert status(registry, images["v2"]) == "ACTIVATING"
    assert [e.image_digest for e in report.restored] == [images["v2"]]
    assert registry.digests("app") == set(images.values())


def test_a_skipped_repository_still_restores() -> None:
    registry, images = given_an_archived_release_in_use()

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")), max_delete_fraction=0.25)

    assert report.outcome == "skipped"
    assert status(registry, images["v2"]) == "ACTIVATING"
    assert registry.digests("app") == set(images.values())


def test_a_failing_restore_is_reported_and_nothing_else_changes() -> None:
    registry, images = given_an_archived_release_in_use()
    registry.restore_failures[images["v2"]] = "KmsException"

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")))

    assert report.outcome == "ok"
    assert report.restored == ()
    assert [(e.image_digest, e.kind, e.error_code) for e in report.restore_failed] == [
        (images["v2"], "restore-failed", "KmsException")
    ]
    assert [e.image_digest for e in report.in_use_archived] == [images["v2"]]
    assert any("could not be restored" in w for w in report.warnings)
    assert status(registry, images["v2"]) == "ARCHIVED"
    assert {e.image_digest for e in report.deleted} == {images["v1"], images["v3"], images["old-untagged"]}
    assert report.kept == 4


def test_a_restore_that_raises_is_reported_and_the_deletions_still_run() -> None:
    registry, images = given_an_archived_release_in_use()

    def boom(*_: object) -> None:
        raise RuntimeError("connection reset")

    registry.restore_images = boom  # type: ignore[method-assign,assignment]
    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")))

    assert [e.error_code for e in report.restore_failed] == ["RestoreFailed"]
    assert {e.image_digest for e in report.deleted} == {images["v1"], images["v3"], images["old-untagged"]}


def test_with_restore_in_use_false_nothing_is_restored_and_the_report_names_it() -> None:
    registry, images = given_an_archived_release_in_use()

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")), restore_in_use=False)

    assert registry.count("restore_images") == 0
    assert status(registry, images["v2"]) == "ARCHIVED"
    assert report.restored == ()
    assert [e.image_digest for e in report.in_use_archived] == [images["v2"]]
    assert images["v2"] in {e.image_digest for e in report.kept_images}
    assert any("restore_in_use is false" in w for w in report.warnings)


# --- safety.quarantine: deletions pass through the archive ----------------------------------------


def test_under_quarantine_a_run_archives_what_it_would_delete_and_deletes_nothing() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")), quarantine=timedelta(days=30))

    quarantined = {images["v1"], images["v3"], images["old-untagged"]}
    assert {e.image_digest for e in report.archived} == quarantined
    assert {e.kind for e in report.archived} == {"quarantine"}
    assert report.deleted == ()
    assert registry.count("delete_images") == 0
    assert registry.digests("app") == set(images.values())
    assert {status(registry, d) for d in quarantined} == {"ARCHIVED"}


def test_under_quarantine_only_images_archived_longer_than_it_are_deleted() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)
    registry.archive("app", images["v1"], NOW - timedelta(days=31))
    registry.archive("app", images["v3"], NOW - timedelta(days=3))

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")), quarantine=timedelta(days=30))

    assert {e.image_digest for e in report.deleted} == {images["v1"]}
    assert "deleted for good" in report.deleted[0].detail
    assert {e.image_digest for e in report.archived} == {images["old-untagged"]}
    assert images["v3"] in registry.digests("app")
    assert status(registry, images["v3"]) == "ARCHIVED"
    waiting = {e.image_digest: e for e in report.kept_images}[images["v3"]]
    assert waiting.kind == "quarantine"
    assert "in quarantine: archived 3d ago" in waiting.detail


def test_an_image_restored_between_the_plan_and_its_deletion_from_quarantine_is_kept() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = seed_app(registry)
    registry.archive("app", images["v1"], NOW - timedelta(days=31))
    # Someone restores v1 (ecr-retention restore, a push) after the plan, right before the re-check.
    registry.before["describe_image_ids"] = lambda r: r.activate("app", images["v1"])

    report = evaluate_with(registry, inventory(manifest(f"{HOST}/app:v2")), quarantine=timedelta(days=30))

    assert images["v1"] in registry.digests("app")
    cancelled = {e.image_digest: e.detail for e in report.cancelled}
    assert "no longer in quarantine" in cancelled[images["v1"]]
    assert images["v1"] not in {e.image_digest for e in report.deleted}


def test_restores_stop_at_the_deadline_and_what_was_not_asked_is_reported_for_the_next_run() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    archived = [
        registry.add_image("app", tags=[f"r{n}"], pushed_at=NOW - timedelta(days=50 + n), seed=f"r{n}")
        for n in range(RESTORE_BATCH + 5)
    ]
    for digest in archived:
        registry.archive("app", digest, NOW - timedelta(days=3))
    left = iter([600.0, 30.0])  # time for the first batch; then less than the margin a call needs

    ledger = restore(registry, "app", archived, seconds_left=lambda: next(left))

    assert registry.count("restore_images") == RESTORE_BATCH  # one call per image
    assert {status(registry, d) for d in archived[:RESTORE_BATCH]} == {"ACTIVATING"}
    assert set(ledger.restore_failed) == set(archived[RESTORE_BATCH:])
    assert {code for code, _ in ledger.restore_failed.values()} == {"DeadlineReached"}


class BrokenBucket:
    """A bucket whose write fails with what no port declares (a defect): keeping the snapshot for reviews breaks."""

    name = "inventory"

    def list_objects(self, prefix: str) -> dict[str, int]:
        return {}

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        return None

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        raise RuntimeError("the snapshot cannot be written")


def test_a_snapshot_that_cannot_be_kept_for_reviews_still_reports_what_was_deleted(registry: FakeRegistry) -> None:
    # Given a repository whose evaluation deletes images, and a bucket that fails to keep its snapshot with a defect
    images = seed_app(registry)
    evaluation = RunInputs(
        run_id="run-1",
        config=config(),
        inventory=inventory(manifest()),
        dry_run=False,
        replication=RegistryReplication(),
        snapshots=BrokenBucket(),
    )
    # When it is evaluated
    report = evaluate_repository("app", evaluation, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)
    # Then the deletions are reported as done, and the lost snapshot is only a warning
    assert report.outcome == "ok"
    gone = set(images.values()) - set(registry.digests("app"))
    assert {images["v1"], images["old-untagged"]} <= gone
    assert {entry.image_digest for entry in report.deleted} == gone
    assert any("snapshot could not be kept for reviews" in warning for warning in report.warnings)
    assert report.last_read_at is None
