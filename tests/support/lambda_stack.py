"""The handlers' world on moto (`mock_aws`): the inventory bucket with prod's in-use manifest, the report topic
with a queue subscribed, the lease table, a state machine, and `app` with four releases (v2 runs in prod), wired
to the handlers through the environment the CDK stack sets; a fake Lambda context; and the events AWS sends
(ECR pushes in SQS records, EventBridge Scheduler and S3 Object Created events).

The `stack` fixture is imported by the conftest.py of each test folder that uses it."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.models import DEFAULT_ACCOUNT_ID

from ecr_retention.aws.clients import set_default_factory
from ecr_retention.cdk.constants import DEFAULT_MAP_CONCURRENCY
from ecr_retention.handlers.wiring import forget_cold_start
from ecr_retention_dev.scenario import create_lease_table

REGION = "eu-west-1"
HOST = f"{DEFAULT_ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com"
# The sentinel role the stack names in SENTINEL_ROLE_ARN (infra/sentinel.py): the writer of removals/.
SENTINEL_ROLE_ARN = f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/ecr-retention-Sentinel"
RULES = """
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod]}
tagging:
  - clusters: [prod]
    tag_prefix: deployed-prod-
policies:
  - repositories: ["app"]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
"""


@dataclass
class FakeContext:
    function_name: str = "ecr-retention-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{DEFAULT_ACCOUNT_ID}:function:ecr-retention-test"
    aws_request_id: str = "6f1c3a52-0000-4000-8000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000  # 15 minutes, a worker's timeout: far from the deadline margin


@dataclass
class Stack:
    bucket: str
    topic_arn: str
    queue_url: str
    state_machine_arn: str
    images: dict[str, str]

    def s3(self) -> Any:
        return boto3.client("s3", region_name=REGION)

    def messages(self) -> list[dict[str, Any]]:
        sqs = boto3.client("sqs", region_name=REGION)
        received = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in received]

    def digests(self, repository: str) -> set[str]:
        ecr = boto3.client("ecr", region_name=REGION)
        return {i["imageDigest"] for i in ecr.describe_images(repositoryName=repository)["imageDetails"]}


def push(ecr: Any, repository: str, tag: str, age: timedelta, *, seed: str | None = None) -> str:
    """An image under `tag`, aged in moto's backend. Its digest derives from `seed` (the tag when none is given, so
    the same tag in two repositories is the same image: pass a seed for images of their own)."""
    seed = tag if seed is None else seed
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "size": 7,
                "digest": "sha256:" + hashlib.sha256(seed.encode()).hexdigest(),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "size": 1000,
                    "digest": "sha256:" + hashlib.sha256(f"layer {seed}".encode()).hexdigest(),
                }
            ],
        }
    )
    digest = "sha256:" + hashlib.sha256(manifest.encode()).hexdigest()  # moto needs it given (env-probe §3)
    ecr.put_image(repositoryName=repository, imageManifest=manifest, imageTag=tag, imageDigest=digest)
    from moto.ecr.models import ecr_backends

    # moto stamps push time at put; age the image in moto's backend.
    for image in ecr_backends[DEFAULT_ACCOUNT_ID][ecr.meta.region_name].repositories[repository].images:
        if image.image_digest == digest:
            image.image_pushed_at = int((datetime.now(UTC) - age).timestamp())
    return digest


@dataclass(frozen=True)
class Provisioned:
    topic_arn: str
    queue_url: str
    state_machine_arn: str
    images: dict[str, dict[str, str]]  # repository -> tag -> digest


def provision(
    monkeypatch: pytest.MonkeyPatch,
    rules_file: Path,
    *,
    bucket: str,
    definition: dict[str, Any],
    repositories: tuple[str, ...] = ("app",),
    images_of_their_own: bool = False,
) -> Provisioned:
    """Inside a moto context: the stack's resources, four releases v1..v4 in each repository (v2 of app runs in
    prod), and the environment the CDK stack sets for the functions. `images_of_their_own`: the same tag in two
    repositories is a different image (by default an image's digest derives from its tag alone)."""
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="reports")["TopicArn"]
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(QueueName="subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    create_lease_table(boto3.client("dynamodb", region_name=REGION), "leases")
    machine = boto3.client("stepfunctions", region_name=REGION).create_state_machine(
        name="pruning", definition=json.dumps(definition), roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/sfn"
    )["stateMachineArn"]
    ecr = boto3.client("ecr", region_name=REGION)
    images: dict[str, dict[str, str]] = {}
    for repository in repositories:
        ecr.create_repository(repositoryName=repository)
        images[repository] = {
            f"v{n}": push(
                ecr,
                repository,
                f"v{n}",
                timedelta(days=100 - n),
                seed=f"{repository}:v{n}" if images_of_their_own else None,
            )
            for n in range(1, 5)
        }
    running = images["app"]["v2"]
    s3.put_object(
        Bucket=bucket,
        Key="in-use/prod.json",
        Body=json.dumps(
            {
                "schemaVersion": 1,
                "cluster": "prod",
                "generatedAt": datetime.now(UTC).isoformat(),
                "complete": True,
                "images": [
                    {
                        "image": f"{HOST}/app@{running}",
                        "digest": running,
                        "namespace": "prod",
                        "workload": "Deployment/app",
                        "container": "app",
                        "source": "pod",
                    }
                ],
            }
        ),
    )
    for name, value in {
        "BUCKET_NAME": bucket,
        "TOPIC_ARN": topic,
        "LEASE_TABLE": "leases",
        "MAP_CONCURRENCY": str(DEFAULT_MAP_CONCURRENCY),
        "STATE_MACHINE_ARN": machine,
        "SENTINEL_ROLE_ARN": SENTINEL_ROLE_ARN,
        "RULES_FILE": str(rules_file),
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "EcrRetention",
    }.items():
        monkeypatch.setenv(name, value)
    return Provisioned(topic, queue_url, machine, images)


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with mock_aws():
        rules = tmp_path / "retention.yaml"
        rules.write_text(RULES)
        done = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
        provisioned = provision(monkeypatch, rules, bucket="inventory-bucket", definition=done)
        set_default_factory(None)
        forget_cold_start()
        yield Stack(
            "inventory-bucket",
            provisioned.topic_arn,
            provisioned.queue_url,
            provisioned.state_machine_arn,
            provisioned.images["app"],
        )
        forget_cold_start()
        set_default_factory(None)


def ecr_push_event(repository: str, tag: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "ECR Image Action",
        "source": "aws.ecr",
        "account": DEFAULT_ACCOUNT_ID,
        "time": "2026-11-30T01:54:34Z",
        "region": REGION,
        "resources": [],
        "detail": {
            "result": "SUCCESS",
            "repository-name": repository,
            "image-digest": "sha256:" + "7" * 64,
            "action-type": "PUSH",
            "image-tag": tag,
        },
    }


def sqs_record(body: str, message_id: str) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": "handle-" + message_id,
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1764467674000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1764467674000",
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:{DEFAULT_ACCOUNT_ID}:pushes",
        "awsRegion": REGION,
    }


def scheduler_event() -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "account": DEFAULT_ACCOUNT_ID,
        "time": "2026-11-30T03:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:scheduler:{REGION}:{DEFAULT_ACCOUNT_ID}:schedule/default/tagger"],
        "detail": "{}",
    }


def s3_object_created_event(bucket: str, key: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": DEFAULT_ACCOUNT_ID,
        "time": "2026-11-30T03:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {"key": key, "size": 512, "etag": "d41d8cd98f00b204e9800998ecf8427e", "sequencer": "00617F0"},
            "request-id": "N4N7GDK58NMKJ12R",
            "requester": DEFAULT_ACCOUNT_ID,
            "source-ip-address": "10.0.0.1",
            "reason": "PutObject",
        },
    }
