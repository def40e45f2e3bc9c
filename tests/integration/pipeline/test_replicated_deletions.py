"""Replicated deletions on faithful moto, through the real adapters: a pod in a destination Region runs an old
release of `app` that the rules would delete. With the replication rule's deleteReplication on, the run keeps it
(our deletion would delete it there too) and names the destination; with it off, the copy there is unaffected,
and the run deletes the source image. DescribeRegistry denied: the run is blocked and deletes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecr_retention.aws.clients import ClientFactory
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.domain.config import parse_config
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from support.pipeline_harness import NOW
from support.realistic_registry import ACCOUNT, BUCKET, REGION

DESTINATION = "us-east-1"
RULES = parse_config(
    """
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod, us-prod]}
policies:
  - repositories: ["app"]
    rules:
      - delete: {tags: ["*"], older_than: 30d, keep_newest: 1}
"""
)


@pytest.fixture
def registry() -> Iterator[dict[str, Any]]:
    """app holds 1.0 (old, runs in us-prod through replication) and 1.1 (newest); both clusters report."""
    with mock_aws(), EcrFidelity() as fidelity:
        ecr = boto3.client("ecr", region_name=REGION)
        seed = MotoEcr(ecr)
        seed.create_repository("app")
        old = seed.push_image("app", "1.0", pushed_at=NOW - timedelta(days=90))
        seed.push_image("app", "0.9", pushed_at=NOW - timedelta(days=120))
        seed.push_image("app", "1.1", pushed_at=NOW - timedelta(days=40))
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        for cluster, region, tag in (("prod", REGION, "1.1"), ("us-prod", DESTINATION, "1.0")):
            manifest = {
                "schemaVersion": 1,
                "cluster": cluster,
                "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
                "complete": True,
                "images": [
                    {
                        "image": f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/app:{tag}",
                        "namespace": "shop",
                        "workload": "Deployment/app",
                        "container": "app",
                        "source": "template",
                    }
                ],
            }
            s3.put_object(Bucket=BUCKET, Key=f"in-use/{cluster}.json", Body=json.dumps(manifest).encode())
        clients = ClientFactory()
        adapters = Adapters(
            registry=EcrRegistry(clients.client("ecr", REGION), ACCOUNT, REGION),
            bucket=S3Bucket(BUCKET, clients.client("s3", REGION)),
            clock=lambda: NOW,
            renderers=RENDERERS,
        )
        yield {"ecr": ecr, "adapters": adapters, "old": old.digest, "fidelity": fidelity}


def replicate(ecr: Any, *, delete: bool) -> None:
    rule = {
        "destinations": [{"region": DESTINATION, "registryId": ACCOUNT}],
        "repositoryFilters": [{"filter": "app", "filterType": "PREFIX_MATCH"}],
        "deleteReplication": {"enabled": delete},
    }
    ecr.put_replication_configuration(replicationConfiguration={"rules": [rule]})


def tags_left(ecr: Any) -> set[str]:
    details = ecr.describe_images(repositoryName="app")["imageDetails"]
    return {tag for detail in details for tag in detail.get("imageTags", [])}


def test_an_old_release_a_delete_replicating_destination_runs_is_kept_and_named(registry: dict[str, Any]) -> None:
    replicate(registry["ecr"], delete=True)

    report = run_pipeline(RULES, registry["adapters"])

    assert tags_left(registry["ecr"]) == {"1.0", "1.1"}  # 0.9 deleted; 1.0 runs in us-east-1
    [app] = report.repositories
    assert [str(replica) for replica in app.deletion_replicates_to] == [f"{DESTINATION} ({ACCOUNT})"]
    assert app.deletion_replicates_to[0].expected_clusters == ("us-prod",)
    assert [entry.image_tags for entry in app.deleted] == [("0.9",)]
    assert report.outcome == "ok"
    assert not any("where no expected cluster reports" in warning for warning in report.warnings)


def test_the_same_release_goes_once_the_rule_no_longer_replicates_deletions(registry: dict[str, Any]) -> None:
    replicate(registry["ecr"], delete=False)

    report = run_pipeline(RULES, registry["adapters"])

    assert tags_left(registry["ecr"]) == {"1.1"}
    assert {entry.image_digest for entry in report.repositories[0].deleted} >= {registry["old"]}
    assert report.repositories[0].deletion_replicates_to == ()


def test_the_workflow_reads_the_configuration_once_and_every_evaluation_keeps_the_release(
    registry: dict[str, Any],
) -> None:
    replicate(registry["ecr"], delete=True)
    adapters = registry["adapters"]
    start = start_run(RULES, adapters, trigger="schedule")
    for item in json.loads(adapters.bucket.read(start.targets_key, max_bytes=1 << 20) or b"[]"):
        run_work_item(RULES, adapters, run_id=item["runId"], repository=item["repository"], dry_run=item["dryRun"])
    report = finish_run(adapters, start, RULES)

    assert tags_left(registry["ecr"]) == {"1.0", "1.1"}
    assert registry["fidelity"].served["DescribeRegistry"] == 1
    assert report.repositories[0].deletion_replicates_to[0].region == DESTINATION


def test_a_denied_describe_registry_blocks_the_run_and_nothing_is_deleted(registry: dict[str, Any]) -> None:
    replicate(registry["ecr"], delete=True)
    registry["fidelity"].fail("DescribeRegistry", "AccessDeniedException", message="not authorized")

    report = run_pipeline(RULES, registry["adapters"])

    assert report.outcome == "blocked"
    assert tags_left(registry["ecr"]) == {"0.9", "1.0", "1.1"}
    assert "DescribeRegistry failed: AccessDeniedException: not authorized" in report.blocked[0]
