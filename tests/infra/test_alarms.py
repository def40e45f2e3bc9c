"""The alarms and their operations topic: function errors, dead-letter queue depth, failed executions,
blocked runs, delete failures, no completed run in two days, each expected cluster's manifest age, and the
AWS inventory collector's incomplete collections; the metrics they watch are the ones the handlers publish
(namespace, name and dimensions)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from ecr_retention.cdk import alarms
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.handlers import collector, observability
from ecr_retention.handlers.wiring.collector import CollectorSettings, CollectorWiring
from ecr_retention.ports import AccountReaders, ReadFailed
from support.infra_stacks import CONTEXT, RULES, SharedStack, build_stack, rules_file

SERVICE = {"Name": "service", "Value": "ecr-retention"}


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    return shared_stack(RULES, CONTEXT)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> Template:
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def by_metric(template: Template) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(namespace, metric name) -> the alarms' properties."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        found.setdefault((properties["Namespace"], properties["MetricName"]), []).append(properties)
    return found


def logical_id(stack: EcrRetentionStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def test_every_alarm_notifies_the_operations_topic_only(template: Template, stack: EcrRetentionStack) -> None:
    topic = {"Ref": logical_id(stack, stack.alarms.topic)}
    found = template.find_resources("AWS::CloudWatch::Alarm").values()
    assert len(found) == 19  # InUseImagesMissing, SentinelErrors and SentinelDeadLettersDepth among them
    assert all(a["Properties"]["AlarmActions"] == [topic] for a in found)
    assert all(a["Properties"]["AlarmDescription"].startswith("ecr-retention: ") for a in found)
    assert {a["Properties"]["AlarmName"] for a in found} >= {
        "EcrRetentionTest-RunsBlocked",
        "EcrRetentionTest-NoCompletedRun",
        "EcrRetentionTest-ManifestAge-prod",
        "EcrRetentionTest-EvaluateErrors",
        "EcrRetentionTest-DeliveryDeadLettersDepth",
        "EcrRetentionTest-CollectorErrors",
        "EcrRetentionTest-IncompleteInUseManifests",
        "EcrRetentionTest-SentinelErrors",
        "EcrRetentionTest-SentinelDeadLettersDepth",
    }


def test_cloudwatch_may_publish_this_accounts_alarms_to_the_operations_topic(
    template: Template, stack: EcrRetentionStack
) -> None:
    """enforce_ssl replaced SNS's default topic policy: without this Allow, no alarm would reach the topic."""
    topic = {"Ref": logical_id(stack, stack.alarms.topic)}
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [topic],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "CloudWatchAlarmsOfThisAccountPublish",
                            "Effect": "Allow",
                            "Principal": {"Service": "cloudwatch.amazonaws.com"},
                            "Action": "sns:Publish",
                            "Resource": topic,
                            "Condition": {
                                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                                "ArnLike": {
                                    "aws:SourceArn": {
                                        "Fn::Join": [
                                            "",
                                            [
                                                "arn:",
                                                {"Ref": "AWS::Partition"},
                                                ":cloudwatch:",
                                                {"Ref": "AWS::Region"},
                                                ":",
                                                {"Ref": "AWS::AccountId"},
                                                ":alarm:*",
                                            ],
                                        ]
                                    }
                                },
                            },
                        }
                    ]
                )
            },
        },
    )


