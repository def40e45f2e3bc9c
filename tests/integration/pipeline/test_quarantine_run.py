"""safety.quarantine through the real adapters on faithful moto: a run archives what it would delete, deletes only
what has been archived longer than the quarantine, and keeps what waits (SPEC.md "Archived images: quarantine and
restore")."""

from __future__ import annotations

from datetime import timedelta

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.services.run import run_pipeline
from ecr_retention_dev.emulator.seeding import MotoEcr
from support.expectations import planned
from support.pipeline_harness import NOW, Pipeline

QUARANTINE = timedelta(days=30)


def quarantined(config: RetentionConfig) -> RetentionConfig:
    return config.model_copy(update={"safety": config.safety.model_copy(update={"quarantine": QUARANTINE})})


def test_a_quarantine_run_archives_instead_of_deleting_and_deletes_only_what_waited_long_enough(
    pipeline: Pipeline,
) -> None:
    config = quarantined(pipeline.config(dry_run=False))
    deletions = planned(pipeline.plan(pipeline.config(dry_run=False)), "delete")["app"]
    long_ago, lately = sorted(deletions)[:2]
    ecr = MotoEcr(pipeline.ecr)
    ecr.archive("app", long_ago, NOW - QUARANTINE - timedelta(days=1))  # archived longer than the quarantine
    ecr.archive("app", lately, NOW - timedelta(days=3))  # archived 3 days ago: it waits
    before = pipeline.state()
    plan = pipeline.plan(config)

    report = run_pipeline(config, pipeline.adapters())

    after = pipeline.state()
    deleted = {name: digests for name, digests in planned(plan, "delete").items() if digests}
    assert deleted == {"app": {long_ago}}  # the only deletion: archived longer than the quarantine
    assert long_ago not in after["app"]
    assert after["app"][lately]["imageStatus"] == "ARCHIVED"
    for name, digests in planned(plan, "archive").items():
        for digest in digests:
            assert before[name][digest]["imageStatus"] == "ACTIVE"
            assert after[name][digest]["imageStatus"] == "ARCHIVED", (name, digest)
    gone = {(name, d) for name, images in before.items() for d in images if d not in after.get(name, {})}
    assert gone == {("app", long_ago)}
    assert report.outcome == "ok"
    assert report.totals.deleted == report.totals.left_quarantine == 1
    assert report.totals.in_quarantine == 1
    assert report.totals.entered_quarantine == report.totals.archived - 6  # the archive rule's own six
    assert report.totals.entered_quarantine > 700
    [message] = pipeline.messages()
    assert "Quarantine: entered" in message["Message"]
