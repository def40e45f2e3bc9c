"""One end-to-end run of the real CLI, `python -m ecr_retention run`, as a subprocess against moto in server mode
over HTTP on 127.0.0.1, pointed there by AWS_ENDPOINT_URL only, as an operator would point it at AWS.

The server runs in this process (moto.server.ThreadedMotoServer), so the test seeds the realistic registry
(support.realistic_registry) through the HTTP API like a push, ages its images in moto's backend, and makes moto's
ECR faithful with the emulator's EcrFidelity (paging, archive, delete refusals). The plan is made here, before
the run, with the offline planner on a snapshot read through the same HTTP endpoint.

Given the registry, the bucket with two clusters' manifests, and a topic with a queue subscribed, when
`run --dry-run` and then a real run execute, then the dry run deletes nothing and prints the report stored in
S3, and the real run deletes exactly what the plan says and no more, exits 0, and publishes its summary."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.planning import plan_registry
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_registry
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.scenario import LEASE_TABLE, create_inventory_bucket, create_lease_table, create_topic_with_queue
from support.api_calls import is_mutating
from support.expectations import assert_registry_is, expected_after, planned
from support.realistic_registry import (
    ACCOUNT,
    BUCKET,
    REGION,
    SeededRegistry,
    in_use_manifests,
    registry_state,
    rules_text,
    seed_registry,
)

LAMBDAS = Path(__file__).resolve().parents[2] / "lambdas"


@dataclass
class Server:
    endpoint: str
    fidelity: EcrFidelity
    seeded: SeededRegistry
    topic_arn: str
    queue_url: str

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION, endpoint_url=self.endpoint)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    monkeypatch.setattr(logging.getLogger("werkzeug"), "level", logging.WARNING)  # one line per request otherwise
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # moto's backends live in this process: start from nothing, whatever an earlier test left there.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).close()
    try:
        with EcrFidelity() as fidelity:

            def client(service: str) -> Any:
                return boto3.client(service, region_name=REGION, endpoint_url=endpoint)

            seeded = seed_registry(MotoEcr(client("ecr")), datetime.now(UTC).replace(microsecond=0))
            create_inventory_bucket(client("s3"), in_use_manifests(seeded), name=BUCKET)
            create_lease_table(client("dynamodb"))
            topic_arn, queue_url = create_topic_with_queue(client("sns"), client("sqs"))
            yield Server(endpoint, fidelity, seeded, topic_arn, queue_url)
    finally:
        moto.stop()


def ecr_retention(server: Server, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("AWS_ENDPOINT_URL", "AWS_PROFILE"))
    }
    environment |= {
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "PYTHONPATH": os.pathsep.join([str(LAMBDAS), environment.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    return subprocess.run(
        [sys.executable, "-m", "ecr_retention", *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def stored_report(server: Server, report: dict[str, Any]) -> dict[str, Any]:
    key = report["reportKey"].removeprefix(f"s3://{BUCKET}/")
    document: dict[str, Any] = json.loads(server.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read())
    return document


def mutating(served: Mapping[str, int]) -> dict[str, int]:
    return {operation: count for operation, count in served.items() if is_mutating(operation)}


def keys(server: Server) -> list[str]:
    pages = server.client("s3").get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return [entry["Key"] for page in pages for entry in page.get("Contents", [])]


def received(server: Server) -> list[dict[str, Any]]:
    sqs = server.client("sqs")
    messages = sqs.receive_message(QueueUrl=server.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    return [json.loads(message["Body"]) for message in messages.get("Messages", [])]


def excerpt(report: dict[str, Any]) -> dict[str, Any]:
    """The run's fields, then the repository `app` with the first entry of each list."""
    repository = next(r for r in report["repositories"] if r["repositoryName"] == "app")
    shortened = {
        key: [*value[:1], f"... {len(value) - 1} more"] if isinstance(value, list) and len(value) > 1 else value
        for key, value in repository.items()
    }
    others = len(report["repositories"]) - 1
    return {
        **{k: v for k, v in report.items() if k != "repositories"},
        "repositories": [shortened, f"... {others} more"],
    }


