"""Report page benchmark: render the HTML page of a dry run over 1,000 and 30,000 images (render_page, best of 3),
print its size, and the time to first contentful paint and to the load event when headless Chromium opens it from
a file. Measures only; asserts nothing about time. Without Chromium the browser figures are skipped with a note.

    make bench        (or: .venv/bin/python benchmarks/report_page.py [--images 1000 30000])
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the report builders live in tests/support

from ecr_retention.domain.cost import StoragePrice
from ecr_retention.report_page import render_page
from ecr_retention_dev.browser import headless_chromium, missing_reason
from support.reports import dry_run_report

PAINT = """() => new Promise(resolve => {
  const done = () => {
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    const navigation = performance.getEntriesByType('navigation')[0];
    if (paint && navigation && navigation.loadEventEnd > 0) resolve([paint.startTime, navigation.loadEventEnd]);
    else setTimeout(done, 50);
  };
  done();
})"""


def render(count: int, repeat: int = 3) -> tuple[str, float]:
    """The page of a `count`-image dry run and the best of `repeat` render times."""
    report = dry_run_report(count)
    price = StoragePrice.for_region(report.region)
    best, html = float("inf"), ""
    for _ in range(repeat):
        started = time.perf_counter()
        html = render_page(report, price)
        best = min(best, time.perf_counter() - started)
    return html, best


def paint_times(pages: dict[int, str]) -> dict[int, tuple[float, float]]:
    """(first contentful paint, load event end) in milliseconds, each the best of 3 openings in new contexts. A small
    page may finish loading before its first paint; a large one paints its first rows long before the load event."""
    times: dict[int, tuple[float, float]] = {}
    with headless_chromium() as browser, tempfile.TemporaryDirectory(prefix="ecr-retention-bench-") as directory:
        for count, html in pages.items():
            path = Path(directory) / f"report-{count}.html"
            path.write_text(html, encoding="utf-8")
            runs = []
            for _ in range(3):
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                page.set_default_timeout(300_000)
                page.goto(path.as_uri(), wait_until="commit")
                paint, load = page.evaluate(PAINT)
                runs.append((float(paint), float(load)))
                context.close()
            times[count] = (min(paint for paint, _ in runs), min(load for _, load in runs))
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, nargs="+", default=[1_000, 30_000])
    args = parser.parse_args()
    pages: dict[int, str] = {}
    for count in args.images:
        html, seconds = render(count)
        pages[count] = html
        size = len(html.encode("utf-8"))
        print(
            f"{count:>7,} images: render_page {seconds:6.3f} s (best of 3), page {size / 2**20:6.2f} MiB "
            f"({size / count:,.0f} bytes per image)"
        )
    reason = missing_reason()
    if reason is not None:
        print(f"first paint in headless Chromium: skipped ({reason})")
        return
    for count, (paint, load) in paint_times(pages).items():
        print(
            f"{count:>7,} images: headless Chromium, opened from a file: first contentful paint {paint / 1000:6.2f} s, "
            f"load event {load / 1000:6.2f} s (best of 3)"
        )


if __name__ == "__main__":
    main()
