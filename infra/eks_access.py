"""The collector's way into the eksClusters of this account: an EKS access entry for its role in each, with
AmazonEKSViewPolicy on the whole cluster, and eks:DescribeCluster on exactly those clusters. A spoke account's
clusters get the same from deploy/cloudformation/spoke-eks-access.yaml, for the spoke role the collector assumes.

Why AmazonEKSViewPolicy: EKS access policies are AWS-managed and cannot be narrowed. It is the read-only one
(get, list and watch, as Kubernetes' `view` ClusterRole), it covers every kind the collector lists (pods,
deployments, statefulsets, daemonsets, replicasets, controllerrevisions, jobs, cronjobs) and it excludes Secrets.
Anything narrower means a Kubernetes ClusterRole and binding installed in the cluster, mapped through the access
entry's kubernetesGroups: the install this path exists to avoid. Cluster scope, because the collector lists across
all namespaces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import Aws, CfnCondition, Fn
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from ecr_retention.domain.inventory.eks_clusters import EksCluster
from infra import constants


def access_policy_arn(policy: str = constants.EKS_VIEW_POLICY) -> str:
    return f"arn:{Aws.PARTITION}:eks::aws:cluster-access-policy/{policy}"


class EksClusterAccess(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, role: iam.IRole, clusters: Sequence[EksCluster]) -> None:
        super().__init__(scope, construct_id)
        self.entries: list[eks.CfnAccessEntry] = []
        for cluster in clusters:
            self.entries.append(self._entry(role, cluster))
        if clusters:
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["eks:DescribeCluster"], resources=sorted(c.arn for c in clusters))
            )

    def _entry(self, role: iam.IRole, cluster: EksCluster) -> eks.CfnAccessEntry:
        suffix = re.sub(r"[^A-Za-z0-9]", "", f"{cluster.name}{cluster.region}")
        # An access entry is a resource of the cluster's own account and region: a stack deployed elsewhere skips
        # it (the collector then names the cluster's 401 or 403 in its incomplete manifest; docs/aws-inventory.md).
        here = CfnCondition(
            self,
            f"In{suffix}",
            expression=Fn.condition_and(
                Fn.condition_equals(Aws.ACCOUNT_ID, cluster.account), Fn.condition_equals(Aws.REGION, cluster.region)
            ),
        )
        entry = eks.CfnAccessEntry(
            self,
            f"Entry{suffix}",
            cluster_name=cluster.name,
            principal_arn=role.role_arn,
            type="STANDARD",
            access_policies=[
                eks.CfnAccessEntry.AccessPolicyProperty(
                    policy_arn=access_policy_arn(),
                    access_scope=eks.CfnAccessEntry.AccessScopeProperty(type="cluster"),
                )
            ],
        )
        entry.cfn_options.condition = here
        return entry
