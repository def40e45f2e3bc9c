"""The report step's renderers: the page (HTML), the sheet (CSV) and the SNS texts, handed to services/report.py by
the report step's wiring and the CLI (run_adapters.py's Adapters), so the service that writes a report does not render one."""

from __future__ import annotations

from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.domain.reporting.summary import failure_summary, render_summary
from ecr_retention.services.report import Renderers


def page_body(report: RunReport, price: StoragePrice) -> bytes:
    # Imported here, inside the contained call: only the report step renders, so the other functions' cold starts
    # do not load Jinja2, and a page that cannot even be imported costs the summary nothing.
    from ecr_retention.report_page import page_bytes

    return page_bytes(report, price)


def sheet_body(report: RunReport) -> bytes:
    # Imported here for the same reason as the page: only the report step renders.
    from ecr_retention.report_sheet import sheet_bytes

    return sheet_bytes(report)


RENDERERS = Renderers(page=page_body, sheet=sheet_body, summary=render_summary, failure=failure_summary)
