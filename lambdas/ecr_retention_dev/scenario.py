"""What the demo's registry (ecr_retention_dev.demo.registry) and the tests' realistic registry
(tests/support/realistic_registry.py) are both made of.

Both tell the story a platform team's ECR tells after a year of CI, with the same cast: `app` with release and
`dev` tags and the native lifecycle policy of the `dev` incident (keep the newest three `*.*` images, which expires
the image `dev` shares with a version tag), an image-swapper cache `docker.io/library/nginx` whose `1.14.2` still
runs in dev, `frontend` and `backend` released under the same tags (`tag_in_repositories`), multi-arch indexes with
cosign signatures and SBOM referrers, and a sandbox no policy governs. They differ in size and detail, and the
tests assert exact counts on theirs, so each seeds its own images; what they share is here: the time units, the
incident policy, the in-use manifests as the exporter writes them, and the resources the CDK stack creates around
the registry (the inventory bucket, the lease table, the report topic with a queue subscribed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

REGION = "eu-west-1"
LEASE_TABLE = "ecr-retention-leases"
TOPIC = "ecr-retention-reports"
QUEUE = f"{TOPIC}-subscriber"

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
MIB = 1024 * 1024


def incident_policy(*, description: str, untagged_after_days: int | None = None, indent: int | None = None) -> str:
    """The native lifecycle policy of the `dev` incident: keep the three newest `*.*` images. ECR expires images,
    not tags, so the image `dev` shares with a version tag goes once three releases follow it.
    `untagged_after_days` adds a second rule that expires untagged images that old."""
    rules: list[dict[str, Any]] = [
        {
            "rulePriority": 1,
            "description": description,
            "selection": {
                "tagStatus": "tagged",
                "tagPatternList": ["*.*"],
                "countType": "imageCountMoreThan",
                "countNumber": 3,
            },
            "action": {"type": "expire"},
        }
    ]
    if untagged_after_days is not None:
        rules.append(
            {
                "rulePriority": 2,
                "description": "untagged after a day"
                if untagged_after_days == 1
                else f"untagged after {untagged_after_days} days",
                "selection": {
                    "tagStatus": "untagged",
                    "countType": "sinceImagePushed",
                    "countUnit": "days",
                    "countNumber": untagged_after_days,
                },
                "action": {"type": "expire"},
            }
        )
    return json.dumps({"rules": rules}, indent=indent)


def in_use_entry(
    image: str,
    namespace: str,
    workload: str,
    *,
    container: str | None = None,
    source: str = "pod",
    digest: str | None = None,
) -> dict[str, Any]:
    """One image a cluster runs, as the exporter lists it; the container is named after the workload by default."""
    entry: dict[str, Any] = {
        "image": image,
        "namespace": namespace,
        "workload": workload,
        "container": container if container is not None else workload.rsplit("/", 1)[-1],
        "source": source,
    }
    if digest is not None:
        entry["digest"] = digest
    return entry


def in_use_document(cluster: str, generated_at: str, images: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`in-use/<cluster>.json` as the exporter writes it, complete."""
    return {
        "schemaVersion": 1,
        "cluster": cluster,
        "generatedAt": generated_at,
        "complete": True,
        "images": list(images),
    }


def create_inventory_bucket(s3: Any, manifests: Mapping[str, bytes], *, name: str, region: str = REGION) -> str:
    """The inventory bucket, holding these objects (key -> body), as the exporters wrote them."""
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    for key, body in manifests.items():
        s3.put_object(Bucket=name, Key=key, Body=body, ContentType="application/json")
    return name


def create_lease_table(dynamodb: Any, name: str = LEASE_TABLE) -> str:
    """The table of the per-repository leases, keyed as the stack keys it."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "repository", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "repository", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def create_topic_with_queue(sns: Any, sqs: Any, name: str = TOPIC) -> tuple[str, str]:
    """An SNS topic with an SQS subscription (not raw: the queue receives SNS's JSON envelope), `<name>-subscriber`:
    (topic ARN, queue URL)."""
    topic = sns.create_topic(Name=name)["TopicArn"]
    queue_url = sqs.create_queue(QueueName=f"{name}-subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    return topic, queue_url
