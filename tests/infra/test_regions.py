"""Several Regions in one deployment (the context key `regions`, docs/regions.md): the functions learn the pruned
Regions (PRUNED_REGIONS, only when there are several), each grant on ECR repositories covers every pruned Region with
the patterns of the policies that apply there, and each other Region's stack forwards its ECR events, with the home
rules' own patterns, to the home Region's default event bus, which the home rules match whatever Region an event
comes from. The two-Region app is synthesized once for the module; the refusals need no synthesis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from cfnlint.api import ManualArgs, lint_file
from moto.events.models import EventPattern

from ecr_retention import layout
from ecr_retention.cdk import constants
from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.cdk.pull_time_exclusions import excluded_role_name
from ecr_retention.cdk.region_forwarder import RegionForwarderStack
from ecr_retention.cdk.repository_scope import PrunedRegions
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.errors import InputError
from support.infra_stacks import CONTEXT, RULES, SharedStack, build_app, function_role, role_statements, rules_file

HOME = "eu-west-1"
OTHER = "us-east-1"
# RULES, with the docker.io policy scoped to the other Region: its deletes are granted there only.
REGIONAL_RULES = RULES.replace(
    '  - repositories: ["docker.io/*"]\n', f'  - repositories: ["docker.io/*"]\n    regions: [{OTHER}]\n'
)
REGIONAL_CONTEXT = {**CONTEXT, "regions": [HOME, OTHER], "cloudTrailManagementEvents": True}
RULES_FUNCTIONS = ("targets", "evaluate", "report", "tagger", "sentinel")
HOME_ARN = "arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/"
OTHER_ARN = f"arn:${{AWS::Partition}}:ecr:{OTHER}:${{AWS::AccountId}}:repository/"
HOME_BUS = {"Fn::Join": ["", [f"arn:aws:events:{HOME}:", {"Ref": "AWS::AccountId"}, ":event-bus/default"]]}
FIXTURES = Path(__file__).parents[1] / "fixtures" / "sentinel"
APP = Path(__file__).resolve().parents[2] / "app.py"


@pytest.fixture(scope="module")
def regional(tmp_path_factory: pytest.TempPathFactory) -> tuple[EcrRetentionStack, dict[str, RegionForwarderStack]]:
    """The two-Region app, once (about 20 s)."""
    return build_app(rules_file(tmp_path_factory.mktemp("regions"), REGIONAL_RULES), REGIONAL_CONTEXT)


@pytest.fixture(scope="module")
def home(regional: tuple[EcrRetentionStack, dict[str, RegionForwarderStack]]) -> dict[str, Any]:
    return Template.from_stack(regional[0]).to_json()


@pytest.fixture(scope="module")
def forwarder(regional: tuple[EcrRetentionStack, dict[str, RegionForwarderStack]]) -> dict[str, Any]:
    [(region, stack)] = regional[1].items()
    assert region == OTHER
    return Template.from_stack(stack).to_json()


@pytest.fixture(scope="module")
def single(shared_stack: SharedStack) -> dict[str, Any]:
    return Template.from_stack(shared_stack(RULES, CONTEXT)).to_json()


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The functions of the template by handler module."""
    return {
        resource["Properties"]["Handler"].split(".")[-2]: resource["Properties"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("Handler", "").startswith("ecr_retention.handlers.")
    }


def arn_text(resource: Any) -> str:
    """A Fn::Join'ed ARN as text, each Ref as ${Name}."""
    if isinstance(resource, str):
        return resource
    [(function, argument)] = resource.items()
    assert function == "Fn::Join", resource
    return "".join(part if isinstance(part, str) else f"${{{part['Ref']}}}" for part in argument[1])


def ecr_grants(template: dict[str, Any], module: str) -> dict[tuple[str, ...], list[str]]:
    """Each ECR statement of the function's role: its actions -> its resources, as text, sorted (the CDK's policy
    minimizing orders them)."""
    grants: dict[tuple[str, ...], list[str]] = {}
    for statement in role_statements(template, function_role(template, module)):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if all(action.startswith("ecr:") for action in actions):
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            grants[tuple(actions)] = sorted(arn_text(resource) for resource in resources)
    return grants


@pytest.mark.slow
def test_without_regions_no_function_is_told_the_pruned_regions(single: dict[str, Any]) -> None:
    assert [name for name, f in functions(single).items() if layout.PRUNED_REGIONS_VARIABLE in str(f)] == []
    assert not [r for r in single["Resources"].values() if "event-bus/default" in json.dumps(r)]


@pytest.mark.slow
def test_every_rules_function_is_told_the_pruned_regions_home_first(home: dict[str, Any]) -> None:
    found = functions(home)
    for name in RULES_FUNCTIONS:
        variables = found[name]["Environment"]["Variables"]
        assert json.loads(variables[layout.PRUNED_REGIONS_VARIABLE]) == [HOME, OTHER], name
    assert layout.PRUNED_REGIONS_VARIABLE not in found["collector"]["Environment"]["Variables"]


@pytest.mark.slow
def test_the_grants_that_change_images_cover_each_region_with_the_policies_that_apply_there(
    home: dict[str, Any],
) -> None:
    everywhere = ["app", "team-*/*"]
    scoped = sorted([HOME_ARN + p for p in everywhere] + [OTHER_ARN + p for p in (*everywhere, "docker.io/*")])
    evaluate = ecr_grants(home, "evaluate")
    assert evaluate[tuple(sorted(("ecr:BatchDeleteImage", "ecr:BatchGetImage", "ecr:DescribeImages",
                                  "ecr:GetLifecyclePolicy", "ecr:UpdateImageStorageClass")))] == scoped  # fmt: skip
    # The tag source of the policy that applies everywhere, read in both Regions.
    assert evaluate[("ecr:DescribeImages",)] == [HOME_ARN + "frontend", OTHER_ARN + "frontend"]
    assert ecr_grants(home, "tagger")[("ecr:BatchGetImage", "ecr:DescribeImages", "ecr:PutImage")] == scoped
    # The doctor (a trail) reads index manifests where the sentinel may restore.
    sentinel = ecr_grants(home, "sentinel")
    assert sentinel[("ecr:BatchGetImage", "ecr:UpdateImageStorageClass")] == scoped


def s3_grants(template: dict[str, Any], module: str) -> dict[str, list[str]]:
    """The object key patterns of each s3 action of the function's role (the bucket's ARN left out)."""
    grants: dict[str, list[str]] = {}
    for statement in role_statements(template, function_role(template, module)):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for action in (action for action in actions if action in ("s3:GetObject", "s3:PutObject")):
            keys = [part for r in resources if "Fn::Join" in r for part in r["Fn::Join"][1] if isinstance(part, str)]
            grants.setdefault(action, []).extend(key.removeprefix("/") for key in keys)
    return grants


def bucket_deny(template: dict[str, Any], sid: str) -> dict[str, Any]:
    [statement] = [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::S3::BucketPolicy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Sid") == sid
    ]
    return statement


@pytest.mark.slow
def test_the_run_files_of_the_other_regions_are_granted_only_with_several(
    home: dict[str, Any], single: dict[str, Any]
) -> None:
    """layout.replicated_deletions_key (services/replicas.py); every Region's replication rules are in the run's one
    replication record, granted as in a single-Region run, and no per-Region replication file is granted."""
    regional, deletions = "runs/*/replication-*.json", "runs/*/deletions/*"
    evaluate = s3_grants(home, "evaluate")
    assert deletions in evaluate["s3:GetObject"]
    assert deletions in evaluate["s3:PutObject"]
    for template in (home, single):
        for module in ("targets", "evaluate"):
            granted = [key for keys in s3_grants(template, module).values() for key in keys]
            assert regional not in granted, module
    for module in ("targets", "evaluate"):
        granted = [key for keys in s3_grants(single, module).values() for key in keys]
        assert deletions not in granted, module
    # Nobody but the break-glass role deletes them, as the home Region's: the Deny covers all of runs/ in either case
    # (tests/infra/test_one_writer.py evaluates it).
    for template in (home, single):
        assert "/runs/*" in json.dumps(bucket_deny(template, "ProtectionStateDeletedOnlyByBreakGlass"))
    assert layout.replication_key("r") == "runs/r/replication.json"  # one record of every Region
    assert layout.replicated_deletions_key("r", "app", OTHER).startswith("runs/r/deletions/")


@pytest.mark.slow
def test_the_reads_of_every_repository_cover_every_region_and_describe_registry_stays_star(
    home: dict[str, Any],
) -> None:
    every = [HOME_ARN + "*", OTHER_ARN + "*"]
    assert ecr_grants(home, "targets")[("ecr:DescribeRepositories",)] == every
    assert ecr_grants(home, "targets")[("ecr:DescribeRegistry",)] == ["*"]
    assert ecr_grants(home, "report")[("ecr:DescribeImages",)] == every
    # With a trail, the sentinel also reads a new lifecycle policy there (tests/infra/test_event_provenance.py).
    assert ecr_grants(home, "sentinel")[("ecr:DescribeImages", "ecr:GetLifecyclePolicy")] == every
    assert ecr_grants(home, "sentinel")[("ecr:DescribeRegistry",)] == ["*"]


def rules_of(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Events::Rule"]


def ecr_rule_patterns(template: dict[str, Any]) -> list[str]:
    return sorted(
        json.dumps(rule["EventPattern"], sort_keys=True)
        for rule in rules_of(template)
        if rule["EventPattern"].get("source") == ["aws.ecr"]
    )


@pytest.mark.slow
def test_the_forwarder_has_the_home_rules_patterns_each_to_the_home_bus(
    home: dict[str, Any], forwarder: dict[str, Any]
) -> None:
    # The push rule, the sentinel's three, and the API calls' (a trail); the guard rules (the bucket, the
    # break-glass role) are the home Region's own.
    assert ecr_rule_patterns(forwarder) == ecr_rule_patterns(home)
    assert len(rules_of(forwarder)) == 5
    [role] = [logical_id for logical_id, r in forwarder["Resources"].items() if r["Type"] == "AWS::IAM::Role"]
    for rule in rules_of(forwarder):
        # The lifecycle rule also delivers read-only events (tests/infra/test_event_provenance.py).
        assert rule["State"] in ("ENABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS")
        [target] = rule["Targets"]
        assert target["Arn"] == HOME_BUS
        assert target["RoleArn"] == {"Fn::GetAtt": [role, "Arn"]}


@pytest.mark.slow
def test_the_forwarders_one_role_may_only_put_events_on_the_home_bus(forwarder: dict[str, Any]) -> None:
    [role] = [logical_id for logical_id, r in forwarder["Resources"].items() if r["Type"] == "AWS::IAM::Role"]
    trust = forwarder["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    # Conditioned on a rule of this account and Region (tests/infra/test_event_provenance.py).
    assert [{k: v for k, v in each.items() if k != "Condition"} for each in trust] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}}
    ]
    assert role_statements(forwarder, role) == [{"Action": "events:PutEvents", "Effect": "Allow", "Resource": HOME_BUS}]
    kinds = sorted(r["Type"] for r in forwarder["Resources"].values())
    assert kinds == ["AWS::ECR::PullTimeUpdateExclusion"] * 3 + ["AWS::Events::Rule"] * 5 + [
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
    ]


