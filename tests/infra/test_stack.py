"""What the synthesized EcrRetention template guarantees for its storage, topics and exporter: encryption,
TLS, who may write the in-use manifests, lifecycle expiry, outputs, and cdk-nag with nothing unacknowledged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk import nag
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.domain.config import parse_config
from support.iam_evaluation import Request, decide, decide_across_accounts
from support.infra_stacks import (
    CONTEXT,
    DEV_ARN,
    PROD_ARN,
    RULES,
    SharedStack,
    build_stack,
    role_statements,
    rules_file,
)

DENY_WITHOUT_TLS = {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


# An EKS cluster in a workload (spoke) account, whose exporter role there writes to this stack's bucket.
SPOKE_CLUSTER_ARN = "arn:aws:eks:eu-west-1:210987654321:cluster/payments"
SPOKE_EXPORTER_ROLE_ARN = "arn:aws:iam::210987654321:role/ecr-retention-exporter"
# The one role that may delete manifests, the in-use memory and run state (cdk.json breakGlassRoleArn).
BREAK_GLASS_ROLE_ARN = "arn:aws:iam::123456789012:role/ecr-retention-break-glass"
STACK_CONTEXT = {
    **CONTEXT,
    "exporterClusterArns": [PROD_ARN, DEV_ARN, SPOKE_CLUSTER_ARN],
    "spokeExporterRoleArns": [SPOKE_EXPORTER_ROLE_ARN],
    "breakGlassRoleArn": BREAK_GLASS_ROLE_ARN,
}
# Every cluster the stack lets write is expected or optional (synthesis refuses any other).
STACK_RULES = RULES.replace(
    "clusters: [prod, dev]}", "clusters: [prod, dev], optional_clusters: [210987654321/payments]}"
)


@pytest.fixture(scope="module")
def stack(shared_stack: SharedStack) -> EcrRetentionStack:
    return shared_stack(STACK_RULES, STACK_CONTEXT)


@pytest.fixture(scope="module")
def template(stack: EcrRetentionStack) -> Template:
    return Template.from_stack(stack)


# The inventory bucket: the one whose Object Created events reach EventBridge (its access-logs bucket is versioned too).
INVENTORY_BUCKET = {"NotificationConfiguration": {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}}


def only_logical_id(template: Template, resource_type: str, properties: dict[str, Any]) -> str:
    found = template.find_resources(resource_type, {"Properties": properties})
    assert len(found) == 1, f"expected one {resource_type} matching {properties}, found {sorted(found)}"
    return next(iter(found))


@pytest.fixture(scope="module")
def inventory_bucket_id(template: Template) -> str:
    return only_logical_id(template, "AWS::S3::Bucket", INVENTORY_BUCKET)


@pytest.fixture(scope="module")
def exporter_role_id(template: Template) -> str:
    return only_logical_id(
        template,
        "AWS::IAM::Role",
        {"AssumeRolePolicyDocument": {"Statement": [{"Principal": {"Service": "pods.eks.amazonaws.com"}}]}},
    )


@pytest.mark.slow
def test_stack_keeps_the_validated_rules_and_the_context_settings(stack: EcrRetentionStack) -> None:
    assert stack.config == parse_config(STACK_RULES, "inline")
    assert stack.settings.exporter_cluster_arns == (PROD_ARN, DEV_ARN, SPOKE_CLUSTER_ARN)
    assert stack.settings.spoke_exporter_role_arns == (SPOKE_EXPORTER_ROLE_ARN,)
    assert stack.settings.map_concurrency == 25


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
def test_inventory_bucket_expires_old_versions_reports_run_state_and_the_manifest_cache(template: Template) -> None:
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


@pytest.fixture(scope="module")
def topic_ids(template: Template) -> dict[str, str]:
    """Display name -> logical id of each SNS topic."""
    return {
        topic["Properties"]["DisplayName"]: logical_id
        for logical_id, topic in template.find_resources("AWS::SNS::Topic").items()
    }


@pytest.mark.slow
def test_both_topics_are_encrypted_with_one_rotating_customer_key(
    template: Template, topic_ids: dict[str, str]
) -> None:
    key_id = only_logical_id(template, "AWS::KMS::Key", {"EnableKeyRotation": True})
    assert sorted(topic_ids) == ["ecr-retention operations alarms", "ecr-retention run summaries"]
    for topic_id in topic_ids.values():
        properties = template.find_resources("AWS::SNS::Topic")[topic_id]["Properties"]
        assert properties["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}


@pytest.mark.slow
def test_cloudwatch_may_use_the_topic_key_to_publish_alarms(template: Template) -> None:
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "cloudwatch.amazonaws.com"},
                            "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                            "Resource": "*",
                        }
                    ]
                )
            }
        },
    )


@pytest.mark.slow
def test_both_topics_deny_publishing_without_tls(template: Template, topic_ids: dict[str, str]) -> None:
    for topic_id in topic_ids.values():
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
def test_report_and_operations_emails_are_subscribed_to_their_topics(
    template: Template, topic_ids: dict[str, str]
) -> None:
    subscriptions = {
        (s["Properties"]["TopicArn"]["Ref"], s["Properties"]["Protocol"], s["Properties"]["Endpoint"])
        for s in template.find_resources("AWS::SNS::Subscription").values()
    }
    assert subscriptions == {
        (topic_ids["ecr-retention run summaries"], "email", "platform@example.com"),
        (topic_ids["ecr-retention operations alarms"], "email", "oncall@example.com"),
    }


@pytest.mark.slow
def test_inventory_bucket_sends_its_events_to_eventbridge_without_a_custom_resource(
    template: Template, inventory_bucket_id: str
) -> None:
    bucket = template.find_resources("AWS::S3::Bucket")[inventory_bucket_id]["Properties"]
    assert bucket["NotificationConfiguration"] == {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}
    assert not template.find_resources("Custom::S3BucketNotifications")


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
                },
                # A cluster of this account (tests/infra/test_event_provenance.py).
                "StringLike": {
                    "aws:RequestTag/eks-cluster-arn": [
                        {"Fn::Join": ["", ["arn:aws:eks:eu-west-1:", {"Ref": "AWS::AccountId"}, ":cluster/*"]]}
                    ]
                },
            },
        }
    ]


@pytest.mark.slow
def test_exporter_role_may_only_put_its_own_manifest_from_a_listed_cluster(
    template: Template, exporter_role_id: str, inventory_bucket_id: str
) -> None:
    role = template.find_resources("AWS::IAM::Role")[exporter_role_id]["Properties"]
    assert "ManagedPolicyArns" not in role
    assert role_statements(template.to_json(), exporter_role_id) == [
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
            # One statement whatever the number of clusters: the ARN tag is the cluster of the name tag, in this
            # account (the role serves no other) and in a listed cluster's region.
            "Condition": {
                "StringEquals": {
                    "aws:PrincipalTag/eks-cluster-arn": [
                        "arn:aws:eks:eu-west-1:${aws:PrincipalAccount}:cluster/${aws:PrincipalTag/eks-cluster-name}"
                    ]
                }
            },
        }
    ]


BUCKET_ARN = "arn:aws:s3:::inventory"
EXPORTER_ROLE_ARN = "arn:aws:iam::123456789012:role/exporter"
COLLECTOR_ROLE_ARN = "arn:aws:iam::123456789012:role/EcrRetentionTest-collector"
ADMIN_ROLE_ARN = "arn:aws:iam::123456789012:role/admin"
AWS_MANIFEST = "in-use/aws-123456789012-eu-west-1.json"
EVERYTHING = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
HUB_ACCOUNT = "123456789012"
# The spoke exporter role's identity policy, as docs/aws-inventory.md (Hub and spoke, step 6) gives it.
SPOKE_EXPORTER_IDENTITY = [
    {
        "Effect": "Allow",
        "Action": "s3:PutObject",
        "Resource": f"{BUCKET_ARN}/in-use/${{aws:PrincipalAccount}}/${{aws:PrincipalTag/eks-cluster-name}}.json",
    }
]
SPOKE_ACCOUNT = "210987654321"
SPOKE_MANIFEST = f"in-use/{SPOKE_ACCOUNT}/payments.json"


def put_manifest(key: str, principal: str, cluster_arn: str | None, cluster_name: str | None) -> Request:
    context = {"aws:PrincipalArn": principal, "aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}
    if cluster_arn:
        context["aws:PrincipalTag/eks-cluster-arn"] = cluster_arn
    if cluster_name:
        context["aws:PrincipalTag/eks-cluster-name"] = cluster_name
    return Request("s3:PutObject", f"{BUCKET_ARN}/{key}", context)


def in_use_write(
    template: Template,
    exporter_role_id: str,
    bucket_id: str,
    request: Request,
    collector_role_id: str | None = None,
    identity: list[dict[str, Any]] | None = None,
) -> str:
    """The decision for a request, given the identity policy of the writer role it comes from (an administrator's
    Allow-everything policy for any other principal of the hub account, the documented policy for a spoke
    exporter, or `identity`), and the bucket policy; a spoke's request needs an Allow from both."""
    document = template.to_json()
    [bucket_policy] = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in document["Resources"].values()
        if p["Type"] == "AWS::S3::BucketPolicy" and p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    roles = {EXPORTER_ROLE_ARN: exporter_role_id}
    if collector_role_id is not None:
        roles[COLLECTOR_ROLE_ARN] = collector_role_id
    tokens = {f"{bucket_id}.Arn": BUCKET_ARN, bucket_id: "inventory", "AWS::AccountId": HUB_ACCOUNT}
    tokens |= {f"{role_id}.Arn": arn for arn, role_id in roles.items()}
    principal = request.context["aws:PrincipalArn"]
    if principal.split(":")[4] != HUB_ACCOUNT:
        identity = SPOKE_EXPORTER_IDENTITY if identity is None else identity
        return decide_across_accounts(identity, bucket_policy, request, tokens)
    if identity is None:
        role_id = roles.get(principal)
        identity = EVERYTHING if role_id is None else role_statements(document, role_id)
    return decide([identity, bucket_policy], request, tokens)


