"""An in-use image found archived, as the report, the SNS summary, the metric, the page, the sheet and the plan table
show it: restored (or would be), its restore failed, or not restored (safety.restore_in_use false), naming the
workload every time."""

from __future__ import annotations

import csv
import io

from ecr_retention.domain.planning.ledger import Ledger
from ecr_retention.domain.reporting.report import repository_report
from ecr_retention.domain.reporting.run_report import RunReport, report_of_plan
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.handlers import observability
from ecr_retention.report_page import render_page
from ecr_retention.report_sheet import render_sheet
from ecr_retention.tables import render_plan_table
from support.builders import HOST, config, digest, image, in_use, plan, repository, snapshot
from tests.unit.report_page.dom import parse
from tests.unit.report_page.reports import PRICE

DELETE_OLD = {"delete": {"tags": ["*"], "older_than": "30d"}}
WORKLOAD = "prod: default/Deployment/web (pod)"


def archived_in_use_run(*, restore: bool = True, dry_run: bool = True) -> RunReport:
    cfg = config([DELETE_OLD], restore_in_use=restore)
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED"), image("b", "v0")))
    result = plan(cfg, snap, in_use("prod", (f"{HOST}/app@{digest('a')}", "a")))
    report = report_of_plan(result, run_id="r-1", manifests=())
    return report if dry_run else report.model_copy(update={"dry_run": False})


def test_the_report_lists_the_restore_and_counts_it_in_the_totals() -> None:
    report = archived_in_use_run()
    [repo] = report.repositories

    assert [e.image_digest for e in repo.restored] == [digest("a")]
    assert repo.restored[0].kind == "in-use"
    assert WORKLOAD in repo.restored[0].detail
    assert [e.image_digest for e in repo.in_use_archived] == [digest("a")]
    assert repo.kept == 1  # a restored image stays
    assert (report.totals.restored, report.totals.in_use_archived, report.totals.deleted) == (1, 1, 1)
    data = report.to_json_dict()
    assert data["totals"]["inUseArchived"] == 1
    assert data["repositories"][0]["restored"][0]["imageDigest"] == digest("a")


def test_the_summary_names_the_image_its_fate_and_its_workload() -> None:
    _, dry = render_summary(archived_in_use_run())
    _, off = render_summary(archived_in_use_run(restore=False))

    assert "In-use images found archived (1)" in dry
    assert f"would restore; used by {WORKLOAD}" in dry
    assert "would restore 1 in use" in dry
    assert f"NOT restored (safety.restore_in_use: false); used by {WORKLOAD}" in off


def test_a_failed_restore_is_named_in_the_summary_and_stays_kept() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED"), image("b", "v0")))
    result = plan(cfg, snap, in_use("prod", (f"{HOST}/app@{digest('a')}", "a")))
    report = report_of_plan(result, run_id="r-1", manifests=()).model_copy(update={"dry_run": False})
    ledger = Ledger(restore_failed={digest("a"): ("KmsException", "denied")})
    repo = repository_report(result.repositories[0], result.generated_at, result.blocked, ledger)
    report = report.model_copy(update={"repositories": (repo,)})

    _, body = render_summary(report)

    assert (repo.restored, [e.error_code for e in repo.restore_failed]) == ((), ["KmsException"])
    assert repo.kept == 1
    assert f"restore FAILED (KmsException); used by {WORKLOAD}" in body
    assert "could not be restored" in " ".join(repo.warnings)


def test_the_metric_counts_the_in_use_images_found_archived_restored_or_not() -> None:
    for report in (archived_in_use_run(dry_run=False), archived_in_use_run(restore=False, dry_run=False)):
        observability.record_run_metrics(report)
        published = observability.metrics.serialize_metric_set()
        observability.metrics.clear_metrics()
        assert published["InUseImagesArchived"] == [1.0]
    assert published["ImagesRestored"] == [0.0]  # restore_in_use false: nothing restored


def test_the_page_shows_the_restore_row_the_filter_option_and_a_warning_check() -> None:
    page = parse(render_page(archived_in_use_run(), PRICE))

    rows = {row.attrs["data-digest"]: row for row in page.by_id("images").find_all("tr", class_="image")}
    assert rows[digest("a")].attrs["data-action"] == "restore"
    assert "would restore" in rows[digest("a")].text()
    options = [o.attrs["value"] for o in page.by_id("filter-action").find_all("option")]
    assert "restore" in options
    [check] = [
        c for c in page.by_id("checks").find_all("li", class_="check") if c.attrs["data-check"] == "in-use-archived"
    ]
    assert check.attrs["data-status"] == "warn"
    assert "would be restored" in check.text()
    assert "Deployment/web" in check.text()


def test_the_sheet_has_one_restore_row() -> None:
    rows = list(csv.DictReader(io.StringIO(render_sheet(archived_in_use_run()))))

    by_digest = {row["digest"]: row for row in rows}
    assert len(rows) == 2
    assert by_digest[digest("a")]["action"] == "restore"
    assert by_digest[digest("a")]["reason_kinds"].startswith("in-use")


def test_the_plan_table_shows_the_restore() -> None:
    cfg = config([DELETE_OLD])
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED")))
    table = render_plan_table(plan(cfg, snap, in_use("prod", (f"{HOST}/app@{digest('a')}", "a"))))

    assert "restore" in table.splitlines()[1]
    assert "restore 1 in use (archived)" in table
