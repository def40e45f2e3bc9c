"""The S3 bucket that holds the in-use manifests (`in-use/<cluster>.json`) and the run reports."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Duration, Validations
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import constants


def _private_bucket_properties() -> dict[str, Any]:
    """What every bucket of the stack shares: private, encrypted, reachable over TLS 1.2+ only."""
    return {
        "encryption": s3.BucketEncryption.S3_MANAGED,
        "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
        "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        "enforce_ssl": True,
        "minimum_tls_version": 1.2,
    }


class InventoryBucket(Construct):
    """Versioned, so that an overwritten manifest or report stays recoverable for a while.

    SSE-S3 rather than a customer key: manifests hold image references, not secrets, and a
    customer key would add a KMS grant to every writer, the in-cluster exporter included.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.access_log_bucket = s3.Bucket(
            self,
            "AccessLogs",
            **_private_bucket_properties(),
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-access-logs",
                    expiration=Duration.days(constants.ACCESS_LOG_RETENTION_DAYS),
                )
            ],
        )
        Validations.of(self.access_log_bucket).acknowledge(
            Acknowledgment(
                id="AwsSolutions-S1",
                reason="This bucket receives the inventory bucket's server access logs; logging it as well "
                "would need a third bucket and would record only S3's own log deliveries.",
            )
        )

        self.bucket = s3.Bucket(
            self,
            "Bucket",
            **_private_bucket_properties(),
            versioned=True,
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix=constants.ACCESS_LOGS_PREFIX,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-noncurrent-versions",
                    # Reports expire into delete markers; once their old version is gone, drop the marker too.
                    expired_object_delete_marker=True,
                    noncurrent_version_expiration=Duration.days(constants.NONCURRENT_VERSION_RETENTION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(constants.INCOMPLETE_UPLOAD_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-reports",
                    prefix=constants.REPORTS_PREFIX,
                    expiration=Duration.days(constants.REPORT_RETENTION_DAYS),
                ),
            ],
        )