SPOKE_EXPORTER_CASES = [
    pytest.param(
        put_manifest(SPOKE_MANIFEST, SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "payments"), "allow", id="spoke-listed"
    ),
    # A spoke's clusters write under their own account's folder: never a key of this account's layout.
    pytest.param(
        put_manifest("in-use/payments.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "payments"),
        "deny",
        id="spoke-key-outside-its-account",
    ),
    pytest.param(
        put_manifest("in-use/prod.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "payments"),
        "deny",
        id="spoke-other-clusters-key",
    ),
    # A principal the spoke lets assume its exporter role chooses both session tags: a listed cluster's ARN and
    # another cluster's name. The key is bound to the ARN, not to the name.
    pytest.param(
        put_manifest("in-use/prod.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "prod"),
        "deny",
        id="spoke-arn-of-payments-name-of-prod",
    ),
    pytest.param(
        put_manifest(f"in-use/{SPOKE_ACCOUNT}/prod.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "prod"),
        "deny",
        id="spoke-arn-of-payments-name-of-prod-in-its-folder",
    ),
    pytest.param(
        put_manifest(f"in-use/{SPOKE_ACCOUNT}/anything.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "anything"),
        "deny",
        id="spoke-arn-of-payments-name-of-no-cluster",
    ),
    # A cluster of the spoke named like one of this account's (real, or forged with sts:TagSession): it writes
    # only under its own account, never this account's in-use/prod.json.
    pytest.param(
        put_manifest(
            "in-use/prod.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN.replace("payments", "prod"), "prod"
        ),
        "deny",
        id="spoke-cluster-named-like-a-hub-cluster",
    ),
    pytest.param(
        put_manifest("in-use/prod.json", SPOKE_EXPORTER_ROLE_ARN, PROD_ARN, "prod"), "deny", id="spoke-with-hub-tags"
    ),
    pytest.param(
        put_manifest(f"in-use/{SPOKE_ACCOUNT}/prod.json", SPOKE_EXPORTER_ROLE_ARN, PROD_ARN, "prod"),
        "deny",
        id="spoke-with-hub-tags-in-its-folder",
    ),
    pytest.param(
        put_manifest("in-use/345678901234/payments.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "payments"),
        "deny",
        id="spoke-in-another-spokes-folder",
    ),
    pytest.param(
        put_manifest(
            "in-use/345678901234/payments.json",
            SPOKE_EXPORTER_ROLE_ARN,
            SPOKE_CLUSTER_ARN.replace(SPOKE_ACCOUNT, "345678901234"),
            "payments",
        ),
        "deny",
        id="spoke-with-another-spokes-arn",
    ),
    pytest.param(
        put_manifest(
            f"in-use/{SPOKE_ACCOUNT}/payments.json",
            SPOKE_EXPORTER_ROLE_ARN,
            SPOKE_CLUSTER_ARN.replace("eu-west-1", "us-east-1"),
            "payments",
        ),
        "deny",
        id="spoke-cluster-in-an-unlisted-region",
    ),
    # Which clusters of a listed region are listed, the run says (a manifest of a cluster in neither safety list
    # is named); the bucket no longer lists them (docs/security.md).
    pytest.param(
        put_manifest(
            f"in-use/{SPOKE_ACCOUNT}/rogue.json",
            SPOKE_EXPORTER_ROLE_ARN,
            SPOKE_CLUSTER_ARN.replace("payments", "rogue"),
            "rogue",
        ),
        "allow",
        id="spoke-unlisted-cluster-of-a-listed-region-its-own-key",
    ),
    pytest.param(
        put_manifest(
            "in-use/aws-210987654321-eu-west-1.json",
            SPOKE_EXPORTER_ROLE_ARN,
            SPOKE_CLUSTER_ARN,
            "aws-210987654321-eu-west-1",
        ),
        "deny",
        id="spoke-aws-key",
    ),
    pytest.param(
        put_manifest(
            f"in-use/{SPOKE_ACCOUNT}/aws-210987654321-eu-west-1.json",
            SPOKE_EXPORTER_ROLE_ARN,
            SPOKE_CLUSTER_ARN.replace("payments", "aws-210987654321-eu-west-1"),
            "aws-210987654321-eu-west-1",
        ),
        "deny",
        id="spoke-aws-key-in-its-folder",
    ),
    # Forged tags (sts:TagSession) of a name with a folder: the run would read in-use/<account>/team/prod.json as
    # prod's manifest.
    pytest.param(
        put_manifest(
            f"in-use/{SPOKE_ACCOUNT}/team/prod.json",
            SPOKE_EXPORTER_ROLE_ARN,
            SPOKE_CLUSTER_ARN.replace("payments", "team/prod"),
            "team/prod",
        ),
        "deny",
        id="spoke-name-with-a-folder",
    ),
    pytest.param(put_manifest(SPOKE_MANIFEST, SPOKE_EXPORTER_ROLE_ARN, None, None), "deny", id="spoke-without-tags"),
    pytest.param(
        put_manifest(SPOKE_MANIFEST, SPOKE_EXPORTER_ROLE_ARN, None, "payments"), "deny", id="spoke-without-arn-tag"
    ),
    pytest.param(
        put_manifest(
            SPOKE_MANIFEST, SPOKE_EXPORTER_ROLE_ARN.replace("exporter", "other"), SPOKE_CLUSTER_ARN, "payments"
        ),
        "implicit-deny",
        id="spoke-other-role",
    ),
    pytest.param(
        put_manifest("reports/x.json", SPOKE_EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "payments"),
        "deny",
        id="spoke-outside-in-use",
    ),
]


@pytest.fixture(scope="module")
def collector_role_id(stack: EcrRetentionStack) -> str:
    assert stack.collector is not None
    return stack.get_logical_id(stack.collector.role.node.default_child)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("request_", "decision"),
    [
        pytest.param(put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, PROD_ARN, "prod"), "allow", id="listed"),
        pytest.param(put_manifest(AWS_MANIFEST, COLLECTOR_ROLE_ARN, None, None), "allow", id="collector"),
        pytest.param(
            put_manifest("in-use/prod.json", COLLECTOR_ROLE_ARN, None, None), "deny", id="collector-cluster-key"
        ),
        pytest.param(
            put_manifest(
                "in-use/aws-123456789012-eu-west-1.json", EXPORTER_ROLE_ARN, PROD_ARN, "aws-123456789012-eu-west-1"
            ),
            "deny",
            id="exporter-aws-key",
        ),
        pytest.param(put_manifest(AWS_MANIFEST, ADMIN_ROLE_ARN, None, None), "deny", id="admin-aws-key"),
        pytest.param(
            put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, PROD_ARN.replace("eu-west-1", "us-east-1"), "prod"),
            "deny",
            id="same-name-other-region",
        ),
        pytest.param(
            put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, PROD_ARN.replace("/prod", "/rogue"), "prod"),
            "deny",
            id="unlisted-cluster",
        ),
        # The bucket no longer lists the clusters: an unlisted cluster of a listed region writes its own key, and the
        # run names its manifest (docs/security.md).
        pytest.param(
            put_manifest("in-use/rogue.json", EXPORTER_ROLE_ARN, PROD_ARN.replace("/prod", "/rogue"), "rogue"),
            "allow",
            id="unlisted-cluster-of-a-listed-region-its-own-key",
        ),
        pytest.param(put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, None, None), "deny", id="without-tags"),
        pytest.param(put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, None, "prod"), "deny", id="without-arn-tag"),
        pytest.param(
            put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, PROD_ARN, None), "deny", id="without-name-tag"
        ),
        pytest.param(
            put_manifest("in-use/payments.json", EXPORTER_ROLE_ARN, SPOKE_CLUSTER_ARN, "payments"),
            "deny",
            id="arn-of-another-account",
        ),
        pytest.param(
            put_manifest(f"in-use/{HUB_ACCOUNT}/prod.json", EXPORTER_ROLE_ARN, PROD_ARN, "prod"),
            "deny",
            id="a-folder-key",
        ),
        pytest.param(
            put_manifest("reports/x.json", EXPORTER_ROLE_ARN, PROD_ARN, "prod"), "deny", id="exporter-outside-in-use"
        ),
        pytest.param(put_manifest("in-use/dev.json", EXPORTER_ROLE_ARN, PROD_ARN, "prod"), "deny", id="other-key"),
        pytest.param(put_manifest("in-use/dev.json", EXPORTER_ROLE_ARN, DEV_ARN, "dev"), "allow", id="listed-dev"),
        pytest.param(
            put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, DEV_ARN, "prod"), "deny", id="arn-of-dev-name-of-prod"
        ),
        pytest.param(
            put_manifest("in-use/anything.json", EXPORTER_ROLE_ARN, DEV_ARN, "anything"),
            "deny",
            id="arn-of-dev-name-of-no-cluster",
        ),
        pytest.param(put_manifest("in-use/prod.json", ADMIN_ROLE_ARN, None, None), "deny", id="not-the-exporter"),
        pytest.param(
            put_manifest("in-use/prod.json", ADMIN_ROLE_ARN, PROD_ARN, "prod"), "deny", id="other-role-in-cluster"
        ),
        pytest.param(put_manifest("reports/x.json", ADMIN_ROLE_ARN, None, None), "allow", id="admin-elsewhere"),
        *SPOKE_EXPORTER_CASES,
    ],
)
def test_only_the_exporter_role_of_a_listed_cluster_and_the_collector_write_in_use_manifests(
    template: Template,
    exporter_role_id: str,
    collector_role_id: str,
    inventory_bucket_id: str,
    request_: Request,
    decision: str,
) -> None:
    assert in_use_write(template, exporter_role_id, inventory_bucket_id, request_, collector_role_id) == decision


