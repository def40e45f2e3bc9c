"""The collector's way into the eksClusters of this account: an EKS access entry for its role in each, with
AmazonEKSViewPolicy on the whole cluster, and eks:DescribeCluster on exactly those clusters. A spoke account's
clusters get the same from infra/cloudformation/spoke-eks-access.yaml, for the spoke role the collector assumes.

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

from aws_cdk import Aws, CfnCondition, Fn, NestedStack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from ecr_retention.cdk import constants, nag, name_groups
from ecr_retention.domain.inventory.eks_clusters import EksCluster


def describable_arns(clusters: Sequence[EksCluster]) -> list[str]:
    """Each cluster's ARN while they are few; past that, per partition, Region and account, the names grouped by their
    common prefix (infra.name_groups): 500 ARNs are about 35,000 characters, over IAM's 6,144 for a managed policy."""
    names: dict[tuple[str, str, str], list[str]] = {}
    for cluster in clusters:
        names.setdefault((cluster.partition, cluster.region, cluster.account), []).append(cluster.name)
    per_place = max(1, name_groups.MOST_PATTERNS // len(names))
    return sorted(
        f"arn:{partition}:eks:{region}:{account}:cluster/{pattern}"
        for (partition, region, account), each in names.items()
        for pattern in name_groups.name_patterns(each, most=per_place)
    )


def access_policy_arn(policy: str = constants.EKS_VIEW_POLICY) -> str:
    return f"arn:{Aws.PARTITION}:eks::aws:cluster-access-policy/{policy}"


# CloudFormation declares at most 500 resources per template, and the stack has about 100 of its own: past this many
# clusters of this account, their access entries go to nested stacks (AWS::CloudFormation::Stack), ENTRIES_PER_NESTED
# in each, which `cdk deploy` uploads and deploys with the stack.
INLINE_ENTRIES = 100
ENTRIES_PER_NESTED = 250


class EksClusterAccess(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, role: iam.IRole, clusters: Sequence[EksCluster]) -> None:
        super().__init__(scope, construct_id)
        self.entries: list[eks.CfnAccessEntry] = []
        self.nested: list[NestedStack] = []
        if len(clusters) > INLINE_ENTRIES:
            for start in range(0, len(clusters), ENTRIES_PER_NESTED):
                nested = NestedStack(self, f"Entries{start // ENTRIES_PER_NESTED}")
                self.nested.append(nested)
                for cluster in clusters[start : start + ENTRIES_PER_NESTED]:
                    self.entries.append(self._entry(nested, role, cluster))
        else:
            for cluster in clusters:
                self.entries.append(self._entry(self, role, cluster))
        if clusters:
            arns = describable_arns(clusters)
            role.add_to_principal_policy(iam.PolicyStatement(actions=["eks:DescribeCluster"], resources=arns))
            for arn in arns:
                if name_groups.is_pattern(arn):
                    nag.acknowledge(
                        role,
                        f"AwsSolutions-IAM5[Resource::{arn}]",
                        "The eksClusters of this account and Region whose names start so, too many to list one by one "
                        "(DescribeCluster reads a cluster's endpoint and CA only; its access entry decides what the "
                        "collector reads inside, and there is one for each listed cluster only).",
                    )

    @staticmethod
    def _condition(parent: Construct, cluster: EksCluster) -> CfnCondition:
        """An access entry is a resource of the cluster's own account and region: a stack deployed elsewhere skips it
        (the collector then names the cluster's 401 or 403 in its incomplete manifest; docs/aws-inventory.md). One
        condition per account and Region in each template: CloudFormation takes at most 200 conditions in one."""
        condition_id = "In" + re.sub(r"[^A-Za-z0-9]", "", f"{cluster.account}{cluster.region}")
        existing = parent.node.try_find_child(condition_id)
        if isinstance(existing, CfnCondition):
            return existing
        return CfnCondition(
            parent,
            condition_id,
            expression=Fn.condition_and(
                Fn.condition_equals(Aws.ACCOUNT_ID, cluster.account), Fn.condition_equals(Aws.REGION, cluster.region)
            ),
        )

    @classmethod
    def _entry(cls, parent: Construct, role: iam.IRole, cluster: EksCluster) -> eks.CfnAccessEntry:
        suffix = re.sub(r"[^A-Za-z0-9]", "", f"{cluster.name}{cluster.region}")
        here = cls._condition(parent, cluster)
        entry = eks.CfnAccessEntry(
            parent,
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
