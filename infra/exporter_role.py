"""The IAM role that the in-cluster exporter assumes through EKS Pod Identity to write its manifest."""

from __future__ import annotations

from typing import cast

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import constants


class ExporterRole(Construct):
    """Writes `in-use/<cluster>.json` and nothing else: no read, no delete, no other prefix.

    One role serves every cluster; each cluster gets its own Pod Identity association to it.
    """

    def __init__(self, scope: Construct, construct_id: str, *, inventory_bucket: s3.Bucket) -> None:
        super().__init__(scope, construct_id)

        pod_identity = iam.SessionTagsPrincipal(
            iam.ServicePrincipal(constants.EKS_POD_IDENTITY_PRINCIPAL).with_conditions(
                {
                    # Pod Identity sets these session tags; without the condition, any association
                    # in the account that names this role would receive its credentials.
                    "StringEquals": {
                        "aws:RequestTag/kubernetes-namespace": constants.EXPORTER_NAMESPACE,
                        "aws:RequestTag/kubernetes-service-account": constants.EXPORTER_SERVICE_ACCOUNT,
                    }
                }
            )
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=pod_identity,
            description="ecr-retention exporter: writes the in-use manifest of its cluster",
        )
        manifest_keys = inventory_bucket.arn_for_objects(f"{constants.IN_USE_PREFIX}*")
        self.role.add_to_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[manifest_keys]))

        bucket_resource = cast(s3.CfnBucket, inventory_bucket.node.default_child)
        bucket_logical_id = Stack.of(self).resolve(bucket_resource.logical_id)
        Validations.of(self.role).acknowledge(
            Acknowledgment(
                # cdk-nag names the finding after the rendered ARN; only the key under in-use/ varies.
                id=f"AwsSolutions-IAM5[Resource::<{bucket_logical_id}.Arn>/{constants.IN_USE_PREFIX}*]",
                reason="Each cluster writes in-use/<cluster>.json and clusters come and go without a "
                "redeploy; the wildcard is limited to that prefix and to s3:PutObject.",
            )
        )