@pytest.mark.slow
@pytest.mark.parametrize(
    ("request_", "decision"),
    [
        pytest.param(put_manifest(AWS_MANIFEST, COLLECTOR_ROLE_ARN, None, None), "allow", id="aws-key"),
        pytest.param(put_manifest("in-use/prod.json", COLLECTOR_ROLE_ARN, None, None), "deny", id="cluster-key"),
        pytest.param(put_manifest("reports/r.json", COLLECTOR_ROLE_ARN, None, None), "deny", id="report"),
        pytest.param(
            put_manifest(AWS_MANIFEST, EXPORTER_ROLE_ARN, PROD_ARN, "aws-123456789012-eu-west-1"), "deny", id="exporter"
        ),
        *SPOKE_EXPORTER_CASES,
    ],
)
def test_the_bucket_policy_alone_keeps_the_aws_inventory_manifests_the_collectors_and_the_collector_to_them(
    template: Template,
    exporter_role_id: str,
    collector_role_id: str,
    inventory_bucket_id: str,
    request_: Request,
    decision: str,
) -> None:
    """Whatever the writer roles' own policies allowed (here: every S3 action), the bucket policy decides."""
    assert (
        in_use_write(template, exporter_role_id, inventory_bucket_id, request_, collector_role_id, identity=EVERYTHING)
        == decision
    )


