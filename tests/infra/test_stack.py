"""What the synthesized EcrRetention template guarantees: encryption, TLS, least privilege, outputs."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.domain.config import parse_config
from infra.app_context import cdk_json_context
from infra.stack import EcrRetentionStack

DENY_WITHOUT_TLS = {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


@pytest.fixture(scope="module")
def stack(minimal_rules_text: str) -> EcrRetentionStack:
    # No assets exist yet; skipping bundling now keeps this fixture Docker-free when Lambdas arrive.
    app = cdk.App(context={**cdk_json_context(), "aws:cdk:bundling-stacks": []})
    return EcrRetentionStack(app, "EcrRetentionTest", config=parse_config(minimal_rules_text, "inline"))


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> Template:
    return Template.from_stack(stack)


def only_logical_id(template: Template, resource_type: str, properties: dict[str, Any]) -> str:
    found = template.find_resources(resource_type, {"Properties": properties})
    assert len(found) == 1, f"expected one {resource_type} matching {properties}, found {sorted(found)}"
    return next(iter(found))


@pytest.fixture(scope="module")
def inventory_bucket_id(template: Template) -> str:
    return only_logical_id(template, "AWS::S3::Bucket", {"VersioningConfiguration": {"Status": "Enabled"}})


@pytest.fixture(scope="module")
def exporter_role_id(template: Template) -> str:
    return only_logical_id(
        template,
        "AWS::IAM::Role",
        {"AssumeRolePolicyDocument": {"Statement": [{"Principal": {"Service": "pods.eks.amazonaws.com"}}]}},
    )


@pytest.mark.slow
def test_stack_keeps_the_validated_rules_for_later_constructs(
    stack: EcrRetentionStack, minimal_rules_text: str
) -> None:
    assert stack.config == parse_config(minimal_rules_text, "inline")


@pytest.mark.slow
def test_inventory_bucket_is_encrypted_private_and_versioned(template: Template, inventory_bucket_id: str) -> None:
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "Properties": {
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
                },
                "PublicAccessBlockConfiguration": {
                    "BlockPublicAcls": True,
                    "BlockPublicPolicy": True,
                    "IgnorePublicAcls": True,
                    "RestrictPublicBuckets": True,
                },
                "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
                "VersioningConfiguration": {"Status": "Enabled"},
            },
            "DeletionPolicy": "Retain",
        },
    )


@pytest.mark.slow
def test_inventory_bucket_expires_old_versions_and_reports(template: Template) -> None:
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "VersioningConfiguration": {"Status": "Enabled"},
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like({"NoncurrentVersionExpiration": {"NoncurrentDays": 30}, "Status": "Enabled"}),
                        Match.object_like({"Prefix": "reports/", "ExpirationInDays": 365, "Status": "Enabled"}),
                    ]
                )
            },
        },
    )


@pytest.mark.slow
def test_inventory_bucket_logs_access_to_an_encrypted_private_log_bucket(
    template: Template, inventory_bucket_id: str
) -> None:
    logging = template.find_resources("AWS::S3::Bucket")[inventory_bucket_id]["Properties"]["LoggingConfiguration"]
    log_bucket = template.find_resources("AWS::S3::Bucket")[logging["DestinationBucketName"]["Ref"]]
    assert log_bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert log_bucket["Properties"]["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    assert log_bucket["Properties"]["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 90


@pytest.mark.slow
def test_every_bucket_denies_requests_without_tls(template: Template) -> None:
    buckets = template.find_resources("AWS::S3::Bucket")
    policies = template.find_resources("AWS::S3::BucketPolicy")
    protected = {
        policy["Properties"]["Bucket"]["Ref"]
        for policy in policies.values()
        if any(
            statement["Effect"] == "Deny" and statement.get("Condition") == DENY_WITHOUT_TLS["Condition"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        )
    }
    assert protected == set(buckets)


@pytest.mark.slow
def test_report_topic_is_encrypted_with_a_rotating_customer_key(template: Template) -> None:
    key_id = only_logical_id(template, "AWS::KMS::Key", {"EnableKeyRotation": True})
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}})


@pytest.mark.slow
def test_report_topic_denies_publishing_without_tls(template: Template) -> None:
    topic_id = next(iter(template.find_resources("AWS::SNS::Topic")))
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic_id}],
            "PolicyDocument": {
                "Statement": Match.array_with([Match.object_like({**DENY_WITHOUT_TLS, "Action": "sns:Publish"})])
            },
        },
    )


@pytest.mark.slow
def test_exporter_role_trusts_only_eks_pod_identity_for_the_exporter_service_account(
    template: Template, exporter_role_id: str
) -> None:
    trust = template.find_resources("AWS::IAM::Role")[exporter_role_id]["Properties"]["AssumeRolePolicyDocument"]
    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/kubernetes-namespace": "ecr-retention",
                    "aws:RequestTag/kubernetes-service-account": "ecr-retention-exporter",
                }
            },
        }
    ]


@pytest.mark.slow
def test_exporter_role_may_only_put_objects_under_in_use(
    template: Template, exporter_role_id: str, inventory_bucket_id: str
) -> None:
    role = template.find_resources("AWS::IAM::Role")[exporter_role_id]["Properties"]
    assert "ManagedPolicyArns" not in role
    assert "Policies" not in role
    attached = [
        policy["Properties"]["PolicyDocument"]["Statement"]
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": exporter_role_id} in policy["Properties"]["Roles"]
    ]
    assert attached == [
        [
            {
                "Effect": "Allow",
                "Action": "s3:PutObject",
                "Resource": {
                    "Fn::Join": [
                        "",
                        [
                            {"Fn::GetAtt": [inventory_bucket_id, "Arn"]},
                            "/in-use/${aws:PrincipalTag/eks-cluster-name}.json",
                        ],
                    ]
                },
            }
        ]
    ]


@pytest.mark.slow
def test_outputs_name_the_bucket_the_topic_and_the_exporter_role(
    template: Template, inventory_bucket_id: str, exporter_role_id: str
) -> None:
    topic_id = next(iter(template.find_resources("AWS::SNS::Topic")))
    template.has_output("InventoryBucketName", {"Value": {"Ref": inventory_bucket_id}})
    template.has_output("ReportTopicArn", {"Value": {"Ref": topic_id}})
    template.has_output("ExporterRoleArn", {"Value": {"Fn::GetAtt": [exporter_role_id, "Arn"]}})


@pytest.mark.slow
def test_cdk_nag_aws_solutions_finds_nothing_unacknowledged(stack: EcrRetentionStack, template: Template) -> None:
    # After Template.from_stack, so the tree is checked as synthesized, with every aspect applied.
    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
    findings = [
        f"{violation.rule_name} at {', '.join(str(resource.construct_path) for resource in violation.violating_resources)}"
        for violation in report.violations
    ]
    assert report.success, "\n".join(findings)
