"""Every policy the stack synthesizes fits its AWS size limit at 500 clusters of this account and at 200 spoke
accounts of one cluster each (those clusters also in the rules file's optional_clusters, as synthesis requires),
measured as deployed (infra/policy_sizes.py); the binding holds there as it does for three clusters; and a policy
over its limit stops synthesis with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from ecr_retention.cdk.policy_sizes import (
    BUCKET_POLICY,
    MANAGED_POLICY,
    ROLE_INLINE_POLICIES,
    check_policy_sizes,
    policy_sizes,
)
from ecr_retention.domain.errors import InputError
from support.iam_evaluation import Request, decide, decide_across_accounts
from support.infra_stacks import CONTEXT, build_stack, role_statements, rules_file

HUB_ACCOUNT = "123456789012"
LOCAL_CLUSTERS = 500
SPOKE_ACCOUNTS = 200
BUCKET_ARN = "arn:aws:s3:::inventory"
EXPORTER_ROLE_ARN = f"arn:aws:iam::{HUB_ACCOUNT}:role/exporter"
# Headroom for the bucket policy statements of removals/, manifests/ and the bucket's own guards (issue 35).
BUCKET_POLICY_BUDGET = 16_384


APP = Path(__file__).resolve().parents[2] / "app.py"


def run_app(rules: Path, outdir: Path, **context: object) -> subprocess.CompletedProcess[str]:
    """`python app.py` as the CDK CLI starts it (tests/infra/test_app.py)."""
    context = {"config": str(rules), "aws:cdk:bundling-stacks": [], **context}
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)}
    return subprocess.run(
        [sys.executable, str(APP)], env=env, cwd=APP.parent, capture_output=True, text=True, timeout=600, check=False
    )


def local_arn(number: int) -> str:
    return f"arn:aws:eks:eu-west-1:{HUB_ACCOUNT}:cluster/platform-cluster-{number:03d}"


def spoke_account(number: int) -> str:
    return f"{210000000000 + number}"


def spoke_arn(number: int) -> str:
    return f"arn:aws:eks:eu-west-1:{spoke_account(number)}:cluster/workload-{number:03d}"


def spoke_role(number: int) -> str:
    return f"arn:aws:iam::{spoke_account(number)}:role/ecr-retention-exporter"


def listed(arn: str) -> str:
    """How the rules file names a spoke exporter's cluster: <account>/<name> (docs/rules.md "Who is a cluster")."""
    return f"{arn.split(':')[4]}/{arn.rsplit('/', 1)[1]}"


def rules_listing(names: list[str]) -> str:
    return (
        f"version: 1\nsafety: {{clusters: [], optional_clusters: [{', '.join(names)}]}}\n"
        "policies:\n  - repositories: [app]\n    rules:\n      - delete: {untagged: true, older_than: 1d}\n"
    )


def synthesized(directory: Path, context: dict[str, Any], names: list[str]) -> dict[str, Any]:
    stack = build_stack(rules_file(directory, rules_listing(names)), {**CONTEXT, **context})
    return Template.from_stack(stack).to_json()


@pytest.fixture(scope="module")
def local_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    arns = [local_arn(n) for n in range(LOCAL_CLUSTERS)]
    names = [arn.rsplit("/", 1)[1] for arn in arns]
    return synthesized(tmp_path_factory.mktemp("local"), {"exporterClusterArns": arns}, names)


@pytest.fixture(scope="module")
def spoke_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    arns = [spoke_arn(n) for n in range(SPOKE_ACCOUNTS)]
    context = {"exporterClusterArns": arns, "spokeExporterRoleArns": [spoke_role(n) for n in range(SPOKE_ACCOUNTS)]}
    return synthesized(tmp_path_factory.mktemp("spokes"), context, [listed(arn) for arn in arns])


READER_MIDDLE = 100


def reader_role(number: int) -> str:
    return f"arn:aws:iam::{spoke_account(number)}:role/ecr-retention-reader"


def collector_manifest(account: str) -> str:
    return f"aws-{account}-eu-west-1"


