"""Issue 43, "scale to real organisations": 500 agentless eksClusters and a rules file naming 1,000 repositories
exactly synthesize (two Regions: the home stack and the forwarding stack) with every policy, function environment and
event pattern under its AWS limit, least privilege kept; an event pattern over EventBridge's limit stops synthesis in
one line like a policy over its own; the push rule's pattern fits for any rules file.

One synthesis (module-scoped, bundling skipped); run with -s to see every size. What issue 43 added is imported in the
tests that use it, so that each test fails on the code before it for its own reason."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk.deploy_settings import derived_repository_filter
from ecr_retention.cdk.policy_sizes import PolicySize, check_policy_sizes, policy_sizes
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.planning.run import first_matching_policy
from ecr_retention.handlers.wiring.collector import CollectorSettings
from support.iam_evaluation import Request, decide, glob_matches
from support.infra_stacks import CONTEXT, build_app, function_role, role_statements, rules_file

HUB = "123456789012"
REGIONS = ["eu-west-1", "us-east-1"]
OWN_CLUSTERS = 250
SPOKE_ACCOUNTS = 25
SPOKE_CLUSTERS = 250
REPOSITORIES = 1_000
TAG = {"key": "ecr-retention", "value": "managed"}
BUCKET_ARN = "arn:aws:s3:::inventory"


def own_arn(number: int) -> str:
    return f"arn:aws:eks:eu-west-1:{HUB}:cluster/platform-cluster-{number:03d}"


def spoke_account(number: int) -> str:
    return f"{220000000000 + number}"


def spoke_arn(number: int) -> str:
    """Ten clusters per spoke account, in two Regions."""
    return f"arn:aws:eks:{REGIONS[number % 2]}:{spoke_account(number // 10)}:cluster/workload-{number:03d}"


def repository(number: int) -> str:
    return f"team-{number % 40:02d}/service-{number:04d}"


def scale_rules(clusters: list[str]) -> str:
    names = ", ".join(f'"{repository(n)}"' for n in range(REPOSITORIES))
    collected = [f"aws-{account}-eu-west-1" for account in [HUB, *(spoke_account(n) for n in range(SPOKE_ACCOUNTS))]]
    return (
        "version: 1\n"
        f"safety: {{clusters: [prod, dev], optional_clusters: [{', '.join(clusters + collected)}]}}\n"
        f"policies:\n  - repositories: [{names}]\n    rules:\n      - keep: {{tag_in_repositories: [frontend]}}\n"
        "      - delete: {untagged: true, older_than: 1d}\n"
    )


@pytest.fixture(scope="module")
def scale_stacks(tmp_path_factory: pytest.TempPathFactory) -> list[cdk.Stack]:
    """The home stack and the us-east-1 forwarding stack."""
    arns = [own_arn(n) for n in range(OWN_CLUSTERS)] + [spoke_arn(n) for n in range(SPOKE_CLUSTERS)]
    context = {
        **CONTEXT,
        "eksClusters": arns,
        "spokeRoleArns": [f"arn:aws:iam::{spoke_account(n)}:role/ecr-retention-reader" for n in range(SPOKE_ACCOUNTS)],
        "collectRegions": "eu-west-1",
        "regions": REGIONS,
        "repositoryTag": TAG,
    }
    rules = rules_file(tmp_path_factory.mktemp("scale"), scale_rules([arn.rsplit("/", 1)[1] for arn in arns]))
    stack, forwarders = build_app(rules, context)
    return [stack, *forwarders.values()]


@pytest.fixture(scope="module")
def scale(scale_stacks: list[cdk.Stack]) -> dict[str, dict[str, Any]]:
    """The templates by stack name."""
    return {stack.stack_name: dict(Template.from_stack(stack).to_json()) for stack in scale_stacks}


@pytest.mark.slow
def test_at_scale_cdk_nag_finds_nothing_unacknowledged(
    scale_stacks: list[cdk.Stack], scale: dict[str, dict[str, Any]]
) -> None:
    """Every grouped key and cluster ARN, and the tagged repository/*, is acknowledged with its reason."""
    for stack in scale_stacks:
        report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
        findings = [
            f"{violation.rule_name} at {', '.join(str(r.construct_path) for r in violation.violating_resources)}"
            for violation in report.violations
        ]
        assert report.success, "\n".join(findings)


def describe(size: PolicySize) -> str:
    return f"{size.logical_id:<60} {size.size:>6,} of {size.limit.size:>6,} {size.limit.unit}"


@pytest.mark.slow
def test_at_500_eks_clusters_and_1000_named_repositories_every_policy_and_pattern_fits(
    scale: dict[str, dict[str, Any]],
) -> None:
    for name, template in scale.items():
        sizes = policy_sizes(template, stack_name=name)
        print(f"\n{name}: {len(template['Resources'])} resources")
        for size in sorted(sizes, key=lambda each: -each.size / each.limit.size):
            print("  " + describe(size))
        assert [size.describe() for size in sizes if size.over] == []
        check_policy_sizes(template, stack_name=name)
        assert len(template["Resources"]) < 500
        assert any(size.resource_type == "AWS::Events::Rule" for size in sizes), "every rule's pattern is measured"


def resources_of(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {key: value for key, value in template["Resources"].items() if value["Type"] == kind}


@pytest.mark.slow
def test_at_500_eks_clusters_their_access_entries_go_to_nested_stacks_within_cloudformations_limits(
    scale_stacks: list[cdk.Stack], scale: dict[str, dict[str, Any]]
) -> None:
    """Before: 500 clusters made 597 resources (CloudFormation takes 500) and one condition per cluster (it takes
    200). Now the entries of this account's 250 clusters are in a nested stack, with one condition per account and
    Region."""
    home = scale["EcrRetentionTest"]
    assert resources_of(home, "AWS::EKS::AccessEntry") == {}
    assert len(resources_of(home, "AWS::CloudFormation::Stack")) == 1
    assert len(home.get("Conditions", {})) <= 200
    collector = getattr(scale_stacks[0], "collector", None)
    assert collector is not None
    [nested] = collector.eks_access.nested
    template = dict(Template.from_stack(nested).to_json())
    assert len(resources_of(template, "AWS::EKS::AccessEntry")) == OWN_CLUSTERS
    assert len(template["Resources"]) <= 500
    assert len(template["Conditions"]) == 1  # all of this account's clusters are in eu-west-1


def home_tokens(template: dict[str, Any]) -> dict[str, str]:
    [bucket_id] = [
        key
        for key, resource in resources_of(template, "AWS::S3::Bucket").items()
        if "NotificationConfiguration" in resource["Properties"]  # the access-logs bucket is versioned too
    ]
    roles = {f"{key}.Arn": f"arn:aws:iam::{HUB}:role/{key}" for key in resources_of(template, "AWS::IAM::Role")}
    return {**roles, f"{bucket_id}.Arn": BUCKET_ARN, bucket_id: "inventory", "AWS::AccountId": HUB}


def bucket_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    [policy] = [
        resource["Properties"]["PolicyDocument"]["Statement"]
        for key, resource in resources_of(template, "AWS::S3::BucketPolicy").items()
        if key.startswith("InventoryBucketPolicy")
    ]
    return list(policy)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "decision"),
    [
        pytest.param("in-use/platform-cluster-000.json", "allow", id="first-own"),
        pytest.param("in-use/platform-cluster-249.json", "allow", id="last-own"),
        pytest.param("in-use/workload-137.json", "allow", id="spoke"),
        pytest.param(f"in-use/aws-{HUB}-eu-west-1.json", "allow", id="aws-inventory"),
        pytest.param("in-use/prod.json", "deny", id="an-exporters-cluster"),
        pytest.param("in-use/dev.json", "deny", id="another-exporters-cluster"),
        pytest.param(f"in-use/{spoke_account(3)}/workload-030.json", "deny", id="a-spokes-folder"),
        pytest.param("reports/x.json", "deny", id="outside-in-use"),
    ],
)
def test_at_500_eks_clusters_the_collector_writes_only_their_manifests(
    scale: dict[str, dict[str, Any]], key: str, decision: str
) -> None:
    """Its keys are grouped by name prefix (16 patterns at most, none over a name the stack knows otherwise): its own
    policy and the bucket's still let it write each eksCluster's manifest and no other cluster's."""
    home = scale["EcrRetentionTest"]
    tokens = home_tokens(home)
    collector = function_role(home, "collector")
    request = Request(
        "s3:PutObject",
        f"{BUCKET_ARN}/{key}",
        {"aws:PrincipalArn": tokens[f"{collector}.Arn"], "aws:SecureTransport": "true", "s3:TlsVersion": "1.3"},
    )
    identity = role_statements(home, collector)
    found = decide([identity, bucket_statements(home)], request, tokens)
    assert (found == "allow") == (decision == "allow"), found


@pytest.mark.slow
def test_at_500_eks_clusters_the_collector_describes_only_their_clusters(scale: dict[str, dict[str, Any]]) -> None:
    home = scale["EcrRetentionTest"]
    collector = function_role(home, "collector")
    [described] = [s for s in role_statements(home, collector) if s["Action"] == "eks:DescribeCluster"]
    arns = described["Resource"] if isinstance(described["Resource"], list) else [described["Resource"]]
    assert len(arns) <= 16, arns
    assert all(any(glob_matches(arn, own_arn(n)) for arn in arns) for n in range(OWN_CLUSTERS))
    assert not any(glob_matches(arn, f"arn:aws:eks:eu-west-1:{HUB}:cluster/prod") for arn in arns)
    assert not any(glob_matches(arn, f"arn:aws:eks:us-east-1:{HUB}:cluster/platform-cluster-000") for arn in arns)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("region", "tags", "decision"),
    [
        pytest.param("eu-west-1", TAG, "allow", id="tagged"),
        pytest.param("us-east-1", TAG, "allow", id="tagged-other-region"),
        pytest.param("eu-west-1", {"key": "ecr-retention", "value": "other"}, "implicit-deny", id="other-value"),
        pytest.param("eu-west-1", None, "implicit-deny", id="untagged"),
        pytest.param("eu-central-1", TAG, "implicit-deny", id="unpruned-region"),
    ],
)
def test_with_1000_named_repositories_the_evaluation_deletes_only_in_tagged_repositories(
    scale: dict[str, dict[str, Any]], region: str, tags: dict[str, str] | None, decision: str
) -> None:
    """1,000 ARNs (about 70,000 characters) cannot fit IAM's policies: with repositoryTag, the grant is one statement
    per Region on the registry's repositories, conditioned on aws:ResourceTag."""
    home = scale["EcrRetentionTest"]
    tokens = {**home_tokens(home), "AWS::Region": "eu-west-1"}
    context = {} if tags is None else {f"aws:ResourceTag/{tags['key']}": tags["value"]}
    name = repository(REPOSITORIES // 2)
    request = Request("ecr:BatchDeleteImage", f"arn:aws:ecr:{region}:{HUB}:repository/{name}", context)
    statements = role_statements(home, function_role(home, "evaluate"))
    assert not [s for s in statements if name in json.dumps(s)], "no ARN per repository"
    assert decide([statements], request, tokens) == decision


@pytest.mark.slow
def test_with_a_repository_tag_the_repositories_tag_in_repositories_reads_stay_granted_by_name(
    scale: dict[str, dict[str, Any]],
) -> None:
    """`frontend` is no repository of the rules file's: nobody tags it for this stack, so it is read by its name."""
    home = scale["EcrRetentionTest"]
    tokens = {**home_tokens(home), "AWS::Region": "eu-west-1"}
    statements = role_statements(home, function_role(home, "evaluate"))
    read = Request("ecr:DescribeImages", f"arn:aws:ecr:eu-west-1:{HUB}:repository/frontend")
    delete = Request("ecr:BatchDeleteImage", f"arn:aws:ecr:eu-west-1:{HUB}:repository/frontend")
    assert decide([statements], read, tokens) == "allow"
    assert decide([statements], delete, tokens) == "implicit-deny"


def test_an_event_pattern_over_eventbridges_limit_is_named_in_one_line() -> None:
    """300 exact names in a rule's pattern: 6,885 characters; synthesis measured none before (security review L6)."""
    stack = cdk.Stack(cdk.App(), "Sized")
    events.Rule(
        stack,
        "Pushed",
        event_pattern=events.EventPattern(
            source=["aws.ecr"], detail={"repository-name": [f"team-{n:03d}/service" for n in range(300)]}
        ),
    )
    with pytest.raises(InputError) as raised:
        check_policy_sizes(Template.from_stack(stack).to_json(), stack_name="Sized")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("Pushed"), message
    assert " event pattern (AWS::Events::Rule): " in message, message
    assert message.endswith(
        "characters once deployed, over EventBridge's default limit for an event pattern (2,048 characters); "
        "the deploy would fail"
    )


def random_names(count: int, seed: int) -> list[str]:
    chooser = random.Random(seed)
    alphabet = string.ascii_lowercase + string.digits + "-_./"
    return [
        chooser.choice(string.ascii_lowercase)
        + "".join(chooser.choice(alphabet) for _ in range(chooser.randint(5, 60)))
        for _ in range(count)
    ]


@pytest.mark.parametrize(
    "patterns",
    [
        pytest.param([repository(n) for n in range(300)], id="300-names"),
        pytest.param([repository(n) for n in range(REPOSITORIES)], id="1000-names"),
        pytest.param(random_names(5_000, 1), id="5000-random-names"),
        pytest.param([*random_names(2_000, 2), *(f"{name}*" for name in random_names(300, 3))], id="names-and-globs"),
    ],
)
def test_the_push_rules_repository_matchers_fit_for_any_rules_file_and_miss_no_managed_repository(
    patterns: list[str],
) -> None:
    matchers = derived_repository_filter(patterns)
    assert matchers is not None
    assert len(json.dumps(matchers, separators=(",", ":"))) <= 1_024  # half of EventBridge's 2,048
    exact = {m for m in matchers if isinstance(m, str)}
    prefixes = [m["prefix"] for m in matchers if isinstance(m, dict)]
    for pattern in patterns:
        literal = pattern.split("*", 1)[0]
        assert literal in exact or any(literal.startswith(prefix) for prefix in prefixes), pattern


def test_a_few_exact_names_stay_exact_in_the_push_rule() -> None:
    assert derived_repository_filter(["app", "team-*/*", "team-a/api"]) == ["app", {"prefix": "team-"}]


