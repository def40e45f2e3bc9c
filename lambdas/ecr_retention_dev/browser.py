"""Headless Chromium for the report page: the browser tests, `make screenshots` and benchmarks/report_page.py.

Debian's Chromium (`apt-get install chromium`), driven by Playwright; Playwright's own browser download is never
used. The flags keep it off the network: without the background-networking ones, Chromium calls Google's hosts at
every start. Playwright gives every launch a new, empty profile (`--user-data-dir` in a temporary directory).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # playwright is a development dependency; importing this module does not need it
    from playwright.sync_api import Browser

CHROMIUM_VARIABLE = "ECR_RETENTION_CHROMIUM"
INSTALL_HINT = f"apt-get install chromium, or set {CHROMIUM_VARIABLE}=/path/to/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium_path() -> str | None:
    """$ECR_RETENTION_CHROMIUM when set (it must exist), else `chromium` on the PATH."""
    configured = os.environ.get(CHROMIUM_VARIABLE)
    if configured:
        return configured if Path(configured).is_file() else None
    return shutil.which("chromium")


def missing_reason() -> str | None:
    """Why the browser cannot start here (with how to fix it), or None when it can."""
    if chromium_path() is None:
        configured = os.environ.get(CHROMIUM_VARIABLE)
        where = f"{CHROMIUM_VARIABLE}={configured} is not a file" if configured else "no chromium on the PATH"
        return f"Chromium is missing ({where}): {INSTALL_HINT}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is missing: pip install -r requirements-dev.txt"
    return None


@contextmanager
def headless_chromium() -> Iterator[Browser]:
    """One Chromium for the duration of the block; raises RuntimeError naming the fix when there is none."""
    reason = missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=list(FLAGS))
        try:
            yield browser
        finally:
            browser.close()


def screenshot_page(browser: Browser, html: str, target: Path, *, width: int = 1280, height: int = 1400) -> Path:
    """A PNG of the top of the page (`width` wide, at most `height` high), opened from a file as a reader would."""
    with tempfile.TemporaryDirectory(prefix="ecr-retention-page-") as directory:
        page_file = Path(directory) / "report.html"
        page_file.write_text(html, encoding="utf-8")
        context = browser.new_context(viewport={"width": width, "height": height})
        try:
            page = context.new_page()
            page.goto(page_file.as_uri(), wait_until="load")
            full: int = page.evaluate("document.documentElement.scrollHeight")
            target.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(
                path=target, full_page=True, clip={"x": 0, "y": 0, "width": width, "height": min(full, height)}
            )
        finally:
            context.close()
    return target