@pytest.fixture(scope="module")
def collector_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """200 spoke accounts with everything a spoke brings: its cluster, its exporter role and the collector's
    reader role (spokeRoleArns), whose aws-<account>-<region> manifests the rules file lists as optional."""
    arns = [spoke_arn(n) for n in range(SPOKE_ACCOUNTS)]
    context = {
        "exporterClusterArns": arns,
        "spokeExporterRoleArns": [spoke_role(n) for n in range(SPOKE_ACCOUNTS)],
        "spokeRoleArns": [reader_role(n) for n in range(SPOKE_ACCOUNTS)],
        "collectRegions": "eu-west-1",
    }
    names = [listed(arn) for arn in arns] + [
        collector_manifest(account) for account in [HUB_ACCOUNT, *(spoke_account(n) for n in range(SPOKE_ACCOUNTS))]
    ]
    return synthesized(tmp_path_factory.mktemp("collector"), context, names)


# Three Regions of the longest names (the home one is the stack's ${AWS::Region}, measured as ap-southeast-3) and a rules
# file of 32 repository patterns of 30 characters, each granted in every Region.
WORST_CASE_REGIONS = ["ap-southeast-3", "ap-southeast-2", "ap-northeast-1"]
REGIONAL_PATTERNS = 32


def regional_rules() -> str:
    patterns = ", ".join(f'"team-{n:02d}-service-name-long/*"' for n in range(REGIONAL_PATTERNS))
    return (
        "version: 1\nsafety: {clusters: [prod, dev]}\npolicies:\n"
        f"  - repositories: [{patterns}]\n    rules:\n"
        "      - keep: {tag_in_repositories: [frontend]}\n      - delete: {untagged: true, older_than: 1d}\n"
    )


@pytest.fixture(scope="module")
def regions_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    context = {**CONTEXT, "regions": WORST_CASE_REGIONS, "cloudTrailManagementEvents": True}
    stack = build_stack(rules_file(tmp_path_factory.mktemp("regions"), regional_rules()), context)
    return Template.from_stack(stack).to_json()


@pytest.mark.slow
def test_at_three_regions_and_32_patterns_every_policy_fits(
    regions_template: dict[str, Any],
) -> None:
    """Each grant on repositories is one statement per Region (infra.access.ecr_statements; the CDK merges the small
    ones back while they fit): the CDK moves what outgrows a role's inline policy into managed policies statement by
    statement, and one statement over three Regions of 32 patterns would not fit one (6,144 characters; it was 7,592
    with patterns of 25 characters). Measured: the largest inline total 4,770 characters (the evaluation's role; 4,343
    in one Region), the largest managed policy 2,792 (each of the evaluation's two overflow policies)."""
    sizes = policy_sizes(regions_template, stack_name="EcrRetentionTest")
    assert [size.describe() for size in sizes if size.over] == []
    managed = [size.size for size in sizes if size.resource_type == "AWS::IAM::ManagedPolicy"]
    assert managed, "32 patterns in three Regions overflow the evaluation's inline policy"
    assert max(managed) < MANAGED_POLICY.size // 2, max(managed)


def sizes_by_id(template: dict[str, Any]) -> dict[str, int]:
    return {size.logical_id: size.size for size in policy_sizes(template, stack_name="EcrRetentionTest")}


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["local_template", "spoke_template", "collector_template"])
def test_every_policy_fits_its_limit_at_scale(scale: str, request: pytest.FixtureRequest) -> None:
    template = request.getfixturevalue(scale)
    sizes = policy_sizes(template, stack_name="EcrRetentionTest")
    assert {size.resource_type for size in sizes} >= {
        "AWS::S3::BucketPolicy",
        "AWS::SNS::TopicPolicy",
        "AWS::SQS::QueuePolicy",
        "AWS::KMS::Key",
        "AWS::IAM::Role",
    }
    assert [size.describe() for size in sizes if size.over] == []
    check_policy_sizes(template, stack_name="EcrRetentionTest")  # raises on the first over its limit
    [bucket] = [size for size in sizes if size.logical_id.startswith("InventoryBucketPolicy")]
    assert bucket.limit == BUCKET_POLICY
    assert bucket.size < BUCKET_POLICY_BUDGET, bucket.size


