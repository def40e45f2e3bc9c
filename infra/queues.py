"""SQS queues of the stack: encrypted with SQS-managed keys and reachable over TLS only.

SSE-SQS rather than a customer key: EventBridge, EventBridge Scheduler and Lambda can then send to the
queues without a key policy grant each, and the messages (ECR push events, undelivered schedule and
EventBridge events) hold repository names and digests, not secrets.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ecr_retention.cdk import constants


def dead_letter_queue(scope: Construct, construct_id: str) -> sqs.Queue:
    """Kept for SQS's maximum, 14 days; the alarms construct watches its depth."""
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(constants.DEAD_LETTER_RETENTION_DAYS),
    )


def work_queue(
    scope: Construct,
    construct_id: str,
    *,
    dead_letters: sqs.IQueue,
    delivery_delay: Duration,
    visibility_timeout: Duration,
    max_receive_count: int,
) -> sqs.Queue:
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        delivery_delay=delivery_delay,
        visibility_timeout=visibility_timeout,
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=max_receive_count),
    )