def exclusions(template: dict[str, Any]) -> list[Any]:
    """The principals of the template's pull-time update exclusions."""
    return [
        resource["Properties"]["PrincipalArn"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::ECR::PullTimeUpdateExclusion"
    ]


@pytest.mark.slow
def test_every_pruned_regions_registry_excludes_the_roles_that_read_manifests(
    home: dict[str, Any], forwarder: dict[str, Any], single: dict[str, Any]
) -> None:
    # ECR's registry settings are per Region: the evaluations and the tagger read manifests in us-east-1 too, so its
    # registry excludes them as eu-west-1's does, by the names the home stack gives them (the stack, the role, home).
    resources = home["Resources"]
    excluded_at_home = sorted(arn["Fn::GetAtt"][0] for arn in exclusions(home))
    names = [resources[role]["Properties"].get("RoleName") for role in excluded_at_home]
    # With a trail the sentinel's doctor reads manifests too.
    assert sorted(names) == [
        f"EcrRetentionTest-Evaluate-{HOME}",
        f"EcrRetentionTest-Sentinel-{HOME}",
        f"EcrRetentionTest-Tagger-{HOME}",
    ]
    assert sorted(arn_text(arn) for arn in exclusions(forwarder)) == [
        f"arn:aws:iam::${{AWS::AccountId}}:role/{name}" for name in sorted(names)
    ]
    # One Region: the roles keep the names CloudFormation generates, the template as it was.
    assert len(exclusions(single)) == 2
    assert all("RoleName" not in single["Resources"][arn["Fn::GetAtt"][0]]["Properties"] for arn in exclusions(single))


@pytest.mark.slow
def test_with_a_trail_the_sentinels_doctor_is_excluded_too_and_one_region_names_no_role(
    shared_stack: SharedStack,
) -> None:
    stack = shared_stack(RULES, {**CONTEXT, "cloudTrailManagementEvents": True})
    template = Template.from_stack(stack).to_json()

    excluded = sorted(arn["Fn::GetAtt"][0] for arn in exclusions(template))
    roles = [stack.workflow.evaluate.role, stack.tagger.tagger.role, stack.sentinel.sentinel.role]
    assert excluded == sorted(stack.resolve(role.role_arn)["Fn::GetAtt"][0] for role in roles)
    assert all("RoleName" not in template["Resources"][role]["Properties"] for role in excluded)


def test_an_excluded_roles_name_fits_iams_limit_and_stays_unique() -> None:
    assert excluded_role_name("EcrRetention", "Evaluate", HOME) == f"EcrRetention-Evaluate-{HOME}"
    long_a, long_b = ("Ecr" * 30 + "A", "Ecr" * 30 + "B")
    name_a, name_b = (excluded_role_name(stack, "Evaluate", "ap-southeast-2") for stack in (long_a, long_b))
    assert len(name_a) == len(name_b) == 64
    assert name_a != name_b
    assert name_a.endswith("-Evaluate-ap-southeast-2")


@pytest.mark.slow
def test_the_forwarding_stack_is_named_for_its_region_and_deployed_there(
    regional: tuple[EcrRetentionStack, dict[str, RegionForwarderStack]],
) -> None:
    stack = regional[1][OTHER]
    assert stack.stack_name == f"{constants.FORWARDER_STACK_PREFIX}{OTHER}"
    assert (stack.region, stack.home_region) == (OTHER, HOME)
    assert regional[0].pruned_regions == PrunedRegions(home=HOME, others=(OTHER,))


@pytest.mark.slow
def test_cdk_nag_finds_nothing_unacknowledged_in_either_stack(
    regional: tuple[EcrRetentionStack, dict[str, RegionForwarderStack]],
) -> None:
    """The per-Region repository patterns are acknowledged like the home Region's."""
    main, forwarders = regional
    for stack in (main, *forwarders.values()):
        report = AwsSolutionsChecks(stack.node.root).validate_scope(stack)
        assert report.success, [violation.rule_name for violation in report.violations]


@pytest.mark.slow
def test_cfn_lint_finds_nothing_in_either_template(
    home: dict[str, Any], forwarder: dict[str, Any], tmp_path: Path
) -> None:
    findings = []
    for name, template in (("home", home), ("forwarder", forwarder)):
        path = tmp_path / f"{name}.template.json"
        path.write_text(json.dumps(template, indent=1))
        findings += lint_file(path, config=ManualArgs(regions=[HOME, OTHER], ignore_checks=["W3005"]))
    assert [f"{m.rule.id} {m.message} ({m.path})" for m in findings] == []


def fixture(name: str, region: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    event["region"] = region
    return event


def push(repository: str, region: str) -> dict[str, Any]:
    event = fixture("image-deleted.json", region)
    event["detail"] = {**event["detail"], "action-type": "PUSH", "repository-name": repository}
    return event


def matched(template: dict[str, Any], event: dict[str, Any]) -> list[str]:
    return sorted(
        str(rule["Description"])
        for rule in rules_of(template)
        if EventPattern.load(json.dumps(rule["EventPattern"])).matches_event(event)
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "event",
    [
        pytest.param(push("team-a/api", OTHER), id="push"),
        pytest.param(fixture("image-deleted.json", OTHER), id="deleted"),
        pytest.param(fixture("image-archived.json", OTHER), id="archived"),
        pytest.param(fixture("policy-execution.json", OTHER), id="lifecycle"),
        pytest.param(fixture("batch-delete-image.json", OTHER), id="api-call"),
    ],
)
def test_a_forwarded_event_keeps_its_region_and_the_home_rules_match_it_as_their_own(
    home: dict[str, Any], forwarder: dict[str, Any], event: dict[str, Any]
) -> None:
    """The home rules filter by source, detail-type and detail, never by Region: the event another Region's rule
    forwards (its own `region` kept) is matched by the same home rule as the home Region's own event."""
    forwarded = matched(forwarder, event)
    assert len(forwarded) == 1
    own = {**event, "region": HOME}
    assert matched(home, event) == matched(home, own) != []
    assert not any("region" in json.dumps(rule["EventPattern"]) for rule in rules_of(home) + rules_of(forwarder))


# --- Refusals: one line, no synthesis.


def settings(**context: Any) -> DeploySettings:
    return DeploySettings.from_context(lambda key: context.get(key))


def refusal(**context: Any) -> str:
    with pytest.raises(InputError) as raised:
        settings(**context)
    return str(raised.value)


def test_a_region_that_is_no_region_or_is_listed_twice_is_refused_in_one_line() -> None:
    assert settings(regions="eu-west-1, us-east-1").regions == (HOME, OTHER)
    assert settings(regions='["eu-west-1"]').regions == (HOME,)
    assert settings().regions == ()
    unknown = refusal(regions=["eu-west-1", "Europe"])
    assert unknown == "cdk context: regions[1]: 'Europe' is not a Region's name (like eu-west-1)"
    assert (
        refusal(regions=["eu-west-1", "us-east-1", "eu-west-1"])
        == "cdk context: regions: Region eu-west-1 is listed twice"
    )
    assert "\n" not in unknown


REGIONAL_CONFIG = parse_config(REGIONAL_RULES)


def check(context: dict[str, Any], region: str | None, rules: str = REGIONAL_RULES) -> str:
    with pytest.raises(InputError) as raised:
        settings(**context).check_against_the_stack(parse_config(rules), account=None, region=region)
    return str(raised.value)


def test_a_policy_naming_a_region_the_stack_does_not_prune_is_refused() -> None:
    assert check({"regions": [HOME, "ap-southeast-2"]}, None) == (
        "retention.yaml: policies[1].regions: us-east-1 is not a Region this deployment prunes "
        "(regions: eu-west-1, ap-southeast-2)"
    )
    # Without regions, the stack's own Region only.
    assert check({}, HOME) == (
        "retention.yaml: policies[1].regions: us-east-1 is not a Region this deployment prunes (regions: eu-west-1)"
    )
    settings(regions=[HOME, OTHER]).check_against_the_stack(REGIONAL_CONFIG, account=None, region=None)
    settings(regions=[HOME, OTHER]).check_against_the_stack(REGIONAL_CONFIG, account=None, region=OTHER)
    settings().check_against_the_stack(REGIONAL_CONFIG, account=None, region=OTHER)


def test_when_synthesis_knows_no_region_a_policy_naming_one_needs_the_context_key() -> None:
    assert check({}, None) == (
        "retention.yaml: policies[1].regions: synthesis does not know the stack's Region; name the stack's Regions "
        "in the context key regions (docs/regions.md)"
    )
    settings().check_against_the_stack(parse_config(RULES), account=None, region=None)


def test_the_stacks_own_region_must_be_listed() -> None:
    assert check({"regions": [OTHER, "ap-southeast-2"]}, HOME, RULES) == (
        "cdk context: regions: the stack's Region eu-west-1 is not listed (us-east-1, ap-southeast-2); list the home "
        "Region, where the stack is deployed, with the others"
    )


def test_the_home_region_is_the_stacks_then_the_first_listed_and_the_order_is_kept() -> None:
    listed = settings(regions=[OTHER, "ap-southeast-2", HOME])
    assert listed.pruned_regions(HOME) == PrunedRegions(home=HOME, others=(OTHER, "ap-southeast-2"))
    assert listed.pruned_regions(None) == PrunedRegions(home=OTHER, others=("ap-southeast-2", HOME))
    assert settings().pruned_regions(HOME) == PrunedRegions(home=HOME)
    assert settings().pruned_regions(None).names == ()
    assert not settings(regions=[HOME]).pruned_regions(None).several


def test_the_cli_must_deploy_the_stack_to_the_home_region() -> None:
    settings(regions=[HOME, OTHER]).check_cli_region(HOME)
    settings(regions=[HOME, OTHER]).check_cli_region(None)
    settings().check_cli_region(OTHER)
    with pytest.raises(InputError) as raised:
        settings(regions=[HOME, OTHER]).check_cli_region(OTHER)
    assert str(raised.value) == (
        "cdk context: regions: the home Region is eu-west-1 (the first listed) but the CDK CLI deploys to us-east-1; "
        "deploy with AWS_REGION=eu-west-1, or list us-east-1 first (docs/regions.md)"
    )


def test_the_push_filter_of_a_region_has_only_the_policies_that_apply_there() -> None:
    assert settings().push_repository_filter(REGIONAL_CONFIG, HOME) == ["app", {"prefix": "team-"}]
    assert settings().push_repository_filter(REGIONAL_CONFIG, OTHER) == [
        "app",
        {"prefix": "docker.io/"},
        {"prefix": "team-"},
    ]
    assert settings().push_repository_filter(REGIONAL_CONFIG) == settings().push_repository_filter(
        REGIONAL_CONFIG, OTHER
    )


@pytest.mark.slow
def test_app_refuses_a_cli_region_other_than_the_home_region_in_one_line(tmp_path: Path) -> None:
    """Before synthesis: no stack is written."""
    rules = rules_file(tmp_path, REGIONAL_RULES)
    context = {"config": str(rules), "aws:cdk:bundling-stacks": [], "regions": [HOME, OTHER]}
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps(context),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
        "CDK_DEFAULT_REGION": OTHER,
    }
    result = subprocess.run(
        [sys.executable, str(APP)], env=env, cwd=APP.parent, capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "error: cdk context: regions: the home Region is eu-west-1 (the first listed) but the CDK CLI deploys to "
        "us-east-1; deploy with AWS_REGION=eu-west-1, or list us-east-1 first (docs/regions.md)"
    ], result.stderr
