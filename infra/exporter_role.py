"""The IAM role that the in-cluster exporter assumes through EKS Pod Identity to write its manifest."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Annotations, Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ecr_retention.cdk import constants
from ecr_retention.domain.inventory.eks_clusters import partitions_and_regions


class ExporterRole(Construct):
    """Writes `in-use/<EKS cluster name>.json` and nothing else: no read, no delete, no other key.

    One role serves every cluster; each cluster gets its own Pod Identity association to it.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        inventory_bucket: s3.Bucket,
        cluster_arns: Sequence[str],
        agentless_clusters: bool = False,
    ) -> None:
        """`agentless_clusters`: eksClusters lists clusters whose manifests the collector writes (no exporter)."""
        super().__init__(scope, construct_id)

        pod_identity = iam.SessionTagsPrincipal(
            iam.ServicePrincipal(constants.EKS_POD_IDENTITY_PRINCIPAL).with_conditions(
                {
                    # Pod Identity sets these session tags; without the condition, any association
                    # in the account that names this role would receive its credentials.
                    "StringEquals": {
                        "aws:RequestTag/kubernetes-namespace": constants.EXPORTER_NAMESPACE,
                        "aws:RequestTag/kubernetes-service-account": constants.EXPORTER_SERVICE_ACCOUNT,
                    },
                    # The source of the request: a cluster of this account (in a Region of a listed cluster).
                    "StringLike": {
                        f"aws:RequestTag/{constants.EKS_CLUSTER_ARN_TAG}": source_clusters(Stack.of(self), cluster_arns)
                    },
                }
            )
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=pod_identity,
            description="ecr-retention exporter: writes the in-use manifest of its cluster",
        )
        self.cluster_arns = tuple(cluster_arns)
        if not self.cluster_arns:
            # No cluster may write until the operator lists the clusters (cdk.json exporterClusterArns), and none
            # has a manifest at all unless the collector reads it (eksClusters).
            if not agentless_clusters:
                Annotations.of(self).add_warning_v2(
                    "ecr-retention:no-exporter-clusters",
                    f"no {constants.EXPORTER_CLUSTER_ARNS_CONTEXT_KEY} or {constants.EKS_CLUSTERS_CONTEXT_KEY} in the "
                    "CDK context: no cluster's in-use manifest is written, so runs are blocked while safety.clusters "
                    "names any cluster (docs/deploy.md)",
                )
            return
        # Pod Identity tags each session with the EKS cluster's name and ARN: a cluster writes its own manifest
        # and no other, so a compromised cluster cannot hide what another cluster runs. The key comes from the name
        # tag, and the ARN tag must be that very cluster's in this account and in a region of a listed cluster: one
        # statement whatever the number of clusters, far from IAM's size limit. Which clusters are listed the run
        # says (a manifest of a cluster in neither safety list is named); the bucket policy binds the same for this
        # role and the spokes' (infra.inventory_bucket, docs/security.md).
        self.role.add_to_policy(own_manifest_statement(inventory_bucket, self.cluster_arns))


def source_clusters(stack: Stack, cluster_arns: Sequence[str]) -> list[str]:
    """The clusters whose pods may receive the role's credentials, by the `eks-cluster-arn` session tag Pod Identity
    sets: any cluster of this account in the Region of a listed cluster (of any Region when none is listed).

    The trust's source condition. EKS Pod Identity documents its session tags as the keys to restrict which clusters,
    namespaces and service accounts use a role (EKS User Guide, "Create IAM role with trust policy required by EKS Pod
    Identity"); it documents neither aws:SourceAccount nor aws:SourceArn, and a condition on a key that is absent
    would refuse every pod. One pattern per Region rather than one ARN per cluster: a trust policy is limited to 2,048
    characters by default, about 30 cluster ARNs."""
    regions = partitions_and_regions(cluster_arns)
    if not regions:
        return [f"arn:{Aws.PARTITION}:eks:*:{stack.account}:cluster/*"]
    return [f"arn:{partition}:eks:{region}:{stack.account}:cluster/*" for partition, region in regions]


def own_manifest_statement(bucket: s3.IBucket, cluster_arns: Sequence[str]) -> iam.PolicyStatement:
    """PutObject on `in-use/<the session's eks-cluster-name>.json` while its eks-cluster-arn is the cluster of that
    name, in the caller's account and in the region of a listed cluster."""
    name = "${aws:PrincipalTag/" + constants.EKS_CLUSTER_NAME_TAG + "}"
    regions = partitions_and_regions(cluster_arns)
    own_arns = [
        f"arn:{partition}:eks:{region}:${{aws:PrincipalAccount}}:cluster/{name}" for partition, region in regions
    ]
    return iam.PolicyStatement(
        actions=["s3:PutObject"],
        resources=[bucket.arn_for_objects(constants.IN_USE_PREFIX + name + ".json")],
        conditions={"StringEquals": {f"aws:PrincipalTag/{constants.EKS_CLUSTER_ARN_TAG}": own_arns}},
    )
