"""Report page benchmark: render the HTML page of a dry run over 1,000 and 30,000 images (render_page, each run a
fresh process that loads the stored run report first, medians of 3 with the spread), print its size, and the time
to first contentful paint and to the load event when headless Chromium opens it from a file. Measures only;
asserts nothing about time. Without Chromium the browser figures are skipped with a note.

    make bench        (or: python benchmarks/report_page.py [--tree CHECKOUT] [--images 1000 30000] [--rounds 3])

The run reports are written once by a child running this checkout's tests/support (dry_run_report), as the JSON
the report step stores; the page is rendered by the tree's code.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from measuring import ROOT, Spread, add_tree_argument, check_tree, json_child, run_child, tree_environment, write_result

PAINT = """() => new Promise(resolve => {
  const done = () => {
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    const navigation = performance.getEntriesByType('navigation')[0];
    if (paint && navigation && navigation.loadEventEnd > 0) resolve([paint.startTime, navigation.loadEventEnd]);
    else setTimeout(done, 50);
  };
  done();
})"""


def write_report(count: int, path: Path) -> None:
    """In a child: the run report of a `count`-image dry run, as the report step stores it."""
    from support.reports import dry_run_report

    path.write_text(dry_run_report(count).to_json())


def render(args: argparse.Namespace) -> None:
    """In a fresh process: load the stored report, render its page once (timed), write the page beside it."""
    from ecr_retention.domain.reporting.cost import StoragePrice
    from ecr_retention.domain.reporting.run_report import RunReport
    from ecr_retention.report_page import render_page

    check_tree(args.tree)
    report = RunReport.model_validate(json.loads(args.render.read_bytes()))
    price = StoragePrice.for_region(report.region)
    started = time.perf_counter()
    html = render_page(report, price)
    seconds = time.perf_counter() - started
    args.render.with_suffix(".html").write_text(html, encoding="utf-8")
    write_result(args.result, {"seconds": seconds, "bytes": len(html.encode("utf-8"))})


def paint_times(pages: dict[int, Path]) -> dict[int, tuple[Spread, Spread]]:
    """(first contentful paint, load event end) in milliseconds, each over 3 openings in new contexts. A small
    page may finish loading before its first paint; a large one paints its first rows long before the load event."""
    from ecr_retention_dev.browser import headless_chromium

    times: dict[int, tuple[Spread, Spread]] = {}
    with headless_chromium() as browser:
        for count, path in pages.items():
            runs = []
            for _ in range(3):
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                page.set_default_timeout(300_000)
                page.goto(path.as_uri(), wait_until="commit")
                paint, load = page.evaluate(PAINT)
                runs.append((float(paint), float(load)))
                context.close()
            times[count] = (Spread.of([paint for paint, _ in runs]), Spread.of([load for _, load in runs]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--images", type=int, nargs="+", default=[1_000, 30_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--render", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write is not None:
        write_report(args.images[0], args.write)
        return
    if args.render is not None:
        render(args)
        return
    runs: dict[int, list[Any]] = {count: [] for count in args.images}
    with tempfile.TemporaryDirectory(prefix="report-page-bench-") as scratch:
        reports = {count: Path(scratch) / f"report-{count}.json" for count in args.images}
        for count, path in reports.items():
            writer = [sys.executable, __file__, "--write", str(path), "--images", str(count)]
            if run_child(writer, env=tree_environment(ROOT)).returncode != 0:
                raise SystemExit(f"writing the report of {count} images failed")
        for _ in range(args.rounds):
            for count, path in reports.items():
                renderer = [sys.executable, __file__, "--tree", str(args.tree), "--render", str(path)]
                runs[count].append(json_child(renderer, Path(scratch) / "result.json", env=tree_environment(args.tree)))
        for count, done in runs.items():
            size = done[0]["bytes"]
            print(
                f"{count:>7,} images: render_page {Spread.of([run['seconds'] for run in done]).show(3, ' s')}, "
                f"page {size / 2**20:6.2f} MiB ({size / count:,.0f} bytes per image)"
            )
        browser_figures(args, {count: path.with_suffix(".html") for count, path in reports.items()})


def browser_figures(args: argparse.Namespace, pages: dict[int, Path]) -> None:
    from ecr_retention_dev.browser import missing_reason

    reason = missing_reason()
    if reason is not None:
        print(f"first paint in headless Chromium: skipped ({reason})")
        return
    for count, (paint, load) in paint_times(pages).items():
        print(
            f"{count:>7,} images: headless Chromium, opened from a file: first contentful paint "
            f"{paint.show(0, ' ms')}, load event {load.show(0, ' ms')}"
        )


if __name__ == "__main__":
    main()
