"""Every benchmark `make bench` runs, run once on tiny inputs: an interface change that breaks one (a renamed keyword,
a port grown a method its fake lacks) fails the suite, not the next `make bench`. Nothing here reads a figure: each
benchmark must end with exit code 0 and print what it measured, whatever the numbers are.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCHMARKS = ROOT / "benchmarks"

pytestmark = pytest.mark.slow

# Each benchmark of write_performance.SCRIPTS, with the arguments that make it small; and a line its output must have.
TINY_RUNS = {
    "plan_bench.py": (["--rounds", "1", "--small", "200", "--large", "400", "--many", "20", "5", "--spread", "10", "10"],
                      "load + plan"),
    "pipeline_bench.py": (["--rounds", "1", "--fraction", "0.01"], "API calls of a dry-run sweep"),
    "regions_bench.py": (["--fraction", "0.02"], "total"),
    "report_step.py": (["--images", "200", "--rounds", "1"], "report step"),
    "report_page.py": (["--images", "100", "--rounds", "1"], "render_page"),
    "lifecycle_bench.py": (["--rounds", "1", "--images", "200"], "doctor"),
    "export_bench.py": (["--pods", "50", "--rounds", "1"], "wall time"),
    "cost_bench.py": (["--repositories", "3", "--images", "2", "--pushes-a-day", "2"], "month"),
}  # fmt: skip


def run_benchmark(script: str, arguments: list[str]) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=environment,
        timeout=600,
    )


def test_every_benchmark_of_make_bench_has_a_tiny_run() -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from write_performance import SCRIPTS, WITHOUT_TREE_ARGUMENT
    finally:
        sys.path.remove(str(BENCHMARKS))
    assert {script for _, script in SCRIPTS} - WITHOUT_TREE_ARGUMENT == set(TINY_RUNS)


@pytest.mark.parametrize("script", sorted(TINY_RUNS))
def test_a_benchmark_runs_whole_on_tiny_inputs(script: str) -> None:
    arguments, expected = TINY_RUNS[script]

    done = run_benchmark(script, arguments)

    assert done.returncode == 0, done.stderr[-3000:]
    assert expected in done.stdout, done.stdout[-3000:]


def test_the_cold_start_benchmark_runs_whole_once() -> None:
    """asset_bench.py bundles the asset as synth does (the pinned wheels, from pip's cache or the index): once."""
    done = run_benchmark("asset_bench.py", ["--runs", "1", "--profiles", "0"])

    assert done.returncode == 0, done.stderr[-3000:]
    assert "FIGURE cold_import_median_s" in done.stdout or "cannot be compiled or imported here" in done.stdout