REPORT_ROLE_ARN = "arn:aws:iam::123456789012:role/report"
EVALUATE_ROLE_ARN = "arn:aws:iam::123456789012:role/evaluate"
MEMORY_KEY = "state/in-use-memory.json"


def bucket_request(action: str, key: str, principal: str) -> Request:
    context = {"aws:PrincipalArn": principal, "aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}
    return Request(action, f"{BUCKET_ARN}/{key}", context)


def pipeline_decision(
    stack: EcrRetentionStack, template: Template, request: Request, identity: list[dict[str, Any]] | None = None
) -> str:
    """The decision for a request of a hub principal: a pipeline role (with its own policies unless `identity` is
    given), the break-glass role or an administrator (both with an Allow-everything policy), and the bucket
    policy."""
    document = template.to_json()
    roles = {
        EXPORTER_ROLE_ARN: stack.exporter.role,
        REPORT_ROLE_ARN: stack.workflow.report.role,
        EVALUATE_ROLE_ARN: stack.workflow.evaluate.role,
    }
    if stack.collector is not None:
        roles[COLLECTOR_ROLE_ARN] = stack.collector.role
    role_ids = {arn: stack.get_logical_id(role.node.default_child) for arn, role in roles.items()}  # type: ignore[arg-type]
    bucket_id = stack.get_logical_id(stack.inventory.bucket.node.default_child)  # type: ignore[arg-type]
    [bucket_policy] = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in document["Resources"].values()
        if p["Type"] == "AWS::S3::BucketPolicy" and p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    tokens = {f"{bucket_id}.Arn": BUCKET_ARN, bucket_id: "inventory", "AWS::AccountId": HUB_ACCOUNT}
    tokens |= {f"{role_id}.Arn": arn for arn, role_id in role_ids.items()}
    principal = request.context["aws:PrincipalArn"]
    if identity is None:
        identity = role_statements(document, role_ids[principal]) if principal in role_ids else EVERYTHING
    return decide([identity, bucket_policy], request, tokens)


PROTECTION_STATE_KEYS = [
    "in-use/prod.json",
    SPOKE_MANIFEST,
    AWS_MANIFEST,
    MEMORY_KEY,
    "runs/2026-12-01T03-00-00Z/replication.json",
    "runs/2026-12-01T03-00-00Z/targets.json",
]


@pytest.mark.slow
@pytest.mark.parametrize("action", ["s3:DeleteObject", "s3:DeleteObjectVersion"])
@pytest.mark.parametrize("key", PROTECTION_STATE_KEYS)
def test_only_the_break_glass_role_deletes_manifests_the_memory_and_a_runs_targets_and_replication(
    stack: EcrRetentionStack, template: Template, action: str, key: str
) -> None:
    """Deleting the current version of a versioned object brings the previous one back: a delete rewrites."""
    assert pipeline_decision(stack, template, bucket_request(action, key, ADMIN_ROLE_ARN)) == "deny"
    assert pipeline_decision(stack, template, bucket_request(action, key, BREAK_GLASS_ROLE_ARN)) == "allow"
    for writer in (EXPORTER_ROLE_ARN, COLLECTOR_ROLE_ARN, REPORT_ROLE_ARN):
        request = bucket_request(action, key, writer)
        assert pipeline_decision(stack, template, request, identity=EVERYTHING) == "deny", writer


@pytest.mark.slow
def test_deleting_anything_else_is_left_to_identity_policies(stack: EcrRetentionStack, template: Template) -> None:
    # runs/ and snapshots/ are protection state now (tests/infra/test_one_writer.py).
    for key in ("reports/2026/12/01/run.json",):
        assert pipeline_decision(stack, template, bucket_request("s3:DeleteObject", key, ADMIN_ROLE_ARN)) == "allow"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("principal", "decision"),
    [
        pytest.param(REPORT_ROLE_ARN, "allow", id="report-step"),
        pytest.param(EVALUATE_ROLE_ARN, "deny", id="evaluate"),
        pytest.param(EXPORTER_ROLE_ARN, "deny", id="exporter"),
        pytest.param(COLLECTOR_ROLE_ARN, "deny", id="collector"),
        pytest.param(ADMIN_ROLE_ARN, "deny", id="admin"),
        pytest.param(BREAK_GLASS_ROLE_ARN, "deny", id="break-glass"),
    ],
)
def test_only_the_report_step_writes_the_in_use_memory(
    stack: EcrRetentionStack, template: Template, principal: str, decision: str
) -> None:
    request = bucket_request("s3:PutObject", MEMORY_KEY, principal)
    assert pipeline_decision(stack, template, request, identity=EVERYTHING) == decision
    # And with its own policies, the report step may write it.
    if principal == REPORT_ROLE_ARN:
        assert pipeline_decision(stack, template, request) == "allow"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("principal", "decision"),
    [
        pytest.param(REPORT_ROLE_ARN, "allow", id="report-step"),
        pytest.param(EVALUATE_ROLE_ARN, "allow", id="evaluate"),
        pytest.param(EXPORTER_ROLE_ARN, "implicit-deny", id="exporter"),
    ],
)
def test_the_report_step_and_the_evaluations_read_the_in_use_memory(
    stack: EcrRetentionStack, template: Template, principal: str, decision: str
) -> None:
    assert pipeline_decision(stack, template, bucket_request("s3:GetObject", MEMORY_KEY, principal)) == decision


