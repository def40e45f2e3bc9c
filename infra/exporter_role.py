"""The IAM role that the in-cluster exporter assumes through EKS Pod Identity to write its manifest."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import constants


class ExporterRole(Construct):
    """Writes `in-use/<EKS cluster name>.json` and nothing else: no read, no delete, no other key.

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
        # Pod Identity tags each session with the EKS cluster's name: a cluster can write its own manifest
        # and no other, so a compromised cluster cannot hide what another cluster runs.
        own_manifest = inventory_bucket.arn_for_objects(
            constants.IN_USE_PREFIX + "${aws:PrincipalTag/" + constants.EKS_CLUSTER_NAME_TAG + "}.json"
        )
        self.role.add_to_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[own_manifest]))
