"""The ecr-retention stack: composes the constructs and publishes what operators need as outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from ecr_retention.domain.config import RetentionConfig
from infra.exporter_role import ExporterRole
from infra.inventory_bucket import InventoryBucket
from infra.report_topic import ReportTopic


class EcrRetentionStack(Stack):
    """Holds the validated rules so that the functions added later read one source of truth."""

    def __init__(self, scope: Construct, construct_id: str, *, config: RetentionConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config

        self.inventory = InventoryBucket(self, "Inventory")
        self.reports = ReportTopic(self, "Reports")
        self.exporter = ExporterRole(self, "Exporter", inventory_bucket=self.inventory.bucket)

        CfnOutput(
            self,
            "InventoryBucketName",
            value=self.inventory.bucket.bucket_name,
            description="S3 bucket for in-use manifests (in-use/<cluster>.json) and run reports",
        )
        CfnOutput(
            self,
            "ReportTopicArn",
            value=self.reports.topic.topic_arn,
            description="SNS topic that receives one summary per run; subscribe to it",
        )
        CfnOutput(
            self,
            "ExporterRoleArn",
            value=self.exporter.role.role_arn,
            description="IAM role for the in-cluster exporter; associate it through EKS Pod Identity",
        )