def test_ecr_retention_run_against_moto_server_deletes_exactly_what_the_plan_says(
    server: Server, tmp_path: Path
) -> None:
    rules = tmp_path / "retention.yaml"
    rules.write_text(rules_text(dry_run=False))
    ecr = server.client("ecr")
    before = registry_state(ecr, server.seeded.repositories)
    common = ["--config", str(rules), "--bucket", BUCKET, "--topic-arn", server.topic_arn, "--lease-table", LEASE_TABLE]
    served = dict(server.fidelity.served)  # requests moto's ECR answered, seeding included
    keys_before = set(keys(server))

    dry = ecr_retention(server, "run", *common, "--dry-run", "--format", "json")

    assert dry.returncode == 0, dry.stderr
    assert dry.stderr == ""
    dry_report = json.loads(dry.stdout)
    assert dry_report["dryRun"] is True
    assert dry_report == stored_report(server, dry_report)
    assert mutating(server.fidelity.served) == mutating(served)  # the seeding's PutImage requests, no more
    new_keys = set(keys(server)) - keys_before
    assert new_keys
    # reports, the manifest cache, and the in-use memory: a dry run reads the manifests, and remembers that reading
    assert all(
        key.startswith(("reports/", "manifests/", "state/in-use-memory.json", "snapshots/")) for key in new_keys
    ), new_keys
    assert registry_state(ecr, server.seeded.repositories) == before

    config = parse_config(rules.read_text())
    snapshot = snapshot_registry(EcrRegistry(ecr, ACCOUNT, REGION), MemoryManifestCache())
    inventory = read_inventory_from_bucket(S3Bucket(BUCKET, server.client("s3")))
    plan = plan_registry(config, snapshot, inventory, datetime.now(UTC))
    would = {r["repositoryName"]: {e["imageDigest"] for e in r["deleted"]} for r in dry_report["repositories"]}
    assert would == {name: digests for name, digests in planned(plan, "delete").items() if name in would}

    real = ecr_retention(server, "run", *common, "--format", "json")

    assert real.returncode == 0, real.stderr
    report = json.loads(real.stdout)
    assert report == stored_report(server, report)
    assert (report["dryRun"], report["outcome"], report["trigger"]) == (False, "ok", "cli")
    assert_registry_is(
        registry_state(ecr, server.seeded.repositories), expected_after(before, plan), archived=planned(plan, "archive")
    )
    deleted = {r["repositoryName"]: {e["imageDigest"] for e in r["deleted"]} for r in report["repositories"]}
    assert deleted == {name: digests for name, digests in planned(plan, "delete").items() if name in deleted}
    assert report["totals"]["deleted"] == sum(len(d) for d in planned(plan, "delete").values()) > 0

    messages = received(server)
    assert [m["MessageAttributes"]["dry_run"]["Value"] for m in messages] == ["true", "false"]
    message = messages[1]
    assert message["Subject"] == (
        f"ecr-retention run ok: deleted {report['totals']['deleted']} images (14.2 GiB) in 8 repositories"
    )
    assert message["MessageAttributes"]["outcome"] == {"Type": "String", "Value": "ok"}
    body = message["Message"]
    assert body.startswith(f"Run {report['runId']} (cli), ")
    assert "Deletion run: the lists show what was deleted." in body
    assert "  app: ok, 29 images, kept 13, deleted 10, archived 6, 315.0 MiB" in body
    stem = report["reportKey"].removesuffix(".json")
    assert body.endswith(
        f"Full report: {report['reportKey']}\n"
        f"Report page: {stem}.html\n"
        f"  open it from the S3 console: https://console.aws.amazon.com/s3/object/{BUCKET}?region={REGION}"
        f"&prefix={stem.removeprefix(f's3://{BUCKET}/')}.html\n"
        f"Sheet (CSV): {stem}.csv\n"
    )

    print("\n===== SNS message (real run) =====")
    print(f"Subject: {message['Subject']}")
    print(f"MessageAttributes: { {k: v['Value'] for k, v in message['MessageAttributes'].items()} }")
    print(body)
    print("===== Run report excerpt (JSON, as printed by --format json and stored in S3) =====")
    print(json.dumps(excerpt(report), indent=2))
