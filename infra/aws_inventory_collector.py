"""The AWS inventory collector: reads what ECS and Lambda use in this account and in each spoke account, in each
configured region, and writes `in-use/aws-<account>-<region>.json` (docs/aws-inventory.md). Started by its own
schedule (infra.schedules), never by a push.

Its role reads with the same List, Describe and Get calls as the spoke role
(deploy/cloudformation/spoke-reader-role.yaml), in every region of this account; assumes only the listed spoke
roles; and writes only `in-use/aws-*.json`, which the bucket policy lets no one else write
(infra.inventory_bucket).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import Aws, Duration, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ecr_retention import layout
from ecr_retention.cdk import access, constants, lambda_asset, nag, name_groups
from ecr_retention.cdk.deploy_settings import CollectorVpc
from ecr_retention.cdk.eks_access import EksClusterAccess
from ecr_retention.cdk.pipeline_function import FunctionNetwork, PipelineFunction
from ecr_retention.domain.inventory.aws import account_of_role
from ecr_retention.domain.inventory.eks_clusters import EksCluster
from ecr_retention.domain.inventory.manifest import manifest_key

# The calls of ecr_retention.aws.ecs_workloads, scheduled_tasks and lambda_functions that IAM authorizes on "*"
# only (Service Authorization Reference: no resource type, or, for ecs:ListTasks, a container-instance type that
# a Fargate task or a whole-cluster listing never names).
ACCOUNT_WIDE_READ_ACTIONS = (
    "ecs:DescribeTaskDefinition",
    "ecs:ListClusters",
    "ecs:ListServices",
    "ecs:ListTaskDefinitions",
    "ecs:ListTasks",
    "events:ListEventBuses",
    "events:ListRules",
    "lambda:ListFunctions",
    "scheduler:ListSchedules",
)
# Amazon Inspector's reading (inspectorInUse): its one call, which IAM authorizes on "*" only.
INSPECTOR_COVERAGE_ACTION = "inspector2:ListCoverage"
# The calls that name a resource, each on every resource of its type in this account, in any region (the
# collector reads every region that collectRegions names).
SCOPED_READS = {
    ("ecs:DescribeServices", "ecs:DescribeTasks"): (("ecs", "service/*"), ("ecs", "task/*")),
    ("events:ListTargetsByRule",): (("events", "rule/*"),),  # rule/<name>, and rule/<bus>/<name> on a custom bus
    ("scheduler:GetSchedule",): (("scheduler", "schedule/*"),),  # schedule/<group>/<name>
    ("lambda:GetFunction", "lambda:ListAliases"): (("lambda", "function:*"),),  # versions: function:<name>:<n>
}
# How cdk-nag prints an ARN of this account in any region.
NAG_ACCOUNT_ARN = "arn:<AWS::Partition>:{service}:*:<AWS::AccountId>:{resource}"
SCOPED_READ_REASONS = {
    "service/*": "ECS services are named at run time (ListServices of each cluster); DescribeServices reads them.",
    "task/*": "ECS tasks are named at run time (ListTasks of each cluster); DescribeTasks reads the running ones.",
    "rule/*": "EventBridge rules of every bus are named at run time (ListRules); their ECS targets are read.",
    "schedule/*": "Scheduler schedules of every group are named at run time (ListSchedules); ECS ones are read.",
    "function:*": "Lambda functions and their versions are named at run time (ListFunctions); image ones are read.",
}


def assume_spoke_roles_statements(spoke_role_arns: Sequence[str]) -> list[iam.PolicyStatement]:
    """sts:AssumeRole on exactly the listed roles, in a size that does not grow with each role's ARN: one statement
    per distinct partition and role path+name, on that role in any account, conditioned on aws:ResourceAccount (the
    account that owns the role assumed) being one of the accounts listed with that name. 200 spokes of one name are
    about 3 KB, where 200 ARNs (about 11 KB) overflowed into a managed policy over IAM's 6,144 characters.

    aws:ResourceAccount is a global condition key that IAM includes in the request context for most actions, the
    account of the resource requested (IAM User Guide, "AWS global condition context keys", aws:ResourceAccount,
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-resourceaccount;
    for sts:AssumeRole the resource is the role assumed, and that page lists the few actions without the key). Should
    a request lack it, StringEquals is false and the statement allows nothing: the collection fails with AccessDenied,
    named in its manifest's problems, and never reaches a role that is not listed. Each spoke role trusts only the
    collector's role (deploy/cloudformation/spoke-reader-role.yaml), so both sides must agree, as before."""
    accounts_by_role: dict[tuple[str, str], set[str]] = {}
    for arn in spoke_role_arns:
        partition, resource = arn.split(":")[1], arn.split(":", 5)[5]  # resource: role/<path/><name>
        accounts_by_role.setdefault((partition, resource), set()).add(account_of_role(arn))
    return [
        iam.PolicyStatement(
            actions=["sts:AssumeRole"],
            resources=[f"arn:{partition}:iam::*:{resource}"],
            conditions={"StringEquals": {"aws:ResourceAccount": sorted(accounts)}},
        )
        for (partition, resource), accounts in sorted(accounts_by_role.items())
    ]


