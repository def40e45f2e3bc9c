"""The Lambda handlers under pressure, on moto (support.lambda_stack): a worker whose remaining time runs out
mid-removal, events of the wrong shape for every handler, and secrets in the functions' environment.

- A worker near its deadline stops issuing removals, stores what it did (the report step reports it, failed
  DeadlineReached for the rest), and the next run converges.
- Every handler refuses a malformed event (EventBridge, S3, SQS, workflow input) with one line, and nothing is
  started, read into a report, tagged or deleted.
- Neither the logs (Powertools JSON on stdout, the standard loggers) nor the reports and SNS summaries carry the
  function's credentials or anything else of its environment.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import boto3
import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.services.act import DEADLINE_MARGIN_SECONDS
from support.lambda_stack import (
    REGION,
    FakeContext,
    Stack,
    ecr_push_event,
    push,
    s3_object_created_event,
    scheduler_event,
    sqs_record,
)


@dataclass
class RunningOutContext(FakeContext):
    """A Lambda context whose remaining time drops below the deadline margin after `ample` questions."""

    ample: int = 1
    asked: int = 0
    answers: list[int] = field(default_factory=list)

    def get_remaining_time_in_millis(self) -> int:
        self.asked += 1
        remaining = 600_000 if self.asked <= self.ample else int((DEADLINE_MARGIN_SECONDS - 60) * 1000)
        self.answers.append(remaining)
        return remaining


def stored_report(stack: Stack, key: str) -> dict[str, Any]:
    body = stack.s3().get_object(Bucket=stack.bucket, Key=key.removeprefix(f"s3://{stack.bucket}/"))["Body"].read()
    document: dict[str, Any] = json.loads(body)
    return document


def keys(stack: Stack, prefix: str = "") -> list[str]:
    listed = stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix=prefix).get("Contents", [])
    return sorted(entry["Key"] for entry in listed)


def run_workflow(context: Callable[[], FakeContext]) -> tuple[list[dict[str, object]], dict[str, object]]:
    """What the state machine does: targets, each work item through the evaluate function, then the report."""
    from ecr_retention.handlers import evaluate, report, targets

    started = targets.lambda_handler({"trigger": "schedule"}, FakeContext())
    items = json.loads(
        boto3.client("s3", region_name=REGION)
        .get_object(Bucket="inventory-bucket", Key=started["targetsKey"])["Body"]
        .read()
    )
    results = [evaluate.lambda_handler(item, context()) for item in items]
    return results, report.lambda_handler(started, FakeContext())


def test_a_worker_near_its_deadline_stops_removing_reports_what_it_did_and_the_next_run_converges(
    stack: Stack,
) -> None:
    ecr = boto3.client("ecr", region_name=REGION)
    old = {push(ecr, "app", f"v0.{n}", timedelta(days=200 + n)) for n in range(110)}
    builds = {push(ecr, "app", f"build-{n}", timedelta(hours=2)) for n in range(20)}  # no rule selects them
    removable = old | {stack.images["v1"], stack.images["v3"]}  # v2 runs in prod, v4 is the newest release
    context = RunningOutContext(ample=1)

    results, finished = run_workflow(lambda: context)

    # One BatchDeleteImage of 100 had time; the remaining 12 were not attempted.
    assert results == [{"repository": "app", "outcome": "partial", "deleted": 100, "failed": 12}]
    assert context.answers == [600_000, 30_000]
    assert finished["outcome"] == "partial"
    document = stored_report(stack, str(finished["reportKey"]))
    [app] = document["repositories"]
    deleted = {e["imageDigest"] for e in app["deleted"]}
    failed = {e["imageDigest"]: e["errorCode"] for e in app["failed"]}
    assert set(failed.values()) == {"DeadlineReached"}
    assert deleted | set(failed) == removable
    left = stack.digests("app")
    assert deleted.isdisjoint(left)
    assert set(failed) <= left
    assert {stack.images["v2"], stack.images["v4"], *builds} <= left

    results, finished = run_workflow(FakeContext)

    assert results == [{"repository": "app", "outcome": "ok", "deleted": 12, "failed": 0}]
    assert finished["outcome"] == "ok"
    assert stack.digests("app") == {stack.images["v2"], stack.images["v4"], *builds}


# --- malformed events ------------------------------------------------------------------------------------------


def s3_notification() -> dict[str, Any]:
    """An S3 event notification (not through EventBridge): the shape no function here is subscribed to."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": "inventory-bucket"}, "object": {"key": "in-use/prod.json", "size": 512}},
            }
        ]
    }