@pytest.mark.slow
def test_without_a_break_glass_role_nobody_deletes_the_protection_state(tmp_path: Path) -> None:
    context = {key: value for key, value in STACK_CONTEXT.items() if key != "breakGlassRoleArn"}
    stack = build_stack(rules_file(tmp_path, STACK_RULES), context)
    template = Template.from_stack(stack)
    for principal in (ADMIN_ROLE_ARN, BREAK_GLASS_ROLE_ARN):
        request = bucket_request("s3:DeleteObjectVersion", "in-use/prod.json", principal)
        assert pipeline_decision(stack, template, request) == "deny"


@pytest.mark.slow
def test_a_stack_that_knows_its_account_checks_its_eks_clusters_and_its_aws_inventory_against_it(
    tmp_path: Path,
) -> None:
    import aws_cdk as cdk

    from ecr_retention.cdk.deploy_settings import DeploySettings
    from ecr_retention.domain.errors import InputError
    from ecr_retention.loading import load_config

    app = cdk.App(context={"aws:cdk:bundling-stacks": []})
    config = load_config(rules_file(tmp_path, RULES))
    environment = cdk.Environment(account="123456789012", region="eu-west-1")
    foreign = DeploySettings.from_context({"eksClusters": [SPOKE_CLUSTER_ARN]}.get)
    with pytest.raises(InputError, match=r"^cdk context: eksClusters: .*cluster/payments is of another account"):
        EcrRetentionStack(app, "Foreign", rules=config, settings=foreign, env=environment)
    with pytest.raises(
        InputError, match=r"^cdk\.json awsInventory .*: cluster aws-123456789012-eu-west-1 is in neither"
    ):
        EcrRetentionStack(app, "Collected", rules=config, settings=DeploySettings(), env=environment)


