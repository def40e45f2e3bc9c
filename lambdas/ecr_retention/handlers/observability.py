"""One Logger, Tracer and Metrics for every function, and one decorator order everywhere."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from ecr_retention.domain.report import RunReport

SERVICE = "ecr-retention"
NAMESPACE = "EcrRetention"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def record_run_metrics(report: RunReport) -> None:
    totals = report.totals
    metrics.add_metric(name="ImagesDeleted", unit=MetricUnit.Count, value=0 if report.dry_run else totals.deleted)
    metrics.add_metric(name="ImagesArchived", unit=MetricUnit.Count, value=0 if report.dry_run else totals.archived)
    metrics.add_metric(
        name="BytesReclaimed", unit=MetricUnit.Bytes, value=0 if report.dry_run else totals.bytes_reclaimed
    )
    metrics.add_metric(name="ImagesProtectedInUse", unit=MetricUnit.Count, value=totals.protected_in_use)
    metrics.add_metric(name="DeleteFailures", unit=MetricUnit.Count, value=totals.failed)
    metrics.add_metric(name="RunsBlocked", unit=MetricUnit.Count, value=1 if report.outcome == "blocked" else 0)
    metrics.add_metric(name="RunsCompleted", unit=MetricUnit.Count, value=1)
