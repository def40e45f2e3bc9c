"""The push rule's pattern may be coarser than the rules file (a prefix per name past EventBridge's 2,048 characters,
or every repository when a pattern starts with a glob: infra.repository_scope.coarsened_matchers), so the push
function itself starts runs only for the repositories a policy manages (issue 43)."""

from __future__ import annotations

import json

import boto3

from support.lambda_stack import REGION, FakeContext, Stack, ecr_push_event, sqs_record


def test_a_push_to_a_repository_no_policy_manages_starts_no_run(stack: Stack) -> None:
    from ecr_retention.handlers import push

    # GIVEN pushes to a repository the rules file does not name, one that only shares its prefix, and a managed one
    records = [
        sqs_record(json.dumps(ecr_push_event("unmanaged", "v1")), "m1"),
        sqs_record(json.dumps(ecr_push_event("app-other", "v1")), "m2"),
    ]

    # WHEN the push function takes the batch
    response = push.lambda_handler({"Records": records}, FakeContext())

    # THEN every message is done with, and no run started
    sfn = boto3.client("stepfunctions", region_name=REGION)
    assert response == {"batchItemFailures": []}
    assert sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"] == []

    # AND a batch that also holds a managed repository starts one run for that one only
    records.append(sqs_record(json.dumps(ecr_push_event("app", "v2")), "m3"))
    push.lambda_handler({"Records": records}, FakeContext())
    [execution] = sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"]
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == {"trigger": "push", "repositories": ["app"]}
