"""One Logger, Tracer and Metrics for every function, and one decorator order everywhere."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit, single_metric

if TYPE_CHECKING:  # only the report function records a run's metrics, and imports its report
    from ecr_retention.domain.reporting.run_report import RunReport

SERVICE = "ecr-retention"
NAMESPACE = "EcrRetention"
MANIFEST_AGE_METRIC = "InUseManifestAgeSeconds"
CLUSTER_DIMENSION = "Cluster"
IN_USE_MISSING_METRIC = "InUseImagesMissing"
REGION_DIMENSION = "Region"

logger = Logger(service=SERVICE)
# botocore is the only library the functions call out through: patching it alone traces every AWS call, as
# patch_all does, without importing sqlite3 and trying a dozen absent libraries at every cold start.
tracer = Tracer(service=SERVICE, patch_modules=("botocore",))
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

# The package's own standard-library loggers (services, adapters: `logging.getLogger(__name__)`) write through the
# Logger's handler, so that their lines, the failures of a run among them, are JSON with the correlation id (runId)
# and the Lambda context. Their parent is created first: Powertools configures top-level loggers only.
PACKAGE_LOGGER = logging.getLogger("ecr_retention")
copy_config_to_registered_loggers(source_logger=logger, include={PACKAGE_LOGGER.name})


def _done(report: RunReport, count: int) -> int:
    """What a run did: nothing in dry run, whatever it would have done."""
    return 0 if report.dry_run else count


def record_run_metrics(report: RunReport) -> None:
    totals = report.totals
    metrics.add_metric(name="ImagesDeleted", unit=MetricUnit.Count, value=_done(report, totals.deleted))
    metrics.add_metric(name="ImagesArchived", unit=MetricUnit.Count, value=_done(report, totals.archived))
    metrics.add_metric(name="BytesReclaimed", unit=MetricUnit.Bytes, value=_done(report, totals.bytes_reclaimed))
    metrics.add_metric(name="ImagesProtectedInUse", unit=MetricUnit.Count, value=totals.protected_in_use)
    metrics.add_metric(name="DeleteFailures", unit=MetricUnit.Count, value=totals.failed)
    # In-use images found ARCHIVED, restored or not (the report and the summary name them and their workloads).
    metrics.add_metric(name="InUseImagesArchived", unit=MetricUnit.Count, value=totals.in_use_archived)
    metrics.add_metric(name="ImagesRestored", unit=MetricUnit.Count, value=_done(report, totals.restored))
    # In-use references the next pull cannot get (finding in-use-missing): removed by something else; alarmed.
    metrics.add_metric(name=IN_USE_MISSING_METRIC, unit=MetricUnit.Count, value=len(report.in_use_missing))
    # Any block, a block of one Region beside removals in another too (outcome partial then): the alarm still hears it.
    metrics.add_metric(name="RunsBlocked", unit=MetricUnit.Count, value=1 if report.blocked else 0)
    metrics.add_metric(name="RunsCompleted", unit=MetricUnit.Count, value=1)
    record_region_metrics(report)


def record_region_metrics(report: RunReport) -> None:
    """With several Regions, each Region's counts again with a Region dimension (beside `service`), each a metric of
    its own (Metrics shares one dimension set per flush): the run-level metrics above keep theirs, which the alarms
    match exactly. A single-Region run publishes none (its run-level metrics are its Region's)."""
    for region in report.regions:
        totals = region.totals
        counts = (
            ("ImagesDeleted", MetricUnit.Count, _done(report, totals.deleted)),
            ("ImagesArchived", MetricUnit.Count, _done(report, totals.archived)),
            ("BytesReclaimed", MetricUnit.Bytes, _done(report, totals.bytes_reclaimed)),
            ("ImagesProtectedInUse", MetricUnit.Count, totals.protected_in_use),
            ("DeleteFailures", MetricUnit.Count, totals.failed),
        )
        for name, unit, value in counts:
            with single_metric(
                name=name,
                unit=unit,
                value=value,
                namespace=NAMESPACE,
                default_dimensions={"service": SERVICE},
            ) as metric:
                metric.add_dimension(name=REGION_DIMENSION, value=region.region or "unknown")


def record_manifest_ages(generated_at: Mapping[str, datetime], clusters: Iterable[str], now: datetime) -> None:
    """InUseManifestAgeSeconds of each expected cluster's manifest, with a Cluster dimension, so that an alarm
    sees an exporter fall behind before its manifest passes inventory_max_age and blocks pruning. Each is a
    metric of its own (Metrics shares one dimension set per flush). A cluster without a manifest publishes
    nothing: the run it blocks is alarmed as RunsBlocked. `generated_at`: when each cluster's manifest was written."""
    for cluster in clusters:
        written = generated_at.get(cluster)
        if written is None:
            continue
        age = max(0.0, (now - written).total_seconds())
        with single_metric(
            name=MANIFEST_AGE_METRIC,
            unit=MetricUnit.Seconds,
            value=age,
            namespace=NAMESPACE,
            default_dimensions={"service": SERVICE},
        ) as metric:
            metric.add_dimension(name=CLUSTER_DIMENSION, value=cluster)
