"""Alarms on an operations topic: what needs a person, as opposed to the run summaries on the report topic.

- each function's errors, each dead-letter queue's depth, failed or timed-out executions;
- RunsBlocked, DeleteFailures and InUseImagesMissing (an image a workload runs is gone, finding in-use-missing),
  published by the report step (namespace EcrRetention, docs/report.md);
- no completed run (RunsCompleted) in two days;
- each expected cluster's manifest age (InUseManifestAgeSeconds, published by the report step and by the
  tagger, which runs hourly and on every manifest written), before it reaches safety.inventory_max_age; an
  expected `aws-<account>-<region>` source is the AWS inventory collector's manifest, alarmed the same way;
- when the collector runs, each collection that could not read everything (IncompleteInUseManifests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ecr_retention.cdk import constants
from ecr_retention.domain.config import RetentionConfig

# The Powertools metrics of ecr_retention.handlers.observability: namespace, and the dimension every metric
# carries (Metrics(service=...)); an alarm's dimensions must match a metric's exactly.
METRICS_NAMESPACE = "EcrRetention"
SERVICE_DIMENSION = {"service": "ecr-retention"}
MANIFEST_AGE_METRIC = "InUseManifestAgeSeconds"
CLUSTER_DIMENSION = "Cluster"
IN_USE_MISSING_METRIC = "InUseImagesMissing"
# Published by ecr_retention.handlers.collector, once per run: the manifests written with `complete: false`.
INCOMPLETE_MANIFESTS_METRIC = "IncompleteInUseManifests"


def run_metric(name: str, period: Duration, statistic: str = "Sum", **dimensions: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={**SERVICE_DIMENSION, **dimensions},
        period=period,
        statistic=statistic,
    )


class Alarms(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RetentionConfig,
        key: kms.IKey,
        emails: Sequence[str],
        functions: Mapping[str, lambda_.IFunction],
        dead_letter_queues: Mapping[str, sqs.IQueue],
        state_machine: sfn.IStateMachine,
        collecting: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=constants.OPERATIONS_TOPIC_DISPLAY_NAME,
            master_key=key,
            enforce_ssl=True,
        )
        # CloudWatch publishes alarm notifications as itself, so the topic's policy must allow it: enforce_ssl gives
        # the topic a policy of its own, which replaces SNS's default one (that let the account's principals
        # publish), and without this statement no alarm would ever reach the operations e-mail. Only this account's
        # alarms: the source conditions keep another account's alarms (the confused deputy) out.
        stack = Stack.of(self)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccountPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                },
            )
        )
        # And the topic is encrypted: CloudWatch asks KMS for a data key as itself too.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
            )
        )
        for email in emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        self._action = actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []

        five_minutes = Duration.minutes(5)
        for name, function in functions.items():
            self._alarm(
                f"{name.capitalize()}Errors",
                function.metric_errors(period=five_minutes, statistic="Sum"),
                f"The {name} function failed (uncaught errors or timeouts): read its log group",
            )
        for name, queue in dead_letter_queues.items():
            self._alarm(
                f"{name}Depth",
                queue.metric_approximate_number_of_messages_visible(period=five_minutes, statistic="Maximum"),
                f"Messages in {name}: events that were never processed; read them, fix, redrive",
            )
        self._alarm(
            "ExecutionsFailed",
            state_machine.metric_failed(period=five_minutes, statistic="Sum"),
            "A run failed: its report step could not finish (see the execution in Step Functions)",
        )
        self._alarm(
            "ExecutionsTimedOut",
            state_machine.metric_timed_out(period=five_minutes, statistic="Sum"),
            "A run did not finish within the state machine's timeout",
        )
        self._alarm(
            "RunsBlocked",
            run_metric("RunsBlocked", five_minutes),
            "A run deleted nothing because the in-use inventory blocked it: read the run report's 'blocked'",
        )
        self._alarm(
            "DeleteFailures",
            run_metric("DeleteFailures", five_minutes),
            "ECR refused or failed some deletions or archives: read the run report's 'failed' entries",
        )
        self._alarm(
            "InUseImagesMissing",
            run_metric(IN_USE_MISSING_METRIC, five_minutes),
            "A run found in-use images missing from the registry (something else removed them): the next pull of "
            "their workloads fails; read the run report's 'inUseMissing' (workloads, image, what removed it)",
        )
        self._alarm(
            "NoCompletedRun",
            run_metric("RunsCompleted", Duration.days(1)),
            f"No run reported in {constants.NO_SUCCESSFUL_RUN_DAYS} days: the schedule or the workflow is broken",
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=constants.NO_SUCCESSFUL_RUN_DAYS,
            missing=cloudwatch.TreatMissingData.BREACHING,
        )
        if collecting:
            self._alarm(
                "IncompleteInUseManifests",
                run_metric(INCOMPLETE_MANIFESTS_METRIC, five_minutes),
                "The AWS inventory collector could not read everything in an account or region; its manifest says "
                "complete: false and, if safety.clusters names it, blocks deletions: read the collector's log group",
            )
        max_age = config.safety.inventory_max_age.total_seconds()
        threshold = max_age * constants.MANIFEST_AGE_ALARM_FRACTION
        for cluster in config.safety.clusters:
            writer = (
                "check the AWS inventory collector (its errors alarm and log group)"
                if cluster.of_this_account and cluster.name.startswith(constants.AWS_INVENTORY_NAME_PREFIX)
                else "check its exporter CronJob"
            )
            self._alarm(
                f"ManifestAge-{str(cluster).replace('/', '-')}",  # a spoke's: ManifestAge-<account>-<name>
                run_metric(MANIFEST_AGE_METRIC, Duration.hours(1), "Maximum", **{CLUSTER_DIMENSION: str(cluster)}),
                f"The in-use manifest of {cluster} is over {threshold / 3600:g} h old; at "
                f"{max_age / 3600:g} h (inventory_max_age) it blocks every deletion: {writer}",
                threshold=threshold,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            )

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        description: str,
        *,
        threshold: float = 1,
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods: int = 1,
        missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            # Named after the stack, so that a second stack in the account gets its own alarms.
            alarm_name=f"{Stack.of(self).stack_name}-{construct_id}",
            alarm_description=f"ecr-retention: {description}",
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            treat_missing_data=missing,
        )
        alarm.add_alarm_action(self._action)
        self.alarms.append(alarm)
