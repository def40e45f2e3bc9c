"""The report page as a reader sees it, in headless Chromium, against the DOM contract of the page (report_page):
its numbers are the JSON report's, its filters and sorting work, a blocked run says why first, it fetches nothing,
it shows every row without script, and a hostile tag stays text."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ecr_retention.domain.in_use.references import MissingReference
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.reporting.cost import StoragePrice, run_cost
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.domain.reporting.run_report import RunReport, region_totals_of
from ecr_retention.report_page import render_page
from ecr_retention_dev.browser import screenshot_page
from support.chromium import skip_module_without_chromium
from support.reports import blocked_report, dry_run_report, page_totals, real_run_report

skip_module_without_chromium()

if TYPE_CHECKING:
    from playwright.sync_api import Page

Open = Callable[..., Any]  # conftest.open_report and open_html: they return a conftest.OpenedPage
ACTIONS = ("keep", "delete", "archive", "cancelled", "failed", "restore")
ROWS = "#images tbody tr.image"
VISIBLE_ROWS = f"{ROWS}:visible"
PAGE_SIZE = 500  # rows beyond the first 500 matches wait behind #show-more
HOSTILE_TAG = '"><script>alert(1)</script>'


def entries(repo: RepositoryReport) -> Iterator[tuple[str, ImageEntry]]:
    """Every image of a repository report with its action on the page."""
    lists = (repo.kept_images, repo.deleted, repo.archived, repo.cancelled, repo.failed, repo.restored)
    for action, listed in zip(ACTIONS, lists, strict=True):
        for entry in listed:
            yield action, entry


def images(report: RunReport) -> list[tuple[str, str, ImageEntry]]:
    """(repository, action, entry) for every image of the report."""
    return [(repo.repository_name, action, entry) for repo in report.repositories for action, entry in entries(repo)]


def age_seconds(report: RunReport, repository: str, entry: ImageEntry) -> int:
    [repo] = [r for r in report.repositories if r.repository_name == repository]
    at = repo.evaluated_at or report.started_at
    return int((at - entry.image_pushed_at).total_seconds())


def shown(page: Page) -> list[dict[str, Any]]:
    """The visible image rows' data attributes, in page order."""
    rows: list[dict[str, Any]] = page.locator(VISIBLE_ROWS).evaluate_all("rows => rows.map(row => ({...row.dataset}))")
    return rows


def value(page: Page, selector: str) -> str:
    locator = page.locator(selector)
    assert locator.count() == 1, f"{selector}: {locator.count()} elements"
    attribute = locator.get_attribute("data-value")
    assert attribute is not None, f"{selector} has no data-value"
    return attribute


def wait_for_shown(page: Page, matches: int) -> None:
    """Until #row-count says the filters' `matches` rows are shown (the first 500 of them)."""
    shown = min(matches, PAGE_SIZE)
    page.wait_for_function("n => document.querySelector('#row-count')?.dataset.shown === String(n)", arg=shown)


@pytest.fixture(scope="module")
def real_run() -> RunReport:
    report = real_run_report()
    assert not report.dry_run
    assert {action for _, action, _ in images(report)} >= {"keep", "delete", "archive", "failed", "restore"}
    return report


# The numbers ------------------------------------------------------------------------------------------------------


def test_real_run_page_shows_the_json_reports_numbers(open_report: Open, real_run: RunReport) -> None:
    document = real_run.to_json_dict()

    page = open_report(real_run).page

    outcome = page.locator("#outcome")
    assert outcome.get_attribute("data-outcome") == document["outcome"]
    assert outcome.get_attribute("data-dry-run") == "false"
    for name, number in page_totals(document).items():
        assert int(value(page, f'#totals [data-total="{name}"]')) == number, name
    for repo in document["repositories"]:
        row = f'#repositories tbody tr[data-repository="{repo["repositoryName"]}"]'
        expected = {
            "images": repo["images"],
            "kept": repo["kept"],
            "deleted": len(repo["deleted"]),
            "archived": len(repo["archived"]),
            "failed": len(repo["failed"]),
            "bytesReclaimed": repo["bytesReclaimed"],
        }
        for field, number in expected.items():
            assert int(value(page, f'{row} td[data-field="{field}"]')) == number, (repo["repositoryName"], field)
    assert page.locator("#repositories tbody tr[data-repository]").count() == len(document["repositories"])