def test_without_a_repository_tag_too_many_exact_names_stop_synthesis_in_one_line() -> None:
    from ecr_retention.cdk.repository_scope import PrunedRegions, RepositoryTag, check_exact_names_fit

    config = parse_config(scale_rules([]), "retention.yaml")
    with pytest.raises(InputError) as raised:
        check_exact_names_fit(config, PrunedRegions(home="eu-west-1"), "repositoryTag")
    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith("rules file: 1000 repositories named exactly in eu-west-1 take about ")
    assert "set the context key repositoryTag" in str(raised.value)
    tagged = PrunedRegions(home="eu-west-1", tag=RepositoryTag(key="ecr-retention", value="managed"))
    check_exact_names_fit(config, tagged, "repositoryTag")
    assert first_matching_policy(config.policies, repository(7), "eu-west-1") is not None


def test_grouped_cluster_names_never_take_in_another_known_cluster() -> None:
    from ecr_retention.cdk.name_groups import name_patterns

    names = [f"platform-cluster-{n:03d}" for n in range(500)]
    for others in (["prod", "platform-cluster-1x"], ["prod", "platform-cluster-1x", "platform-cluster-2"]):
        patterns = name_patterns(names, others)
        assert all(any(glob_matches(p, name) for p in patterns) for name in names)
        assert not [(p, other) for p in patterns for other in others if glob_matches(p, other)]
    assert len(name_patterns(names, ["prod", "platform-cluster-1x"])) <= 16
    digits = [f"{n:03d}" for n in range(100)]
    assert not [p for p in name_patterns(digits) if p.rstrip("*").isdigit() and p.endswith("*")], "no spoke folder"
    assert name_patterns(["prod", "dev"], names) == ["dev", "prod"]


def test_the_collector_reads_its_eks_clusters_from_the_asset_and_refuses_a_bad_file_in_one_line(
    tmp_path: Path,
) -> None:
    listed = tmp_path / "eks-clusters.json"
    listed.write_text(json.dumps({"eksClusters": [own_arn(n) for n in range(500)]}))
    environment = {"BUCKET_NAME": "inventory", "AWS_REGION": "eu-west-1", "EKS_CLUSTERS_FILE": str(listed)}
    settings = CollectorSettings.from_environ(environment)
    assert [cluster.arn for cluster in settings.eks_clusters] == [own_arn(n) for n in range(500)]
    listed.write_text(json.dumps({"eksClusters": ["arn:aws:eks:eu-west-1:1:cluster/x"]}))
    with pytest.raises(InputError) as raised:
        CollectorSettings.from_environ(environment)
    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith(f"{listed}: "), str(raised.value)
