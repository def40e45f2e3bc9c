"""`ecr-retention run` reads the inventory once, at the run's start, minutes before a later repository of a large
registry acts: as a batch's later repositories do (test_holds_read_again_before_acting.py), each repository whose plan
removes reads its holds again right before it acts, so that a hold placed meanwhile keeps its image (docs/safety.md
invariant 37)."""

from __future__ import annotations

from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.run import run_pipeline
from support.builders import NOW
from support.fakes import RecordingNotifier
from tests.unit.services.test_batch_reads_the_inventory_once import held_release
from tests.unit.services.test_holds_read_again_before_acting import HoldPlacedAfterListing
from tests.unit.services.test_run_and_report import rules, seeded


def adapters_with(registry: object, bucket: object) -> Adapters:
    return Adapters(
        registry=registry,  # type: ignore[arg-type]
        bucket=bucket,  # type: ignore[arg-type]
        notifier=RecordingNotifier(),
        clock=lambda: NOW,
        renderers=RENDERERS,
    )


def test_a_hold_placed_after_the_runs_reading_keeps_the_image_a_later_repository_deletes_otherwise() -> None:
    registry, bucket = seeded()
    held = held_release(registry, "team-a/api", "v2")  # the rules delete it otherwise
    placing = HoldPlacedAfterListing(bucket, held)

    report = run_pipeline(rules(dry_run=False), adapters_with(registry, placing))

    assert placing.listed[:3] == ["holds/", "holds/eu-west-1/app/", "holds/eu-west-1/team-a/api/"]
    assert held.digest in registry.digests("team-a/api")
    assert len(registry.digests("team-a/api")) == 2  # v5 (newest) and the held v2; the rest deleted as planned
    [api] = [r for r in report.repositories if r.repository_name == "team-a/api"]
    [kept] = [image for image in api.kept_images if image.image_digest == held.digest]
    assert kept.kind == "hold"


def test_holds_that_cannot_be_read_again_fail_that_repository_alone_and_it_deletes_nothing() -> None:
    registry, bucket = seeded()
    before = registry.digests("team-a/api")
    failing = HoldPlacedAfterListing(bucket, fail=3)  # the run's reading, app's again, then team-a/api's again

    report = run_pipeline(rules(dry_run=False), adapters_with(registry, failing))

    assert registry.digests("team-a/api") == before
    assert len(registry.digests("app")) == 2  # app read its holds again and acted
    assert [(r.repository_name, r.outcome, r.error) for r in report.repositories] == [
        ("app", "ok", None),
        (
            "team-a/api",
            "failed",
            "StorageUnavailable: its holds could not be read again before acting, so nothing was done: "
            "s3://inventory/holds/eu-west-1/team-a/api/: SlowDown",
        ),
    ]


def test_a_dry_run_reads_the_holds_at_the_runs_start_only() -> None:
    registry, bucket = seeded()
    counting = HoldPlacedAfterListing(bucket)

    run_pipeline(rules(dry_run=True), adapters_with(registry, counting))

    assert [prefix for prefix in counting.listed if prefix != "holds/"] == []
