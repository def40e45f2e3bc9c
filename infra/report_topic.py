"""The SNS topic that receives one summary per run."""

from __future__ import annotations

from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from ecr_retention.cdk import constants


class ReportTopic(Construct):
    """Encrypted with a customer managed key rather than `alias/aws/sns`.

    The AWS managed key's policy cannot be extended, so CloudWatch alarms and EventBridge could never
    publish to the topic; with our own key, the alarms construct grants them `kms:GenerateDataKey*`.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the ecr-retention run summaries on the report topic",
            enable_key_rotation=True,
        )
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=constants.REPORT_TOPIC_DISPLAY_NAME,
            master_key=self.key,
            enforce_ssl=True,
        )
