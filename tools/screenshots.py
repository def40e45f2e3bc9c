"""`make screenshots`: docs/images/report-page.png, the top 1400 pixels (1280 wide) of the demo's real-run page.

Runs `ecr-retention demo --out DIR` (the whole pipeline against moto, about ten seconds), then opens the page the
report step wrote for the real run (`DIR/reports/live-<runId>.html`) in headless Chromium (Debian's;
ecr_retention_dev.browser) by its file:// URL, as a reader opens a downloaded report.

    make screenshots        (or: .venv/bin/python tools/screenshots.py [--out PATH])
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from ecr_retention_dev.browser import headless_chromium, missing_reason, screenshot_page

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "images" / "report-page.png"


def real_run_page(directory: Path) -> Path:
    """The page the demo's report step wrote for its real run (`reports/live-<runId>.html`)."""
    pages = sorted((directory / "reports").glob("live-*.html"))
    if not pages:
        sys.exit(f"screenshots: ecr-retention demo wrote no reports/live-*.html in {directory}")
    return pages[-1]


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
        page = real_run_page(Path(directory))
        html = page.read_text(encoding="utf-8")
    with headless_chromium() as browser:
        screenshot_page(browser, html, args.out)
    print(f"wrote {args.out} from the demo's page reports/{page.name}")


if __name__ == "__main__":
    main()
