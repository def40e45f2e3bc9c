"""A harness for the whole pipeline in-process, through the real adapters (EcrRegistry, S3Bucket, SnsNotifier, DynamoDbLeases)
on moto `mock_aws`, with moto's ECR made faithful by the emulator's EcrFidelity: paging of DescribeImages and
DescribeRepositories, the imageStatus filter and archived images, UpdateImageStorageClass, BatchDeleteImage
refusing a child still referenced by an index and listing untagged deletions, and faults served by moto (so
botocore's real retry logic answers them; its back-off sleeps are skipped by `instant_retries`).

The adapters' clients come from the production ClientFactory (its retry configuration is under test too) with an
ApiCallRecorder attached; the registry is seeded and inspected through separate clients, so the recorder sees
only what the pipeline calls.

The fixtures here are imported by the conftest.py of each test folder that uses them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecr_retention.aws.clients import ClientFactory, set_default_factory
from ecr_retention.aws.dynamodb_lease import DynamoDbLeases
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.aws.sns_notifier import SnsNotifier
from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_registry
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.scenario import (
    LEASE_TABLE,
    REGION,
    create_inventory_bucket,
    create_lease_table,
    create_topic_with_queue,
)
from support.api_calls import ApiCallRecorder, instant_retries
from support.realistic_registry import (
    ACCOUNT,
    BUCKET,
    SeededRegistry,
    in_use_manifests,
    registry_state,
    rules_text,
    seed_registry,
)

# The runs' clock, and what every age in the registry is relative to. The wall clock (once per session), not a
# fixed date, because the CLI commands run with their own clock: the registry's ages stay at least half an hour
# away from every threshold, so a CLI run a minute later decides the same.
NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture(autouse=True)
def isolated_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint or retry settings of the machine running the tests; tests/conftest.py supplies credentials."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@pytest.fixture(autouse=True)
def retry_delays() -> Iterator[list[float]]:
    with instant_retries() as delays:
        yield delays


@dataclass
class Pipeline:
    fidelity: EcrFidelity
    seeded: SeededRegistry
    recorder: ApiCallRecorder
    clients: ClientFactory
    ecr: Any  # for seeding and inspecting: not recorded
    s3: Any
    sqs: Any
    topic_arn: str
    queue_url: str

    def config(self, *, dry_run: bool) -> RetentionConfig:
        return parse_config(rules_text(dry_run=dry_run))

    def registry(self) -> EcrRegistry:
        return EcrRegistry(self.clients.client("ecr", REGION), ACCOUNT, REGION)

    def bucket(self) -> S3Bucket:
        return S3Bucket(BUCKET, self.clients.client("s3", REGION))

    def adapters(self) -> Adapters:
        return Adapters(
            registry=self.registry(),
            bucket=self.bucket(),
            notifier=SnsNotifier(self.topic_arn, self.clients.client("sns", REGION)),
            leases=DynamoDbLeases(LEASE_TABLE, self.clients.client("dynamodb", REGION), clock=lambda: NOW),
            clock=lambda: NOW,
            renderers=RENDERERS,
        )

    def state(self) -> dict[str, dict[str, dict[str, Any]]]:
        return registry_state(self.ecr, self.seeded.repositories)

    def snapshot(self) -> Snapshot:
        """The registry as the planner reads it, through an unrecorded adapter."""
        return snapshot_registry(EcrRegistry(self.ecr, ACCOUNT, REGION), MemoryManifestCache())

    def plan(self, config: RetentionConfig, snapshot: Snapshot | None = None) -> Plan:
        """The plan made independently of the run: the offline planner on a snapshot taken before it, with the
        inventory as the bucket holds it."""
        inventory = read_inventory_from_bucket(S3Bucket(BUCKET, self.s3))
        return plan_registry(config, snapshot or self.snapshot(), inventory, NOW)

    def messages(self) -> list[dict[str, Any]]:
        received = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(message["Body"]) for message in received]

    def report(self, key: str) -> dict[str, Any]:
        body = self.s3.get_object(Bucket=BUCKET, Key=key.removeprefix(f"s3://{BUCKET}/"))["Body"].read()
        document: dict[str, Any] = json.loads(body)
        return document

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [entry["Key"] for page in pages for entry in page.get("Contents", [])]


def build_pipeline(fidelity: EcrFidelity, **manifest_ages: Any) -> Pipeline:
    ecr = boto3.client("ecr", region_name=REGION)
    s3 = boto3.client("s3", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    seeded = seed_registry(MotoEcr(ecr), NOW)
    create_inventory_bucket(s3, in_use_manifests(seeded, **manifest_ages), name=BUCKET)
    create_lease_table(boto3.client("dynamodb", region_name=REGION))
    topic_arn, queue_url = create_topic_with_queue(boto3.client("sns", region_name=REGION), sqs)
    recorder = ApiCallRecorder()
    return Pipeline(
        fidelity=fidelity,
        seeded=seeded,
        recorder=recorder,
        clients=ClientFactory(on_create=recorder.attach),
        ecr=ecr,
        s3=s3,
        sqs=sqs,
        topic_arn=topic_arn,
        queue_url=queue_url,
    )


@pytest.fixture
def pipeline() -> Iterator[Pipeline]:
    with mock_aws(), EcrFidelity() as fidelity:
        yield build_pipeline(fidelity)


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_cli(recorder: ApiCallRecorder, capsys: pytest.CaptureFixture[str], *argv: str) -> CliResult:
    """`ecr-retention <argv>` in this process. The CLI builds its adapters from the process-wide client factory,
    as in production; here that factory records every client it creates and every call into `recorder`."""
    from ecr_retention.cli import main

    capsys.readouterr()
    set_default_factory(ClientFactory(on_create=recorder.attach))
    try:
        code = main(list(argv))
    finally:
        set_default_factory(None)
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def write_rules(directory: Path, *, dry_run: bool) -> Path:
    path = directory / ("retention-dry.yaml" if dry_run else "retention.yaml")
    path.write_text(rules_text(dry_run=dry_run))
    return path
