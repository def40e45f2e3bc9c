"""The view computes the page's numbers: age buckets, chart geometry, cost wording."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ecr_retention.report_page import render_page
from ecr_retention.report_page.charts import AGE_BUCKETS, DAY, bucket_of, bytes_chart
from ecr_retention.report_page.view import usd
from tests.unit.report_page.dom import parse
from tests.unit.report_page.reports import PRICE, entry, mixed_run, repo


@pytest.mark.parametrize(
    ("age", "bucket"),
    [(0, "<1d"), (DAY - 1, "<1d"), (DAY, "1-7d"), (7 * DAY, "7-30d"), (90 * DAY, "90-365d"), (365 * DAY, ">1y")],
)
def test_an_age_falls_in_the_bucket_that_starts_at_it(age: int, bucket: str) -> None:
    assert AGE_BUCKETS[bucket_of(timedelta(seconds=age))][0] == bucket


def test_bars_scale_to_the_largest_and_keep_their_exact_bytes() -> None:
    chart = bytes_chart([repo("a", deleted=[entry("1", size=400)]), repo("b", deleted=[entry("2", size=100)])], False)

    assert [(bar.label, bar.value, bar.width) for bar in chart.bars] == [("a", 400, 380), ("b", 100, 95)]
    assert chart.height == 12 + 2 * 20


def test_image_rows_hold_every_reason_and_the_age_in_seconds() -> None:
    rows = parse(render_page(mixed_run(), PRICE)).by_id("images").find_all("tr", data_action="failed")

    [failed] = rows
    assert [b.text() for b in failed.find_all("td")[6].find_all("b")] == ["delete-failed", "delete-rule"]
    assert "ImageNotFoundException: ECR refused" in failed.find_all("td")[6].find_all("p")[0].text()
    assert (
        int(failed.attrs["data-age-seconds"]) == 100 * DAY + 60
    )  # pushed 100 days before the start, evaluated a minute after it


@pytest.mark.parametrize(("value", "text"), [(0, "$0.00"), (0.001, "< $0.01"), (1234.5, "$1,234.50")])
def test_dollars_read_plainly(value: float, text: str) -> None:
    assert usd(value) == text
