"""Least privilege, asserted on the synthesized template: each role's exact actions and resources, no
wildcard action anywhere, resource '*' only for actions that support no resource-level permissions, and
ECR's mutating actions only on the repository patterns of the rules file."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk.spoke_templates import SPOKE_READER_ROLE, template_path
from ecr_retention.cdk.stack import EcrRetentionStack
from support.infra_stacks import (
    CONTEXT,
    RULES,
    SPOKE_ROLE_ARNS,
    SharedStack,
    build_stack,
    function_role,
    role_statements,
    rules_file,
)

REGISTRY = "arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/"
MANAGED = [REGISTRY + pattern for pattern in ("app", "docker.io/*", "team-*/*")]
XRAY = ("xray:PutTelemetryRecords", "xray:PutTraceSegments")
# Actions that support no resource-level permissions (Service Authorization Reference): only these may
# have the resource '*'.
STATE_MACHINE_STAR_ACTIONS = {
    *XRAY,
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "logs:CreateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:DescribeLogGroups",
    "logs:DescribeResourcePolicies",
    "logs:GetLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:UpdateLogDelivery",
}
# The AWS inventory collector's lists (ecs:ListTasks names a container instance only when filtered by one; the
# collector lists whole clusters).
COLLECTOR_STAR_ACTIONS = (
    "ecs:DescribeTaskDefinition",
    "ecs:ListClusters",
    "ecs:ListServices",
    "ecs:ListTaskDefinitions",
    "ecs:ListTasks",
    "events:ListEventBuses",
    "events:ListRules",
    "lambda:ListFunctions",
    "scheduler:ListSchedules",
)
# The report step's read of the repository creation templates.
REPORT_STAR_ACTIONS = ("ecr:DescribeRepositoryCreationTemplates",)
# DescribeRegistry (the targets step) describes the account's registry in the region, not a repository.
STAR_RESOURCE_ACTIONS = (
    STATE_MACHINE_STAR_ACTIONS | set(COLLECTOR_STAR_ACTIONS) | set(REPORT_STAR_ACTIONS) | {"ecr:DescribeRegistry"}
)
ECR_MUTATIONS = {"ecr:BatchDeleteImage", "ecr:PutImage", "ecr:UpdateImageStorageClass"}

Statement = tuple[tuple[str, ...], tuple[str, ...], str]


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    return shared_stack(RULES, CONTEXT)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


@pytest.fixture(scope="module")
def names(stack: EcrRetentionStack) -> dict[str, str]:
    """Logical id -> a readable name, for the resources the statements point at."""

    def logical_id(construct: Any) -> str:
        return stack.get_logical_id(construct.node.default_child)

    workflow = stack.workflow
    assert stack.push is not None
    assert stack.collector is not None
    return {
        logical_id(stack.inventory.bucket): "Bucket",
        logical_id(workflow.lease_table): "LeaseTable",
        logical_id(stack.reports.topic): "ReportTopic",
        logical_id(stack.reports.key): "TopicKey",
        logical_id(workflow.state_machine): "StateMachine",
        logical_id(stack.delivery_dead_letters): "DeliveryDLQ",
        logical_id(stack.push.queue): "DebounceQueue",
        logical_id(workflow.targets.function): "TargetsFunction",
        logical_id(workflow.evaluate.function): "EvaluateFunction",
        logical_id(workflow.report.function): "ReportFunction",
        logical_id(stack.tagger.function): "TaggerFunction",
        logical_id(stack.collector.function): "CollectorFunction",
        logical_id(stack.sentinel.function): "SentinelFunction",
        logical_id(stack.sentinel.dead_letters): "SentinelDLQ",
        **{
            logical_id(f.log_group): f"{f.node.id}Logs"
            for f in (
                *workflow.functions,
                stack.tagger.tagger,
                stack.push.push,
                stack.collector.collector,
                stack.sentinel.sentinel,
            )
        },
    }


def render(value: Any, names: dict[str, str]) -> str:
    """A CloudFormation value as readable text: ${AWS::Region}, ${Bucket.Arn}, ${LeaseTable}."""
    if isinstance(value, str):
        return value
    [(function, argument)] = value.items()
    if function == "Ref":
        return "${" + names.get(argument, argument) + "}"
    if function == "Fn::GetAtt":
        return "${" + names.get(argument[0], argument[0]) + "." + argument[1] + "}"
    if function == "Fn::Join":
        return str(argument[0]).join(render(part, names) for part in argument[1])
    raise AssertionError(f"unexpected {value!r}")


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def normalized(statements: list[dict[str, Any]], names: dict[str, str]) -> list[Statement]:
    result = []
    for statement in statements:
        assert statement["Effect"] == "Allow", statement
        condition = json.dumps(statement.get("Condition", {}), sort_keys=True)
        result.append(
            (
                tuple(sorted(listed(statement["Action"]))),
                tuple(sorted(render(r, names) for r in listed(statement["Resource"]))),
                condition,
            )
        )
    return sorted(result)


def role_of(template: dict[str, Any], service: str) -> str:
    [role_id] = [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
        and resource["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": service}
    ]
    return role_id


def logs_statement(name: str) -> Statement:
    return (("logs:CreateLogStream", "logs:PutLogEvents"), ("${" + name + "Logs.Arn}",), "{}")


def test_the_deleting_role_holds_exactly_what_an_evaluation_needs(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    statements = normalized(role_statements(template, function_role(template, "evaluate")), names)

    assert statements == sorted(
        [
            (
                (
                    "ecr:BatchDeleteImage",
                    "ecr:BatchGetImage",
                    "ecr:DescribeImages",
                    "ecr:GetLifecyclePolicy",
                    "ecr:UpdateImageStorageClass",
                ),
                tuple(MANAGED),
                "{}",
            ),
            (("ecr:DescribeImages",), (REGISTRY + "frontend",), "{}"),  # tag_in_repositories: [frontend]
            (("dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"), ("${LeaseTable.Arn}",), "{}"),
            (("s3:ListBucket",), ("${Bucket.Arn}",), "{}"),
            MEMORY_VERSIONS,  # a missing memory: deleted, or never written?
            (
                ("s3:GetObject",),
                (
                    "${Bucket.Arn}/holds/*",  # the holds: each keeps its image
                    "${Bucket.Arn}/in-use/*",
                    "${Bucket.Arn}/manifests/*",
                    "${Bucket.Arn}/runs/*/replication.json",
                    "${Bucket.Arn}/snapshots/*",  # its repository's kept snapshot: written again only when changed
                    "${Bucket.Arn}/state/in-use-memory.json",  # the in-use memory: read, never written
                ),
                "{}",
            ),
            (
                ("s3:PutObject",),
                (
                    "${Bucket.Arn}/manifests/*",
                    "${Bucket.Arn}/runs/*/batches/*",
                    "${Bucket.Arn}/runs/*/repositories/*",
                    "${Bucket.Arn}/snapshots/*",  # each repository as it was read, for reviews
                ),
                "{}",
            ),
            logs_statement("Evaluate"),
            (XRAY, ("*",), "{}"),
        ]
    )


# The versions of the in-use memory's key only (infra.pruning_workflow.memory_versions_statement).
MEMORY_VERSIONS = (
    ("s3:ListBucketVersions",),
    ("${Bucket.Arn}",),
    '{"StringEquals": {"s3:prefix": "state/in-use-memory.json"}}',
)


def test_the_targets_role_lists_repositories_reads_the_replication_and_writes_the_run_items(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    assert normalized(role_statements(template, function_role(template, "targets")), names) == sorted(
        [
            (("ecr:DescribeRepositories",), (REGISTRY + "*",), "{}"),
            (("ecr:DescribeRegistry",), ("*",), "{}"),
            (
                ("s3:PutObject",),
                (
                    "${Bucket.Arn}/runs/*/batches.json",
                    "${Bucket.Arn}/runs/*/replication.json",
                    "${Bucket.Arn}/runs/*/targets.json",
                ),
                "{}",
            ),
            logs_statement("Targets"),
            (XRAY, ("*",), "{}"),
        ]
    )


def test_the_report_role_reads_run_state_writes_reports_and_the_in_use_memory_and_publishes(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    memory = "${Bucket.Arn}/state/in-use-memory.json"  # its only writer (the bucket policy refuses everyone else)
    assert normalized(role_statements(template, function_role(template, "report")), names) == sorted(
        [
            (("s3:ListBucket",), ("${Bucket.Arn}",), "{}"),  # a missing memory is NoSuchKey, not AccessDenied
            MEMORY_VERSIONS,
            (
                ("s3:GetObject",),
                (
                    "${Bucket.Arn}/holds/*",  # the holds that end soon are named in the summary
                    "${Bucket.Arn}/in-use/*",
                    "${Bucket.Arn}/removals/*",
                    "${Bucket.Arn}/runs/*",
                    memory,
                ),
                "{}",
            ),
            (("s3:PutObject",), ("${Bucket.Arn}/reports/*", memory), "{}"),
            (("ecr:DescribeImages",), (REGISTRY + "*",), "{}"),  # the in-use check, in any repository
            (("sns:Publish",), ("${ReportTopic}",), "{}"),
            (("kms:Decrypt", "kms:GenerateDataKey"), ("${TopicKey.Arn}",), "{}"),
            (REPORT_STAR_ACTIONS, ("*",), "{}"),
            logs_statement("Report"),
            (XRAY, ("*",), "{}"),
        ]
    )


def test_the_report_step_reads_images_and_removals_and_changes_nothing(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    # The in-use check looks referenced images up in any repository and reads the sentinel's removals: it reads only.
    statements = normalized(role_statements(template, function_role(template, "report")), names)
    ecr = [statement for statement in statements if any(action.startswith("ecr:") for action in statement[0])]
    assert sorted(action for statement in ecr for action in statement[0]) == [
        "ecr:DescribeImages",
        *REPORT_STAR_ACTIONS,
    ]
    removals = [statement for statement in statements if "${Bucket.Arn}/removals/*" in statement[1]]
    assert [statement[0] for statement in removals] == [("s3:GetObject",)]


def test_the_tagger_role_tags_only_in_managed_repositories(template: dict[str, Any], names: dict[str, str]) -> None:
    in_use = json.dumps({"StringLike": {"s3:prefix": ["in-use/*"]}}, sort_keys=True)
    assert normalized(role_statements(template, function_role(template, "tagger")), names) == sorted(
        [
            (("ecr:BatchGetImage", "ecr:DescribeImages", "ecr:PutImage"), tuple(MANAGED), "{}"),
            (("s3:ListBucket",), ("${Bucket.Arn}",), in_use),
            (("s3:GetObject",), ("${Bucket.Arn}/in-use/*",), "{}"),
            (("sqs:SendMessage",), ("${DeliveryDLQ.Arn}",), "{}"),
            logs_statement("Tagger"),
            (XRAY, ("*",), "{}"),
        ]
    )


def sentinel_statements(removals_and_cache_written: bool = False) -> list[Statement]:
    written = (
        ("${Bucket.Arn}/manifests/*", "${Bucket.Arn}/removals/*")
        if removals_and_cache_written
        else ("${Bucket.Arn}/removals/*",)
    )
    return sorted(
        [
            (("ecr:DescribeImages",), (REGISTRY + "*",), "{}"),
            (("ecr:UpdateImageStorageClass",), tuple(MANAGED), "{}"),  # restores only where a policy applies
            (("ecr:DescribeRegistry",), ("*",), "{}"),
            (("s3:ListBucket",), ("${Bucket.Arn}",), "{}"),
            (
                ("s3:GetObject",),
                (
                    "${Bucket.Arn}/holds/*",  # a removal of a held image is alerted
                    "${Bucket.Arn}/in-use/*",
                    "${Bucket.Arn}/manifests/*",
                    "${Bucket.Arn}/removals/*",
                    "${Bucket.Arn}/state/in-use-memory.json",
                ),
                "{}",
            ),
            (("s3:PutObject",), written, "{}"),
            (("sns:Publish",), ("${ReportTopic}",), "{}"),
            (("kms:Decrypt", "kms:GenerateDataKey"), ("${TopicKey.Arn}",), "{}"),
            (("sqs:SendMessage",), ("${SentinelDLQ.Arn}",), "{}"),
            logs_statement("Sentinel"),
            (XRAY, ("*",), "{}"),
        ]
    )


def test_the_sentinel_role_reads_what_runs_records_removals_restores_only_in_managed_repositories_and_alerts(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    statements = normalized(role_statements(template, function_role(template, "sentinel")), names)
    assert statements == sentinel_statements()
    assert not [s for s in statements if "ecr:BatchDeleteImage" in s[0] or "ecr:PutImage" in s[0]]  # never deletes


def test_with_a_trail_the_sentinel_may_snapshot_a_repository_for_the_doctor(tmp_path: Any) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "cloudTrailManagementEvents": True})
    template = Template.from_stack(stack).to_json()
    bucket = stack.get_logical_id(stack.inventory.bucket.node.default_child)  # type: ignore[arg-type]
    statements = role_statements(template, function_role(template, "sentinel"))
    reads = [s for s in statements if "ecr:DescribeImages" in listed(s["Action"])]
    # and GetLifecyclePolicy everywhere: the doctor checks the policy ECR holds (tests/infra/test_event_provenance.py)
    assert [sorted(listed(s["Action"])) for s in reads] == [["ecr:DescribeImages", "ecr:GetLifecyclePolicy"]]
    # BatchGetImage reads manifests: only in the repositories a policy manages, as the restore
    [manifests] = [s for s in statements if "ecr:BatchGetImage" in listed(s["Action"])]
    assert sorted(listed(manifests["Action"])) == ["ecr:BatchGetImage", "ecr:UpdateImageStorageClass"]
    assert sorted(render(r, {}) for r in listed(manifests["Resource"])) == MANAGED
    [written] = [s for s in statements if s["Action"] == "s3:PutObject"]
    assert {render(r, {bucket: "Bucket"}) for r in listed(written["Resource"])} == {
        "${Bucket.Arn}/manifests/*",
        "${Bucket.Arn}/removals/*",
    }


def test_the_push_role_consumes_its_queue_and_starts_runs(template: dict[str, Any], names: dict[str, str]) -> None:
    assert normalized(role_statements(template, function_role(template, "push")), names) == sorted(
        [
            (
                (
                    "sqs:ChangeMessageVisibility",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "sqs:GetQueueUrl",
                    "sqs:ReceiveMessage",
                ),
                ("${DebounceQueue.Arn}",),
                "{}",
            ),
            (("states:StartExecution",), ("${StateMachine}",), "{}"),
            logs_statement("Push"),
            (XRAY, ("*",), "{}"),
        ]
    )


def test_the_state_machine_role_invokes_its_functions_and_reads_and_writes_only_run_state(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    executions = "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:${StateMachine.Name}"
    assert normalized(role_statements(template, role_of(template, "states.amazonaws.com")), names) == sorted(
        [
            (
                ("lambda:InvokeFunction",),
                ("${EvaluateFunction.Arn}", "${ReportFunction.Arn}", "${TargetsFunction.Arn}"),
                "{}",
            ),
            (("s3:GetObject",), ("${Bucket.Arn}/runs/*/batches.json",), "{}"),
            (
                ("s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:PutObject"),
                ("${Bucket.Arn}/runs/map-results/*",),
                "{}",
            ),
            # Log delivery and X-Ray, one statement (the CDK merges statements of equal resources).
            (tuple(sorted(STATE_MACHINE_STAR_ACTIONS)), ("*",), "{}"),
            (("states:StartExecution",), ("${StateMachine}",), "{}"),
            (("states:DescribeExecution", "states:StopExecution"), (executions + ":*",), "{}"),
            (("states:RedriveExecution",), (executions + "/*:*",), "{}"),
        ]
    )


def test_the_schedules_role_starts_the_sweep_and_invokes_the_tagger_and_the_collector(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    assert normalized(role_statements(template, role_of(template, "scheduler.amazonaws.com")), names) == sorted(
        [
            (("states:StartExecution",), ("${StateMachine}",), "{}"),
            (("lambda:InvokeFunction",), ("${CollectorFunction.Arn}", "${TaggerFunction.Arn}"), "{}"),
            (("sqs:SendMessage",), ("${DeliveryDLQ.Arn}",), "{}"),
        ]
    )


def any_region(service: str, resource: str) -> str:
    return f"arn:${{AWS::Partition}}:{service}:*:${{AWS::AccountId}}:{resource}"


COLLECTOR_READS = [
    (COLLECTOR_STAR_ACTIONS, ("*",), "{}"),
    (
        ("ecs:DescribeServices", "ecs:DescribeTasks"),
        (any_region("ecs", "service/*"), any_region("ecs", "task/*")),
        "{}",
    ),
    (("events:ListTargetsByRule",), (any_region("events", "rule/*"),), "{}"),
    (("scheduler:GetSchedule",), (any_region("scheduler", "schedule/*"),), "{}"),
    (("lambda:GetFunction", "lambda:ListAliases"), (any_region("lambda", "function:*"),), "{}"),
]


def test_the_collector_role_reads_workloads_and_writes_only_the_aws_inventory_manifests(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    # No spoke roles in CONTEXT: the collector reads its own account and assumes nothing. It reads back only its own
    # manifests (an incomplete collection carries over what the manifest it replaces named).
    assert normalized(role_statements(template, function_role(template, "collector")), names) == sorted(
        [
            *COLLECTOR_READS,
            (("s3:GetObject", "s3:PutObject"), ("${Bucket.Arn}/in-use/aws-*.json",), "{}"),
            (("s3:ListBucket",), ("${Bucket.Arn}",), "{}"),
            (("sqs:SendMessage",), ("${DeliveryDLQ.Arn}",), "{}"),
            logs_statement("Collector"),
            (XRAY, ("*",), "{}"),
        ]
    )


SPOKE_TEMPLATE = template_path(SPOKE_READER_ROLE)


def test_the_collector_reads_its_own_account_exactly_as_a_spoke_role_lets_it_read_a_spoke() -> None:
    """The spoke template allows exactly the calls the collector makes (tests/integration/aws_inventory); the
    collector's own account grants the same, so that one account never collects what another cannot."""
    template = yaml.safe_load(SPOKE_TEMPLATE.read_text(encoding="utf-8"))
    [policy] = template["Resources"]["ReaderRole"]["Properties"]["Policies"]
    spoke = sorted(
        (
            tuple(sorted(listed(statement["Action"]))),
            tuple(sorted(r if isinstance(r, str) else r["Fn::Sub"] for r in listed(statement["Resource"]))),
            "{}",
        )
        for statement in policy["PolicyDocument"]["Statement"]
    )
    assert spoke == sorted(COLLECTOR_READS)