@pytest.mark.slow
def test_without_listed_clusters_no_exporter_writes_in_use_manifests(tmp_path: Path, minimal_rules_text: str) -> None:
    stack = build_stack(rules_file(tmp_path, minimal_rules_text), {})
    template = Template.from_stack(stack)
    bucket_id = only_logical_id(template, "AWS::S3::Bucket", INVENTORY_BUCKET)
    exporter_id = stack.get_logical_id(stack.exporter.role.node.default_child)  # type: ignore[arg-type]
    assert stack.collector is not None
    collector_id = stack.get_logical_id(stack.collector.role.node.default_child)  # type: ignore[arg-type]

    assert role_statements(template.to_json(), exporter_id) == []
    request = put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, PROD_ARN, "prod")
    assert in_use_write(template, exporter_id, bucket_id, request, collector_id, identity=EVERYTHING) == "deny"
    collected = put_manifest(AWS_MANIFEST, COLLECTOR_ROLE_ARN, None, None)
    assert in_use_write(template, exporter_id, bucket_id, collected, collector_id) == "allow"
    Annotations.from_stack(stack).has_warning(
        "/EcrRetentionTest/Default/Exporter",
        Match.string_like_regexp("no exporterClusterArns or eksClusters in the CDK context"),
    )


@pytest.mark.slow
def test_clusters_the_collector_reads_through_their_api_need_no_exporter_and_no_warning(
    tmp_path: Path, minimal_rules_text: str
) -> None:
    stack = build_stack(
        rules_file(tmp_path, minimal_rules_text), {"eksClusters": ["arn:aws:eks:eu-west-1:123456789012:cluster/prod"]}
    )

    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("no exporterClusterArns"))
    assert warnings == []