@pytest.mark.slow
def test_the_in_use_statements_and_the_exporter_role_do_not_grow_with_the_clusters(
    local_template: dict[str, Any], spoke_template: dict[str, Any], tmp_path: Path
) -> None:
    """One cluster of this account or 500: the same bucket policy and exporter role; 200 spoke accounts add only
    their IDs to the one Allow (about 33 bytes each as root ARNs)."""
    one = sizes_by_id(synthesized(tmp_path, {"exporterClusterArns": [local_arn(0)]}, ["platform-cluster-000"]))
    many = sizes_by_id(local_template)
    bucket_id = next(key for key in one if key.startswith("InventoryBucketPolicy"))
    exporter_id = next(key for key in one if key.startswith("ExporterRole") and "trust" not in key)
    assert many[bucket_id] == one[bucket_id]
    assert many[exporter_id] == one[exporter_id] < ROLE_INLINE_POLICIES.size // 10
    per_spoke = (sizes_by_id(spoke_template)[bucket_id] - one[bucket_id]) / SPOKE_ACCOUNTS
    assert per_spoke < 40, per_spoke


def collector_role_id(template: dict[str, Any]) -> str:
    [function] = [
        resource
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("Handler") == "ecr_retention.handlers.collector.lambda_handler"
    ]
    role_id: str = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return role_id


@pytest.mark.slow
def test_at_200_spoke_roles_the_collectors_policies_and_environment_fit_and_do_not_grow_with_the_arns(
    collector_template: dict[str, Any],
) -> None:
    """Before: the sts:AssumeRole statement listed 200 ARNs (CDK moved it to an overflow managed policy of 10,896
    characters, over IAM's 6,144) and SPOKE_ROLE_ARNS held them in the environment (11,590 bytes, over 4,096). Now
    one statement per role name with the accounts in its condition, and the list in the asset."""
    sizes = {size.logical_id: size for size in policy_sizes(collector_template, stack_name="EcrRetentionTest")}
    role_id = collector_role_id(collector_template)
    assert not [
        logical_id
        for logical_id, resource in collector_template["Resources"].items()
        if resource["Type"] == "AWS::IAM::ManagedPolicy" and {"Ref": role_id} in resource["Properties"].get("Roles", [])
    ]
    assert sizes[role_id].size < ROLE_INLINE_POLICIES.size // 2, sizes[role_id].size
    [environment] = [size for key, size in sizes.items() if key.endswith(" environment") and key.startswith("AwsInv")]
    assert environment.size < 1_024, environment.size
    [assumed] = [
        statement
        for statement in role_statements(collector_template, role_id)
        if statement["Action"] == "sts:AssumeRole"
    ]
    assert assumed["Resource"] == "arn:aws:iam::*:role/ecr-retention-reader"
    assert assumed["Condition"] == {
        "StringEquals": {"aws:ResourceAccount": [spoke_account(n) for n in range(SPOKE_ACCOUNTS)]}
    }


def assume(role_arn: str) -> Request:
    return Request(
        "sts:AssumeRole",
        role_arn,
        {
            "aws:PrincipalArn": f"arn:aws:iam::{HUB_ACCOUNT}:role/collector",
            "aws:ResourceAccount": role_arn.split(":")[4],
        },
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("role_arn", "decision"),
    [
        pytest.param(reader_role(0), "allow", id="first-listed"),
        pytest.param(reader_role(READER_MIDDLE), "allow", id="listed"),
        pytest.param(reader_role(SPOKE_ACCOUNTS - 1), "allow", id="last-listed"),
        pytest.param(f"arn:aws:iam::{spoke_account(READER_MIDDLE)}:role/Admin", "implicit-deny", id="other-name"),
        pytest.param(
            f"arn:aws:iam::{spoke_account(READER_MIDDLE)}:role/ecr-retention-reader-2",
            "implicit-deny",
            id="longer-name",
        ),
        pytest.param(
            f"arn:aws:iam::{spoke_account(READER_MIDDLE)}:role/other/ecr-retention-reader",
            "implicit-deny",
            id="other-path",
        ),
        pytest.param(reader_role(SPOKE_ACCOUNTS), "implicit-deny", id="unlisted-account"),
        pytest.param(f"arn:aws:iam::{HUB_ACCOUNT}:role/ecr-retention-reader", "implicit-deny", id="this-account"),
    ],
)
def test_at_200_spoke_roles_the_collector_may_assume_exactly_the_listed_ones(
    collector_template: dict[str, Any], role_arn: str, decision: str
) -> None:
    identity = role_statements(collector_template, collector_role_id(collector_template))
    assert decide([identity], assume(role_arn), tokens_of(collector_template)) == decision


