"""Reports of a run over several Regions: totals per Region in the report, a line per Region in the summary, the
sheet's region column, and the per-Region metrics beside the run-level ones (whose dimensions stay as they are)."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest

from ecr_retention.domain.planning.plan_parts import Reason, ReplicaRegistry
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.domain.reporting.run_report import RunFacts, RunReport, run_report_of
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.handlers.observability import record_region_metrics
from ecr_retention.report_page import render_page
from ecr_retention.report_page.view import page_view_of
from ecr_retention.report_sheet import COLUMNS, render_sheet
from support.builders import NOW, digest
from tests.unit.report_page.dom import parse

HOME, OTHER = "eu-west-1", "us-east-1"
DELETE = Reason(kind="delete-rule", rule="policies[0].rules[0]", detail="older than 30 days")
KEEP = Reason(kind="in-use", detail="prod: Deployment/app")


def entry(seed: str, reason: Reason, size: int = 1000) -> ImageEntry:
    return ImageEntry(
        image_digest=digest(seed),
        image_tags=(seed,),
        image_pushed_at=NOW - timedelta(days=40),
        image_size_in_bytes=size,
        kind=reason.kind,
        rule=reason.rule,
        detail=reason.detail,
        reasons=(reason,),
    )


def repo(name: str, region: str | None, *, deleted: int, kept: int = 1) -> RepositoryReport:
    gone = tuple(entry(f"{name}-{region}-d{i}", DELETE) for i in range(deleted))
    return RepositoryReport(
        repository_name=name,
        region=region,
        outcome="ok",
        policy="policies[0]",
        images=deleted + kept,
        kept=kept,
        protected_in_use=kept,
        kept_images=tuple(entry(f"{name}-{region}-k{i}", KEEP) for i in range(kept)),
        deleted=gone,
        bytes_reclaimed=sum(e.image_size_in_bytes or 0 for e in gone),
    )


def report_of(*repositories: RepositoryReport, dry_run: bool = False) -> RunReport:
    return run_report_of(
        RunFacts(
            run_id="20261130T030000Z-schedule-1a2b3c4d",
            trigger="schedule",
            dry_run=dry_run,
            started_at=NOW,
            finished_at=NOW + timedelta(minutes=1),
            repositories=repositories,
            registry=RegistryCoordinates(registry_id="123456789012", region=HOME),
        ),
        report_url="s3://bucket/reports/2026/11/30/run.json",
    )


def two_regions() -> RunReport:
    return report_of(
        repo("team/app", OTHER, deleted=1),
        repo("team/app", HOME, deleted=2),
        repo("tools", None, deleted=1),  # predates the field: counts in the run's own Region
    )


def test_a_run_over_two_regions_totals_each_home_first() -> None:
    report = two_regions()

    assert [(r.region, r.totals.repositories, r.totals.deleted, r.totals.kept) for r in report.regions] == [
        (HOME, 2, 3, 2),
        (OTHER, 1, 1, 1),
    ]
    assert (report.totals.repositories, report.totals.deleted) == (3, 4)  # overall totals as ever
    assert [(r.repository_name, r.region) for r in report.repositories] == [
        ("team/app", HOME),
        ("team/app", OTHER),
        ("tools", None),
    ]
    document = json.loads(report.to_json())
    assert [(r["region"], r["totals"]["deleted"]) for r in document["regions"]] == [(HOME, 3), (OTHER, 1)]
    assert RunReport.model_validate(document).regions == report.regions


def test_a_single_region_report_keeps_its_shape() -> None:
    report = report_of(repo("team/app", HOME, deleted=1), repo("tools", None, deleted=0))

    assert report.regions == ()
    assert "regions" not in report.to_json_dict()
    assert b'"regions"' not in report.to_json_bytes()


def test_the_summary_has_a_totals_line_per_region_and_names_repositories_by_region() -> None:
    _, body = render_summary(two_regions())

    lines = body.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("Totals: ")))
    assert lines[at : at + 3] == [
        "Totals: 3 repositories, 7 images, kept 3 (3 in use), deleted 4, archived 0, cancelled 0, failed 0, "
        "reclaims 3.9 KiB",
        f"  {HOME}: 2 repositories, 5 images, kept 2 (2 in use), deleted 3, archived 0, cancelled 0, failed 0, "
        "reclaims 2.9 KiB",
        f"  {OTHER}: 1 repositories, 2 images, kept 1 (1 in use), deleted 1, archived 0, cancelled 0, failed 0, "
        "reclaims 1000 B",
    ]
    start = lines.index("Repositories:")
    assert lines[start + 1 : start + 4] == [
        f"  {HOME}:team/app: ok, 3 images, kept 1, deleted 2, 2.0 KiB",
        f"  {OTHER}:team/app: ok, 2 images, kept 1, deleted 1, 1000 B",
        f"  {HOME}:tools: ok, 2 images, kept 1, deleted 1, 1000 B",
    ]
    assert f"      1000 B  {OTHER}:team/app  team/app-{OTHER}-d0  40d old  [policies[0].rules[0]]" in lines


def test_a_single_region_summary_names_no_region() -> None:
    _, body = render_summary(report_of(repo("team/app", HOME, deleted=1)))

    assert "  team/app: ok, 2 images, kept 1, deleted 1" in body
    assert f"  {HOME}:" not in body


def test_the_sheet_ends_each_row_with_its_region() -> None:
    rows = list(csv.reader(io.StringIO(render_sheet(two_regions()), newline="")))

    assert rows[0] == list(COLUMNS)
    assert COLUMNS[-1] == "region"
    assert COLUMNS[:9] == (
        "repository",
        "digest",
        "tags",
        "pushed_at",
        "size_bytes",
        "action",
        "reason_kinds",
        "rule",
        "detail",
    )
    regions = {(row[0], row[-1]) for row in rows[1:]}
    assert regions == {("team/app", HOME), ("team/app", OTHER), ("tools", HOME)}
    assert all(len(row) == len(COLUMNS) for row in rows)


def test_each_region_publishes_its_counts_with_a_region_dimension(capsys: pytest.CaptureFixture[str]) -> None:
    record_region_metrics(two_regions())

    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    published = {(d["Region"], d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"]) for d in documents}
    assert published == {
        (region, name)
        for region in (HOME, OTHER)
        for name in ("ImagesDeleted", "ImagesArchived", "BytesReclaimed", "ImagesProtectedInUse", "DeleteFailures")
    }
    deleted = {d["Region"]: d["ImagesDeleted"] for d in documents if "ImagesDeleted" in d}
    assert deleted == {HOME: [3.0], OTHER: [1.0]}
    for document in documents:
        [definition] = document["_aws"]["CloudWatchMetrics"]
        assert definition["Namespace"] == "EcrRetention"
        assert definition["Dimensions"] == [["service", "Region"]]


def test_a_dry_run_publishes_no_deletion_per_region(capsys: pytest.CaptureFixture[str]) -> None:
    report = two_regions().model_copy(update={"dry_run": True})

    record_region_metrics(report)

    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {d["ImagesDeleted"][0] for d in documents if "ImagesDeleted" in d} == {0.0}


def test_a_single_region_run_publishes_no_regional_metric(capsys: pytest.CaptureFixture[str]) -> None:
    record_region_metrics(report_of(repo("team/app", HOME, deleted=1)))

    assert capsys.readouterr().out == ""


def test_the_page_of_two_regions_shows_each_repositorys_region_totals_and_a_region_filter() -> None:
    report = two_regions()

    html = render_page(report, StoragePrice.for_region(HOME))

    assert '<select id="filter-region">' in html
    assert f'<option value="{OTHER}">{OTHER}</option>' in html
    assert f'<tr data-region="{HOME}"><th scope="row"><bdi>{HOME}</bdi></th>' in html
    assert f'data-repository="team/app" data-region="{OTHER}"' in html
    assert f'<tr data-repository="tools" data-region="{HOME}"' in html  # predates the field: the run's Region


def test_the_page_of_one_region_has_no_region_filter_nor_column() -> None:
    html = render_page(report_of(repo("team/app", HOME, deleted=1)), StoragePrice.for_region(HOME))

    assert 'id="filter-region"' not in html
    assert 'id="region-totals"' not in html
    assert '<th scope="col">Region</th>' not in html


def warned(name: str, region: str | None, *warnings: str, **changes: object) -> RepositoryReport:
    return repo(name, region, deleted=1).model_copy(update={"warnings": warnings, **changes})


def test_the_warnings_of_a_run_over_two_regions_name_their_regions_home_first() -> None:
    # A warning given in both Regions is one line naming both; a run-wide one (the facts') stays as it is.
    report = report_of(
        warned("team/app", OTHER, "index sha256:1 unreadable", "shared"),
        warned("team/app", HOME, "shared"),
        warned("tools", None, "cluster prod's manifest is old"),
    )

    assert report.warnings == (
        f"{HOME}, {OTHER}: shared",
        f"{OTHER}: index sha256:1 unreadable",
        f"{HOME}: cluster prod's manifest is old",
    )
    _, body = render_summary(report)
    start = body.splitlines().index("Warnings (3):")
    assert body.splitlines()[start + 1] == f"  - {HOME}, {OTHER}: shared"


def test_the_warnings_of_a_single_region_run_keep_their_words() -> None:
    report = report_of(warned("team/app", HOME, "shared"), warned("tools", None, "shared", "old"))

    assert report.warnings == ("shared", "old")


def test_the_summary_names_a_replicating_repository_with_its_region() -> None:
    replica = ReplicaRegistry(registry_id="123456789012", region="ap-southeast-2", expected_clusters=("syd",))
    report = report_of(warned("team/app", OTHER, deletion_replicates_to=(replica,)), warned("team/app", HOME))

    _, body = render_summary(report)

    assert f"  {OTHER}:team/app: ap-southeast-2 (123456789012) (expected clusters there: syd)" in body.splitlines()


def test_the_page_header_of_two_regions_names_both_and_of_one_its_own() -> None:
    two = parse(render_page(two_regions(), StoragePrice.for_region(HOME)))
    one = render_page(report_of(repo("team/app", HOME, deleted=1)), StoragePrice.for_region(HOME))

    [registry] = [dd for dd in two.find_all("dd") if "123456789012" in dd.text()]
    assert registry.text() == f"123456789012 in {HOME} and {OTHER}"
    assert f"<dd><bdi>123456789012</bdi> in <bdi>{HOME}</bdi></dd>" in one


def test_the_bytes_chart_of_two_regions_shows_a_bar_for_each_regions_app_labelled_with_its_region() -> None:
    report = two_regions()

    chart = page_view_of(report, StoragePrice.for_region(HOME)).bytes_chart

    assert [(bar.label, bar.value) for bar in chart.bars] == [
        (f"{HOME}:team/app", 2000),
        (f"{HOME}:tools", 1000),
        (f"{OTHER}:team/app", 1000),
    ]
    ages = page_view_of(report, StoragePrice.for_region(HOME)).age_charts
    assert [(age.repository, age.label) for age in ages] == [
        ("team/app", f"{HOME}:team/app"),
        ("team/app", f"{OTHER}:team/app"),
        ("tools", f"{HOME}:tools"),
    ]


def test_the_bytes_chart_of_one_region_labels_repositories_by_name() -> None:
    chart = page_view_of(report_of(repo("team/app", HOME, deleted=2)), StoragePrice.for_region(HOME)).bytes_chart

    assert [bar.label for bar in chart.bars] == ["team/app"]


def test_the_page_checks_name_each_repository_with_its_region() -> None:
    stuck = repo("team/app", OTHER, deleted=0).model_copy(update={"outcome": "failed", "error": "denied"})
    replica = ReplicaRegistry(registry_id="123456789012", region=OTHER, expected_clusters=("us-prod",))
    report = report_of(stuck, warned("team/app", HOME, deletion_replicates_to=(replica,)))

    checks = {check.id: check for check in page_view_of(report, StoragePrice.for_region(HOME)).checks}

    def evidence(check: str) -> list[str]:
        return ["".join(part.text for part in each) for each in checks[check].evidence]

    assert evidence("failures") == [f"{OTHER}:team/app: failed (denied)"]
    assert evidence("replication") == [
        f"{HOME}:team/app deletions reach {OTHER} (123456789012) (expected clusters there: us-prod)"
    ]


def test_a_push_run_in_the_other_region_alone_names_that_region() -> None:
    # A push in us-east-1 starts a run of that Region's pushed repositories only: its report is the home Region's.
    report = report_of(repo("team/app", OTHER, deleted=1))

    html = render_page(report, StoragePrice.for_region(HOME))
    _, body = render_summary(report)

    assert f"<dd><bdi>123456789012</bdi> in <bdi>{OTHER}</bdi></dd>" in html
    assert f"  {OTHER}:team/app: ok, 2 images, kept 1, deleted 1, 1000 B" in body.splitlines()
    assert [bar.label for bar in page_view_of(report, StoragePrice.for_region(HOME)).bytes_chart.bars] == [
        f"{OTHER}:team/app"
    ]


def test_the_page_counts_a_restore_in_each_region_of_a_repository_of_one_name() -> None:
    # The same in-use image (a replica: the same digest) found archived and restored in app of both Regions.
    archived = entry("shared", Reason(kind="in-use-archived", detail="prod: Deployment/app"))

    def restored(region: str) -> RepositoryReport:
        return repo("team/app", region, deleted=0).model_copy(
            update={"in_use_archived": (archived,), "restored": (archived,)}
        )

    report = report_of(restored(HOME), restored(OTHER))

    [check] = [c for c in page_view_of(report, StoragePrice.for_region(HOME)).checks if c.id == "in-use-archived"]
    assert "".join(part.text for part in check.summary) == "2 in-use images found archived, 2 restores"
    assert ["".join(part.text for part in each).split(" ")[0] for each in check.evidence] == [
        f"{HOME}:team/app",
        f"{OTHER}:team/app",
    ]
