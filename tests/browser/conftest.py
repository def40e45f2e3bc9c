"""The report page in headless Chromium (Debian's, driven by Playwright; ecr_retention_dev.browser).

Without Chromium the browser tests skip, with one line saying how to get it; with ECR_RETENTION_BROWSER_TESTS=required
(.ci/run sets it) they fail instead (support.chromium). Pages are opened from a file:// URL, as a reader opens a downloaded report, and
every request other than that URL is recorded: the page must make none."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.report_page import render_page
from ecr_retention_dev.browser import headless_chromium
from support.chromium import fail_without_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request

VIEWPORT = {"width": 1280, "height": 800}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is a browser test, and of the slow tier."""
    for item in items:
        if Path(item.path).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    fail_without_chromium()  # the test modules skip without it, unless CI requires them
    with headless_chromium() as launched:
        yield launched


@dataclass
class OpenedPage:
    """A page and what it did: requests other than its own URL, console messages, errors, dialogs."""

    page: Page
    url: str
    requests: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


Opener = Callable[..., OpenedPage]


@pytest.fixture
def open_html(browser: Browser, tmp_path: Path) -> Iterator[Opener]:
    """open_html(html, scripts=True, timeout=ms) writes the page to a file and opens it by its file:// URL; every
    step on the page waits at most `timeout` milliseconds."""
    contexts: list[BrowserContext] = []

    def open_page(html: str, *, scripts: bool = True, timeout: float = 10_000) -> OpenedPage:
        path = tmp_path / "report.html"
        path.write_text(html, encoding="utf-8")
        context = browser.new_context(viewport=VIEWPORT, java_script_enabled=scripts)
        context.set_default_timeout(timeout)
        contexts.append(context)
        page = context.new_page()
        opened = OpenedPage(page=page, url=path.as_uri())

        def on_request(request: Request) -> None:
            if request.url != opened.url:
                opened.requests.append(request.url)

        def on_console(message: ConsoleMessage) -> None:
            opened.console.append(f"{message.type}: {message.text}")

        context.on("request", on_request)
        page.on("console", on_console)
        page.on("pageerror", lambda error: opened.errors.append(str(error)))
        page.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(opened.url, wait_until="load")
        return opened

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def open_report(open_html: Opener) -> Callable[..., OpenedPage]:
    """open_report(report, scripts=True, timeout=ms): the page render_page makes of the report, opened in Chromium."""

    def open_page(report: RunReport, **options: Any) -> OpenedPage:
        return open_html(render_page(report, StoragePrice.for_region(report.region)), **options)

    return open_page