def bucket_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    [statements] = [
        resource["Properties"]["PolicyDocument"]["Statement"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::S3::BucketPolicy" and logical_id.startswith("InventoryBucketPolicy")
    ]
    return statements


def tokens_of(template: dict[str, Any]) -> dict[str, str]:
    [bucket_id] = [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::S3::Bucket" and "NotificationConfiguration" in resource["Properties"]
    ]
    [exporter_id] = [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
        and "pods.eks.amazonaws.com" in json.dumps(resource["Properties"]["AssumeRolePolicyDocument"])
    ]
    roles = {
        f"{logical_id}.Arn": f"arn:aws:iam::{HUB_ACCOUNT}:role/{logical_id}"
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
    }
    return {
        **roles,
        f"{bucket_id}.Arn": BUCKET_ARN,
        bucket_id: "inventory",
        "AWS::AccountId": HUB_ACCOUNT,
        f"{exporter_id}.Arn": EXPORTER_ROLE_ARN,
        "exporter": exporter_id,
    }


def put(key: str, principal: str, cluster_arn: str | None, name: str | None) -> Request:
    context = {"aws:PrincipalArn": principal, "aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}
    if cluster_arn is not None:
        context["aws:PrincipalTag/eks-cluster-arn"] = cluster_arn
    if name is not None:
        context["aws:PrincipalTag/eks-cluster-name"] = name
    return Request("s3:PutObject", f"{BUCKET_ARN}/{key}", context)


MIDDLE = 250
LOCAL_CASES = [
    pytest.param(
        put("in-use/platform-cluster-250.json", EXPORTER_ROLE_ARN, local_arn(MIDDLE), "platform-cluster-250"),
        "allow",
        id="own",
    ),
    pytest.param(
        put("in-use/platform-cluster-251.json", EXPORTER_ROLE_ARN, local_arn(MIDDLE), "platform-cluster-250"),
        "deny",
        id="another-clusters-key",
    ),
    pytest.param(
        put("in-use/platform-cluster-251.json", EXPORTER_ROLE_ARN, local_arn(MIDDLE), "platform-cluster-251"),
        "deny",
        id="forged-name",
    ),
    pytest.param(put("in-use/platform-cluster-250.json", EXPORTER_ROLE_ARN, None, None), "deny", id="no-tags"),
    pytest.param(
        put("reports/x.json", EXPORTER_ROLE_ARN, local_arn(MIDDLE), "platform-cluster-250"), "deny", id="outside-in-use"
    ),
    pytest.param(
        put("in-use/platform-cluster-250.json", f"arn:aws:iam::{HUB_ACCOUNT}:role/admin", None, None),
        "deny",
        id="administrator",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("request_", "decision"), LOCAL_CASES)
def test_at_500_clusters_a_session_writes_only_its_own_clusters_manifest(
    local_template: dict[str, Any], request_: Request, decision: str
) -> None:
    tokens = tokens_of(local_template)
    identity = role_statements(local_template, tokens["exporter"])
    if not request_.context["aws:PrincipalArn"].endswith("role/exporter"):
        identity = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
    assert decide([identity, bucket_statements(local_template)], request_, tokens) == decision


SPOKE_IDENTITY = [
    {
        "Effect": "Allow",
        "Action": "s3:PutObject",
        "Resource": f"{BUCKET_ARN}/in-use/${{aws:PrincipalAccount}}/${{aws:PrincipalTag/eks-cluster-name}}.json",
    }
]
SPOKE_MIDDLE = 100
SPOKE_CASES = [
    pytest.param(
        put(
            f"in-use/{spoke_account(SPOKE_MIDDLE)}/workload-100.json",
            spoke_role(SPOKE_MIDDLE),
            spoke_arn(SPOKE_MIDDLE),
            "workload-100",
        ),
        "allow",
        id="own",
    ),
    pytest.param(
        put(
            f"in-use/{spoke_account(150)}/workload-150.json",
            spoke_role(SPOKE_MIDDLE),
            spoke_arn(SPOKE_MIDDLE),
            "workload-150",
        ),
        "deny",
        id="another-spokes-manifest",
    ),
    pytest.param(
        put(f"in-use/{spoke_account(150)}/workload-150.json", spoke_role(SPOKE_MIDDLE), spoke_arn(150), "workload-150"),
        "deny",
        id="another-spokes-arn",
    ),
    pytest.param(
        put(
            f"in-use/{spoke_account(SPOKE_MIDDLE)}/workload-150.json",
            spoke_role(SPOKE_MIDDLE),
            spoke_arn(SPOKE_MIDDLE),
            "workload-150",
        ),
        "deny",
        id="forged-name",
    ),
    pytest.param(
        put("in-use/workload-100.json", spoke_role(SPOKE_MIDDLE), spoke_arn(SPOKE_MIDDLE), "workload-100"),
        "deny",
        id="this-accounts-layout",
    ),
    pytest.param(
        put(
            "in-use/prod.json",
            spoke_role(SPOKE_MIDDLE),
            spoke_arn(SPOKE_MIDDLE).replace("workload-100", "prod"),
            "prod",
        ),
        "deny",
        id="named-like-a-hub-cluster",
    ),
    pytest.param(
        put(f"in-use/{spoke_account(SPOKE_MIDDLE)}/workload-100.json", spoke_role(SPOKE_MIDDLE), None, None),
        "deny",
        id="no-tags",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("request_", "decision"), SPOKE_CASES)
def test_at_200_spoke_accounts_a_spoke_writes_only_its_own_clusters_manifest(
    spoke_template: dict[str, Any], request_: Request, decision: str
) -> None:
    tokens = tokens_of(spoke_template)
    assert decide_across_accounts(SPOKE_IDENTITY, bucket_statements(spoke_template), request_, tokens) == decision


def test_a_policy_over_its_limit_is_named_in_one_line_with_its_size_and_the_limit() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Sized")
    bucket = s3.Bucket(stack, "Bucket")
    for number in range(300):
        bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid=f"Statement{number}",
                actions=["s3:GetObject"],
                principals=[iam.AccountPrincipal(f"{210000000000 + number}")],
                resources=[bucket.arn_for_objects(f"reports/{number}/*")],
            )
        )
    template = Template.from_stack(stack).to_json()
    with pytest.raises(InputError) as raised:
        check_policy_sizes(template, stack_name="Sized")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("BucketPolicyE9A3008A (AWS::S3::BucketPolicy): "), message
    assert message.endswith(
        "bytes once deployed, over S3's limit for a bucket policy (20,480 bytes); the deploy would fail"
    )


def test_a_function_environment_over_lambdas_4_kb_is_named_too() -> None:
    """The collector's eksClusters are a list in its environment (about 56 bytes each), as its spokeRoleArns were."""
    app = cdk.App()
    stack = cdk.Stack(app, "Sized")
    lambda_.Function(
        stack,
        "Collector",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        environment={"SPOKE_ROLE_ARNS": json.dumps([spoke_role(n) for n in range(80)])},
    )
    template = Template.from_stack(stack).to_json()
    with pytest.raises(InputError) as raised:
        check_policy_sizes(template, stack_name="Sized")
    assert str(raised.value).startswith("Collector9EBA7CF5 environment (AWS::Lambda::Function): "), str(raised.value)
    assert "over Lambda's limit for a function's environment variables together (4,096 bytes)" in str(raised.value)


@pytest.mark.slow
def test_app_refuses_a_bucket_policy_over_s3s_limit_with_one_line(tmp_path: Path) -> None:
    """700 spoke accounts: their IDs alone pass 20 KB in the bucket policy's one Allow."""
    count = 700
    names = [listed(spoke_arn(n)) for n in range(count)]
    rules = tmp_path / "retention.yaml"
    rules.write_text(rules_listing(names))
    result = run_app(
        rules,
        tmp_path / "cdk.out",
        exporterClusterArns=[spoke_arn(n) for n in range(count)],
        spokeExporterRoleArns=[spoke_role(n) for n in range(count)],
    )
    assert result.returncode == 2, result.stderr[-2000:]
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith("error: InventoryBucketPolicy"), line
    assert "over S3's limit for a bucket policy (20,480 bytes)" in line
