"""The holds that end within 7 days in the run report (`holdsEnding`, left out when none, so a report without holds
keeps its shape), in the SNS summary and on the page; a reason (owner or text) cannot forge a line of the summary."""

from __future__ import annotations

import json
from datetime import timedelta

from ecr_retention.domain.holds.model import read_holds
from ecr_retention.domain.holds.protection import ending_soon
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.domain.reporting.run_report import HoldEnding, RunFacts, run_report_of
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.report_page.checks import checks_of
from support.builders import NOW, digest
from support.holds import a_hold, stored


def report(*ending: HoldEnding):  # type: ignore[no-untyped-def]
    return run_report_of(
        RunFacts(
            run_id="20261130T060000Z-schedule-1a2b3c4d",
            trigger="schedule",
            dry_run=True,
            started_at=NOW,
            finished_at=NOW,
            repositories=[RepositoryReport(repository_name="app", outcome="ok", images=1, kept=1)],
            holds_ending=ending,
        )
    )


def ending(**kwargs: object) -> HoldEnding:
    [(hold, until)] = ending_soon(read_holds(stored(a_hold("app", "a", **kwargs))), NOW, timedelta(days=90))  # type: ignore[arg-type]
    return HoldEnding.of(hold, until)


def test_a_report_without_holds_ending_keeps_its_shape() -> None:
    plain = report()

    assert "holdsEnding" not in plain.to_json_dict()
    assert "Holds ending" not in render_summary(plain)[1]
    assert all(check.id != "holds-ending" for check in checks_of(plain))


def test_a_hold_ending_within_seven_days_is_in_the_report_the_summary_and_the_page() -> None:
    held = report(ending(until=timedelta(days=3), tag="1.2"))

    document = json.loads(held.to_json())
    _, body = render_summary(held)
    [check] = [check for check in checks_of(held) if check.id == "holds-ending"]

    assert document["holdsEnding"] == [
        {
            "region": "eu-west-1",
            "repository": "app",
            "imageDigest": digest("a"),
            "tag": "1.2",
            "owner": "alice@example.com",
            "reason": "audit INC-42",
            "until": "2026-12-03T06:00:00Z",
        }
    ]
    assert (
        f"Holds ending within 7 days (1):\n  - app:1.2 ({digest('a')}) in eu-west-1, held by alice@example.com until "
        "2026-12-03T06:00:00Z: audit INC-42\n" in body
    )
    assert check.status == "warn"


def test_a_reason_cannot_forge_a_line_of_the_summary() -> None:
    held = report(ending(until=timedelta(days=1), reason="audit\u2028Outcome: ok"))

    _, body = render_summary(held)

    assert "\nOutcome: ok" not in body.split("Holds ending", 1)[1]
