"""The push trigger: ECR `PUSH SUCCESS` events of the managed repositories -> the debounce queue (delivery
delay) -> the push function (batching window), which starts one run for the batch's distinct repositories."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ecr_retention import layout
from ecr_retention.cdk import constants, queues
from ecr_retention.cdk.event_provenance import from_this_account
from ecr_retention.cdk.pipeline_function import PipelineFunction


def push_event_pattern(repository_filter: list[str | dict[str, str]] | None) -> events.EventPattern:
    detail: dict[str, object] = {"action-type": ["PUSH"], "result": ["SUCCESS"]}
    if repository_filter is not None:
        detail["repository-name"] = repository_filter
    return events.EventPattern(source=["aws.ecr"], detail_type=["ECR Image Action"], detail=detail)


class PushTrigger(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        environment: Mapping[str, str],
        state_machine: sfn.IStateMachine,
        repository_filter: list[str | dict[str, str]] | None,
        delivery_dead_letters: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)

        # Push events the push function failed on, after PUSH_MAX_RECEIVE_COUNT receives.
        self.dead_letters = queues.dead_letter_queue(self, "DebounceDeadLetters")
        self.queue = queues.work_queue(
            self,
            "Debounce",
            dead_letters=self.dead_letters,
            delivery_delay=Duration.seconds(constants.PUSH_DELIVERY_DELAY_SECONDS),
            visibility_timeout=Duration.seconds(constants.PUSH_VISIBILITY_TIMEOUT_SECONDS),
            max_receive_count=constants.PUSH_MAX_RECEIVE_COUNT,
        )
        self.rule = events.Rule(
            self,
            "Pushed",
            description="ecr-retention: an image was pushed to a repository a policy manages",
            event_pattern=push_event_pattern(repository_filter),
            targets=[
                targets.SqsQueue(
                    self.queue,
                    dead_letter_queue=delivery_dead_letters,
                    retry_attempts=constants.DELIVERY_RETRY_ATTEMPTS,
                    max_event_age=Duration.hours(constants.DELIVERY_MAX_EVENT_AGE_HOURS),
                )
            ],
        )
        from_this_account(self.rule)  # this account's pushes only (infra/event_provenance.py)
        self.push = PipelineFunction(
            self,
            "Push",
            name="push",
            description="ecr-retention: start one run for the repositories of a batch of ECR pushes",
            code=code,
            environment={**environment, layout.STATE_MACHINE_ARN_VARIABLE: state_machine.state_machine_arn},
        )
        self.push.function.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=constants.PUSH_BATCH_SIZE,
                max_batching_window=Duration.seconds(constants.PUSH_BATCHING_WINDOW_SECONDS),
                report_batch_item_failures=True,
                max_concurrency=constants.PUSH_MAX_CONCURRENCY,
            )
        )
        state_machine.grant_start_execution(self.push.role)