def test_the_collector_role_assumes_exactly_the_listed_spoke_roles(tmp_path: Any) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "spokeRoleArns": list(SPOKE_ROLE_ARNS)})
    template = Template.from_stack(stack).to_json()
    statements = normalized(role_statements(template, function_role(template, "collector")), {})
    assumed = [statement for statement in statements if statement[0] == ("sts:AssumeRole",)]
    # One statement per role path+name, in any account that aws:ResourceAccount names for it (a size that fits 200
    # spokes: tests/infra/test_policy_sizes.py evaluates it there).
    assert assumed == sorted(
        (
            ("sts:AssumeRole",),
            (f"arn:aws:iam::*:{arn.split(':', 5)[5]}",),
            json.dumps({"StringEquals": {"aws:ResourceAccount": [arn.split(":")[4]]}}, sort_keys=True),
        )
        for arn in SPOKE_ROLE_ARNS
    )
    assert {a for s in statements for a in s[0] if a.startswith("sts:")} == {"sts:AssumeRole"}


def test_cdk_nag_finds_the_spoke_roles_wildcard_account_acknowledged(tmp_path: Any) -> None:
    """arn:aws:iam::*:role/<name> is an IAM5 finding per role name (the account is its aws:ResourceAccount
    condition), acknowledged on the collector's role; test_stack's nag tests synthesize without spokes."""
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "spokeRoleArns": list(SPOKE_ROLE_ARNS)})
    Template.from_stack(stack)
    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
    assert report.success, [violation.rule_name for violation in report.violations]