def eventbridge_without(*names: str) -> dict[str, Any]:
    event = scheduler_event()
    for name in names:
        event.pop(name)
    return event


def sqs_event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


WORK_ITEM = {"runId": "20261130T030000Z-schedule-1a2b3c4d", "repository": "app", "trigger": "schedule", "dryRun": True}
RUN_STARTED = {
    "runId": "20261130T030000Z-schedule-1a2b3c4d",
    "trigger": "schedule",
    "dryRun": False,
    "startedAt": "2026-11-30T03:00:00+00:00",
    "targetsKey": "runs/20261130T030000Z-schedule-1a2b3c4d/targets.json",
    "count": 1,
}

MALFORMED: list[tuple[str, Any, str]] = [
    ("targets", None, "targets input: should be an object"),
    ("targets", ["schedule"], "targets input: should be an object"),
    ("targets", {"trigger": "nightly"}, "targets input: trigger"),
    ("targets", {"trigger": "push", "repositories": []}, "targets input: repositories"),
    ("targets", {"trigger": "push", "repositories": ["../etc/passwd"]}, "targets input: repositories"),
    ("targets", s3_notification(), "targets input: Records: unknown key"),
    ("targets", sqs_event(sqs_record("{}", "m1")), "targets input: Records: unknown key"),
    ("evaluate", {}, "work item: runId: required but missing"),
    ("evaluate", {**WORK_ITEM, "dryRun": "false"}, "work item: dryRun"),
    ("evaluate", {**WORK_ITEM, "dryRun": 0}, "work item: dryRun"),
    ("evaluate", {**WORK_ITEM, "repository": "App Repo"}, "work item: repository"),
    ("evaluate", {**WORK_ITEM, "runId": "../../reports/x"}, "work item: runId"),
    ("evaluate", scheduler_event(), "work item:"),
    ("report", {**RUN_STARTED, "startedAt": "yesterday"}, "report input: startedAt"),
    ("report", {**RUN_STARTED, "count": -1}, "report input: count"),
    ("report", {**RUN_STARTED, "dryRun": "no"}, "report input: dryRun"),
    ("report", s3_notification(), "report input:"),
    ("tagger", s3_notification(), "tagger event:"),
    ("tagger", eventbridge_without("detail-type"), "tagger event: detail-type"),
    ("tagger", {**scheduler_event(), "time": "not a time"}, "tagger event: time"),
    ("tagger", None, "tagger event: should be an object"),
    ("sentinel", None, "sentinel event:"),
    ("sentinel", scheduler_event(), "sentinel event:"),
    ("sentinel", {**ecr_push_event("app", "v2"), "detail-type": "ECR Image Action"}, "sentinel event:"),
    ("sentinel", s3_notification(), "sentinel event:"),
    ("push", None, "SQS event: should be an object"),
    ("push", ["x"], "SQS event: should be an object"),
    ("push", {"Records": "x"}, "SQS event: Records"),
    ("push", sqs_event({"body": "{}"}), "SQS event: Records"),
    ("push", scheduler_event(), "SQS event: Records"),
]


def nothing_done(stack: Stack, keys_before: list[str]) -> None:
    assert stack.digests("app") == set(stack.images.values())
    ecr = boto3.client("ecr", region_name=REGION)
    assert all(tags == [f"v{n}"] for n, tags in enumerate(image_tags(ecr), start=1))
    assert keys(stack) == keys_before
    sfn = boto3.client("stepfunctions", region_name=REGION)
    assert sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"] == []
    assert stack.messages() == []


