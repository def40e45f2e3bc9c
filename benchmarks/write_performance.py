"""`make bench`: run every benchmark in its own process and write docs/performance.md: a table of the goals of
issue 26 beside the figures measured, then each benchmark's whole output.

    python benchmarks/write_performance.py [--tree CHECKOUT] [--out FILE] [--only plan_bench.py ...]

`--tree` measures another checkout's code (its lambdas/, its infra/ for the Lambda asset) with this checkout's
benchmarks, so that two trees are compared by the same measurements. Figures are this machine's, printed as
measured; nothing here asserts anything about time.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from measuring import BENCHMARKS, ROOT, add_tree_argument, revision, tree_environment

SCRIPTS = [
    ("Engine: the plan command", "plan_bench.py"),
    ("API efficiency and the sweep", "pipeline_bench.py"),
    ("Several Regions: API calls per Region", "regions_bench.py"),
    ("Report step: time and peak memory", "report_step.py"),
    ("Lambda cold start", "asset_bench.py"),
    ("Report page: render, size and first paint", "report_page.py"),
    ("Lifecycle simulator and doctor", "lifecycle_bench.py"),
    ("Exporter", "export_bench.py"),
    ("What a run costs on AWS", "cost_bench.py"),
]
# asset_bench.py takes no --tree: it bundles the asset of the infra/ beside it (see shadow_checkout).
WITHOUT_TREE_ARGUMENT = {"asset_bench.py"}


@dataclass(frozen=True)
class Goal:
    figure: str
    goal: str
    target: float
    unit: str
    digits: int
    at_most: bool = True  # met when the median is at most the target (else: exactly it)

    def verdict(self, median: float) -> str:
        if self.at_most:
            return "met" if median <= self.target else "missed"
        return "met" if round(median, 6) == self.target else "missed"

    def shown_target(self) -> str:
        number = f"{self.target:,.{self.digits}f}{self.unit}"
        return f"<= {number}" if self.at_most else f"= {number}"


GOALS = [
    Goal("load_plan_100k_s", "load + plan, 100,000 images in one repository", 1.0, " s", 2),
    Goal("load_plan_ratio_100k_10k", "load + plan per image, 100k / 10k images", 1.1, "", 2),
    Goal("plan_10000x10_s", "plan, 10,000 repositories x 10 images", 3.0, " s", 2),
    Goal("sweep_ratio_30k", "dry-run sweep / bare DescribeImages listing, with page and sheet", 1.2, "x", 2),
    Goal("report_step_100k_s", "report step, 100,000 images: time", 1.5, " s", 2),
    Goal("report_step_100k_peak_mib", "report step, 100,000 images: peak RSS", 350, " MiB", 0),
    Goal("cold_import_median_s", "cold import of each handler from the asset, median", 0.35, " s", 3),
    Goal("cold_import_over_floor", "cold import of each handler / its floor", 1.5, "x", 2),
    Goal("api_calls_over_minimum", "API calls of a dry-run sweep / the minimum", 1.0, "", 2, at_most=False),
    Goal("plan_bytes_per_image_100k", "bytes per image at the plan's peak, 100k", 2500, " B", 0),
    # Issue 46 (docs/cost.md): what a run costs on AWS, over the Lambda compute of its evaluations.
    Goal(
        "next_sweep_10k_cost_over_floor",
        "daily sweep of 10,000 repositories (10% pushed to): cost / its evaluations' compute",
        1.5,
        "x",
        2,
    ),
    Goal(
        "sweep_10k_cost_over_floor",
        "sweep of 10,000 repositories that each change: cost / its evaluations' compute",
        1.5,
        "x",
        2,
    ),
    Goal("push_run_usd", "push run of one repository, us-east-1", 0.001, " USD", 6),
]
OTHER_FIGURES = {
    "sweep_ratio_30k_without_page_sheet": ("dry-run sweep / bare listing, without page and sheet", "x", 2),
    "cli_plan_100k_table_s": ("`ecr-retention plan`, 100k images, table: whole wall time", " s", 2),
    "cli_plan_100k_table_peak_mib": ("`ecr-retention plan`, 100k images, table: peak RSS", " MiB", 0),
    "cli_plan_100k_json_s": ("`ecr-retention plan`, 100k images, --format json: whole wall time", " s", 2),
    "cli_plan_100k_json_peak_mib": ("`ecr-retention plan`, 100k images, --format json: peak RSS", " MiB", 0),
    "report_step_30k_s": ("report step, 30,000 images: time", " s", 2),
    "report_step_30k_peak_mib": ("report step, 30,000 images: peak RSS", " MiB", 0),
    "cli_import_s": ("cold import of ecr_retention.cli (interpreter start included)", " s", 3),
    "sweep_10k_usd": ("sweep of 10,000 repositories that each change, us-east-1 (docs/cost.md)", " USD", 4),
    "next_sweep_10k_usd": ("daily sweep of 10,000 repositories (10% pushed to), us-east-1", " USD", 4),
    "next_sweep_10k_less_change_writes_over_floor": (
        "the same, less each changed repository's report, snapshot and holds listed again (docs/cost.md) / its floor",
        "x",
        2,
    ),
    "next_sweep_10k_less_guarantees_over_floor": (
        "the same, less those and each repository's kept snapshot read: the orchestration / its floor",
        "x",
        2,
    ),
    "sweep_10k_map_minutes": ("the Map's time for 10,000 repositories on AWS, estimated: sweep", " min", 1),
    "next_sweep_10k_map_minutes": ("the Map's time for 10,000 repositories on AWS, estimated: daily sweep", " min", 1),
}
DEFINITIONS = """How the figures are measured (the details below each benchmark's output):

- Every figure is the median of at least 3 fresh processes shaped like the real use, with the spread (min-max) of
  the runs beside it. Ratios are taken within each round (the two processes ran one after the other), then their
  median. The machine is shared: read the spread before the median.
- **load + plan**: a fresh process calls `ecr_retention.cli.main(["plan", ...])` as the console script does (the
  command's own handling of the collector included) on files written once; load_config, load_snapshot,
  load_manifests and plan_registry are wrapped from outside to time them. Load + plan runs from the call of
  load_config to the return of plan_registry: all the command does before it writes its output.
- **per-image ratio**: load + plan per image at 100,000 images over the same at 10,000.
- **bytes per image at the plan's peak**: in that same process (table output, 100,000 images),
  (peak RSS (VmHWM) - RSS after the CLI's imports) / images.
- **sweep**: `ecr-retention run --dry-run` in a fresh process against moto's server in another process, from the
  call of run_pipeline to its return; the bare listing is a fresh process paging DescribeImages over every
  repository. **API calls** are counted by the server (retries included).
- **report step**: a fresh process imports the report handler and invokes `lambda_handler` once over a bucket of
  repository reports, a file per object in memory (/dev/shm: no disk's writeback in the writes, as with S3); time of
  the invocation, peak RSS of the process.
- **cold import**: benchmarks/asset_bench.py (the handlers imported from the bundled asset by the runtime's Python).
  **Its floor**: what a minimal handler on this stack cannot avoid, imported in the same rounds by the same interpreter
  from the same asset (boto3, pydantic's BaseModel, PyYAML, Powertools' Logger, Metrics and Tracer); the ratio is
  each handler's per-round import over the floor imported beside it, the largest handler's median.
"""


@dataclass(frozen=True)
class Measured:
    median: float
    low: float | None
    high: float | None
    runs: int | None

    @classmethod
    def parse(cls, fields: list[str]) -> Measured:
        numbers = [float(field) for field in fields]
        if len(numbers) >= 4:
            return cls(numbers[0], numbers[1], numbers[2], int(numbers[3]))
        if len(numbers) == 3:
            return cls(numbers[0], numbers[1], numbers[2], None)
        return cls(numbers[0], None, None, None)

    def show(self, unit: str, digits: int) -> str:
        text = f"{self.median:,.{digits}f}{unit}"
        if self.low is not None and self.high is not None:
            text += f" ({self.low:,.{digits}f}-{self.high:,.{digits}f}"
            text += f", {self.runs} runs)" if self.runs else ")"
        return text


def figures_of(output: str) -> tuple[dict[str, Measured], str]:
    """The FIGURE lines of a benchmark's output, and the output without them."""
    figures, kept = {}, []
    for line in output.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0] == "FIGURE":
            try:
                figures[fields[1]] = Measured.parse(fields[2:])
            except ValueError:
                kept.append(line)
        elif "HTTP/1.1" not in line:  # a request log line of an emulator
            kept.append(line)
    return figures, "\n".join(kept)


def shadow_checkout(tree: Path, scratch: Path) -> Path:
    """A directory whose benchmarks/ are this checkout's and whose infra/ is the tree's (a link: the asset's paths
    resolve to the tree), for a benchmark that measures the checkout it sits in."""
    shadow = scratch / "shadow"
    shutil.copytree(BENCHMARKS, shadow / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    (shadow / "infra").symlink_to(tree / "infra", target_is_directory=True)
    return shadow


def run_benchmark(script: str, tree: Path, scratch: Path) -> tuple[str, float]:
    started = time.perf_counter()
    if script in WITHOUT_TREE_ARGUMENT:  # the tree's code throughout (its infra imports ecr_retention)
        where = BENCHMARKS if tree == ROOT else shadow_checkout(tree, scratch) / "benchmarks"
        command, harness = [sys.executable, str(where / script)], tree
    else:  # this checkout's harness (emulators, tests/support for the inputs); the script gives the tree's code
        command, harness = [sys.executable, str(BENCHMARKS / script), "--tree", str(tree)], ROOT  # to what it measures
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=tree_environment(harness), cwd=tree)
    output = done.stdout
    if done.returncode != 0:
        output += f"\n(failed with exit code {done.returncode}: {done.stderr.strip().splitlines()[-3:]})"
    return output, time.perf_counter() - started


def goals_table(figures: dict[str, Measured]) -> list[str]:
    lines = ["| goal | target | figure (median, spread) | met/missed |", "|---|---|---|---|"]
    for goal in GOALS:
        measured = figures.get(goal.figure)
        if measured is None:
            lines.append(f"| {goal.goal} | {goal.shown_target()} | not measured | not measured |")
        else:
            shown = measured.show(goal.unit, goal.digits)
            lines.append(f"| {goal.goal} | {goal.shown_target()} | {shown} | {goal.verdict(measured.median)} |")
    return lines


def other_table(figures: dict[str, Measured]) -> list[str]:
    known = {goal.figure for goal in GOALS}
    rows = []
    for name, measured in figures.items():
        if name in known:
            continue
        label, unit, digits = OTHER_FIGURES.get(name, (f"`{name}`", "", 3))
        rows.append(f"| {label} | {measured.show(unit, digits)} |")
    return ["| figure | median, spread |", "|---|---|", *rows] if rows else []


def load_average() -> str:
    try:
        return ", ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def lambda_asset_size(tree: Path) -> str:
    """The function asset `make synth` bundled, if it is there."""
    assets = [
        path for path in (tree / "cdk.out").glob("asset.*") if path.is_dir() and (path / "ecr_retention").is_dir()
    ]
    if not assets:
        return "no bundled asset in cdk.out (run `make synth` first)"
    newest = max(assets, key=lambda path: path.stat().st_mtime)
    size = sum(file.stat().st_size for file in newest.rglob("*") if file.is_file())
    return f"{size / 2**20:.1f} MiB unzipped ({newest.name})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--only", nargs="+", metavar="SCRIPT", help="run only these benchmarks (developing)")
    args = parser.parse_args()
    chosen = [(title, script) for title, script in SCRIPTS if not args.only or script in args.only]
    started, load_before = time.perf_counter(), load_average()
    figures: dict[str, Measured] = {}
    details: list[str] = []
    with tempfile.TemporaryDirectory(prefix="write-performance-") as scratch:
        for title, script in chosen:
            print(f"running {script} ...", file=sys.stderr)
            output, seconds = run_benchmark(script, args.tree, Path(scratch))
            found, shown = figures_of(output)
            figures.update(found)
            print(shown, file=sys.stderr)
            details += [f"## {title}", "", f"`benchmarks/{script}`, {seconds:.0f} s in all:", "", "```",
                        shown.rstrip(), "```", ""]  # fmt: skip
    total = time.perf_counter() - started
    measured_tree = "this checkout" if args.tree == ROOT else f"`{args.tree}`"
    header = [
        "# Performance",
        "",
        f"Measured by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, the code of {measured_tree} at "
        f"`{revision(args.tree)}` (benchmarks at `{revision(ROOT)}`): {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}; {total / 60:.1f} minutes in "
        f"all, load average {load_before} before and {load_average()} after (1, 5, 15 minutes). Wall times vary "
        "from run to run on a shared machine; tests never assert them.",
        "",
        "## Goals (issues 26 and 46)",
        "",
        *goals_table(figures),
        "",
    ]
    others = other_table(figures)
    if others:
        header += ["Other figures:", "", *others, ""]
    header += [DEFINITIONS]
    sections = [*header, *details, "## Lambda asset", "", lambda_asset_size(args.tree), ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(sections))
    print(f"wrote {args.out} in {total:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
