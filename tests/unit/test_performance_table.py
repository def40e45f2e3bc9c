"""docs/performance.md's table of goals: built from the benchmarks' `FIGURE <id> <median> [<min> <max> <runs>]`
lines, each goal beside its figure and verdict, "not measured" where no benchmark printed it."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from support.benchmark_scripts import benchmark_script


@pytest.fixture
def write_performance() -> Iterator[ModuleType]:
    with benchmark_script("write_performance") as module:
        yield module


def test_figure_lines_are_read_and_left_out_of_the_details(write_performance: ModuleType) -> None:
    output = "some detail\nFIGURE load_plan_100k_s 0.9 0.8 1.2 3\nFIGURE cold_import_median_s 0.31\nmore"

    figures, shown = write_performance.figures_of(output)

    assert shown == "some detail\nmore"
    assert figures["load_plan_100k_s"].show(" s", 2) == "0.90 s (0.80-1.20, 3 runs)"
    assert figures["cold_import_median_s"].show(" s", 3) == "0.310 s"


def test_each_goal_is_met_missed_or_not_measured(write_performance: ModuleType) -> None:
    figures, _ = write_performance.figures_of(
        "FIGURE load_plan_100k_s 1.4 1.3 1.6 3\nFIGURE report_step_100k_peak_mib 300 290 310 3\n"
        "FIGURE api_calls_over_minimum 1.0\nFIGURE sweep_ratio_30k_without_page_sheet 1.1 1.0 1.2 3"
    )

    rows = {row.split(" | ")[0].lstrip("| "): row for row in write_performance.goals_table(figures)[2:]}

    assert rows["load + plan, 100,000 images in one repository"].endswith("| 1.40 s (1.30-1.60, 3 runs) | missed |")
    assert rows["report step, 100,000 images: peak RSS"].endswith("| met |")
    assert rows["API calls of a dry-run sweep / the minimum"].endswith("| = 1.00 | 1.00 | met |")
    assert rows["cold import of each handler from the asset, median"].endswith("| not measured | not measured |")
    assert len(rows) == len(write_performance.GOALS)
    [other] = write_performance.other_table(figures)[2:]
    assert other == "| dry-run sweep / bare listing, without page and sheet | 1.10x (1.00-1.20, 3 runs) |"


def test_more_calls_than_the_minimum_is_missed(write_performance: ModuleType) -> None:
    figures, _ = write_performance.figures_of("FIGURE api_calls_over_minimum 1.0185185185185186")

    [row] = [row for row in write_performance.goals_table(figures) if row.startswith("| API calls")]

    assert row.endswith("| missed |")
