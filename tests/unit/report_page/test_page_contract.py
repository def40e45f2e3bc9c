"""The page's DOM contract (the browser tests rely on it): every figure equals the JSON report's, every image is
one row, the page fetches nothing and runs only its own style and script."""

from __future__ import annotations

import base64
import hashlib
import re
from collections import Counter

from ecr_retention.domain.reporting.cost import run_cost
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.report_page import render_page
from support.reports import page_totals
from tests.unit.report_page.dom import Element, document_order, parse
from tests.unit.report_page.reports import PRICE, STARTED, entry, mixed_run, repo, run

ACTIONS = {
    "kept_images": "keep",
    "deleted": "delete",
    "archived": "archive",
    "cancelled": "cancelled",
    "failed": "failed",
}


def parsed_page(report: RunReport) -> Element:
    return parse(render_page(report, PRICE))


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_outcome_names_the_outcome_and_the_mode() -> None:
    outcome = parsed_page(mixed_run(dry_run=True)).by_id("outcome")

    assert outcome.attrs["data-outcome"] == "partial"
    assert outcome.attrs["data-dry-run"] == "true"
    assert "Dry run" in outcome.text()


def test_header_names_trigger_run_registry_region_and_times() -> None:
    text = parsed_page(mixed_run()).find("header").text()

    for expected in ("schedule", "20261130T030000Z-schedule-1a2b3c4d", "123456789012", "eu-west-1"):
        assert expected in text
    assert "2026-11-30 03:00:00 UTC" in text
    assert "2026-11-30 03:04:00 UTC" in text


def test_totals_equal_the_json_report() -> None:
    report = mixed_run()
    totals = parsed_page(report).by_id("totals")

    shown = {cell.attrs["data-total"]: int(cell.attrs["data-value"]) for cell in totals.find_all(data_total=None)}

    assert shown == page_totals(report.to_json_dict())


def test_repository_rows_equal_the_json_report() -> None:
    report = mixed_run()
    table = parsed_page(report).by_id("repositories")

    for data in report.to_json_dict()["repositories"]:
        row = table.find("tr", data_repository=data["repositoryName"])
        values = {
            cell.attrs["data-field"]: int(cell.attrs["data-value"]) for cell in row.find_all("td", data_field=None)
        }
        assert values["images"] == data["images"]
        assert values["kept"] == data["kept"]
        assert values["deleted"] == len(data["deleted"])
        assert values["archived"] == len(data["archived"])
        assert values["failed"] == len(data["failed"])
        assert values["bytesReclaimed"] == data["bytesReclaimed"]


def test_cost_figures_equal_run_cost() -> None:
    report = mixed_run()
    cost = run_cost(report, PRICE)
    section = parsed_page(report).by_id("cost")

    shown = {cell.attrs["data-cost"]: float(cell.attrs["data-value"]) for cell in section.find_all(data_cost=None)}

    assert shown == {
        "deletedGbMonth": cost.deleted_gb_month,
        "deletedMonthlyUsd": cost.deleted_monthly_usd,
        "archivedGb": cost.archived_gb,
        "archiveMinimumUsd": cost.archive_minimum_usd,
        "restoreUsd": cost.restore_usd,
    }
    text = section.text()
    assert "an upper bound: layers shared between images are billed once" in text
    assert PRICE.source in text
    assert "150 TB" in text
    assert "$0.03/GB" in text
    assert "90 days" in text


def test_a_dry_run_says_would_reclaim() -> None:
    assert "would reclaim" in parsed_page(mixed_run(dry_run=True)).by_id("cost").text()
    assert "would reclaim" not in parsed_page(mixed_run()).by_id("cost").text()


def test_every_image_is_exactly_one_row_with_its_data() -> None:
    report = mixed_run()
    rows = parsed_page(report).by_id("images").find_all("tr", class_="image")

    expected = Counter(
        (r.repository_name, e.image_digest, action)
        for r in report.repositories
        for field, action in ACTIONS.items()
        for e in getattr(r, field)
    )
    shown = Counter((row.attrs["data-repository"], row.attrs["data-digest"], row.attrs["data-action"]) for row in rows)

    assert shown == expected
    assert len(rows) == sum(expected.values())


def test_image_rows_carry_age_size_and_every_reason() -> None:
    report = mixed_run()
    rows = parsed_page(report).by_id("images").find_all("tr", class_="image")
    app = report.repositories[0]
    child = app.deleted[1]

    row = next(row for row in rows if row.attrs["data-digest"] == child.image_digest)

    assert app.evaluated_at is not None
    assert int(row.attrs["data-age-seconds"]) == int((app.evaluated_at - child.image_pushed_at).total_seconds())
    assert row.attrs["data-size"] == ""  # ECR gave no size
    cells = row.find_all("td")
    assert cells[1].text() == child.image_digest[:19]
    assert cells[1].attrs["title"] == child.image_digest
    for reason in child.reasons:
        assert reason.kind in cells[6].text()
        assert reason.detail in cells[6].text()
    assert "policies[0].rules[1]" in cells[6].text()


def test_failed_rows_show_the_error_code() -> None:
    rows = parsed_page(mixed_run()).by_id("images").find_all("tr", data_action="failed")

    assert len(rows) == 1
    assert "ImageNotFoundException" in rows[0].text()


