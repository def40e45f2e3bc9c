"""The run report as one self-contained HTML page (docs/report.md): pure, from a RunReport (a plan is a dry run)."""

from ecr_retention.report_page.page import page_bytes, render_page

__all__ = ["page_bytes", "render_page"]