def test_every_image_of_the_report_is_one_row_with_its_action_age_and_size(
    open_report: Open, real_run: RunReport
) -> None:
    page = open_report(real_run).page

    rows = {(row["repository"], row["digest"]): row for row in shown(page)}
    expected = images(real_run)
    assert len(rows) == len(expected) == page.locator(ROWS).count()
    for repository, action, entry in expected:
        row = rows[repository, entry.image_digest]
        assert row["action"] == action
        assert int(row["ageSeconds"]) == age_seconds(real_run, repository, entry)
        assert row["size"] == ("" if entry.image_size_in_bytes is None else str(entry.image_size_in_bytes))
    count = page.locator("#row-count")
    assert count.get_attribute("data-total") == count.get_attribute("data-shown") == str(len(expected))


def test_cost_figures_are_the_run_cost_of_the_report(open_report: Open, real_run: RunReport) -> None:
    cost = run_cost(real_run, StoragePrice.for_region(real_run.region))

    page = open_report(real_run).page

    expected = {
        "deletedGbMonth": cost.deleted_gb_month,
        "deletedMonthlyUsd": cost.deleted_monthly_usd,
        "archivedGb": cost.archived_gb,
        "archiveMinimumUsd": cost.archive_minimum_usd,
        "restoreUsd": cost.restore_usd,
    }
    for name, number in expected.items():
        assert float(value(page, f'#cost [data-cost="{name}"]')) == pytest.approx(number, rel=1e-3, abs=0.005), name


def test_checks_each_carry_a_status_and_a_word_not_only_a_colour(open_report: Open, real_run: RunReport) -> None:
    page = open_report(real_run).page

    checks = page.locator("#checks li.check")
    assert checks.count() > 0
    for check in checks.all():
        assert check.get_attribute("data-check")
        status = check.get_attribute("data-status")
        assert status in ("pass", "warn", "fail")
        assert check.inner_text().strip(), check.get_attribute("data-check")
    # one deletion failed (KmsError): the failures check does not pass
    assert page.locator('#checks li.check[data-check="failures"]').get_attribute("data-status") != "pass"


def test_charts_are_drawn(open_report: Open, real_run: RunReport) -> None:
    page = open_report(real_run).page

    assert page.locator("svg#bytes-chart").count() == 1
    charted = {chart.get_attribute("data-repository") for chart in page.locator("svg.age-chart").all()}
    assert charted <= {repo.repository_name for repo in real_run.repositories}
    assert charted


# Filtering and sorting --------------------------------------------------------------------------------------------


def test_filtering_by_a_tag_shows_exactly_the_images_carrying_it(open_report: Open) -> None:
    report = dry_run_report(200, ("app", "hotfix-77"), ("backend", "hotfix-77"), ("frontend", "hotfix-78"))
    carrying = {
        (repository, entry.image_digest)
        for repository, _, entry in images(report)
        if any("hotfix-77" in tag for tag in entry.image_tags)
    }
    assert len(carrying) == 2
    page = open_report(report).page

    page.fill("#filter-text", "HOTFIX-77")  # case-insensitive
    wait_for_shown(page, len(carrying))

    assert {(row["repository"], row["digest"]) for row in shown(page)} == carrying
    page.fill("#filter-text", "")
    wait_for_shown(page, len(images(report)))
    assert len(shown(page)) == len(images(report))


@pytest.mark.parametrize("action", ACTIONS)
def test_the_action_filter_shows_exactly_the_images_of_that_action(
    open_report: Open, real_run: RunReport, action: str
) -> None:
    expected = {(repository, entry.image_digest) for repository, act, entry in images(real_run) if act == action}
    page = open_report(real_run).page

    page.select_option("#filter-action", action)
    wait_for_shown(page, len(expected))

    assert {(row["repository"], row["digest"]) for row in shown(page)} == expected
    assert {row["action"] for row in shown(page)} <= {action}


def test_text_and_action_filters_combine(open_report: Open, real_run: RunReport) -> None:
    expected = {
        entry.image_digest
        for repository, act, entry in images(real_run)
        if repository == "team-a/api" and act == "delete"
    }
    assert expected
    page = open_report(real_run).page

    page.fill("#filter-text", "team-a/api")
    page.select_option("#filter-action", "delete")
    wait_for_shown(page, len(expected))

    assert {row["digest"] for row in shown(page)} == expected
    page.select_option("#filter-action", "all")
    wait_for_shown(page, sum(1 for repository, _, _ in images(real_run) if repository == "team-a/api"))


def test_sorting_by_age_orders_the_rows_ascending_then_descending(open_report: Open) -> None:
    report = dry_run_report(300)
    ages = sorted(age_seconds(report, repository, entry) for repository, _, entry in images(report))
    page = open_report(report).page
    button = page.locator('button.sort[data-sort-key="age"]')
    header = page.locator("th", has=button)

    button.click()
    assert [int(row["ageSeconds"]) for row in shown(page)] == ages
    assert header.get_attribute("aria-sort") == "ascending"

    button.click()
    assert [int(row["ageSeconds"]) for row in shown(page)] == ages[::-1]
    assert header.get_attribute("aria-sort") == "descending"