@pytest.mark.slow
def test_without_the_aws_inventory_there_is_no_collector_and_no_one_writes_its_manifests(tmp_path: Path) -> None:
    stack = build_stack(rules_file(tmp_path, RULES), {**CONTEXT, "awsInventory": "false"})
    template = Template.from_stack(stack)
    document = template.to_json()
    bucket_id = only_logical_id(template, "AWS::S3::Bucket", INVENTORY_BUCKET)
    exporter_id = stack.get_logical_id(stack.exporter.role.node.default_child)  # type: ignore[arg-type]

    assert stack.collector is None
    handlers = {f["Properties"]["Handler"] for f in template.find_resources("AWS::Lambda::Function").values()}
    assert "ecr_retention.handlers.collector.lambda_handler" not in handlers
    assert len(template.find_resources("AWS::Scheduler::Schedule")) == 2  # the sweep and the tagger
    assert not {"CollectorRoleArn", "CollectorFunctionName"} & set(document["Outputs"])
    alarm_names = {a["Properties"]["AlarmName"] for a in template.find_resources("AWS::CloudWatch::Alarm").values()}
    assert not {name for name in alarm_names if "Collector" in name or "Incomplete" in name}
    exporter = put_manifest("in-use/prod.json", EXPORTER_ROLE_ARN, PROD_ARN, "prod")
    assert in_use_write(template, exporter_id, bucket_id, exporter) == "allow"
    for principal in (ADMIN_ROLE_ARN, COLLECTOR_ROLE_ARN, EXPORTER_ROLE_ARN):
        request = put_manifest(AWS_MANIFEST, principal, PROD_ARN, "aws-123456789012-eu-west-1")
        assert in_use_write(template, exporter_id, bucket_id, request, identity=EVERYTHING) == "deny"