class AwsInventoryCollector(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        bucket: s3.IBucket,
        dead_letters: sqs.IQueue,
        regions: Sequence[str],
        spoke_role_arns: Sequence[str],
        revisions: int,
        eks_clusters: Sequence[EksCluster] = (),
        own_eks_clusters: Sequence[EksCluster] = (),
        other_cluster_names: Sequence[str] = (),
        vpc: CollectorVpc | None = None,
        inspector_in_use: bool = False,
    ) -> None:
        """other_cluster_names: every cluster the stack knows of that the collector does not read (exporters',
        safety's): its grouped keys (infra.name_groups) never take in their manifests."""
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        role_name = stack.stack_name + constants.COLLECTOR_ROLE_NAME_SUFFIX
        network = self._network(vpc) if vpc is not None else None
        self.security_group = network.security_group if network is not None else None
        self.collector = PipelineFunction(
            self,
            "Collector",
            name="collector",
            description="ecr-retention: write what ECS and Lambda use as in-use/aws-<account>-<region>.json",
            code=code,
            # Not REGISTRY_ID: the collector never reads the registry, only what ECS and Lambda run.
            environment={
                layout.BUCKET_NAME_VARIABLE: bucket.bucket_name,
                # Explicit, so that the function's configuration says where it collects.
                layout.COLLECT_REGIONS_VARIABLE: json.dumps(list(regions)) if regions else f'["{Aws.REGION}"]',
                # The list itself is in the asset (infra.lambda_asset): 200 accounts outgrow the environment's 4 KB.
                layout.SPOKE_ROLES_FILE_VARIABLE: f"{lambda_asset.LAMBDA_TASK_ROOT}/{constants.ASSET_SPOKE_ROLES_FILE}",
                layout.TASK_DEFINITION_REVISIONS_VARIABLE: str(revisions),
                # The eksClusters themselves are in the asset too (62 ARNs outgrew the environment's 4 KB).
                **(
                    {
                        layout.EKS_CLUSTERS_FILE_VARIABLE: f"{lambda_asset.LAMBDA_TASK_ROOT}/{constants.ASSET_EKS_CLUSTERS_FILE}"
                    }
                    if eks_clusters
                    else {}
                ),
            },
            # Invoked asynchronously (Scheduler): an invocation that fails its retries lands here.
            dead_letter_queue=dead_letters,
            role_name=role_name,
            network=network,
        )
        # Safe to retry: a collection only reads, and each manifest is written whole.
        self.collector.function.configure_async_invoke(
            retry_attempts=2, max_event_age=Duration.hours(constants.DELIVERY_MAX_EVENT_AGE_HOURS)
        )
        role = self.collector.role
        # One key per cluster while they are few; past that, groups of names by their common prefix (name_groups).
        cluster_keys = [
            manifest_key(pattern, constants.IN_USE_PREFIX)
            for pattern in name_groups.name_patterns([cluster.name for cluster in eks_clusters], other_cluster_names)
        ]
        self.manifest_keys = [constants.AWS_INVENTORY_MANIFESTS, *cluster_keys]
        # GetObject: an incomplete collection carries over what the manifest it replaces named (its own manifests
        # only). ListBucket unconditioned, so that a first collection's missing manifest is NoSuchKey, not
        # AccessDenied (the s3:prefix condition key is absent from a GetObject request): an incomplete collection is
        # never stored over a manifest that could not be read.
        role.add_to_principal_policy(
            access.objects_statement(bucket, ["s3:GetObject", "s3:PutObject"], self.manifest_keys)
        )
        role.add_to_principal_policy(access.list_statement(bucket, None))
        access.acknowledge_key_patterns(
            role,
            bucket,
            {
                constants.AWS_INVENTORY_MANIFESTS: "One manifest per account and region, in-use/aws-<account>-"
                "<region>.json; accounts and regions are the deployment's, named at run time.",
                **{
                    key: "The manifests of the eksClusters whose names start so (too many to list one by one); no "
                    "other cluster the stack knows has such a name (infra.name_groups)."
                    for key in cluster_keys
                    if name_groups.is_pattern(key.removesuffix(".json"))
                },
            },
        )
        for statement in assume_spoke_roles_statements(spoke_role_arns):
            role.add_to_principal_policy(statement)
            [resource] = statement.resources
            nag.acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{resource}]",
                "The listed spoke role in any account, conditioned on aws:ResourceAccount being a listed spoke account "
                "of that role: exactly the spokeRoleArns, in a size that fits 200 accounts.",
            )
        self.reads = self._workload_reads(role)
        self.inspector_reads = self._read_inspector(bucket, enabled=inspector_in_use)
        self.eks_access = EksClusterAccess(self, "EksAccess", role=role, clusters=own_eks_clusters)

    def _network(self, settings: CollectorVpc) -> FunctionNetwork:
        """The collector in the given subnets, with a security group that only opens HTTPS out: the clusters'
        endpoints and the AWS APIs (docs/aws-inventory.md lists the VPC endpoints)."""
        vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=settings.vpc_id, availability_zones=Fn.get_azs())
        group = ec2.SecurityGroup(
            self,
            "CollectorSecurityGroup",
            vpc=vpc,
            description="ecr-retention collector: HTTPS out to EKS API endpoints and AWS APIs",
            allow_all_outbound=False,
        )
        group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "EKS API endpoints and AWS APIs")
        subnets = [
            ec2.Subnet.from_subnet_id(self, f"Subnet{n}", subnet) for n, subnet in enumerate(settings.subnet_ids)
        ]
        return FunctionNetwork(vpc=vpc, subnets=ec2.SubnetSelection(subnets=subnets), security_group=group)

    def _workload_reads(self, role: iam.IRole) -> iam.Policy:
        """The read-only calls in this account, in a policy of their own: its '*' is acknowledged for these
        actions, apart from the role's X-Ray '*' (infra.pipeline_function)."""
        stack = Stack.of(self)
        statements = [iam.PolicyStatement(actions=list(ACCOUNT_WIDE_READ_ACTIONS), resources=["*"])]
        for actions, resources in SCOPED_READS.items():
            arns = [f"arn:{Aws.PARTITION}:{service}:*:{stack.account}:{resource}" for service, resource in resources]
            statements.append(iam.PolicyStatement(actions=list(actions), resources=arns))
        policy = iam.Policy(self, "WorkloadReads", roles=[role], statements=statements)
        nag.acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ecs:ListClusters, ListServices, ListTasks, ListTaskDefinitions, DescribeTaskDefinition, "
            "events:ListEventBuses, ListRules, scheduler:ListSchedules and lambda:ListFunctions support no "
            "resource-level permissions (ListTasks names container instances only when filtered by one).",
        )
        for resources in SCOPED_READS.values():
            for service, resource in resources:
                nag.acknowledge(
                    policy,
                    f"AwsSolutions-IAM5[Resource::{NAG_ACCOUNT_ARN.format(service=service, resource=resource)}]",
                    SCOPED_READ_REASONS[resource],
                )
        return policy

    def _read_inspector(self, bucket: s3.IBucket, *, enabled: bool) -> iam.Policy | None:
        """Amazon Inspector's reading (inspectorInUse): the function told so, its manifests in-use/inspector-*.json
        (read back for the carry-over, and only the collector's: the bucket policy reserves what manifest_keys
        lists), and inspector2:ListCoverage, the one call of aws/inspector_coverage.py, and nothing else of
        Inspector: not its findings, not GetClustersForImage. Nothing of it without inspectorInUse."""
        if not enabled:
            return None
        role = self.collector.role
        self.function.add_environment(layout.INSPECTOR_IN_USE_VARIABLE, "true")
        self.manifest_keys.append(constants.INSPECTOR_MANIFESTS)
        role.add_to_principal_policy(
            access.objects_statement(bucket, ["s3:GetObject", "s3:PutObject"], [constants.INSPECTOR_MANIFESTS])
        )
        access.acknowledge_key_patterns(
            role,
            bucket,
            {
                constants.INSPECTOR_MANIFESTS: "Amazon Inspector's reading, one manifest per region, "
                "in-use/inspector-<account>-<region>.json; regions are the deployment's, named at run time."
            },
        )
        policy = iam.Policy(
            self,
            "InspectorCoverageReads",
            roles=[role],
            statements=[iam.PolicyStatement(actions=[INSPECTOR_COVERAGE_ACTION], resources=["*"])],
        )
        nag.acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "inspector2:ListCoverage supports no resource-level permissions; it only reads Inspector's coverage.",
        )
        return policy

    @property
    def function(self) -> lambda_.Function:
        return self.collector.function

    @property
    def role(self) -> iam.IRole:
        return self.collector.role
