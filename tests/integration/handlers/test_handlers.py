"""Each Lambda handler invoked with the event shape AWS sends it and a fake Lambda context, against moto:
the schedule's state machine input, the Map's work items, ECR push events in an SQS batch, EventBridge
Scheduler and S3 Object Created events for the tagger."""

from __future__ import annotations

import gc
import io
import json
from typing import Any

import boto3
import pytest

from ecr_retention.domain.errors import InputError
from support.collector_watch import watched
from support.lambda_stack import (
    REGION,
    FakeContext,
    Stack,
    ecr_push_event,
    s3_object_created_event,
    scheduler_event,
    sqs_record,
)


def emf_metrics(output: str, name: str) -> list[dict[str, Any]]:
    """The CloudWatch embedded-metric documents a function printed that carry metric `name`."""
    documents = []
    for line in output.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and "_aws" in document and name in document:
            documents.append(document)
    return documents


def test_schedule_run_through_targets_evaluate_and_report(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    from ecr_retention.handlers import evaluate, report, targets

    started = targets.lambda_handler({"trigger": "schedule"}, FakeContext())
    items = json.loads(stack.s3().get_object(Bucket=stack.bucket, Key=started["targetsKey"])["Body"].read())
    results = [evaluate.lambda_handler(item, FakeContext()) for item in items]
    finished = report.lambda_handler(started, FakeContext())

    assert started["count"] == 1
    assert results == [{"repository": "app", "outcome": "ok", "deleted": 2, "failed": 0}]
    assert stack.digests("app") == {stack.images["v2"], stack.images["v4"]}
    assert finished["outcome"] == "ok"
    key = finished["reportKey"].removeprefix(f"s3://{stack.bucket}/")
    stored = json.loads(stack.s3().get_object(Bucket=stack.bucket, Key=key)["Body"].read())
    assert {e["imageDigest"] for e in stored["repositories"][0]["deleted"]} == {stack.images["v1"], stack.images["v3"]}
    [message] = stack.messages()
    assert message["Subject"].startswith("ecr-retention run ok: deleted 2 images")
    assert message["MessageAttributes"]["outcome"]["Value"] == "ok"
    assert message["MessageAttributes"]["dry_run"]["Value"] == "false"
    [age] = emf_metrics(capsys.readouterr().out, "InUseManifestAgeSeconds")
    assert age["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "EcrRetention"
    assert age["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "Cluster"]]
    assert (age["service"], age["Cluster"]) == ("ecr-retention", "prod")
    assert 0 <= age["InUseManifestAgeSeconds"][0] < 60


def test_the_report_step_writes_the_page_and_the_sheet_beside_the_json_report_and_names_them(stack: Stack) -> None:
    from ecr_retention.handlers import evaluate, report, targets

    started = targets.lambda_handler({"trigger": "schedule"}, FakeContext())
    items = json.loads(stack.s3().get_object(Bucket=stack.bucket, Key=started["targetsKey"])["Body"].read())
    for item in items:
        evaluate.lambda_handler(item, FakeContext())
    finished = report.lambda_handler(started, FakeContext())

    stem = finished["reportKey"].removeprefix(f"s3://{stack.bucket}/").removesuffix(".json")
    listed = stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix="reports/")["Contents"]
    assert sorted(item["Key"] for item in listed) == [f"{stem}.csv", f"{stem}.html", f"{stem}.json"]
    page = stack.s3().get_object(Bucket=stack.bucket, Key=f"{stem}.html")
    assert page["ContentType"] == "text/html; charset=utf-8"
    assert page["Body"].read().decode().startswith("<!DOCTYPE html>")
    sheet = stack.s3().get_object(Bucket=stack.bucket, Key=f"{stem}.csv")
    assert sheet["ContentType"] == "text/csv; charset=utf-8"
    rows = sheet["Body"].read().decode().split("\r\n")
    assert rows[0] == "repository,digest,tags,pushed_at,size_bytes,action,reason_kinds,rule,detail,region"
    assert len([row for row in rows[1:] if row.startswith("app,")]) == 4
    [message] = stack.messages()
    lines = message["Message"].splitlines()
    assert f"Report page: s3://{stack.bucket}/{stem}.html" in lines
    assert f"Sheet (CSV): s3://{stack.bucket}/{stem}.csv" in lines
    assert (
        f"  open it from the S3 console: https://console.aws.amazon.com/s3/object/{stack.bucket}?region={REGION}"
        f"&prefix={stem}.html"
    ) in lines


def test_the_evaluation_and_the_report_run_with_the_cyclic_collector_off_and_leave_it_on(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ecr_retention.handlers import evaluate, report, targets
    from ecr_retention.services.evaluate_step import run_work_item
    from ecr_retention.services.report_step import finish_run

    seen: list[tuple[str, bool]] = []
    monkeypatch.setattr(evaluate, "run_work_item", watched(seen, "evaluate", run_work_item))
    monkeypatch.setattr(report, "finish_run", watched(seen, "report", finish_run))
    started = targets.lambda_handler({"trigger": "schedule"}, FakeContext())
    items = json.loads(stack.s3().get_object(Bucket=stack.bucket, Key=started["targetsKey"])["Body"].read())

    for item in items:
        evaluate.lambda_handler(item, FakeContext())
        assert gc.isenabled()
    report.lambda_handler(started, FakeContext())

    assert gc.isenabled()
    assert seen == [("evaluate", False), ("report", False)]


def test_a_services_failure_line_carries_the_run_id(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from ecr_retention.handlers import evaluate, targets
    from ecr_retention.handlers.observability import logger

    # GIVEN a run whose worker cannot take the lease of a repository its plan deletes in (the lease table is gone)
    logs = io.StringIO()  # the Powertools handler keeps the stream it was created with: hand it ours
    monkeypatch.setattr(logger.registered_handler, "stream", logs)
    boto3.client("dynamodb", region_name=REGION).delete_table(TableName="leases")
    started = targets.lambda_handler({"trigger": "schedule"}, FakeContext())
    [item] = json.loads(stack.s3().get_object(Bucket=stack.bucket, Key=started["targetsKey"])["Body"].read())

    # WHEN the worker evaluates it
    result = evaluate.lambda_handler(item, FakeContext())

    # THEN the service's failure line (standard-library logging) is Powertools JSON with the run's id and context
    assert result["outcome"] == "failed"
    lines = [json.loads(line) for line in logs.getvalue().splitlines()]
    [failure] = [line for line in lines if line["message"] == "taking the lease of app failed"]
    assert failure["name"] == "ecr_retention.services.evaluate"
    assert failure["level"] == "ERROR"
    assert failure["correlation_id"] == item["runId"]
    assert failure["function_request_id"] == FakeContext.aws_request_id
    assert "ResourceNotFoundException" in failure["exception"]


def test_malformed_workflow_input_is_refused_with_one_line(stack: Stack) -> None:
    from ecr_retention.handlers import evaluate

    with pytest.raises(InputError, match="work item: repository"):
        evaluate.lambda_handler(
            {"runId": "r", "repository": "../etc", "trigger": "schedule", "dryRun": False}, FakeContext()
        )
    assert len(stack.digests("app")) == 4


def test_push_batch_starts_one_run_for_the_distinct_repositories(stack: Stack) -> None:
    from ecr_retention.handlers import push

    records = [sqs_record(json.dumps(ecr_push_event("app", f"v{n}")), f"m{n}") for n in range(5)]
    records.append(sqs_record('{"detail-type": "ECR Image Action"', "broken"))

    response = push.lambda_handler({"Records": records}, FakeContext())
    again = push.lambda_handler({"Records": records}, FakeContext())  # the same batch, retried

    assert response == {"batchItemFailures": [{"itemIdentifier": "broken"}]}
    assert again == response
    sfn = boto3.client("stepfunctions", region_name=REGION)
    executions = sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"]
    assert len(executions) == 1
    described = sfn.describe_execution(executionArn=executions[0]["executionArn"])
    assert json.loads(described["input"]) == {"trigger": "push", "repositories": ["app"]}


@pytest.mark.parametrize("event", [scheduler_event(), s3_object_created_event("inventory-bucket", "in-use/prod.json")])
def test_tagger_tags_the_deployed_image_once(
    stack: Stack, event: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from ecr_retention.handlers import tagger

    result = tagger.lambda_handler(event, FakeContext())
    [age] = emf_metrics(capsys.readouterr().out, "InUseManifestAgeSeconds")
    assert age["Cluster"] == "prod"
    second = tagger.lambda_handler(event, FakeContext())

    assert result["tagged"] == 1
    assert second["tagged"] == 0
    assert second["alreadyTagged"] == 1
    ecr = boto3.client("ecr", region_name=REGION)
    [detail] = ecr.describe_images(repositoryName="app", imageIds=[{"imageDigest": stack.images["v2"]}])["imageDetails"]
    assert any(tag.startswith("deployed-prod-") for tag in detail["imageTags"])
    assert stack.digests("app") == set(stack.images.values())


def test_the_tagger_s_lines_carry_its_run_id(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from ecr_retention.handlers import tagger
    from ecr_retention.handlers.observability import logger

    logs = io.StringIO()  # the Powertools handler keeps the stream it was created with: hand it ours
    monkeypatch.setattr(logger.registered_handler, "stream", logs)

    result = tagger.lambda_handler(scheduler_event(), FakeContext())

    lines = [json.loads(line) for line in logs.getvalue().splitlines()]
    tagging = [line for line in lines if line["message"] == "tagging"]
    assert tagging, lines
    assert result["runId"].startswith("tag-")
    assert {line.get("correlation_id") for line in lines[lines.index(tagging[0]) :]} == {result["runId"]}


def test_tagger_refuses_an_event_that_is_not_eventbridge(stack: Stack) -> None:
    from ecr_retention.handlers import tagger

    with pytest.raises(InputError, match="tagger event"):
        tagger.lambda_handler({"Records": []}, FakeContext())