def image_tags(ecr: Any) -> list[list[str]]:
    details = ecr.describe_images(repositoryName="app")["imageDetails"]
    return [sorted(detail.get("imageTags", [])) for detail in sorted(details, key=lambda d: d["imagePushedAt"])]


@pytest.mark.parametrize(
    ("handler", "event", "problem"), MALFORMED, ids=[f"{h}-{i}" for i, (h, _, _) in enumerate(MALFORMED)]
)
def test_every_handler_refuses_a_malformed_event_with_one_line_and_does_nothing(
    stack: Stack, handler: str, event: Any, problem: str
) -> None:
    import importlib

    module = importlib.import_module(f"ecr_retention.handlers.{handler}")
    keys_before = keys(stack)

    with pytest.raises(InputError) as raised:
        module.lambda_handler(event, FakeContext())

    message = str(raised.value)
    assert message.startswith(problem), message
    assert "\n" not in message
    nothing_done(stack, keys_before)


def test_a_batch_of_only_malformed_push_messages_fails_each_alone_and_starts_nothing(stack: Stack) -> None:
    from ecr_retention.handlers import push as push_handler

    records = [
        sqs_record("not json", "m1"),
        sqs_record(json.dumps({**ecr_push_event("app", "v9"), "source": "aws.s3"}), "m2"),
        sqs_record(json.dumps(s3_object_created_event("inventory-bucket", "in-use/prod.json")), "m3"),
    ]
    keys_before = keys(stack)

    response = push_handler.lambda_handler(sqs_event(*records), FakeContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": m} for m in ("m1", "m2", "m3")]}
    nothing_done(stack, keys_before)


# --- secrets ------------------------------------------------------------------------------------------------------

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-K7MDENG-SECRET-ACCESS-KEY-4f9c",
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEJr-SESSION-TOKEN-a3e1d77b",
    "GITHUB_TOKEN": "ghp_SECRETxgQ3nTkzP6p0VQ8sCUxq",
    "DATABASE_URL": "postgres://app:SECRET-db-password-91b@db.internal:5432/app",
}


def test_logs_reports_and_summaries_carry_no_credentials_or_environment(
    stack: Stack,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from ecr_retention.handlers import push as push_handler
    from ecr_retention.handlers import tagger
    from ecr_retention.handlers.observability import logger

    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    logs = io.StringIO()  # the Powertools handler keeps the stream it was created with: hand it ours
    monkeypatch.setattr(logger.registered_handler, "stream", logs)
    caplog.set_level(logging.INFO)
    # A failure on the way, logged with its traceback and reported: app's lease, which its plan's deletions need,
    # cannot be taken in the first run; the second one finds it so again.
    boto3.client("dynamodb", region_name=REGION).delete_table(TableName="leases")
    run_workflow(FakeContext)
    run_workflow(FakeContext)
    tagger.lambda_handler(scheduler_event(), FakeContext())
    push_handler.lambda_handler(sqs_event(sqs_record(json.dumps(ecr_push_event("app", "v9")), "m1")), FakeContext())
    with pytest.raises(InputError):
        tagger.lambda_handler(s3_notification(), FakeContext())

    captured = capsys.readouterr()
    s3 = stack.s3()
    stored = [s3.get_object(Bucket=stack.bucket, Key=key)["Body"].read().decode() for key in keys(stack)]
    messages = [json.dumps(message) for message in stack.messages()]
    assert any("lease could not be taken" in text for text in stored)  # the failure path ran, and is reported
    powertools = logs.getvalue()
    assert "repository evaluated" in powertools
    assert "run reported" in powertools
    assert "taking the lease of app failed" in powertools  # a service's line, with its traceback
    everything = "\n".join([powertools, captured.out, captured.err, caplog.text, *stored, *messages])
    for name, value in SECRETS.items():
        assert value not in everything, f"{name} leaked"
        assert name not in everything, f"{name} named"
    assert "AWS_ACCESS_KEY_ID" not in everything
