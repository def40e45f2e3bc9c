"""The plan table: sizes people can read, and blocked or skipped rows that say what would have happened; the run
report table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.domain.reporting.run_report import RunFacts, run_report_of
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.tables import render_plan_table, render_run_report
from support.builders import config, image, in_use, plan, repository, snapshot


@pytest.mark.parametrize(
    ("size", "text"),
    [(None, "-"), (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (5 * 2**20, "5.0 MiB"), (2**40, "1.0 TiB")],
)
def test_sizes_use_binary_units(size: int | None, text: str) -> None:
    assert human_bytes(size) == text


def test_blocked_rows_name_the_block_and_the_would_be_reason() -> None:
    cfg = config([{"delete": {"tags": ["*"], "older_than": "30d"}}], clusters=["prod"])
    result = plan(cfg, snapshot(repository("app", image("a", "v1"))), in_use("prod", age=timedelta(hours=7)))
    table = render_plan_table(result)
    assert "blocked | delete-rule [policies[0].rules[0]]: delete tags *, older than 30d" in table
    assert "BLOCKED: cluster prod: in-use manifest is 7h old, older than inventory_max_age 6h" in table
    assert table.endswith("BLOCKED: no image is deleted anywhere in this run")


def test_summary_counts_and_reclaimed_bytes() -> None:
    cfg = config([{"delete": {"tags": ["old*"], "older_than": "30d"}}])
    snap = snapshot(
        repository("app", image("a", "old1", size=2**30), image("b", "new1"), image("c", "old2", size=2**30))
    )
    table = render_plan_table(plan(cfg, snap))
    assert "app (policies[0]): 3 images, kept 1, delete 2, archive 0, reclaims 2.0 GiB" in table
    assert "total: delete 2, archive 0, reclaims 2.0 GiB (dry run: nothing will be deleted)" in table


def test_run_report_table_prints_the_summary_one_line_per_line() -> None:
    started = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
    report = run_report_of(
        RunFacts(
            run_id="20261130T030000Z-cli-1a2b3c4d",
            trigger="cli",
            dry_run=True,
            started_at=started,
            finished_at=started + timedelta(seconds=5),
            repositories=[RepositoryReport(repository_name="app", outcome="ok", images=3, kept=3)],
        ),
        report_url="s3://bucket/reports/2026/11/30/20261130T030000Z-cli-1a2b3c4d.json",
    )

    lines = render_run_report(report).splitlines()

    assert "\\n" not in render_run_report(report)
    assert lines[0] == "Run 20261130T030000Z-cli-1a2b3c4d (cli), 2026-11-30 03:00 UTC"
    assert "  app: ok, 3 images, kept 3, would delete 0" in lines
    assert lines[-1] == "Full report: s3://bucket/reports/2026/11/30/20261130T030000Z-cli-1a2b3c4d.json"
