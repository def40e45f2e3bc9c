"""What a cold container does first, on moto (support.lambda_stack): each function reads its own settings and
builds only its own adapters, at its first invocation and before it reads the event, so that an environment it
cannot work with fails that invocation whatever the event is, and a function never fails for a setting or a
rules file it does not use. Settings are never read at import."""

from __future__ import annotations

import importlib
import json

import boto3
import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.handlers.wiring import forget_cold_start
from support.lambda_stack import REGION, FakeContext, Stack, ecr_push_event, sqs_record


def executions(stack: Stack) -> list[object]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    return list(sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"])


def test_push_without_a_state_machine_fails_its_first_invocation_even_with_no_valid_message(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ecr_retention.handlers import push

    # GIVEN a cold push function whose environment names no state machine
    monkeypatch.delenv("STATE_MACHINE_ARN")
    forget_cold_start()

    # WHEN its first batch holds only a malformed message
    with pytest.raises(InputError) as raised:
        push.lambda_handler({"Records": [sqs_record("not json", "m1")]}, FakeContext())

    # THEN the invocation fails on the environment, not on the message (which would be answered as a partial failure)
    assert str(raised.value) == "function environment: STATE_MACHINE_ARN: required but missing"
    assert executions(stack) == []


def test_push_needs_the_rules_file_but_not_the_pipelines_adapters(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The push rule's pattern may be coarser than the rules file (issue 43: infra.repository_scope.coarsened_matchers),
    so the push function reads the rules to start runs only for managed repositories; it needs nothing else."""
    from ecr_retention.handlers import push

    # GIVEN a push function with no bucket, no topic and no lease table
    for name in ("BUCKET_NAME", "TOPIC_ARN", "LEASE_TABLE"):
        monkeypatch.delenv(name)
    forget_cold_start()

    # WHEN a push arrives
    response = push.lambda_handler(
        {"Records": [sqs_record(json.dumps(ecr_push_event("app", "v9")), "m1")]}, FakeContext()
    )

    # THEN it starts its run
    assert response == {"batchItemFailures": []}
    assert len(executions(stack)) == 1


@pytest.mark.parametrize(
    ("handler", "variable"),
    [
        ("targets", "BUCKET_NAME"),
        ("evaluate", "LEASE_TABLE"),
        ("report", "TOPIC_ARN"),
        ("tagger", "BUCKET_NAME"),
        ("collector", "BUCKET_NAME"),
        ("sentinel", "TOPIC_ARN"),
    ],
)
def test_a_function_missing_a_variable_it_needs_fails_before_reading_its_event(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, handler: str, variable: str
) -> None:
    module = importlib.import_module(f"ecr_retention.handlers.{handler}")
    monkeypatch.delenv(variable)
    forget_cold_start()

    with pytest.raises(InputError) as raised:
        module.lambda_handler({"not": "an event of any function"}, FakeContext())

    assert str(raised.value) == f"function environment: {variable}: required but missing"
    assert stack.digests("app") == set(stack.images.values())


def test_a_function_builds_its_wiring_once_per_cold_start(stack: Stack) -> None:
    from ecr_retention.handlers import evaluate
    from ecr_retention.handlers.wiring.evaluate import evaluate_at_cold_start

    item = {"runId": "r-1", "repository": "app", "trigger": "schedule", "dryRun": True}
    evaluate.lambda_handler(item, FakeContext())
    built = evaluate_at_cold_start()
    evaluate.lambda_handler(item, FakeContext())

    assert evaluate_at_cold_start() is built