def test_each_function_alarms_on_its_first_error(
    by_metric: dict[tuple[str, str], list[dict[str, Any]]], stack: EcrRetentionStack
) -> None:
    assert stack.push is not None
    assert stack.collector is not None
    functions = [
        stack.workflow.targets.function,
        stack.workflow.evaluate.function,
        stack.workflow.report.function,
        stack.tagger.function,
        stack.push.push.function,
        stack.collector.function,
        stack.sentinel.function,
    ]
    errors = by_metric[("AWS/Lambda", "Errors")]
    assert sorted(a["Dimensions"][0]["Value"]["Ref"] for a in errors) == sorted(logical_id(stack, f) for f in functions)
    for alarm in errors:
        assert (alarm["Statistic"], alarm["Period"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
            "Sum",
            300,
            "GreaterThanOrEqualToThreshold",
            1,
        )


def test_each_dead_letter_queue_alarms_on_its_first_message(
    by_metric: dict[tuple[str, str], list[dict[str, Any]]], stack: EcrRetentionStack
) -> None:
    assert stack.push is not None
    depth = by_metric[("AWS/SQS", "ApproximateNumberOfMessagesVisible")]
    queues = [stack.delivery_dead_letters, stack.push.dead_letters, stack.sentinel.dead_letters]
    assert sorted(a["Dimensions"][0]["Value"]["Fn::GetAtt"][0] for a in depth) == sorted(
        logical_id(stack, q) for q in queues
    )
    assert {(a["Statistic"], a["Threshold"], a["ComparisonOperator"]) for a in depth} == {
        ("Maximum", 1, "GreaterThanOrEqualToThreshold")
    }


def test_failed_and_timed_out_executions_alarm(
    by_metric: dict[tuple[str, str], list[dict[str, Any]]], stack: EcrRetentionStack
) -> None:
    machine = {"Ref": logical_id(stack, stack.workflow.state_machine)}
    for metric in ("ExecutionsFailed", "ExecutionsTimedOut"):
        [alarm] = by_metric[("AWS/States", metric)]
        assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": machine}]
        assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 1)


@pytest.mark.parametrize("metric", ["RunsBlocked", "DeleteFailures", "InUseImagesMissing"])
def test_blocked_runs_and_delete_failures_alarm_on_the_reports_metrics(
    by_metric: dict[tuple[str, str], list[dict[str, Any]]], metric: str
) -> None:
    [alarm] = by_metric[("EcrRetention", metric)]
    assert alarm["Dimensions"] == [SERVICE]
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
        "Sum",
        1,
        "GreaterThanOrEqualToThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching"


