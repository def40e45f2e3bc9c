"""The collector's two doors on moto: the Lambda handler (an EventBridge Scheduler event, or the workflow's input)
and `ecr-retention export-aws`."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from ecr_retention.aws.clients import ClientFactory, set_default_factory
from ecr_retention.cli import main
from ecr_retention.domain.errors import InputError
from ecr_retention.handlers import collector
from ecr_retention.handlers.collector import ManifestsNotStored
from ecr_retention.handlers.wiring import forget_cold_start
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.emulator.workloads import AwsFidelity, MotoWorkloads
from support.aws_workloads_scenario import BUCKET, HOST, HUB, HUB_SOURCE, REGION, SPOKE_ROLE, SPOKE_SOURCE, seed_hub

FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{HUB}:function:ecr-retention-collector"


class FakeContext:
    function_name = "ecr-retention-collector"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = FUNCTION_ARN
    aws_request_id = "6f1c3a52-0000-4000-8000-000000000001"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000


def scheduler_event() -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "account": HUB,
        "time": "2026-11-30T02:50:00Z",
        "region": REGION,
        "resources": [f"arn:aws:scheduler:{REGION}:{HUB}:schedule/default/collector"],
        "detail": "{}",
    }


def stored_keys() -> list[str]:
    listed = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=BUCKET, Prefix="in-use/")
    return sorted(entry["Key"] for entry in listed.get("Contents", []))


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The spoke roles as the stack ships them, in the asset's file (infra.lambda_asset).
    spoke_roles = tmp_path / "spoke-roles.json"
    spoke_roles.write_text(json.dumps({"spokeRoleArns": [SPOKE_ROLE]}))
    for name, value in {
        "BUCKET_NAME": BUCKET,
        "SPOKE_ROLES_FILE": str(spoke_roles),
        "COLLECT_REGIONS": json.dumps([REGION]),
        "TASK_DEFINITION_REVISIONS": "2",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "EcrRetention",
    }.items():
        monkeypatch.setenv(name, value)
    forget_cold_start()


@pytest.mark.parametrize("event", [scheduler_event(), {"trigger": "schedule"}])
def test_handler_writes_one_manifest_per_account_and_region(
    environment: None, ecr: MotoEcr, hub: MotoWorkloads, spoke: MotoWorkloads, event: dict[str, Any]
) -> None:
    seed_hub(ecr, hub)
    spoke.cluster("payments")
    spoke.service("payments", "payments", spoke.task_definition("payments", {"app": f"{HOST}/web:v1"}))

    result = collector.lambda_handler(event, FakeContext())  # type: ignore[arg-type]

    assert stored_keys() == [f"in-use/{HUB_SOURCE}.json", f"in-use/{SPOKE_SOURCE}.json"]
    assert result["incomplete"] == 0
    assert [(m["name"], m["complete"]) for m in result["manifests"]] == [(HUB_SOURCE, True), (SPOKE_SOURCE, True)]
    hub_manifest = json.loads(
        boto3.client("s3", region_name=REGION).get_object(Bucket=BUCKET, Key=f"in-use/{HUB_SOURCE}.json")["Body"].read()
    )
    revisions = {e["workload"] for e in hub_manifest["images"] if e["workload"].startswith("TaskDefinition/web:")}
    assert revisions == {"TaskDefinition/web:7", "TaskDefinition/web:8"}  # TASK_DEFINITION_REVISIONS=2


def refuse_first_put_object(client: Any) -> None:
    """The first PutObject of an S3 client answers AccessDenied (moto's S3 cannot be faulted server-side here)."""
    if client.meta.service_model.service_name != "s3":
        return
    refused: list[bool] = []

    def answer(**_: Any) -> Any:
        if refused:
            return None
        refused.append(True)
        status = type("Status", (), {"status_code": 403, "headers": {}})()
        return status, {"Error": {"Code": "AccessDenied", "Message": "Access Denied"}, "ResponseMetadata": {}}

    client.meta.events.register("before-call.s3.PutObject", answer)


def test_handler_fails_when_a_manifest_cannot_be_stored(
    environment: None, aws: AwsFidelity, hub: MotoWorkloads
) -> None:
    set_default_factory(ClientFactory(on_create=refuse_first_put_object))

    with pytest.raises(
        ManifestsNotStored,
        match=rf"^{HUB_SOURCE}: StorageError: s3://{BUCKET}/in-use/{HUB_SOURCE}.json: PutObject failed: AccessDenied",
    ):
        collector.lambda_handler(scheduler_event(), FakeContext())  # type: ignore[arg-type]

    assert stored_keys() == [f"in-use/{SPOKE_SOURCE}.json"]  # the other account was still written


def test_handler_refuses_an_event_of_another_shape(environment: None, aws: AwsFidelity) -> None:
    with pytest.raises(InputError, match="collector input"):
        collector.lambda_handler({"Records": []}, FakeContext())  # type: ignore[arg-type]
    assert stored_keys() == []


def test_export_aws_writes_to_the_bucket_and_says_what_it_read(
    ecr: MotoEcr, hub: MotoWorkloads, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_hub(ecr, hub)

    code = main(["export-aws", "--bucket", BUCKET, "--regions", REGION])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == (
        f"{HUB_SOURCE}: 27 image references from 1 clusters, 1 services, 3 tasks, 2 scheduled tasks, "
        f"11 task definitions, 1 functions, 3 function versions; complete; wrote s3://{BUCKET}/in-use/{HUB_SOURCE}.json\n"
    )
    assert stored_keys() == [f"in-use/{HUB_SOURCE}.json"]


def test_export_aws_to_a_file_names_what_it_could_not_read_and_exits_1(
    aws: AwsFidelity, ecr: MotoEcr, hub: MotoWorkloads, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_hub(ecr, hub)
    aws.fail("ecs", "ListServices", "AccessDeniedException")
    out_file = tmp_path / f"{HUB_SOURCE}.json"

    code = main(["export-aws", "--out", str(out_file)])

    out, err = capsys.readouterr()
    assert code == 1
    assert "INCOMPLETE (complete: false)" in out
    assert err == (
        f"{HUB_SOURCE}: not read: ECS cluster prod: ListServices failed: AccessDeniedException: "
        "injected AccessDeniedException\n"
    )
    assert json.loads(out_file.read_text())["complete"] is False
    assert stored_keys() == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--bucket", BUCKET, "--role-arn", "arn:aws:iam::12:role/x"],
            "--role-arn 'arn:aws:iam::12:role/x': not an IAM role ARN",
        ),
        (
            ["--bucket", BUCKET, "--role-arn", SPOKE_ROLE, "--role-arn", SPOKE_ROLE + "-2"],
            "account 210987654321 already has role",
        ),
        (["--bucket", BUCKET, "--regions", "eu-west-1", "Europe"], "--regions 'Europe': not an AWS region name"),
        (["--out", "manifest.json", "--role-arn", SPOKE_ROLE], "--out takes one manifest"),
        (["--out", "manifest.json", "--regions", "eu-west-1", "us-east-1"], "--out takes one manifest"),
        (["--bucket", "s3://bucket"], "--bucket: 's3://bucket' is not an S3 bucket name"),
    ],
)
def test_export_aws_refuses_bad_input_with_one_line_and_reads_nothing(
    aws: AwsFidelity, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    code = main(["export-aws", *arguments])

    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert err.count("\n") == 1
    assert sum(aws.served.values()) == 0
