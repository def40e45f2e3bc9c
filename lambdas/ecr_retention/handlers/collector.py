"""The AWS inventory collector: on its schedule, before the sweep, what ECS and Lambda use in each configured
account and region, written to `in-use/aws-<account>-<region>.json` in the inventory bucket, and what runs in each
EKS cluster it reads through the cluster's API (eksClusters), written to `in-use/<cluster name>.json`, and, with
inspectorInUse, Amazon Inspector's coverage of this account's ECR, written to `in-use/inspector-<account>-<region>.json`."""

from collections.abc import Sequence
from typing import Any

from ecr_retention.gc_guard import imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import NonNegativeInt

    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, tracer
    from ecr_retention.handlers.wiring.collector import CollectorWiring, collector_at_cold_start
    from ecr_retention.run_request import RunRequest
    from ecr_retention.services.aws_inventory import ManifestCollection, export_aws_inventory
    from ecr_retention.services.eks_inventory import export_eks_inventory
    from ecr_retention.services.inspector_inventory import export_inspector_coverage
    from ecr_retention.workflow import WireRecord


class ManifestCollected(WireRecord):
    name: str
    complete: bool
    images: NonNegativeInt
    location: str | None
    problems: NonNegativeInt


class CollectionDone(WireRecord):
    """What the collector returns: one entry per account and region."""

    manifests: tuple[ManifestCollected, ...]
    incomplete: NonNegativeInt


class ManifestsNotStored(RuntimeError):
    """Some manifests could not be written: they go stale, and the function fails so that its alarm fires."""


def parse_trigger(event: Any) -> str:
    """A scheduled EventBridge event (Scheduler or a rule), or the workflow's input when the collector runs as
    the first state of a sweep; anything else is refused with one line."""
    if isinstance(event, dict) and "detail-type" in event:
        return parse_event(event, EventBridgeModel, "collector event").source
    parse_event(event, RunRequest, "collector input")
    return "workflow"


@logger.inject_lambda_context(log_event=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(
    event: dict[str, Any], context: LambdaContext, *, wiring: CollectorWiring | None = None
) -> dict[str, Any]:
    wiring = wiring or collector_at_cold_start()
    trigger = parse_trigger(event)
    collections = collect(wiring)
    log_collections(collections)
    record_collection_metrics(collections)
    unstored = [c for c in collections if c.store_error is not None]
    if unstored:
        raise ManifestsNotStored("; ".join(f"{c.name}: {c.store_error}" for c in unstored))
    logger.info("collection finished", extra={"trigger": trigger, "manifests": len(collections)})
    return collection_done(collections).to_wire()


def collect(wiring: CollectorWiring) -> list[ManifestCollection]:
    """Every account and region of ECS and Lambda, then every listed EKS cluster, each stored as it is read."""
    settings = wiring.settings
    accounts = wiring.accounts()
    collections = export_aws_inventory(accounts, settings.collect_regions, wiring.store, revisions=settings.revisions)
    if settings.eks_clusters:
        collections += export_eks_inventory(settings.eks_clusters, wiring.clusters(accounts), wiring.store)
    if settings.inspector_in_use:
        collections += export_inspector_coverage(
            accounts.coverage, accounts.own_account(), settings.collect_regions, wiring.store
        )
    return collections


def log_collections(collections: Sequence[ManifestCollection]) -> None:
    for collection in collections:
        details = {"manifest": collection.name, "images": len(collection.manifest.images), **collection.counts}
        if collection.problems:
            logger.warning("incomplete collection", extra={**details, "problems": list(collection.problems)})
        else:
            logger.info("collected", extra={**details, "location": collection.location})


def record_collection_metrics(collections: Sequence[ManifestCollection]) -> None:
    stored = [c for c in collections if c.store_error is None]
    metrics.add_metric(name="InUseManifestsWritten", unit=MetricUnit.Count, value=len(stored))
    metrics.add_metric(
        name="IncompleteInUseManifests", unit=MetricUnit.Count, value=sum(1 for c in collections if c.problems)
    )
    metrics.add_metric(
        name="InUseImageReferences", unit=MetricUnit.Count, value=sum(len(c.manifest.images) for c in collections)
    )


def collection_done(collections: Sequence[ManifestCollection]) -> CollectionDone:
    return CollectionDone(
        manifests=tuple(
            ManifestCollected(
                name=c.name,
                complete=c.manifest.complete,
                images=len(c.manifest.images),
                location=c.location,
                problems=len(c.problems),
            )
            for c in collections
        ),
        incomplete=sum(1 for c in collections if c.problems),
    )