def test_two_days_without_a_completed_run_alarm(by_metric: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    [alarm] = by_metric[("EcrRetention", "RunsCompleted")]
    assert alarm["Dimensions"] == [SERVICE]
    assert (alarm["Period"], alarm["EvaluationPeriods"]) == (86400, 2)
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == ("Sum", "LessThanThreshold", 1)
    assert alarm["TreatMissingData"] == "breaching"  # no run at all is the failure this alarm exists for


def test_each_expected_cluster_alarms_before_its_manifest_blocks_pruning(
    by_metric: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    ages = by_metric[("EcrRetention", "InUseManifestAgeSeconds")]
    # safety.clusters [prod, dev] with inventory_max_age 8h: each alarms at three quarters of it, 6 h.
    assert sorted(a["Dimensions"][0]["Value"] for a in ages) == ["dev", "prod"]
    for alarm in ages:
        assert alarm["Dimensions"][1] == SERVICE
        assert alarm["Dimensions"][0]["Name"] == "Cluster"
        assert (alarm["Statistic"], alarm["Period"]) == ("Maximum", 3600)
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 6 * 3600)
        assert alarm["Threshold"] < 8 * 3600


def test_an_incomplete_collection_alarms(by_metric: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    [alarm] = by_metric[("EcrRetention", "IncompleteInUseManifests")]
    assert alarm["Dimensions"] == [SERVICE]
    assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
        "Sum",
        300,
        1,
        "GreaterThanOrEqualToThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching"


def test_an_expected_aws_inventory_source_alarms_on_its_manifest_age_like_a_cluster(tmp_path: Path) -> None:
    rules = RULES.replace(
        "clusters: [prod, dev]", "clusters: [prod, aws-123456789012-eu-west-1], optional_clusters: [dev]"
    )
    template = Template.from_stack(build_stack(rules_file(tmp_path, rules), CONTEXT))
    ages = {
        a["Properties"]["Dimensions"][0]["Value"]: a["Properties"]
        for a in template.find_resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "InUseManifestAgeSeconds"
    }
    assert sorted(ages) == ["aws-123456789012-eu-west-1", "prod"]
    assert ages["aws-123456789012-eu-west-1"]["Threshold"] == 6 * 3600
    assert "AWS inventory collector" in ages["aws-123456789012-eu-west-1"]["AlarmDescription"]
    assert "exporter CronJob" in ages["prod"]["AlarmDescription"]


class UnreachableAccount:
    """The collector's own account, which it cannot enter: its manifest is stored empty and incomplete."""

    def accounts(self) -> list[str]:
        return ["123456789012"]

    def readers(self, account: str, region: str) -> AccountReaders:
        raise ReadFailed("AssumeRole failed: AccessDenied")


class MemoryManifestStore:
    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}

    def store(self, name: str, body: bytes) -> str:
        self.bodies[name] = body
        return f"s3://inventory/in-use/{name}.json"

    def stored(self, name: str) -> tuple[str, bytes | None]:
        return f"s3://inventory/in-use/{name}.json", self.bodies.get(name)


class FakeContext:
    function_name = "ecr-retention-collector"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:ecr-retention-collector"
    aws_request_id = "6f1c3a52-0000-4000-8000-000000000001"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000


def test_the_collector_publishes_the_metric_its_alarm_watches(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the handler as deployed, wired to an account it cannot enter: one collection that could not read anything
    settings = CollectorSettings.from_environ({"BUCKET_NAME": "inventory", "AWS_REGION": "eu-west-1"})
    wiring = CollectorWiring(settings, MemoryManifestStore(), accounts=UnreachableAccount)
    capsys.readouterr()

    # WHEN it runs
    collector.lambda_handler({"trigger": "schedule"}, FakeContext(), wiring=wiring)  # type: ignore[arg-type]

    # THEN it publishes the metric the alarm watches

    [published] = [
        json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{") and '"_aws"' in line
    ]
    [definition] = published["_aws"]["CloudWatchMetrics"]
    assert definition["Namespace"] == alarms.METRICS_NAMESPACE
    assert definition["Dimensions"] == [list(alarms.SERVICE_DIMENSION)]
    assert published["service"] == alarms.SERVICE_DIMENSION["service"]
    assert alarms.INCOMPLETE_MANIFESTS_METRIC in {m["Name"] for m in definition["Metrics"]}
    assert published[alarms.INCOMPLETE_MANIFESTS_METRIC] == [1.0]  # EMF: the values of this flush


def test_the_alarms_watch_the_metrics_the_handlers_publish() -> None:
    totals = SimpleNamespace(
        deleted=1, archived=0, bytes_reclaimed=5, protected_in_use=2, failed=1, in_use_archived=1, restored=1
    )
    report = SimpleNamespace(
        totals=totals,
        dry_run=False,
        outcome="blocked",
        blocked=("cluster prod: no in-use manifest",),
        in_use_missing=("app:dev",),
        regions=(),
    )
    observability.record_run_metrics(report)  # type: ignore[arg-type]
    published = observability.metrics.serialize_metric_set()
    observability.metrics.clear_metrics()
    [definition] = published["_aws"]["CloudWatchMetrics"]
    assert definition["Namespace"] == alarms.METRICS_NAMESPACE
    assert definition["Dimensions"] == [list(alarms.SERVICE_DIMENSION)]
    assert {"RunsBlocked", "DeleteFailures", "RunsCompleted", "InUseImagesMissing"} <= {
        m["Name"] for m in definition["Metrics"]
    }
    assert published["InUseImagesMissing"] == [1.0]
    assert alarms.IN_USE_MISSING_METRIC == observability.IN_USE_MISSING_METRIC
    assert alarms.METRICS_NAMESPACE == observability.NAMESPACE
    assert alarms.SERVICE_DIMENSION == {"service": observability.SERVICE}
    assert alarms.MANIFEST_AGE_METRIC == observability.MANIFEST_AGE_METRIC
    assert alarms.CLUSTER_DIMENSION == observability.CLUSTER_DIMENSION


def test_the_operations_topic_is_encrypted_and_subscribed(template: Template, stack: EcrRetentionStack) -> None:
    topic_id = logical_id(stack, stack.alarms.topic)
    topic = template.find_resources("AWS::SNS::Topic")[topic_id]["Properties"]
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [logical_id(stack, stack.reports.key), "Arn"]}
    template.has_resource_properties(
        "AWS::SNS::Subscription", {"TopicArn": {"Ref": topic_id}, "Protocol": "email", "Endpoint": "oncall@example.com"}
    )