@pytest.mark.parametrize("key", ["repository", "digest", "tags", "size", "action"])
def test_every_sort_button_toggles_its_header(open_report: Open, key: str) -> None:
    page = open_report(dry_run_report(50)).page
    button = page.locator(f'button.sort[data-sort-key="{key}"]')

    button.click()
    first = page.locator("th", has=button).get_attribute("aria-sort")
    button.click()
    second = page.locator("th", has=button).get_attribute("aria-sort")

    assert {first, second} == {"ascending", "descending"}


def test_rows_beyond_the_first_500_wait_behind_show_more(open_report: Open) -> None:
    report = dry_run_report(700)
    page = open_report(report).page

    assert len(shown(page)) == PAGE_SIZE
    for _ in range(10):
        if not page.locator("#show-more").is_visible():
            break
        page.click("#show-more")

    assert len(shown(page)) == len(images(report))


# A blocked run ----------------------------------------------------------------------------------------------------


def test_blocked_run_shows_its_reasons_first_in_red_without_scrolling(open_report: Open) -> None:
    report = blocked_report()
    assert report.blocked

    page = open_report(report).page

    assert page.locator("#outcome").get_attribute("data-outcome") == "blocked"
    assert page.locator("#outcome").get_attribute("data-dry-run") == "true"  # a plan is the report of its dry run
    reasons = page.locator("#blocked li")
    assert [text.strip() for text in reasons.all_inner_texts()] == list(report.blocked)
    blocked, checks = page.locator("#blocked").bounding_box(), page.locator("#checks").bounding_box()
    assert blocked is not None
    assert checks is not None
    assert blocked["y"] < checks["y"]
    assert blocked["y"] + min(blocked["height"], 40) < page.viewport_size["height"]  # type: ignore[index]
    assert page.locator("#blocked").is_visible()
    red, green, blue = map(
        int, re.findall(r"\d+", page.locator("#blocked").evaluate("e => getComputedStyle(e).color"))[:3]
    )
    assert red > 2 * max(green, blue), (red, green, blue)
    assert page.locator('#checks li.check[data-check="blocked"]').get_attribute("data-status") == "fail"
    assert {row["action"] for row in shown(page)} == {"keep"}


def test_a_run_that_is_not_blocked_has_no_blocked_section(open_report: Open, real_run: RunReport) -> None:
    page = open_report(real_run).page

    assert page.locator("#blocked").count() == 0


# Nothing from the network, and what the page holds stays text -----------------------------------------------------


VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
"""


def test_page_makes_no_request_and_its_own_script_runs_under_its_policy(open_html: Open, real_run: RunReport) -> None:
    html = render_page(real_run, StoragePrice.for_region(real_run.region))
    assert not re.search(r"\b(https?|wss?|ftp):", html, re.IGNORECASE)

    opened = open_html(html)
    page = opened.page
    page.fill("#filter-text", "no image has this text")
    wait_for_shown(page, 0)  # the inline script ran: the policy allowed it

    policy = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert policy is not None
    assert "default-src 'none'" in policy
    assert "unsafe-inline" not in policy
    assert opened.requests == []
    assert opened.errors == []
    assert [line for line in opened.console if "Content Security Policy" in line or "Refused" in line] == []


def test_page_policy_refuses_a_fetch(open_html: Open, real_run: RunReport) -> None:
    opened = open_html(render_page(real_run, StoragePrice.for_region(real_run.region)))
    page = opened.page
    page.evaluate(VIOLATIONS)

    outcome = page.evaluate("fetch('http://127.0.0.1:9/report.json').then(() => 'fetched', () => 'refused')")

    assert outcome == "refused"
    assert any(v.startswith("connect-src") for v in page.evaluate("window.__violations")), opened.console


def test_without_script_every_row_is_visible(open_report: Open) -> None:
    report = dry_run_report(700)

    opened = open_report(report, scripts=False)

    assert len(shown(opened.page)) == len(images(report)) > PAGE_SIZE
    assert opened.requests == []


def test_a_hostile_tag_is_shown_as_text(open_report: Open) -> None:
    report = dry_run_report(20, ("app", HOSTILE_TAG))
    [(repository, _, entry)] = [image for image in images(report) if HOSTILE_TAG in image[2].image_tags]

    opened = open_report(report)
    page = opened.page
    page.fill("#filter-text", HOSTILE_TAG)
    wait_for_shown(page, 1)

    row = page.locator(f'{ROWS}[data-digest="{entry.image_digest}"]')
    assert row.get_attribute("data-repository") == repository
    assert HOSTILE_TAG in row.locator("td").all_text_contents()
    assert page.locator("script").count() == 1  # the page's own
    assert opened.dialogs == []
    assert opened.errors == []


def test_an_in_use_image_missing_is_its_own_check_and_a_hostile_workload_stays_text(open_report: Open) -> None:
    # Given a dry run whose report names an in-use tag that is gone, run by a workload with a hostile name
    workload = Workload(cluster="prod", namespace="prod", workload=f"Deployment/{HOSTILE_TAG}", source="pod")
    found = MissingReference(
        repository_name="app", image="app:dev", image_tag="dev", missing="tag", in_use_by=(workload,)
    )
    report = dry_run_report(5).model_copy(update={"in_use_missing": (found,)})

    opened = open_report(report)
    check = opened.page.locator('#checks li.check[data-check="in-use-missing"]')

    # Then the check warns, counts it, and shows the finding's words as text
    assert check.get_attribute("data-status") == "warn"
    assert "In-use images missing: 1" in check.inner_text()
    assert found.detail in check.inner_text()
    assert opened.page.locator("script").count() == 1  # the page's own
    assert opened.dialogs == []
    assert opened.errors == []


# Size ---------------------------------------------------------------------------------------------------------------


ONLY_REPOSITORY_SHOWN = """name => [...document.querySelectorAll('#images tbody tr.image')]
    .filter(row => row.offsetParent !== null).every(row => row.dataset.repository === name)"""


def test_30000_images_open_filter_and_sort(open_report: Open, capsys: pytest.CaptureFixture[str]) -> None:
    report = dry_run_report(30_000)
    worker = sorted(
        age_seconds(report, repository, entry)
        for repository, _, entry in images(report)
        if repository == "team-a/worker"
    )
    started = time.perf_counter()
    page = open_report(report, timeout=120_000).page
    opened = time.perf_counter()
    assert page.locator(ROWS).count() == 30_000

    page.fill("#filter-text", "team-a/worker")
    wait_for_shown(page, len(worker))
    page.wait_for_function(ONLY_REPOSITORY_SHOWN, arg="team-a/worker")
    filtered = time.perf_counter()
    page.click('button.sort[data-sort-key="age"]')
    page.wait_for_function("() => document.querySelector('th[aria-sort=\"ascending\"]') !== null")
    sorted_at = time.perf_counter()

    rows = shown(page)
    assert len(rows) == PAGE_SIZE
    assert [int(row["ageSeconds"]) for row in rows] == worker[:PAGE_SIZE]
    with capsys.disabled():
        print(
            f"\n30,000 images: open {opened - started:.2f} s, filter {filtered - opened:.2f} s, "
            f"sort {sorted_at - filtered:.2f} s"
        )


# Screenshot ---------------------------------------------------------------------------------------------------------


def test_a_screenshot_of_the_page_is_written(browser: Any, real_run: RunReport, tmp_path: Any) -> None:
    target = tmp_path / "report-page.png"

    screenshot_page(browser, render_page(real_run, StoragePrice.for_region(real_run.region)), target)

    header = target.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    assert width == 1280
    assert 0 < height <= 1400


def two_region_run(report: RunReport, other: str = "us-east-1") -> RunReport:
    """The real run with every second repository in another Region than the run's."""
    repositories = tuple(
        repo.model_copy(update={"region": other if index % 2 else report.region})
        for index, repo in enumerate(report.repositories)
    )
    return report.model_copy(
        update={"repositories": repositories, "regions": region_totals_of(repositories, report.region)}
    )


def test_the_region_filter_shows_exactly_the_images_of_that_region(open_report: Open, real_run: RunReport) -> None:
    report = two_region_run(real_run)
    regional = {repo.repository_name: repo.region for repo in report.repositories}
    expected = {
        (repository, entry.image_digest)
        for repository, _, entry in images(report)
        if regional[repository] == "us-east-1"
    }
    assert expected
    page = open_report(report).page

    assert page.locator("#region-totals tbody tr").count() == 2
    assert value(page, '#region-totals tr[data-region="us-east-1"] [data-total="deleted"]') == str(
        report.regions[1].totals.deleted
    )
    page.select_option("#filter-region", "us-east-1")
    wait_for_shown(page, len(expected))

    assert {(row["repository"], row["digest"]) for row in shown(page)} == expected
    assert {row["region"] for row in shown(page)} == {"us-east-1"}
    page.select_option("#filter-region", "all")
    wait_for_shown(page, len(images(report)))
