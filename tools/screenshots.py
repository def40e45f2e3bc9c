"""`make screenshots`: docs/images/report-page.png, the top 1400 pixels (1280 wide) of the demo's real-run page.

Runs `ecr-retention demo --out DIR` (the whole pipeline against moto, about ten seconds), then takes the real run's
page: the demo's own HTML when it writes one (`DIR/**/live*.html`), else the page rendered from its real run's JSON
report (`DIR/reports/live-*.json`). Opens it in headless Chromium (Debian's; ecr_retention_dev.browser) by its
file:// URL, as a reader opens a downloaded report.

    make screenshots        (or: .venv/bin/python tools/screenshots.py [--out PATH])
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ecr_retention.domain.cost import StoragePrice
from ecr_retention.domain.report import RunReport
from ecr_retention.report_page import render_page
from ecr_retention_dev.browser import headless_chromium, missing_reason, screenshot_page

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "images" / "report-page.png"


def real_run_page(directory: Path) -> tuple[str, str]:
    """The demo's real-run page and where it comes from."""
    pages = sorted(directory.rglob("live*.html"))
    if pages:
        return pages[-1].read_text(encoding="utf-8"), f"the demo's page {pages[-1].relative_to(directory)}"
    report_file = sorted((directory / "reports").glob("live-*.json"))[-1]
    report = RunReport.model_validate(json.loads(report_file.read_text(encoding="utf-8")))
    source = f"render_page of the demo's report {report_file.relative_to(directory)}"
    return render_page(report, StoragePrice.for_region(report.region)), source


def run_demo(directory: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ecr_retention", "demo", "--out", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"screenshots: ecr-retention demo failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args()
    reason = missing_reason()
    if reason is not None:
        sys.exit(f"screenshots: {reason}")
    with tempfile.TemporaryDirectory(prefix="ecr-retention-screenshots-") as directory:
        run_demo(Path(directory))
        html, source = real_run_page(Path(directory))
    with headless_chromium() as browser:
        screenshot_page(browser, html, args.out)
    print(f"wrote {args.out} from {source}")


if __name__ == "__main__":
    main()