def test_image_controls_follow_the_contract() -> None:
    images = parsed_page(mixed_run()).by_id("images")

    assert images.find("input", id="filter-text").attrs["type"] == "search"
    options = [option.attrs["value"] for option in images.find("select", id="filter-action").find_all("option")]
    assert options == ["all", "keep", "delete", "archive", "cancelled", "failed", "restore"]
    keys = [button.attrs["data-sort-key"] for button in images.find_all("button", class_="sort")]
    assert keys == ["repository", "digest", "tags", "age", "size", "action"]
    for button in images.find_all("button", class_="sort"):
        assert button.parent is not None
        assert button.parent.tag == "th"
        assert "aria-sort" in button.parent.attrs
    count = images.find(id="row-count")
    assert count.attrs["data-shown"] == count.attrs["data-total"] == "14"
    assert images.find("button", id="show-more").attrs.get("hidden") is not None


def test_without_script_every_row_is_visible() -> None:
    rows = parsed_page(mixed_run()).by_id("images").find_all("tr", class_="image")

    assert not [row for row in rows if "hidden" in row.attrs]


def test_the_csp_allows_only_the_page_own_style_and_script() -> None:
    root = parsed_page(mixed_run())
    meta = root.find("meta", http_equiv="Content-Security-Policy")
    (style,) = root.find_all("style")
    (script,) = root.find_all("script")

    policy = dict(part.strip().split(" ", 1) for part in meta.attrs["content"].split(";"))

    assert policy["default-src"] == "'none'"
    assert policy["style-src"] == sha256(style.text())
    assert policy["script-src"] == sha256(script.text())
    assert "unsafe-inline" not in meta.attrs["content"]
    for sources in policy.values():  # nothing from anywhere: no host, no scheme, no data: URL
        assert all(source == "'none'" or source.startswith("'sha256-") for source in sources.split()), sources


def test_no_inline_style_no_handler_and_no_url() -> None:
    html = render_page(mixed_run(), PRICE)
    root = parse(html)

    for element in root.iter():
        assert "style" not in element.attrs, element.tag
        assert not [name for name in element.attrs if name.startswith("on")], element.tag
        assert not {"href", "src", "action", "xmlns", "srcset"} & element.attrs.keys(), element.tag
    assert "http" not in html.replace('http-equiv="Content-Security-Policy"', "")
    assert "url(" not in html
    assert "@import" not in html


def test_a_url_in_the_data_stays_text() -> None:
    report = run(repo("app", deleted=[entry("d1", "https://evil.example/x")]))
    html = render_page(report, PRICE)

    rest = html.replace('http-equiv="Content-Security-Policy"', "")
    assert [m.start() for m in re.finditer("http", rest)] == [rest.index("https://evil.example/x")]
    cell = parse(html).find("tr", class_="image").find_all("td")[2]
    assert cell.text() == "https://evil.example/x"


def test_blocked_reasons_come_first_in_red() -> None:
    report = run(repo("app", outcome="blocked", blocked=("cluster prod: no in-use manifest",)))
    root = parsed_page(report)

    blocked = root.by_id("blocked")
    assert [li.text() for li in blocked.find_all("li")] == ["cluster prod: no in-use manifest"]
    assert "blocked" in blocked.attrs["class"].split()
    first_blocked, first_checks = document_order(
        root, lambda e: e.attrs.get("id") == "blocked", lambda e: e.attrs.get("id") == "checks"
    )
    assert first_blocked < first_checks


def test_no_blocked_section_when_not_blocked() -> None:
    assert not parsed_page(mixed_run()).find_all(id="blocked")


def test_bytes_chart_has_a_title_and_a_labelled_bar_per_repository() -> None:
    report = run(*(repo(f"r{i:02}", deleted=[entry(f"d{i}", size=(i + 1) * 1024)]) for i in range(25)))
    chart = parsed_page(report).find("svg", id="bytes-chart")

    assert chart.find_all("title")
    labels = [g.find_all("text")[0].text() for g in chart.find_all("g")]
    assert len(labels) == 21
    assert labels[0] == "r24"
    assert labels[-1] == "others (5 repositories)"


def test_an_age_chart_per_repository_counts_removed_and_kept() -> None:
    report = mixed_run()
    charts = parsed_page(report).find_all("svg", class_="age-chart")

    assert [chart.attrs["data-repository"] for chart in charts] == ["app", "team-a/web"]
    title = charts[0].find("title").text()
    assert "4 removed" in title  # three deleted, one archived
    assert "8 kept" in title  # six kept, one cancelled, one failed
    labels = [text.text() for text in charts[0].find_all("text")]
    for bucket in ("<1d", "1-7d", "7-30d", "30-90d", "90-365d", ">1y"):
        assert bucket in labels


def test_the_page_is_well_formed() -> None:
    parse(render_page(mixed_run(), PRICE))
    parse(render_page(run(), PRICE))


def test_an_empty_run_renders() -> None:
    root = parsed_page(run())

    assert root.by_id("outcome").attrs["data-outcome"] == "ok"
    assert not root.by_id("images").find_all("tr", class_="image")
    assert "Nothing was reclaimed" in root.find("svg", id="bytes-chart").text()


def test_the_page_starts_at_the_run_start() -> None:
    assert STARTED.isoformat() in render_page(mixed_run(), PRICE)
