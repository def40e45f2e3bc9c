"""The collector's agentless access to EKS clusters (eksClusters): an access entry with AmazonEKSViewPolicy for
the collector role in each cluster of this account, eks:DescribeCluster on exactly those clusters, the clusters'
manifests among the collector's writes and no other, and the optional collectorVpc."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk.spoke_templates import SPOKE_EKS_ACCESS, template_path
from ecr_retention.cdk.stack import EcrRetentionStack
from support.iam_evaluation import Request, decide
from support.infra_stacks import (
    CONTEXT,
    PROD_ARN,
    RULES,
    SharedStack,
    function_role,
    role_statements,
)

OWN_CLUSTER = "arn:aws:eks:eu-west-1:123456789012:cluster/agentless"
OWN_CLUSTER_ELSEWHERE = "arn:aws:eks:us-east-1:123456789012:cluster/batch_east"
SPOKE_ROLE = "arn:aws:iam::210987654321:role/ecr-retention-reader"
SPOKE_CLUSTER = "arn:aws:eks:eu-west-1:210987654321:cluster/payments"
VPC = {"vpcId": "vpc-0a1b2c3d4e5f60718", "subnetIds": ["subnet-0a1b2c3d4e5f60718", "subnet-0b1c2d3e4f5a60718"]}
SPOKE_EKS_TEMPLATE = template_path(SPOKE_EKS_ACCESS)


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    context = {
        **CONTEXT,
        "spokeRoleArns": [SPOKE_ROLE],
        "eksClusters": [OWN_CLUSTER, OWN_CLUSTER_ELSEWHERE, SPOKE_CLUSTER],
        "collectorVpc": VPC,
    }
    # Every cluster the collector reads is expected or optional (DeploySettings.check_against_the_stack).
    rules = RULES.replace(
        "clusters: [prod, dev]}", "clusters: [prod, dev], optional_clusters: [agentless, batch_east, payments]}"
    )
    return shared_stack(rules, context)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: resource for name, resource in template["Resources"].items() if resource["Type"] == kind}


def collector_role(template: dict[str, Any]) -> str:
    return function_role(template, "collector")


def test_each_cluster_of_this_account_gets_a_read_only_access_entry_for_the_collector_role(
    template: dict[str, Any],
) -> None:
    entries = resources_of(template, "AWS::EKS::AccessEntry")

    assert sorted(entry["Properties"]["ClusterName"] for entry in entries.values()) == ["agentless", "batch_east"]
    for entry in entries.values():
        assert entry["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [collector_role(template), "Arn"]}
        assert entry["Properties"]["Type"] == "STANDARD"
        assert entry["Properties"]["AccessPolicies"] == [
            {
                "AccessScope": {"Type": "cluster"},
                "PolicyArn": {
                    "Fn::Join": [
                        "",
                        ["arn:", {"Ref": "AWS::Partition"}, ":eks::aws:cluster-access-policy/AmazonEKSViewPolicy"],
                    ]
                },
            }
        ]
        assert "KubernetesGroups" not in entry["Properties"]  # nothing to bind inside the cluster


def test_an_access_entry_is_created_only_in_its_clusters_account_and_region(template: dict[str, Any]) -> None:
    entries = resources_of(template, "AWS::EKS::AccessEntry")
    conditions = {
        entry["Properties"]["ClusterName"]: template["Conditions"][entry["Condition"]] for entry in entries.values()
    }

    assert conditions["agentless"] == {
        "Fn::And": [
            {"Fn::Equals": [{"Ref": "AWS::AccountId"}, "123456789012"]},
            {"Fn::Equals": [{"Ref": "AWS::Region"}, "eu-west-1"]},
        ]
    }
    assert conditions["batch_east"]["Fn::And"][1] == {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]}


def test_the_collector_describes_exactly_its_own_accounts_clusters_and_writes_each_listed_clusters_manifest(
    template: dict[str, Any],
) -> None:
    statements = role_statements(template, collector_role(template))

    eks = [s for s in statements if '"eks:' in json.dumps(s["Action"])]
    assert eks == [
        {"Action": "eks:DescribeCluster", "Effect": "Allow", "Resource": sorted([OWN_CLUSTER, OWN_CLUSTER_ELSEWHERE])}
    ]
    [put] = [s for s in statements if s["Action"] == ["s3:GetObject", "s3:PutObject"]]
    keys = sorted(part[-1].split("/", 1)[1] for part in (r["Fn::Join"][1] for r in put["Resource"]))
    assert keys == ["in-use/agentless.json", "in-use/aws-*.json", "in-use/batch_east.json", "in-use/payments.json"]


def test_the_bucket_policy_lets_the_collector_write_only_its_manifests(template: dict[str, Any]) -> None:
    statements = [
        s
        for policy in resources_of(template, "AWS::S3::BucketPolicy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    [deny] = [s for s in statements if s.get("Sid") == "TheCollectorWritesOnlyItsManifests"]
    keys = sorted(r["Fn::Join"][1][-1] for r in deny["NotResource"])
    assert keys == ["/in-use/agentless.json", "/in-use/aws-*.json", "/in-use/batch_east.json", "/in-use/payments.json"]


def test_only_the_collector_writes_the_manifests_of_the_clusters_it_reads(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    """An exporter session of a listed cluster (prod) that names itself after a collected cluster writes nothing."""
    assert stack.collector is not None
    bucket_id = stack.get_logical_id(stack.inventory.bucket.node.default_child)  # type: ignore[arg-type]
    collector_id = stack.get_logical_id(stack.collector.role.node.default_child)  # type: ignore[arg-type]
    exporter_id = stack.get_logical_id(stack.exporter.role.node.default_child)  # type: ignore[arg-type]
    collector_arn, exporter_arn = "arn:aws:iam::123456789012:role/collector", "arn:aws:iam::123456789012:role/exporter"
    tokens = {f"{bucket_id}.Arn": "arn:aws:s3:::inventory", f"{collector_id}.Arn": collector_arn}
    tokens["AWS::AccountId"] = "123456789012"
    tokens[f"{exporter_id}.Arn"] = exporter_arn
    [bucket_policy] = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in resources_of(template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    context = {"aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}
    exporter = {**context, "aws:PrincipalArn": exporter_arn, "aws:PrincipalTag/eks-cluster-arn": PROD_ARN}
    for name in ("agentless", "batch_east", "payments"):
        key = f"arn:aws:s3:::inventory/in-use/{name}.json"
        as_exporter = Request("s3:PutObject", key, {**exporter, "aws:PrincipalTag/eks-cluster-name": name})
        everything = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
        assert decide([everything, bucket_policy], as_exporter, tokens) == "deny", name
        as_collector = Request("s3:PutObject", key, {**context, "aws:PrincipalArn": collector_arn})
        assert decide([role_statements(template, collector_id), bucket_policy], as_collector, tokens) == "allow", name


def test_the_collector_is_told_which_clusters_to_read(template: dict[str, Any]) -> None:
    [function] = [
        f
        for f in resources_of(template, "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "ecr_retention.handlers.collector.lambda_handler"
    ]
    environment = function["Properties"]["Environment"]["Variables"]
    # The list is in the asset (500 ARNs outgrow the environment's 4 KB; issue 43): tests/infra/test_scale.py.
    assert environment["EKS_CLUSTERS_FILE"] == "/var/task/eks-clusters.json"
    assert "EKS_CLUSTERS" not in environment


def test_with_collector_vpc_the_collector_runs_in_its_subnets_with_https_out_only(template: dict[str, Any]) -> None:
    [function] = [
        f
        for f in resources_of(template, "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "ecr_retention.handlers.collector.lambda_handler"
    ]
    network = function["Properties"]["VpcConfig"]
    assert network["SubnetIds"] == VPC["subnetIds"]
    [group_ref] = network["SecurityGroupIds"]
    group = template["Resources"][group_ref["Fn::GetAtt"][0]]["Properties"]
    assert group["VpcId"] == VPC["vpcId"]
    assert group["SecurityGroupEgress"] == [
        {
            "CidrIp": "0.0.0.0/0",
            "Description": "EKS API endpoints and AWS APIs",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    assert "SecurityGroupIngress" not in group
    # Lambda manages the function's network interfaces with the execution role: its AWS-managed VPC policy.
    role = template["Resources"][collector_role(template)]["Properties"]
    assert role["ManagedPolicyArns"] == [
        {
            "Fn::Join": [
                "",
                ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"],
            ]
        }
    ]
    assert template["Outputs"]["CollectorSecurityGroupId"]["Value"] == {
        "Fn::GetAtt": [group_ref["Fn::GetAtt"][0], "GroupId"]
    }
    # The other functions stay outside any VPC.
    in_vpc = [f for f in resources_of(template, "AWS::Lambda::Function").values() if "VpcConfig" in f["Properties"]]
    assert in_vpc == [function]


def test_cdk_nag_finds_nothing_unacknowledged_with_eks_clusters_and_a_vpc(
    stack: EcrRetentionStack, template: dict[str, Any]
) -> None:
    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
    findings = [
        f"{violation.rule_name} at {', '.join(str(r.construct_path) for r in violation.violating_resources)}"
        for violation in report.violations
    ]
    assert report.success, "\n".join(findings)


def test_without_eks_clusters_there_is_no_access_entry_and_no_eks_permission(shared_stack: SharedStack) -> None:
    template = Template.from_stack(shared_stack(RULES, CONTEXT)).to_json()

    assert resources_of(template, "AWS::EKS::AccessEntry") == {}
    assert not [s for s in role_statements(template, collector_role(template)) if "eks:" in json.dumps(s["Action"])]


def describe_role(resources: dict[str, Any], variable: str) -> Any:
    return resources[f"DescribeCluster&{{{variable}}}"]["Properties"]["RoleName"]


def test_the_spoke_eks_template_gives_the_spoke_role_the_same_access_to_each_spoke_cluster() -> None:
    document = yaml.safe_load(SPOKE_EKS_TEMPLATE.read_text(encoding="utf-8"))

    assert document["Transform"] == "AWS::LanguageExtensions"  # Fn::ForEach
    [loop] = [value for key, value in document["Resources"].items() if key.startswith("Fn::ForEach::")]
    variable, clusters, resources = loop
    assert clusters == {"Ref": "ClusterNames"}
    entry = resources[f"AccessEntry&{{{variable}}}"]
    assert entry["Type"] == "AWS::EKS::AccessEntry"
    assert entry["Properties"]["ClusterName"] == {"Ref": variable}
    assert entry["Properties"]["PrincipalArn"] == {
        "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/${ReaderRoleName}"
    }
    assert describe_role(resources, variable) == {"Ref": "ReaderRoleName"}
    assert entry["Properties"]["AccessPolicies"] == [
        {
            "PolicyArn": {"Fn::Sub": "arn:${AWS::Partition}:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"},
            "AccessScope": {"Type": "cluster"},
        }
    ]
    describe = resources[f"DescribeCluster&{{{variable}}}"]
    assert describe["Type"] == "AWS::IAM::RolePolicy"
    [statement] = describe["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "eks:DescribeCluster"
    assert statement["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${" + variable + "}"
    }
