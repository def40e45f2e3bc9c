"""The EventBridge Scheduler schedules: the sweep (starts the workflow with `{"trigger": "schedule"}`), the
tagger's and, when the AWS inventory is on, the collector's. Flexible time window off: a schedule fires when
its expression says. Whether a run deletes is the rules file's `dry_run` (true as shipped), never the
schedule's business."""

from __future__ import annotations

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ecr_retention.cdk import constants

SWEEP_INPUT = {"trigger": "schedule"}


def scheduled_event() -> dict[str, object]:
    """The tagger's and the collector's input: the shape of an EventBridge Scheduled Event, filled by Scheduler
    at each invocation, which is what their event model (Powertools' EventBridgeModel) accepts."""
    return {
        "version": "0",
        "id": scheduler.ContextAttribute.execution_id,
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "account": Aws.ACCOUNT_ID,
        "time": scheduler.ContextAttribute.scheduled_time,
        "region": Aws.REGION,
        "resources": [scheduler.ContextAttribute.schedule_arn],
        "detail": {},
    }


class Schedules(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        sweep_expression: str,
        tagger_expression: str,
        state_machine: sfn.IStateMachine,
        tagger: lambda_.IFunction,
        dead_letters: sqs.IQueue,
        collector: lambda_.IFunction | None = None,
        collector_expression: str = constants.DEFAULT_COLLECTOR_SCHEDULE,
    ) -> None:
        super().__init__(scope, construct_id)
        # One role for every schedule, with exactly what they do; the targets see an immutable view, because
        # the CDK's own grant to invoke a function also covers its versions and aliases ('<arn>:*').
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
            description="ecr-retention schedules: start the sweep, invoke the tagger and the collector",
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[state_machine.state_machine_arn])
        )
        invoked = [tagger] if collector is None else [tagger, collector]
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[f.function_arn for f in invoked])
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[dead_letters.queue_arn])
        )
        role = self.role.without_policy_updates()
        retries = constants.DELIVERY_RETRY_ATTEMPTS
        max_age = Duration.hours(constants.DELIVERY_MAX_EVENT_AGE_HOURS)
        self.sweep = scheduler.Schedule(
            self,
            "Sweep",
            description="ecr-retention: the scheduled run over every managed repository",
            schedule=scheduler.ScheduleExpression.expression(sweep_expression),
            time_window=scheduler.TimeWindow.off(),
            target=scheduler_targets.StepFunctionsStartExecution(
                state_machine,
                input=scheduler.ScheduleTargetInput.from_object(SWEEP_INPUT),
                role=role,
                dead_letter_queue=dead_letters,
                retry_attempts=retries,
                max_event_age=max_age,
            ),
        )
        self.tagger = scheduler.Schedule(
            self,
            "Tagger",
            description="ecr-retention: tag what the selected clusters run, and publish manifest ages",
            schedule=scheduler.ScheduleExpression.expression(tagger_expression),
            time_window=scheduler.TimeWindow.off(),
            target=scheduler_targets.LambdaInvoke(
                tagger,
                input=scheduler.ScheduleTargetInput.from_object(scheduled_event()),
                role=role,
                dead_letter_queue=dead_letters,
                retry_attempts=retries,
                max_event_age=max_age,
            ),
        )
        self.collector: scheduler.Schedule | None = None
        if collector is not None:
            self.collector = scheduler.Schedule(
                self,
                "Collector",
                description="ecr-retention: collect what ECS and Lambda use (in-use/aws-<account>-<region>.json)",
                schedule=scheduler.ScheduleExpression.expression(collector_expression),
                time_window=scheduler.TimeWindow.off(),
                target=scheduler_targets.LambdaInvoke(
                    collector,
                    input=scheduler.ScheduleTargetInput.from_object(scheduled_event()),
                    role=role,
                    dead_letter_queue=dead_letters,
                    retry_attempts=retries,
                    max_event_age=max_age,
                ),
            )
