"""The pruning workflow as synthesized: the state machine's shape (targets -> Distributed Map reading its
items from S3 -> report, reached even when the Map fails), the functions' runtime, size, logs, tracing and
environment, the lease table, and the pull-time exclusions of the roles that read manifests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from ecr_retention.aws.dynamodb_lease import LEASE_TABLE_KEY, LEASE_TABLE_TTL_ATTRIBUTE
from ecr_retention.cdk import constants
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.run_records import RunRecord
from ecr_retention.services.evaluate import DEFAULT_LEASE_SECONDS
from support.infra_stacks import CONTEXT, RULES, SharedStack, function_role

HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector", "sentinel")


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    return shared_stack(RULES, CONTEXT)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> Template:
    return Template.from_stack(stack)


def logical_id(stack: EcrRetentionStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def placeholder(value: Any) -> str:
    """Tokens inside the definition string, as text: ${LogicalId.Attribute} or ${LogicalId}."""
    if isinstance(value, str):
        return value
    [(function, argument)] = value.items()
    if function == "Ref":
        return "${" + argument + "}"
    if function == "Fn::GetAtt":
        return "${" + ".".join(argument) + "}"
    raise AssertionError(f"unexpected {value!r}")


@pytest.fixture(scope="module")
def definition(template: Template) -> dict[str, Any]:
    [machine] = template.find_resources("AWS::StepFunctions::StateMachine").values()
    separator, parts = machine["Properties"]["DefinitionString"]["Fn::Join"]
    document: dict[str, Any] = json.loads(separator.join(placeholder(part) for part in parts))
    return document


def test_a_run_chooses_targets_then_maps_then_reports(definition: dict[str, Any], stack: EcrRetentionStack) -> None:
    states = definition["States"]
    assert definition["StartAt"] == "ChooseTargets"
    assert states["ChooseTargets"]["Resource"] == "${" + logical_id(stack, stack.workflow.targets.function) + ".Arn}"
    assert "Parameters" not in states["ChooseTargets"]  # the execution's input as it is: {"trigger": ...}
    assert states["ChooseTargets"]["Next"] == "EvaluateEachRepository"
    assert states["EvaluateEachRepository"]["Next"] == "ReportRun"
    assert states["ReportRun"]["End"] is True
    assert definition["TimeoutSeconds"] == 24 * 3600


def test_the_map_reads_its_batches_from_the_runs_batches_file(
    definition: dict[str, Any], stack: EcrRetentionStack
) -> None:
    each = definition["States"]["EvaluateEachRepository"]
    assert each["Type"] == "Map"
    assert each["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert each["ItemReader"] == {
        "Resource": "arn:${AWS::Partition}:states:::s3:getObject",
        "ReaderConfig": {"InputType": "JSON"},
        "Parameters": {"Bucket": "${" + logical_id(stack, stack.inventory.bucket) + "}", "Key.$": "$.batchesKey"},
    }
    assert "ItemSelector" not in each  # each batch reaches the evaluate function as batches.json has it


def test_the_map_evaluates_a_batch_per_invocation_with_bounded_concurrency(
    definition: dict[str, Any], stack: EcrRetentionStack
) -> None:
    each = definition["States"]["EvaluateEachRepository"]
    assert each["MaxConcurrency"] == 25  # mapConcurrency from the context
    assert "ItemBatcher" not in each  # the targets step writes the batches (WorkBatch)
    processor = each["ItemProcessor"]
    assert processor["StartAt"] == "EvaluateRepository"
    state = processor["States"]["EvaluateRepository"]
    assert state["Resource"] == "${" + logical_id(stack, stack.workflow.evaluate.function) + ".Arn}"
    assert "Parameters" not in state
    assert state["End"] is True


def test_a_batch_that_ends_early_leaves_each_repository_to_an_invocation_of_its_own(
    definition: dict[str, Any], stack: EcrRetentionStack
) -> None:
    states = definition["States"]["EvaluateEachRepository"]["ItemProcessor"]["States"]
    assert states["EvaluateRepository"]["Catch"] == [
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.batchError", "Next": "EvaluateEachAlone"}
    ]
    alone = states["EvaluateEachAlone"]
    assert alone["Type"] == "Map"
    assert alone["ItemsPath"] == "$.repositories"
    assert alone["MaxConcurrency"] == 1
    assert alone["ItemSelector"] == {
        "runId.$": "$.runId",
        "trigger.$": "$.trigger",
        "dryRun.$": "$.dryRun",
        "region.$": "$.region",
        "repository.$": "$$.Map.Item.Value",
        "afterBatch": True,
    }
    task = alone["ItemProcessor"]["States"]["EvaluateAlone"]
    assert task["Resource"] == "${" + logical_id(stack, stack.workflow.evaluate.function) + ".Arn}"
    # A repository that fails alone too is left without a report (the report step lists it failed); the others go on.
    [catch] = task["Catch"]
    assert catch["ErrorEquals"] == ["States.ALL"]
    assert alone["ItemProcessor"]["States"][catch["Next"]]["Type"] == "Pass"


def test_failed_items_never_stop_the_map_and_its_results_stay_out_of_the_state(definition: dict[str, Any]) -> None:
    each = definition["States"]["EvaluateEachRepository"]
    assert each["ToleratedFailurePercentage"] == 100
    assert each["ResultPath"] is None
    assert each["ResultWriter"]["Parameters"]["Prefix"] == "runs/map-results"
    assert each["ResultWriter"]["WriterConfig"] == {"OutputType": "JSON", "Transformation": "COMPACT"}


def test_the_report_step_runs_even_when_the_map_fails(definition: dict[str, Any]) -> None:
    assert definition["States"]["EvaluateEachRepository"]["Catch"] == [
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.mapError", "Next": "ReportRun"}
    ]


def test_the_report_step_receives_exactly_the_targets_steps_record(
    definition: dict[str, Any], stack: EcrRetentionStack
) -> None:
    report = definition["States"]["ReportRun"]
    assert report["Resource"] == "${" + logical_id(stack, stack.workflow.report.function) + ".Arn}"
    parameters = report["Parameters"]
    assert parameters == {f"{field}.$": f"$.{field}" for field in parameters_fields(parameters)}
    # What the targets handler returns and what the report handler accepts (it refuses extra fields): one model.
    record = RunRecord(
        run_id="r", trigger="schedule", dry_run=True, started_at=datetime.now(UTC), targets_key="k", count=0, bucket="b"
    )
    accepted = {field.alias for field in RunRecord.model_fields.values()}
    assert parameters_fields(parameters) == set(record.to_wire()) == accepted


def parameters_fields(parameters: dict[str, str]) -> set[str]:
    return {key.removesuffix(".$") for key in parameters}


def test_every_task_but_the_batch_retries_lambda_service_errors_only(definition: dict[str, Any]) -> None:
    tasks = [
        definition["States"]["ChooseTargets"],
        definition["States"]["ReportRun"],
        definition["States"]["EvaluateEachRepository"]["ItemProcessor"]["States"]["EvaluateEachAlone"]["ItemProcessor"][
            "States"
        ]["EvaluateAlone"],
    ]
    for task in tasks:
        [retry] = task["Retry"]
        assert all(error.startswith("Lambda.") for error in retry["ErrorEquals"])
    # The batch's invocation is never retried whole: a retry would start again repositories its first invocation
    # began (and may have acted on). Its Catch's fallback, one invocation per repository that skips those reported
    # or begun in this run (services.evaluate_step.run_batch_member), is its retry.
    batch = definition["States"]["EvaluateEachRepository"]["ItemProcessor"]["States"]["EvaluateRepository"]
    assert "Retry" not in batch


def test_the_state_machine_is_traced_and_logs_every_event_without_payloads(template: Template) -> None:
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {
                "Level": "ALL",
                "IncludeExecutionData": False,
                "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": Match.any_value()}}],
            },
        },
    )


def test_the_lease_table_has_the_adapters_schema(template: Template) -> None:
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                "KeySchema": [{"AttributeName": LEASE_TABLE_KEY, "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": LEASE_TABLE_KEY, "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "TimeToLiveSpecification": {"AttributeName": LEASE_TABLE_TTL_ATTRIBUTE, "Enabled": True},
            },
            "DeletionPolicy": "Delete",
        },
    )


@pytest.mark.parametrize("handler", HANDLERS)
def test_each_function_runs_the_bundle_traced_with_json_logs_and_its_size(template: Template, handler: str) -> None:
    size = constants.FUNCTION_SIZES[handler]
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": f"ecr_retention.handlers.{handler}.lambda_handler",
            "Runtime": "python3.13",
            "Architectures": ["x86_64"],
            "MemorySize": size.memory_mb,
            "Timeout": size.timeout_seconds,
            "TracingConfig": {"Mode": "Active"},
            "LoggingConfig": {
                "LogFormat": "JSON",
                "ApplicationLogLevel": "INFO",
                "SystemLogLevel": "WARN",
                "LogGroup": {"Ref": Match.any_value()},
            },
        },
    )


def test_every_function_logs_to_its_own_group_kept_three_months(template: Template) -> None:
    functions = template.find_resources("AWS::Lambda::Function")
    groups = {f["Properties"]["LoggingConfig"]["LogGroup"]["Ref"] for f in functions.values()}
    assert len(groups) == len(functions) == len(HANDLERS)
    log_groups = template.find_resources("AWS::Logs::LogGroup")
    assert {log_groups[group]["Properties"]["RetentionInDays"] for group in groups} == {90}


def test_each_function_has_its_own_role(template: Template) -> None:
    document = template.to_json()
    assert len({function_role(document, handler) for handler in HANDLERS}) == len(HANDLERS)


def test_the_evaluation_ends_before_its_repository_lease(template: Template) -> None:
    assert constants.FUNCTION_SIZES["evaluate"].timeout_seconds < DEFAULT_LEASE_SECONDS


ENVIRONMENTS = {
    "targets": {"REGISTRY_ID", "MAP_CONCURRENCY"},
    "evaluate": {"REGISTRY_ID", "LEASE_TABLE"},
    "report": {"REGISTRY_ID", "TOPIC_ARN", "SENTINEL_ROLE_ARN"},
    "push": {"REGISTRY_ID", "STATE_MACHINE_ARN"},
    "tagger": {"REGISTRY_ID"},
    "sentinel": {"REGISTRY_ID", "TOPIC_ARN", "SENTINEL_ROLE_ARN"},
    # Names no registry: it reads what ECS and Lambda use (tests/infra/test_triggers.py checks the values).
    # EKS_CLUSTERS_FILE only with eksClusters (the list is in the asset: tests/infra/test_eks_access.py).
    "collector": {"COLLECT_REGIONS", "SPOKE_ROLES_FILE", "TASK_DEFINITION_REVISIONS"},
}


@pytest.mark.parametrize("handler", HANDLERS)
def test_each_function_gets_the_bucket_and_only_its_own_settings(
    template: Template, stack: EcrRetentionStack, handler: str
) -> None:
    [function] = [
        f
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == f"ecr_retention.handlers.{handler}.lambda_handler"
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["BUCKET_NAME"] == {"Ref": logical_id(stack, stack.inventory.bucket)}
    assert set(variables) == {"BUCKET_NAME", *constants.FUNCTION_ENVIRONMENT, *ENVIRONMENTS[handler]}
    # Every function: pydantic searches no distribution's metadata for plugins (tests/unit/test_no_pydantic_plugins.py).
    assert variables["PYDANTIC_DISABLE_PLUGINS"] == "__all__"
    # No RULES_FILE: the rules file ships in the asset, where handlers.settings looks by default.
    expected = {
        "REGISTRY_ID": {"Ref": "AWS::AccountId"},
        "COLLECT_REGIONS": {"Fn::Join": ["", ['["', {"Ref": "AWS::Region"}, '"]']]},
        "SPOKE_ROLES_FILE": "/var/task/spoke-roles.json",
        "TASK_DEFINITION_REVISIONS": "5",
        "EKS_CLUSTERS": "[]",
        "LEASE_TABLE": {"Ref": logical_id(stack, stack.workflow.lease_table)},
        "MAP_CONCURRENCY": "25",  # mapConcurrency from the context: the targets step sizes the run's batches by it
        "TOPIC_ARN": {"Ref": logical_id(stack, stack.reports.topic)},
        "STATE_MACHINE_ARN": {"Ref": logical_id(stack, stack.workflow.state_machine)},
        # The sentinel's own role, to the sentinel and the report step: the one writer whose records of removals/ count.
        "SENTINEL_ROLE_ARN": {"Fn::GetAtt": [logical_id(stack, stack.sentinel.sentinel.role), "Arn"]},
    }
    for name in ENVIRONMENTS[handler]:
        assert variables[name] == expected[name]


def test_the_roles_that_read_manifests_are_pull_time_update_exclusions(
    template: Template, stack: EcrRetentionStack
) -> None:
    exclusions = template.find_resources("AWS::ECR::PullTimeUpdateExclusion")
    assert sorted(e["Properties"]["PrincipalArn"]["Fn::GetAtt"][0] for e in exclusions.values()) == sorted(
        [logical_id(stack, stack.workflow.evaluate.role), logical_id(stack, stack.tagger.tagger.role)]
    )
    assert {tuple(e["Properties"]["PrincipalArn"]["Fn::GetAtt"][1:]) for e in exclusions.values()} == {("Arn",)}


def test_the_workflow_construct_reads_the_run_record_without_boto3_or_powertools() -> None:
    # The CDK app imports the record's model (ecr_retention.workflow), never the Lambda runtime's dependencies.
    script = (
        "import sys, infra.pruning_workflow; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'boto3', 'botocore', 'aws_lambda_powertools'}))"
    )
    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "lambdas"), str(root)])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment, cwd=root, check=True
    )
    assert done.stdout.strip() == "[]"
