"""The collector's Lambda handler with INSPECTOR_IN_USE (cdk.json inspectorInUse) on moto, whose missing inspector2
ListCoverage the emulator serves (ecr_retention_dev.emulator.inspector): the handler writes
in-use/inspector-<account>-<region>.json next to the AWS inventory, through the real adapter, paging and all; without
the variable it calls Inspector not at all."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from ecr_retention.aws.clients import ClientFactory, set_default_factory
from ecr_retention.handlers import collector
from ecr_retention.handlers.wiring import forget_cold_start
from ecr_retention_dev.emulator.inspector import InspectorCoverage
from ecr_retention_dev.emulator.workloads import AwsFidelity, MotoWorkloads
from support.api_calls import ApiCallRecorder
from support.aws_workloads_scenario import BUCKET, HUB, HUB_SOURCE, REGION

INSPECTOR_SOURCE = f"inspector-{HUB}-{REGION}"
LAST_IN_USE = datetime(2026, 12, 4, 10, 12, tzinfo=UTC)


def digest(seed: str) -> str:
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest()


class FakeContext:
    function_name = "ecr-retention-collector"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{HUB}:function:ecr-retention-collector"
    aws_request_id = "6f1c3a52-0000-4000-8000-000000000002"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000


@pytest.fixture
def inspector(aws: AwsFidelity) -> Iterator[InspectorCoverage]:
    with InspectorCoverage() as coverage:
        yield coverage


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "BUCKET_NAME": BUCKET,
        "COLLECT_REGIONS": json.dumps([REGION]),
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "EcrRetention",
    }.items():
        monkeypatch.setenv(name, value)
    forget_cold_start()


def stored(key: str) -> dict[str, Any]:
    body = boto3.client("s3", region_name=REGION).get_object(Bucket=BUCKET, Key=key)["Body"].read()
    document: dict[str, Any] = json.loads(body)
    return document


def test_the_handler_writes_inspectors_reading_of_every_page(
    environment: None,
    monkeypatch: pytest.MonkeyPatch,
    inspector: InspectorCoverage,
    hub: MotoWorkloads,
    recorder: ApiCallRecorder,
) -> None:
    monkeypatch.setenv("INSPECTOR_IN_USE", "true")
    set_default_factory(ClientFactory(on_create=recorder.attach))
    inspector.cover_repository(HUB, REGION, "web")
    for number in range(250):  # two pages of 200
        inspector.cover_image(HUB, REGION, "web", digest(f"old-{number}"), in_use_count=0)
    inspector.cover_image(HUB, REGION, "web", digest("running"), in_use_count=2, last_in_use_at=LAST_IN_USE)
    inspector.cover_image("210987654321", REGION, "web", digest("other-account"), in_use_count=1)

    result = collector.lambda_handler({"trigger": "schedule"}, FakeContext())  # type: ignore[arg-type]

    assert [(m["name"], m["complete"]) for m in result["manifests"]] == [(HUB_SOURCE, True), (INSPECTOR_SOURCE, True)]
    manifest = stored(f"in-use/{INSPECTOR_SOURCE}.json")
    assert manifest["images"] == [
        {
            "image": f"{HUB}.dkr.ecr.{REGION}.amazonaws.com/web@{digest('running')}",
            "digest": digest("running"),
            "namespace": "inspector",
            "workload": "Repository/web",
            "container": "image",
            "source": "inspector",
            "inUseCount": 2,
            "lastInUseAt": "2026-12-04T10:12:00Z",
        }
    ]
    assert "coverageGaps" not in manifest
    assert [call.attempts for call in recorder.of("ListCoverage")] == [1, 1]  # two pages


def test_without_inspector_in_use_the_collector_calls_no_inspector(
    environment: None, inspector: InspectorCoverage, hub: MotoWorkloads, recorder: ApiCallRecorder
) -> None:
    set_default_factory(ClientFactory(on_create=recorder.attach))
    inspector.cover_image(HUB, REGION, "web", digest("running"), in_use_count=2)

    result = collector.lambda_handler({"trigger": "schedule"}, FakeContext())  # type: ignore[arg-type]

    assert [m["name"] for m in result["manifests"]] == [HUB_SOURCE]
    assert recorder.of("ListCoverage") == []
    assert recorder.of("ListClusters") != []  # the recorder saw the collection
