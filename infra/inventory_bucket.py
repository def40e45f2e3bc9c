"""The S3 bucket that holds the in-use manifests (`in-use/<cluster>.json`), the manifest cache (`manifests/`),
run state (`runs/`) and the run reports (`reports/`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ecr_retention.domain.aws_inventory import account_of_role
from infra import constants
from infra.deploy_settings import account_of_cluster


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
                s3.LifecycleRule(
                    id="expire-run-state",
                    prefix=constants.RUNS_PREFIX,
                    expiration=Duration.days(constants.RUN_STATE_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-manifest-cache",
                    prefix=constants.MANIFEST_CACHE_PREFIX,
                    expiration=Duration.days(constants.MANIFEST_CACHE_RETENTION_DAYS),
                ),
            ],
        )
        # Object Created events for in-use/ reach the tagger through EventBridge. Set on the bucket resource
        # itself: `event_bridge_enabled=True` would add a custom resource (a Node.js Lambda) to do the same.
        cfn_bucket = self.bucket.node.default_child
        assert isinstance(cfn_bucket, s3.CfnBucket)
        cfn_bucket.add_property_override("NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)

    def allow_in_use_writes_only_from(
        self,
        exporter_role: iam.IRole,
        cluster_arns: Sequence[str],
        collector_role: iam.IRole | None = None,
        spoke_exporter_role_arns: Sequence[str] = (),
        collector_keys: Sequence[str] = (constants.AWS_INVENTORY_MANIFESTS,),
    ) -> None:
        """Whatever identity policies say elsewhere in the account, only the exporter roles (this account's and
        the spokes'), in a session of a listed cluster, and the AWS inventory collector's role may write under
        in-use/: a manifest decides what must not be deleted. The collector's manifests, in-use/aws-*.json, are
        the collector's alone."""
        in_use = self.bucket.arn_for_objects(constants.IN_USE_PREFIX + "*")
        writers = [exporter_role.role_arn, *spoke_exporter_role_arns]
        if collector_role is not None:
            writers.append(collector_role.role_arn)
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="InUseWritesOnlyByTheWriterRoles",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=[in_use],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": writers}},
            )
        )
        # A session without a listed cluster's tag is refused (StringNotEquals is true for a missing tag);
        # with no cluster listed, nobody but the collector writes. The collector's sessions carry no cluster tag.
        conditions: dict[str, object] = {}
        if cluster_arns:
            conditions["StringNotEquals"] = {f"aws:PrincipalTag/{constants.EKS_CLUSTER_ARN_TAG}": list(cluster_arns)}
        if collector_role is not None:
            conditions["ArnNotEquals"] = {"aws:PrincipalArn": collector_role.role_arn}
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="InUseWritesOnlyFromListedClusters",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=[in_use],
                conditions=conditions or None,
            )
        )
        if collector_role is not None:
            # And the collector writes nothing else in this bucket: not another cluster's manifest, not a report;
            # only the AWS inventory and the manifests of the eksClusters it reads (collector_keys).
            self.bucket.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="TheCollectorWritesOnlyItsManifests",
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=["s3:PutObject"],
                    not_resources=[self.bucket.arn_for_objects(key) for key in collector_keys],
                    conditions={"ArnEquals": {"aws:PrincipalArn": collector_role.role_arn}},
                )
            )
        self._allow_spoke_exporters(cluster_arns, spoke_exporter_role_arns)
        # in-use/aws-<account>-<region>.json: an exporter (of a cluster named aws-..., or one compromised) must not
        # replace what ECS and Lambda use. Without a collector, nobody writes them.
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AwsInventoryWritesOnlyByTheCollector",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=[self.bucket.arn_for_objects(constants.AWS_INVENTORY_MANIFESTS)],
                conditions=None
                if collector_role is None
                else {"ArnNotEquals": {"aws:PrincipalArn": collector_role.role_arn}},
            )
        )

    def _allow_spoke_exporters(self, cluster_arns: Sequence[str], spoke_exporter_role_arns: Sequence[str]) -> None:
        """A principal of another account writes only what both its own identity policy and this bucket policy
        allow. Each spoke exporter role may write its own cluster's manifest, as this account's exporter role
        may, and only for the listed clusters of its own account: a spoke cannot write for a cluster of another
        spoke or of this account. The Deny statements above still apply (in-use/aws-*.json among them)."""
        roles_by_account: dict[str, list[str]] = {}
        for role_arn in spoke_exporter_role_arns:
            roles_by_account.setdefault(account_of_role(role_arn), []).append(role_arn)
        own_manifest = self.bucket.arn_for_objects(
            constants.IN_USE_PREFIX + "${aws:PrincipalTag/" + constants.EKS_CLUSTER_NAME_TAG + "}.json"
        )
        for account, role_arns in sorted(roles_by_account.items()):
            # Named principals, not "*" with a condition: a policy that names its principals is never "public"
            # to S3's Block Public Access. S3 checks that each named role exists when the policy is set.
            self.bucket.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=f"SpokeExportersOf{account}WriteTheirClustersManifests",
                    effect=iam.Effect.ALLOW,
                    principals=[iam.ArnPrincipal(role_arn) for role_arn in role_arns],
                    actions=["s3:PutObject"],
                    resources=[own_manifest],
                    conditions={
                        "StringEquals": {
                            f"aws:PrincipalTag/{constants.EKS_CLUSTER_ARN_TAG}": [
                                arn for arn in cluster_arns if account_of_cluster(arn) == account
                            ]
                        }
                    },
                )
            )
