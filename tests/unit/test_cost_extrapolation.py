"""benchmarks/cost_bench.py's extrapolation to 10,000 and 100,000 repositories: each unit a run's fixed part, a part
per repository and a part per batch, fitted through three counted sweeps (a smaller registry, and the larger one
counted in batches of two sizes). `make bench` counts the sweeps; the tiny run of `make test` counts one registry only,
so the fit itself is checked here, on units that follow a known model."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from types import ModuleType

import pytest

from support.benchmark_scripts import benchmark_script


@pytest.fixture
def cost_bench() -> Iterator[ModuleType]:
    with benchmark_script("cost_bench") as module:
        yield module


def units_of(cost_bench: ModuleType, repositories: int, batches: int) -> object:
    """Every unit n of them: 7 + 0.5 a repository + 3 a batch (n its position), child executions one a batch."""
    values = {
        field.name: 7 + 0.5 * position * repositories + 3 * position * batches
        for position, field in enumerate(fields(cost_bench.Units), start=1)
    }
    values["child_executions"] = batches
    return cost_bench.Units(**values)


def test_a_sweep_of_10000_repositories_in_50_batches_is_what_the_model_gives(cost_bench: ModuleType) -> None:
    counted = units_of(cost_bench, 1_000, 20)
    smaller = cost_bench.Counting(100, 2, units_of(cost_bench, 100, 2))
    rebatched = cost_bench.Counting(1_000, 5, units_of(cost_bench, 1_000, 5))

    extrapolated = counted.extrapolated_in_batches(smaller, rebatched, 10_000, 50)

    assert extrapolated.__dict__ == pytest.approx(units_of(cost_bench, 10_000, 50).__dict__)


def test_a_part_that_comes_out_negative_counts_as_none(cost_bench: ModuleType) -> None:
    counted = units_of(cost_bench, 1_000, 20)
    fewer_logs_in_more_batches = cost_bench.Units(**{**counted.__dict__, "logs_bytes": counted.logs_bytes - 60})
    smaller = cost_bench.Counting(100, 2, units_of(cost_bench, 100, 2))
    rebatched = cost_bench.Counting(1_000, 5, units_of(cost_bench, 1_000, 5))

    extrapolated = fewer_logs_in_more_batches.extrapolated_in_batches(smaller, rebatched, 10_000, 50)

    assert extrapolated.logs_bytes >= fewer_logs_in_more_batches.logs_bytes