@pytest.mark.slow
def test_outputs_name_what_operators_and_the_exporter_need(
    template: Template, inventory_bucket_id: str, exporter_role_id: str, topic_ids: dict[str, str]
) -> None:
    machine_id = next(iter(template.find_resources("AWS::StepFunctions::StateMachine")))
    template.has_output("InventoryBucketName", {"Value": {"Ref": inventory_bucket_id}})
    template.has_output("ReportTopicArn", {"Value": {"Ref": topic_ids["ecr-retention run summaries"]}})
    template.has_output("OperationsTopicArn", {"Value": {"Ref": topic_ids["ecr-retention operations alarms"]}})
    template.has_output("ExporterRoleArn", {"Value": {"Fn::GetAtt": [exporter_role_id, "Arn"]}})
    template.has_output("StateMachineArn", {"Value": {"Ref": machine_id}})


@pytest.mark.slow
def test_outputs_name_the_collectors_role_for_the_spokes_and_its_function(
    template: Template, stack: EcrRetentionStack, collector_role_id: str
) -> None:
    assert stack.collector is not None
    function_id = stack.get_logical_id(stack.collector.function.node.default_child)  # type: ignore[arg-type]
    template.has_output("CollectorRoleArn", {"Value": {"Fn::GetAtt": [collector_role_id, "Arn"]}})
    template.has_output("CollectorFunctionName", {"Value": {"Ref": function_id}})
    # A fixed name: a spoke can trust arn:aws:iam::<hub>:role/<stack>-collector before the hub is deployed, and
    # keeps trusting it if the role is replaced.
    role = template.find_resources("AWS::IAM::Role")[collector_role_id]["Properties"]
    assert role["RoleName"] == "EcrRetentionTest-collector"
    assert COLLECTOR_ROLE_ARN.endswith("/" + role["RoleName"])


@pytest.mark.slow
def test_cdk_nag_aws_solutions_finds_nothing_unacknowledged(stack: EcrRetentionStack, template: Template) -> None:
    # After Template.from_stack, so the tree is checked as synthesized, with every aspect applied.
    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
    findings = [
        f"{violation.rule_name} at {', '.join(str(resource.construct_path) for resource in violation.violating_resources)}"
        for violation in report.violations
    ]
    assert report.success, "\n".join(findings)


@pytest.mark.slow
def test_every_acknowledgement_names_a_finding_that_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale acknowledgement would silently excuse a future finding of the same name on that resource."""
    acknowledged: list[tuple[str, str]] = []
    monkeypatch.setattr(
        nag, "acknowledge", lambda scope, finding, reason: acknowledged.append((scope.node.path, finding))
    )
    stack = build_stack(rules_file(tmp_path, RULES), CONTEXT)
    Template.from_stack(stack)

    report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)

    findings = {(str(r.construct_path), v.rule_name) for v in report.violations for r in v.violating_resources}
    assert acknowledged
    for path, finding in acknowledged:
        assert any(rule == finding and found.startswith(path) for found, rule in findings), (path, finding)
    for found, rule in findings:
        assert any(rule == finding and found.startswith(path) for path, finding in acknowledged), (found, rule)
