"""What starts work: the three schedules (expression, no flexible window, target, input the target accepts),
the ECR push rule into the debounce queue and the push function, and the S3 Object Created rule of the
tagger; each with retries and a dead-letter queue. Event patterns are checked against real event shapes
with moto's EventBridge pattern matcher."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from moto.events.models import EventPattern

from ecr_retention.cdk import lambda_asset
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.handlers import collector
from ecr_retention.handlers.events import parse_event
from ecr_retention.handlers.wiring.collector import CollectorSettings
from ecr_retention.run_request import RunRequest
from support.infra_stacks import CONTEXT, RULES, SharedStack, build_stack, rules_file

ACCOUNT = "123456789012"
REGION = "eu-west-1"
DELIVERY = {"RetryPolicy": {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 3}}


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    return shared_stack(RULES, CONTEXT)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> Template:
    return Template.from_stack(stack)


def logical_id(stack: EcrRetentionStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def schedule(template: Template, expression: str) -> dict[str, Any]:
    [found] = [
        s["Properties"]
        for s in template.find_resources("AWS::Scheduler::Schedule").values()
        if s["Properties"]["ScheduleExpression"] == expression
    ]
    return found


def rule(template: Template, source: str) -> dict[str, Any]:
    """The rule of this source that starts work: the push rule for aws.ecr (the sentinel's rules, on ECR's removals,
    are tests/infra/test_sentinel.py's), the tagger's for aws.s3."""
    [found] = [
        r["Properties"]
        for r in template.find_resources("AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"]["source"] == [source] and not is_sentinel_rule(r["Properties"])
    ]
    return found


def is_sentinel_rule(properties: dict[str, Any]) -> bool:
    return str(properties.get("Description", "")).startswith("ecr-retention sentinel:")


def ecr_push(repository: str, action: str = "PUSH", result: str = "SUCCESS") -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "ECR Image Action",
        "source": "aws.ecr",
        "account": ACCOUNT,
        "time": "2026-11-30T01:54:34Z",
        "region": REGION,
        "resources": [],
        "detail": {
            "result": result,
            "repository-name": repository,
            "image-digest": "sha256:" + "7" * 64,
            "action-type": action,
            "image-tag": "v1",
        },
    }


def s3_object_created(bucket: str, key: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": ACCOUNT,
        "time": "2026-11-30T03:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {"key": key, "size": 512, "etag": "d41d8cd98f00b204e9800998ecf8427e", "sequencer": "00617F0"},
            "request-id": "N4N7GDK58NMKJ12R",
            "requester": ACCOUNT,
            "source-ip-address": "10.0.0.1",
            "reason": "PutObject",
        },
    }


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    return bool(EventPattern.load(json.dumps(pattern)).matches_event(event))


def test_the_sweep_schedule_starts_the_workflow_with_a_schedule_trigger(
    template: Template, stack: EcrRetentionStack
) -> None:
    sweep = schedule(template, "cron(30 2 * * ? *)")  # sweepSchedule from the context

    assert sweep["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert sweep["State"] == "ENABLED"
    assert sweep["Target"]["Arn"] == {"Ref": logical_id(stack, stack.workflow.state_machine)}
    assert sweep["Target"]["DeadLetterConfig"] == {
        "Arn": {"Fn::GetAtt": [logical_id(stack, stack.delivery_dead_letters), "Arn"]}
    }
    assert sweep["Target"]["RetryPolicy"] == DELIVERY["RetryPolicy"]
    assert json.loads(sweep["Target"]["Input"]) == {"trigger": "schedule"}
    assert parse_event(json.loads(sweep["Target"]["Input"]), RunRequest, "targets input").trigger == "schedule"


def delivered_input(target: dict[str, Any]) -> dict[str, Any]:
    """The input a schedule's target receives: pseudo parameters resolved at deploy, context attributes filled
    in by Scheduler at each invocation."""
    separator, parts = target["Input"]["Fn::Join"]
    pseudo = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION}
    text = separator.join(part if isinstance(part, str) else pseudo[part["Ref"]] for part in parts)
    for attribute, value in {
        "<aws.scheduler.execution-id>": str(uuid.uuid4()),
        "<aws.scheduler.scheduled-time>": "2026-11-30T03:00:00Z",
        "<aws.scheduler.schedule-arn>": f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/default/tagger",
    }.items():
        assert attribute in text
        text = text.replace(attribute, value)
    delivered: dict[str, Any] = json.loads(text)
    return delivered


def test_the_tagger_schedule_sends_a_scheduled_event_the_tagger_accepts(
    template: Template, stack: EcrRetentionStack
) -> None:
    tagger = schedule(template, "rate(30 minutes)")  # taggerSchedule from the context

    assert tagger["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert tagger["Target"]["Arn"] == {"Fn::GetAtt": [logical_id(stack, stack.tagger.function), "Arn"]}
    event = parse_event(delivered_input(tagger["Target"]), EventBridgeModel, "tagger event")
    assert (event.source, event.detail_type) == ("aws.scheduler", "Scheduled Event")


def test_the_collector_runs_hourly_on_its_own_schedule_with_an_event_it_accepts(
    template: Template, stack: EcrRetentionStack
) -> None:
    assert stack.collector is not None
    collecting = schedule(template, "rate(1 hour)")  # collectorSchedule's default

    assert collecting["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert collecting["State"] == "ENABLED"
    assert collecting["Target"]["Arn"] == {"Fn::GetAtt": [logical_id(stack, stack.collector.function), "Arn"]}
    assert collecting["Target"]["DeadLetterConfig"] == {
        "Arn": {"Fn::GetAtt": [logical_id(stack, stack.delivery_dead_letters), "Arn"]}
    }
    assert collecting["Target"]["RetryPolicy"] == DELIVERY["RetryPolicy"]
    assert collector.parse_trigger(delivered_input(collecting["Target"])) == "aws.scheduler"


def test_a_configured_collector_schedule_is_used(tmp_path: Path) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "collectorSchedule": "cron(50 * * * ? *)"})
    assert stack.collector is not None
    collecting = schedule(Template.from_stack(stack), "cron(50 * * * ? *)")
    assert collecting["Target"]["Arn"] == {"Fn::GetAtt": [logical_id(stack, stack.collector.function), "Arn"]}


def test_the_collector_function_collects_where_the_context_says(tmp_path: Path) -> None:
    spokes = ["arn:aws:iam::210987654321:role/ecr-retention-reader"]
    context = {
        **CONTEXT,
        "collectRegions": "eu-west-1,us-east-1",
        "spokeRoleArns": spokes,
        "taskDefinitionRevisions": 3,
    }
    # The spoke's aws-<account>-<region> manifests must be expected or optional (DeploySettings.check_against_the_stack).
    rules = RULES.replace(
        "clusters: [prod, dev]}",
        "clusters: [prod, dev], optional_clusters: [aws-210987654321-eu-west-1, aws-210987654321-us-east-1]}",
    )
    stack = build_stack(rules_file(tmp_path, rules), context)
    assert stack.collector is not None
    function = Template.from_stack(stack).find_resources("AWS::Lambda::Function")[
        logical_id(stack, stack.collector.function)
    ]["Properties"]
    environment = function["Environment"]["Variables"]
    assert json.loads(environment["COLLECT_REGIONS"]) == ["eu-west-1", "us-east-1"]
    # The list is in the asset, not the environment (over 4 KB at 200 spokes): the variable names the file.
    assert environment["SPOKE_ROLES_FILE"] == "/var/task/spoke-roles.json"
    assert "SPOKE_ROLE_ARNS" not in environment
    assert environment["TASK_DEFINITION_REVISIONS"] == "3"
    bundled = tmp_path / "asset" / "spoke-roles.json"
    bundled.parent.mkdir()
    bundled.write_bytes(lambda_asset.spoke_roles_document(spokes))  # what PipBundler writes into the asset
    settings = CollectorSettings.from_environ(
        {
            **{k: v for k, v in environment.items() if isinstance(v, str)},
            "SPOKE_ROLES_FILE": str(bundled),
            "BUCKET_NAME": "inventory",
            "AWS_REGION": REGION,
        }
    )
    assert (settings.collect_regions, settings.role_arns, settings.revisions) == (
        ("eu-west-1", "us-east-1"),
        tuple(spokes),
        3,
    )


def test_by_default_the_collector_reads_the_stacks_region_of_its_own_account(
    template: Template, stack: EcrRetentionStack
) -> None:
    assert stack.collector is not None
    function = template.find_resources("AWS::Lambda::Function")[logical_id(stack, stack.collector.function)]
    properties = function["Properties"]
    environment = properties["Environment"]["Variables"]
    assert environment["COLLECT_REGIONS"] == {"Fn::Join": ["", ['["', {"Ref": "AWS::Region"}, '"]']]}
    assert environment["SPOKE_ROLES_FILE"] == "/var/task/spoke-roles.json"
    assert environment["TASK_DEFINITION_REVISIONS"] == "5"
    assert environment["BUCKET_NAME"] == {"Ref": logical_id(stack, stack.inventory.bucket)}
    assert properties["Handler"] == "ecr_retention.handlers.collector.lambda_handler"
    assert (properties["MemorySize"], properties["Timeout"]) == (512, 900)


def test_the_schedules_use_one_role_that_scheduler_of_this_account_assumes(template: Template) -> None:
    roles = {
        s["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]
        for s in template.find_resources("AWS::Scheduler::Schedule").values()
    }
    [role_id] = roles
    trust = template.find_resources("AWS::IAM::Role")[role_id]["Properties"]["AssumeRolePolicyDocument"]
    assert trust["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
        }
    ]


def test_the_push_rule_takes_successful_pushes_of_managed_repositories(template: Template) -> None:
    pattern = dict(rule(template, "aws.ecr")["EventPattern"])
    assert pattern.pop("account") == [{"Ref": "AWS::AccountId"}]  # tests/infra/test_event_provenance.py

    # Literal policy patterns match exactly, globs by their literal prefix (tests/support/infra_stacks.RULES).
    assert pattern == {
        "source": ["aws.ecr"],
        "detail-type": ["ECR Image Action"],
        "detail": {
            "action-type": ["PUSH"],
            "result": ["SUCCESS"],
            "repository-name": ["app", {"prefix": "docker.io/"}, {"prefix": "team-"}],
        },
    }
    assert matches(pattern, ecr_push("app"))
    assert matches(pattern, ecr_push("team-a/api"))
    assert matches(pattern, ecr_push("docker.io/library/nginx"))
    assert not matches(pattern, ecr_push("application"))
    assert not matches(pattern, ecr_push("unmanaged"))
    assert not matches(pattern, ecr_push("app", action="DELETE"))
    assert not matches(pattern, ecr_push("app", result="FAILURE"))


def test_pushes_wait_in_the_encrypted_debounce_queue_with_a_dead_letter_queue(
    template: Template, stack: EcrRetentionStack
) -> None:
    assert stack.push is not None
    pushed = rule(template, "aws.ecr")
    queue_id = logical_id(stack, stack.push.queue)
    [target] = pushed["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert target["DeadLetterConfig"] == {
        "Arn": {"Fn::GetAtt": [logical_id(stack, stack.delivery_dead_letters), "Arn"]}
    }
    assert target["RetryPolicy"] == DELIVERY["RetryPolicy"]
    queue = template.find_resources("AWS::SQS::Queue")[queue_id]["Properties"]
    assert queue == {
        "DelaySeconds": 300,
        "VisibilityTimeout": 360,  # six times the push function's timeout
        "SqsManagedSseEnabled": True,
        "RedrivePolicy": {
            "deadLetterTargetArn": {"Fn::GetAtt": [logical_id(stack, stack.push.dead_letters), "Arn"]},
            "maxReceiveCount": 5,
        },
    }


def test_the_push_function_reads_the_queue_in_batching_windows_with_partial_failures(
    template: Template, stack: EcrRetentionStack
) -> None:
    assert stack.push is not None
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": {"Fn::GetAtt": [logical_id(stack, stack.push.queue), "Arn"]},
            "FunctionName": {"Ref": logical_id(stack, stack.push.push.function)},
            "BatchSize": 1000,
            "MaximumBatchingWindowInSeconds": 60,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    )


def test_push_triggered_runs_are_started_by_at_most_two_push_functions_at_a_time(
    template: Template, stack: EcrRetentionStack
) -> None:
    """A burst of pushes waits in the queue rather than starting runs side by side."""
    assert stack.push is not None
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": {"Fn::GetAtt": [logical_id(stack, stack.push.queue), "Arn"]},
            "ScalingConfig": {"MaximumConcurrency": 2},
        },
    )


def test_every_queue_is_encrypted_and_refuses_requests_without_tls(template: Template) -> None:
    queues = template.find_resources("AWS::SQS::Queue")
    assert len(queues) == 4  # the debounce queue and three dead-letter queues (delivery, debounce, the sentinel's)
    assert all(q["Properties"]["SqsManagedSseEnabled"] is True for q in queues.values())
    dead_letter_queues = [q for q in queues.values() if "RedrivePolicy" not in q["Properties"]]
    assert [q["Properties"]["MessageRetentionPeriod"] for q in dead_letter_queues] == [14 * 24 * 3600] * 3
    protected = {
        queue["Ref"]
        for policy in template.find_resources("AWS::SQS::QueuePolicy").values()
        if any(
            s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
        )
        for queue in policy["Properties"]["Queues"]
    }
    assert protected == set(queues)


def test_a_new_in_use_manifest_invokes_the_tagger(template: Template, stack: EcrRetentionStack) -> None:
    written = rule(template, "aws.s3")
    bucket_id = logical_id(stack, stack.inventory.bucket)
    pattern = dict(written["EventPattern"])
    assert pattern.pop("account") == [{"Ref": "AWS::AccountId"}]  # tests/infra/test_event_provenance.py
    assert pattern == {
        "source": ["aws.s3"],
        "detail-type": ["Object Created"],
        "detail": {"bucket": {"name": [{"Ref": bucket_id}]}, "object": {"key": [{"prefix": "in-use/"}]}},
    }
    resolved = {**pattern, "detail": {**pattern["detail"], "bucket": {"name": ["inventory"]}}}
    assert matches(resolved, s3_object_created("inventory", "in-use/prod.json"))
    assert not matches(resolved, s3_object_created("inventory", "reports/2026/11/30/r.json"))
    assert not matches(resolved, s3_object_created("elsewhere", "in-use/prod.json"))
    [target] = written["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [logical_id(stack, stack.tagger.function), "Arn"]}
    assert target["DeadLetterConfig"] == {
        "Arn": {"Fn::GetAtt": [logical_id(stack, stack.delivery_dead_letters), "Arn"]}
    }
    assert target["RetryPolicy"] == DELIVERY["RetryPolicy"]
    # The tagger event model accepts what EventBridge delivers.
    parse_event(s3_object_created("inventory", "in-use/prod.json"), EventBridgeModel, "tagger event")


@pytest.mark.parametrize("function", ["tagger", "collector"])
def test_a_failed_asynchronous_invocation_lands_in_the_dead_letter_queue(
    template: Template, stack: EcrRetentionStack, function: str
) -> None:
    function_id = logical_id(stack, getattr(stack, function).function)
    properties = template.find_resources("AWS::Lambda::Function")[function_id]["Properties"]
    assert properties["DeadLetterConfig"] == {
        "TargetArn": {"Fn::GetAtt": [logical_id(stack, stack.delivery_dead_letters), "Arn"]}
    }
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"FunctionName": {"Ref": function_id}, "MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 7200},
    )


def test_configured_prefixes_replace_the_ones_derived_from_the_rules(tmp_path: Path) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "pushRepositoryPrefixes": "team-,app-"})
    pattern = rule(Template.from_stack(stack), "aws.ecr")["EventPattern"]
    assert pattern["detail"]["repository-name"] == [{"prefix": "team-"}, {"prefix": "app-"}]


def test_an_empty_prefix_list_turns_the_push_trigger_off(tmp_path: Path) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "pushRepositoryPrefixes": []})
    template = Template.from_stack(stack)
    assert stack.push is None
    assert [
        r["Properties"]["EventPattern"]["source"]
        for r in template.find_resources("AWS::Events::Rule").values()
        if not is_sentinel_rule(r["Properties"])
    ] == [["aws.s3"]]
    handlers = {f["Properties"]["Handler"] for f in template.find_resources("AWS::Lambda::Function").values()}
    assert "ecr_retention.handlers.push.lambda_handler" not in handlers
