"""Report a run: the JSON report in the bucket, its page (HTML) and its sheet (CSV) beside it, then one SNS summary.
A run whose report cannot be written still publishes a failure message, so silence never means success; a page or a
sheet that cannot be rendered or written costs neither the JSON report nor the summary, which says so."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from ecr_retention.defects import Defect, contain
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.report import ReportFormat
from ecr_retention.domain.reporting.run_report import RunFacts, RunReport, run_report_of
from ecr_retention.domain.reporting.summary import ReportFiles, StoredFile
from ecr_retention.layout import run_report_key
from ecr_retention.ports import Bucket, Notifier, StorageUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Renderers:
    """How a run report becomes its page, its sheet and its SNS texts (ecr_retention/report_renderers.py): handed in,
    so this service writes and publishes what it is given and renders nothing itself."""

    page: Callable[[RunReport, StoragePrice], bytes]
    sheet: Callable[[RunReport], bytes]
    summary: Callable[[RunReport, ReportFiles], tuple[str, str]]  # (subject, body)
    failure: Callable[[str, str], tuple[str, str]]  # (run id, problem) -> (subject, body)


@dataclass(frozen=True)
class ReportOutputs:
    """Where a run report goes: the bucket (JSON, page, sheet), the subscribers, and how it is rendered."""

    bucket: Bucket
    notifier: Notifier | None
    renderers: Renderers
    price: StoragePrice


def report_run(facts: RunFacts, outputs: ReportOutputs) -> RunReport:
    """Write the run report (JSON, then its page and sheet beside it) and publish its summary."""
    bucket = outputs.bucket
    key = run_report_key(facts.run_id, facts.started_at)
    report = run_report_of(facts, report_url=f"s3://{bucket.name}/{key}")
    # The bucket's declared error, or a defect (contained): either way the subscribers hear that the report is
    # missing, and the caller still fails.
    unwritten = contain(partial(_write_report, bucket, key, report), log=logger, what="writing the run report")
    error = unwritten.error if isinstance(unwritten, Defect) else unwritten
    if error is not None:
        publish_failure(outputs, facts.run_id, facts.dry_run, f"the report could not be written to {key}: {error}")
        raise error
    files = store_page_and_sheet(outputs, report)
    if outputs.notifier is not None:
        subject, body = outputs.renderers.summary(report, files)
        outputs.notifier.publish(
            subject,
            body,
            {"dry_run": str(facts.dry_run).lower(), "outcome": report.outcome},
            report_location=report.report_url,
        )
    return report


def _write_report(bucket: Bucket, key: str, report: RunReport) -> StorageUnavailable | None:
    """The bucket's refusal, returned; None once the report is written."""
    try:
        bucket.write(key, report.to_json_bytes())
    except StorageUnavailable as error:
        logger.warning("writing the run report failed: %s", error)
        return error
    return None


def store_page_and_sheet(outputs: ReportOutputs, report: RunReport) -> ReportFiles:
    """The page and the sheet beside the JSON report (same key stem). Each is contained: the JSON report is written
    already, and the summary must go out whatever happens to them."""
    bucket, render = outputs.bucket, outputs.renderers
    page = store_rendered(
        bucket, report, "html", "text/html; charset=utf-8", lambda: render.page(report, outputs.price)
    )
    sheet = store_rendered(bucket, report, "csv", "text/csv; charset=utf-8", lambda: render.sheet(report))
    return ReportFiles(bucket=bucket.name, page=page, sheet=sheet)


def store_rendered(
    bucket: Bucket, report: RunReport, extension: ReportFormat, content_type: str, render: Callable[[], bytes]
) -> StoredFile:
    """Render and write one of the report's files. A write the bucket refuses is the file's problem, and so is a
    defect of the renderer (contained: the JSON report is written already, and the summary must go out)."""
    key = run_report_key(report.run_id, report.started_at, extension=extension)

    def render_and_write() -> str | None:
        body = render()
        try:
            bucket.write(key, body, content_type=content_type)
        except StorageUnavailable as error:
            logger.warning("writing the run report's %s failed: %s", extension, error)
            return f"{type(error).__name__}: {error}"
        return None

    written = contain(render_and_write, log=logger, what=f"writing the run report's {extension}")
    return StoredFile(key, problem=str(written) if isinstance(written, Defect) else written)


def publish_failure(outputs: ReportOutputs, run_id: str, dry_run: bool, problem: str) -> None:
    if outputs.notifier is None:
        return
    subject, body = outputs.renderers.failure(run_id, problem)
    outputs.notifier.publish(subject, body, {"dry_run": str(dry_run).lower(), "outcome": "failed"})


def failure_published(outputs: ReportOutputs, run_id: str, dry_run: bool, call: Callable[[], T]) -> T:
    """call(); when it raises, whatever the error, the subscribers hear that the run failed (silence never means
    success), and the exception still reaches the caller."""
    outcome = contain(call, log=None, what="the run")
    if isinstance(outcome, Defect):
        publish_failure(outputs, run_id, dry_run, str(outcome))
        raise outcome.error
    return outcome
