"""The tagger: on its schedule and whenever an in-use manifest lands, tag what runs in production (in every registry
the deployment prunes), and publish each expected cluster's manifest age."""

from datetime import datetime
from typing import Any

from ecr_retention.gc_guard import imports_without_cyclic_gc

with imports_without_cyclic_gc():
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import NonNegativeInt

    from ecr_retention.handlers.events import parse_event
    from ecr_retention.handlers.observability import logger, metrics, record_manifest_ages, tracer
    from ecr_retention.handlers.wiring.tagger import TaggerWiring, tagger_at_cold_start
    from ecr_retention.services.inventory import read_inventory_from_bucket
    from ecr_retention.services.tagger import tag_deployed_everywhere
    from ecr_retention.workflow import WireRecord, new_tag_run_id


class TaggingDone(WireRecord):
    """What the tagger returns."""

    run_id: str
    tagged: NonNegativeInt
    already_tagged: NonNegativeInt
    would_tag: NonNegativeInt
    problems: NonNegativeInt


@logger.inject_lambda_context(log_event=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(
    event: dict[str, Any], context: LambdaContext, *, wiring: TaggerWiring | None = None
) -> dict[str, Any]:
    wiring = wiring or tagger_at_cold_start()
    trigger = parse_event(event, EventBridgeModel, "tagger event")  # a Scheduled Event or an S3 Object Created
    now = wiring.clock()
    run_id = new_tag_run_id(now)
    # Every line of the tagging run carries its id, as the workflow's lines carry theirs (correlation_id_path).
    with logger.append_context_keys(correlation_id=run_id):
        logger.info("tagging", extra={"source": trigger.source, "detailType": trigger.detail_type})
        return tag(wiring, run_id, now)


def tag(wiring: TaggerWiring, run_id: str, now: datetime) -> dict[str, Any]:
    """Tag what runs now; publish each expected cluster's manifest age and the run's counts."""
    config = wiring.config
    inventory = read_inventory_from_bucket(wiring.bucket)
    # The tagger runs hourly and on every manifest written: the manifest-age alarms watch what it publishes.
    ages = {str(cluster): manifest.generated_at for cluster, manifest in inventory.standing.items()}
    record_manifest_ages(ages, map(str, config.safety.clusters), now)
    report = tag_deployed_everywhere(
        config, inventory, registries=wiring.registries, run_id=run_id, now=now, dry_run=config.dry_run
    )
    problems = report.count("failed") + report.count("immutable")
    metrics.add_metric(name="ImagesTagged", unit=MetricUnit.Count, value=report.count("tagged"))
    metrics.add_metric(name="TagFailures", unit=MetricUnit.Count, value=problems)
    for entry in report.entries:
        if entry.status in ("failed", "immutable"):
            logger.warning("image not tagged", extra=entry.model_dump(mode="json"))
    return TaggingDone(
        run_id=report.run_id,
        tagged=report.count("tagged"),
        already_tagged=report.count("already-tagged"),
        would_tag=report.count("would-tag"),
        problems=problems,
    ).to_wire()
