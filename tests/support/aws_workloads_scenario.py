"""One realistic registry account for the AWS inventory collector's tests: ECR repositories with old images, and
the ECS and Lambda workloads that use some of them, each image protected by exactly one mechanism (or none).

    web     v1 unused; v2, v3 the two sides of a rollback in progress (service deployments, PRIMARY and ACTIVE);
            v4..v8 the five newest ACTIVE revisions of family `web`
    worker  `latest` moved from A to B: A (now untagged) runs, known only by the digest ECS resolved for the task;
            B is what the task definition's tag points to now; C unused
    batch   v1 run by an EventBridge rule, v2 by a Scheduler schedule, v3 unused, v4..v8 the newest revisions
    api     Lambda function `api`: version 1 (alias live) deployed `api:stable` when it was image S1, then `stable`
            moved to S2, deployed as version 2 (alias canary) and $LATEST; only version 1's ResolvedImageUri still
            names S1. v0 unused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from moto.core.models import DEFAULT_ACCOUNT_ID

from ecr_retention_dev.emulator.manifests import PushedImage
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.emulator.workloads import MotoWorkloads

HUB = DEFAULT_ACCOUNT_ID  # the registry account: ECR, the pipeline, the bucket
SPOKE = "210987654321"  # a workload account
REGION = "eu-west-1"
BUCKET = "inventory-bucket"
SPOKE_ROLE = f"arn:aws:iam::{SPOKE}:role/ecr-retention-reader"
HOST = f"{HUB}.dkr.ecr.{REGION}.amazonaws.com"
HUB_SOURCE = f"aws-{HUB}-{REGION}"
SPOKE_SOURCE = f"aws-{SPOKE}-{REGION}"

RULES = f"""
version: 1
dry_run: true
safety: {{min_age: 1d, max_delete_fraction: 1.0, inventory_max_age: 6h, clusters: [{HUB_SOURCE}]}}
policies:
  - repositories: ["*"]
    rules:
      - delete: {{older_than: 30d}}
"""


@dataclass(frozen=True)
class HubScenario:
    images: dict[str, PushedImage]  # "web:v1", "worker:A", "api:S1", ...
    web_revisions: list[str]  # task-definition ARNs web:1..8
    batch_revisions: list[str]
    worker_definition: str
    cluster_arn: str

    def digest(self, name: str) -> str:
        return self.images[name].digest

    @property
    def unused(self) -> set[str]:
        return {self.digest(name) for name in ("web:v1", "worker:C", "batch:v3", "api:v0")}


def seed_hub(ecr: MotoEcr, hub: MotoWorkloads) -> HubScenario:
    pushed_at = datetime.now(UTC) - timedelta(days=100)
    images: dict[str, PushedImage] = {}
    for repository in ("web", "worker", "batch", "api"):
        ecr.create_repository(repository)
    for number in range(1, 9):
        images[f"web:v{number}"] = ecr.push_image("web", f"v{number}", seed=f"web-{number}", pushed_at=pushed_at)
        images[f"batch:v{number}"] = ecr.push_image("batch", f"v{number}", seed=f"batch-{number}", pushed_at=pushed_at)
    images["worker:A"] = ecr.push_image("worker", "latest", seed="worker-A", pushed_at=pushed_at)
    images["worker:B"] = ecr.push_image("worker", "latest", seed="worker-B", pushed_at=pushed_at)  # tag moves
    images["worker:C"] = ecr.push_image("worker", "old", seed="worker-C", pushed_at=pushed_at)
    images["api:v0"] = ecr.push_image("api", "v0", seed="api-0", pushed_at=pushed_at)
    images["api:S1"] = ecr.push_image("api", "stable", seed="api-S1", pushed_at=pushed_at)

    cluster = hub.cluster("prod")
    web = [
        hub.task_definition("web", {"web": f"{HOST}/web:v{n}", "envoy": "public.ecr.aws/envoy:v1"}) for n in range(1, 9)
    ]
    hub.service("prod", "web", web[1])
    hub.roll_back("prod", "web", failed=web[2], target=web[1], finished=web[0])

    worker = hub.task_definition("worker", {"worker": f"{HOST}/worker:latest"})
    hub.run_tasks("prod", worker, group="family:worker", digests={"worker": images["worker:A"].digest}, count=3)

    batch = [hub.task_definition("batch", {"job": f"{HOST}/batch:v{n}"}) for n in range(1, 9)]
    hub.rule_task("nightly", cluster, batch[0])
    hub.schedule_task("reports", "hourly", cluster, batch[1])

    hub.image_function("api", f"{HOST}/api:stable", images["api:S1"].digest)
    hub.publish("api")
    images["api:S2"] = ecr.push_image("api", "stable", seed="api-S2", pushed_at=pushed_at)  # `stable` moves to S2
    hub.update_image("api", f"{HOST}/api:stable", images["api:S2"].digest)
    hub.publish("api")
    hub.alias("api", "live", "1")
    hub.alias("api", "canary", "2")
    hub.zip_function("legacy")
    return HubScenario(
        images=images, web_revisions=web, batch_revisions=batch, worker_definition=worker, cluster_arn=cluster
    )