def every_statement(template: dict[str, Any]) -> list[dict[str, Any]]:
    statements = []
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Policy":
            statements.extend(properties["PolicyDocument"]["Statement"])
        if resource["Type"] == "AWS::IAM::Role":
            for policy in properties.get("Policies", []):
                statements.extend(policy["PolicyDocument"]["Statement"])
    return statements


def test_no_role_has_a_managed_policy(template: dict[str, Any]) -> None:
    roles = [r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Role"]
    assert len(roles) == 10  # seven functions, the state machine, the schedules, the exporter
    assert [r for r in roles if "ManagedPolicyArns" in r["Properties"]] == []


def test_no_statement_grants_a_wildcard_action(template: dict[str, Any]) -> None:
    actions = {action for s in every_statement(template) for action in listed(s["Action"])}
    assert {a for a in actions if "*" in a or "?" in a} == set()


def test_the_resource_star_only_goes_with_actions_that_have_no_resource_level_permissions(
    template: dict[str, Any],
) -> None:
    star = {action for s in every_statement(template) if "*" in listed(s["Resource"]) for action in listed(s["Action"])}
    assert star <= STAR_RESOURCE_ACTIONS


def test_ecr_changes_are_allowed_only_on_the_rules_files_repository_patterns(
    template: dict[str, Any], names: dict[str, str]
) -> None:
    grants = [
        (action, render(resource, names))
        for s in every_statement(template)
        for action in listed(s["Action"])
        if action in ECR_MUTATIONS
        for resource in listed(s["Resource"])
    ]
    assert sorted(grants) == sorted(
        [(action, arn) for action in ("ecr:BatchDeleteImage", "ecr:UpdateImageStorageClass") for arn in MANAGED]
        + [("ecr:PutImage", arn) for arn in MANAGED]
        + [("ecr:UpdateImageStorageClass", arn) for arn in MANAGED]  # the sentinel's restores
    )


def test_a_policy_for_every_repository_grants_repository_star(tmp_path: Any) -> None:
    rules = RULES.replace('repositories: ["docker.io/*"]', 'repositories: ["*"]')
    template = Template.from_stack(build_stack(rules_file(tmp_path, rules), CONTEXT)).to_json()
    resources = {
        render(resource, {})
        for s in every_statement(template)
        if "ecr:BatchDeleteImage" in listed(s["Action"])
        for resource in listed(s["Resource"])
    }
    assert REGISTRY + "*" in resources


def test_a_tag_in_repositories_glob_lets_the_evaluation_list_repositories(tmp_path: Any) -> None:
    rules = RULES.replace("tag_in_repositories: [frontend]", 'tag_in_repositories: ["web-*"]')
    stack = build_stack(rules_file(tmp_path, rules), CONTEXT)
    template = Template.from_stack(stack).to_json()
    statements = role_statements(template, function_role(template, "evaluate"))
    described = {
        (action, render(resource, {}))
        for s in statements
        for action in listed(s["Action"])
        if action in ("ecr:DescribeRepositories", "ecr:DescribeImages")
        for resource in listed(s["Resource"])
    }
    assert ("ecr:DescribeRepositories", REGISTRY + "*") in described
    assert ("ecr:DescribeImages", REGISTRY + "web-*") in described
