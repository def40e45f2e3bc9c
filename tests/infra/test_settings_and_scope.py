"""The deployment's context settings (defaults, both spellings of lists, one-line errors), the push rule's
repository filter, the repository patterns IAM is scoped to, and the constants infra repeats from the package.
No CDK synthesis here: these are plain functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ecr_retention import layout
from ecr_retention.aws import dynamodb_lease
from ecr_retention.cdk import constants, pruning_workflow, repository_scope
from ecr_retention.cdk.deploy_settings import DeploySettings, derived_repository_filter
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory import aws as aws_inventory
from ecr_retention.services import inventory, snapshot
from support.infra_stacks import REPOSITORY_CDK_JSON, RULES

PROD = "arn:aws:eks:eu-west-1:123456789012:cluster/prod"


def settings(**context: Any) -> DeploySettings:
    return DeploySettings.from_context(context.get)


def test_defaults_synthesize_a_safe_stack() -> None:
    defaults = settings()
    assert defaults.rules_file == Path("retention.yaml")
    assert defaults.sweep_schedule == "cron(0 3 * * ? *)"
    assert defaults.tagger_schedule == "rate(1 hour)"
    assert defaults.report_emails == defaults.operations_emails == defaults.exporter_cluster_arns == ()
    assert defaults.push_repository_prefixes is None
    assert defaults.push_trigger_enabled
    assert defaults.map_concurrency == 10
    assert defaults.aws_inventory
    assert defaults.collector_schedule == "rate(1 hour)"
    assert defaults.collect_regions == defaults.spoke_role_arns == defaults.spoke_exporter_role_arns == ()
    assert defaults.task_definition_revisions == 5


def test_the_defaults_in_cdk_json_are_the_same_as_the_codes() -> None:
    from ecr_retention.cdk.app_context import cdk_json_context

    assert DeploySettings.from_context(cdk_json_context(REPOSITORY_CDK_JSON).get) == settings()


@pytest.mark.parametrize(
    "value", [[PROD, "arn:aws:eks:us-east-1:123456789012:cluster/dev"], f'["{PROD}"]', f"{PROD}, {PROD[:-4]}dev"]
)
def test_lists_come_as_json_values_json_text_or_comma_separated(value: Any) -> None:
    parsed = settings(exporterClusterArns=value).exporter_cluster_arns
    assert parsed[0] == PROD
    assert all(arn.startswith("arn:aws:eks:") for arn in parsed)


def test_numbers_and_flags_from_the_command_line_are_text() -> None:
    assert settings(mapConcurrency="40").map_concurrency == 40
    assert settings(taskDefinitionRevisions="0").task_definition_revisions == 0
    assert settings(awsInventory="false").aws_inventory is False


def test_the_collector_takes_regions_and_spoke_roles_as_lists() -> None:
    spokes = "arn:aws:iam::210987654321:role/ecr-retention-reader,arn:aws:iam::345678901234:role/a/reader"
    parsed = settings(collectRegions='["eu-west-1", "us-east-1"]', spokeRoleArns=spokes)
    assert parsed.collect_regions == ("eu-west-1", "us-east-1")
    assert parsed.spoke_role_arns == tuple(spokes.split(","))


SPOKE_CLUSTER = "arn:aws:eks:eu-west-1:210987654321:cluster/payments"
SPOKE_EXPORTER = "arn:aws:iam::210987654321:role/ecr-retention-exporter"


def test_spoke_exporter_roles_come_as_a_list_next_to_their_accounts_clusters() -> None:
    parsed = settings(exporterClusterArns=[PROD, SPOKE_CLUSTER], spokeExporterRoleArns=SPOKE_EXPORTER)
    assert parsed.spoke_exporter_role_arns == (SPOKE_EXPORTER,)


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({"mapConcurrency": 0}, "cdk context: mapConcurrency: 0: input should be greater than or equal to 1"),
        ({"sweepSchedule": "every day"}, "cdk context: sweepSchedule: String should match pattern"),
        ({"reportEmails": "nobody"}, "cdk context: reportEmails[0]: String should match pattern"),
        ({"exporterClusterArns": "prod"}, "cdk context: exporterClusterArns[0]: String should match pattern"),
        (
            {"exporterClusterArns": [PROD, PROD.replace("eu-west-1", "us-east-1")]},
            "cdk context: exporterClusterArns: two clusters would write the same manifest in-use/<name>.json: prod",
        ),
        ({"reportEmails": "[oops"}, "cdk context: reportEmails: not a JSON list (Expecting value)"),
        (
            {"exporterClusterArns": [PROD, PROD.replace("/prod", "/aws-platform")]},
            "cdk context: exporterClusterArns: cluster names starting with 'aws-' are reserved for the AWS "
            "inventory's manifests (in-use/aws-<account>-<region>.json): aws-platform",
        ),
        ({"collectRegions": "eu-west"}, "cdk context: collectRegions[0]: String should match pattern"),
        ({"spokeRoleArns": "reader"}, "cdk context: spokeRoleArns[0]: String should match pattern"),
        (
            {
                "spokeRoleArns": [
                    "arn:aws:iam::210987654321:role/ecr-retention-reader",
                    "arn:aws:iam::210987654321:role/other",
                ]
            },
            "cdk context: spokeRoleArns: one role per account; 210987654321 has more than one",
        ),
        ({"spokeExporterRoleArns": "exporter"}, "cdk context: spokeExporterRoleArns[0]: String should match pattern"),
        (
            {"exporterClusterArns": [PROD], "spokeExporterRoleArns": [SPOKE_EXPORTER]},
            "cdk context: spokeExporterRoleArns: no cluster of the role's account is listed in exporterClusterArns "
            f"(list the spoke clusters there too): {SPOKE_EXPORTER}",
        ),
        ({"taskDefinitionRevisions": -1}, "cdk context: taskDefinitionRevisions: -1: input should be greater"),
        ({"awsInventory": "maybe"}, "cdk context: awsInventory: Input should be a valid boolean"),
        ({"collectorSchedule": "hourly"}, "cdk context: collectorSchedule: String should match pattern"),
        ({"eksClusters": ["arn:aws:eks:eu-west-1:1234:cluster/x"]}, "cdk context: eksClusters[0]: String should"),
        ({"eksClusters": "prod"}, "cdk context: eksClusters[0]: String should match pattern"),
        (
            {"eksClusters": [PROD, PROD.replace("eu-west-1", "us-east-1")]},
            "cdk context: eksClusters: two clusters would write the same manifest in-use/<name>.json: prod",
        ),
        (
            {"exporterClusterArns": [PROD], "eksClusters": [PROD]},
            "cdk context: eksClusters: also in exporterClusterArns (one writer per in-use/<name>.json",
        ),
        (
            {"awsInventory": False, "eksClusters": [PROD]},
            "cdk context: eksClusters: the collector reads these clusters: awsInventory is false",
        ),
        (
            {"eksClusters": [PROD.replace("arn:aws:", "arn:aws-iso:")]},
            f"cdk context: eksClusters: {PROD.replace('arn:aws:', 'arn:aws-iso:')}: partition aws-iso is not "
            "supported (one of aws, aws-cn, aws-us-gov)",
        ),
        (
            {"eksClusters": [PROD, SPOKE_CLUSTER]},
            "cdk context: eksClusters: clusters of accounts 123456789012, 210987654321 and no spokeRoleArns role of "
            "any of them: the collector reads only this account's clusters with its own role",
        ),
        ({"breakGlassRoleArn": "admin"}, "cdk context: breakGlassRoleArn: String should match pattern"),
        ({"collectorVpc": {"vpcId": "vpc-0abc"}}, "cdk context: collectorVpc"),
        ({"collectorVpc": "{not json"}, "cdk context: collectorVpc"),
    ],
)
def test_a_bad_context_value_is_one_line_naming_the_key(context: dict[str, Any], expected: str) -> None:
    with pytest.raises(InputError) as raised:
        settings(**context)
    assert str(raised.value).startswith(expected)
    assert "\n" not in str(raised.value)


def test_clusters_of_this_and_other_partitions_and_of_spoke_accounts_are_accepted() -> None:
    china = "arn:aws-cn:eks:cn-north-1:123456789012:cluster/beijing"
    gov = "arn:aws-us-gov:eks:us-gov-west-1:123456789012:cluster/gov"
    spoke_role = "arn:aws:iam::210987654321:role/ecr-retention-reader"
    parsed = settings(eksClusters=[PROD, china, gov, SPOKE_CLUSTER], spokeRoleArns=[spoke_role])
    assert parsed.eks_clusters == (PROD, china, gov, SPOKE_CLUSTER)
    assert settings(breakGlassRoleArn=spoke_role).break_glass_role_arn == spoke_role


# Every cluster the stack lets write, and each aws-<account>-<region> the collector writes, is expected or optional.
LISTED = (
    "version: 1\nsafety: {clusters: [prod], optional_clusters: [%s]}\n"
    "policies: [{repositories: [app], rules: [{delete: {untagged: true}}]}]\n"
)
SPOKE_READER = "arn:aws:iam::210987654321:role/ecr-retention-reader"
CHECKOUT = "arn:aws:eks:eu-west-1:210987654321:cluster/checkout"


def unexpected(context: dict[str, Any], optional: str, account: str | None = None, region: str | None = None) -> str:
    with pytest.raises(InputError) as raised:
        settings(**context).check_against_the_stack(parse_config(LISTED % optional), account=account, region=region)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_a_cluster_the_collector_reads_in_neither_list_stops_synthesis_naming_it() -> None:
    message = unexpected({"eksClusters": [PROD, PROD.replace("/prod", "/payments")]}, "dev")
    assert message == (
        "cdk.json eksClusters: cluster payments is in neither safety.clusters nor safety.optional_clusters of "
        "retention.yaml; list it in one of them (optional: read and protects, never blocks)"
    )


def test_an_exporter_cluster_in_neither_list_stops_synthesis_naming_it() -> None:
    message = unexpected({"exporterClusterArns": [PROD, PROD.replace("/prod", "/dev")]}, "staging")
    assert message.startswith("cdk.json exporterClusterArns: cluster dev is in neither safety.clusters nor ")


def test_a_spoke_exporters_cluster_in_neither_list_stops_synthesis_naming_it() -> None:
    context = {"exporterClusterArns": [PROD, SPOKE_CLUSTER, CHECKOUT], "spokeExporterRoleArns": [SPOKE_EXPORTER]}
    message = unexpected(context, "210987654321/payments")
    assert message.startswith(
        "cdk.json exporterClusterArns (a cluster of a spokeExporterRoleArns account): cluster 210987654321/checkout is "
        "in neither"
    )
    assert "clusters 210987654321/payments, 210987654321/checkout are in neither" in unexpected(context, "dev")


def test_a_spoke_exporters_cluster_is_not_listed_by_its_bare_name_which_is_this_accounts() -> None:
    """A spoke's cluster writes in-use/<account>/<name>.json: the lists name it <account>/<name>; a bare name is a
    cluster of this account, which the spoke's manifest never stands for (docs/rules.md)."""
    context = {"exporterClusterArns": [SPOKE_CLUSTER], "spokeExporterRoleArns": [SPOKE_EXPORTER]}
    assert "cluster 210987654321/payments is in neither" in unexpected(context, "payments")
    settings(**context, awsInventory=False).check_against_the_stack(
        parse_config(LISTED % "210987654321/payments"), account="123456789012", region="eu-west-1"
    )


def test_an_aws_inventory_the_collector_writes_in_neither_list_stops_synthesis_naming_it() -> None:
    context = {"spokeRoleArns": [SPOKE_READER], "collectRegions": ["eu-west-1", "us-east-1"]}
    # Without the stack's account, the spokes' names are known; with it, this account's too.
    spokes = "aws-210987654321-eu-west-1, aws-210987654321-us-east-1"
    assert unexpected(context, "dev").startswith("cdk.json awsInventory (the collector writes ")
    assert f"clusters {spokes} are in neither" in unexpected(context, "dev")
    own = unexpected(context, spokes, account="123456789012")
    assert "clusters aws-123456789012-eu-west-1, aws-123456789012-us-east-1 are in neither" in own
    # Without collectRegions, the collector reads the stack's region: known only with the stack's region.
    assert "cluster aws-123456789012-eu-west-2 is in neither" in unexpected(
        {}, "dev", account="123456789012", region="eu-west-2"
    )


def test_every_source_listed_as_expected_or_optional_synthesizes() -> None:
    context = {
        "eksClusters": [PROD.replace("/prod", "/batch")],
        "exporterClusterArns": [PROD, SPOKE_CLUSTER],
        "spokeExporterRoleArns": [SPOKE_EXPORTER],
        "spokeRoleArns": [SPOKE_READER],
        "collectRegions": ["eu-west-1"],
    }
    optional = "batch, 210987654321/payments, aws-123456789012-eu-west-1, aws-210987654321-eu-west-1"
    config = parse_config(LISTED % optional)
    settings(**context).check_against_the_stack(config, account="123456789012", region="eu-west-1")
    settings(**context).check_against_the_stack(config, account=None, region=None)
    # Without the AWS inventory, the collector writes nothing (and reads no eksClusters).
    del context["eksClusters"]
    settings(**context, awsInventory=False).check_against_the_stack(
        parse_config(LISTED % "210987654321/payments"), account="123456789012", region="eu-west-1"
    )


def test_an_eks_cluster_of_another_account_than_the_stacks_needs_that_accounts_spoke_role() -> None:
    message = unexpected({"eksClusters": [SPOKE_CLUSTER]}, "payments", account="123456789012")
    assert message == (
        f"cdk context: eksClusters: {SPOKE_CLUSTER} is of another account than this stack's (123456789012) and no "
        "spokeRoleArns role is of its account: the collector reads another account's clusters only through that "
        "account's spoke role"
    )


def test_the_push_filter_matches_literal_names_exactly_and_globs_by_their_prefix() -> None:
    assert derived_repository_filter(["app", "team-*/*", "team-a/x", "docker.io/*", "team-?", "team-api"]) == [
        "app",
        {"prefix": "docker.io/"},
        {"prefix": "team-"},
    ]


def test_a_pattern_that_starts_with_a_glob_takes_every_push() -> None:
    assert derived_repository_filter(["app", "*/cache"]) is None


def test_configured_prefixes_win_and_an_empty_list_turns_pushes_off() -> None:
    config = parse_config(RULES)
    assert settings(pushRepositoryPrefixes="team-").push_repository_filter(config) == [{"prefix": "team-"}]
    assert settings().push_repository_filter(config) == ["app", {"prefix": "docker.io/"}, {"prefix": "team-"}]
    assert not settings(pushRepositoryPrefixes=[]).push_trigger_enabled


def test_iam_scope_is_every_policys_patterns_plus_read_only_tag_sources() -> None:
    config = parse_config(RULES)
    assert repository_scope.managed_patterns(config) == ("app", "team-*/*", "docker.io/*")
    assert repository_scope.tag_source_patterns(config) == ("frontend",)
    assert not repository_scope.tag_sources_need_listing(config)
    globbed = parse_config(RULES.replace("[frontend]", '["web-*", app]'))
    assert repository_scope.tag_source_patterns(globbed) == ("web-*",)  # app is managed already
    assert repository_scope.tag_sources_need_listing(globbed)


def test_infra_constants_equal_the_packages() -> None:
    assert constants.IN_USE_PREFIX == inventory.IN_USE_PREFIX
    assert constants.MANIFEST_CACHE_PREFIX == snapshot.MANIFEST_CACHE_PREFIX
    assert layout.repository_report_key("r", "app").startswith(f"{constants.RUNS_PREFIX}r/")
    assert pruning_workflow.LEASE_TABLE_KEY == dynamodb_lease.LEASE_TABLE_KEY
    assert pruning_workflow.LEASE_TABLE_TTL_ATTRIBUTE == dynamodb_lease.LEASE_TABLE_TTL_ATTRIBUTE
    assert constants.DEFAULT_TASK_DEFINITION_REVISIONS == aws_inventory.DEFAULT_REVISIONS
    name = aws_inventory.inventory_name("123456789012", "eu-west-1")
    assert name.startswith(constants.AWS_INVENTORY_NAME_PREFIX)
    every_aws_manifest = f"{inventory.IN_USE_PREFIX}{constants.AWS_INVENTORY_NAME_PREFIX}*.json"
    assert every_aws_manifest == constants.AWS_INVENTORY_MANIFESTS


OTHER_SPOKE_PAYMENTS = "arn:aws:eks:eu-west-1:345678901234:cluster/payments"
OTHER_SPOKE_EXPORTER = "arn:aws:iam::345678901234:role/ecr-retention-exporter"


def test_two_spokes_exporter_clusters_of_one_name_are_two_keys_and_synthesize() -> None:
    """Each spoke writes in-use/<its account>/payments.json: two clusters, listed as <account>/payments."""
    context = {
        "exporterClusterArns": [SPOKE_CLUSTER, OTHER_SPOKE_PAYMENTS],
        "spokeExporterRoleArns": [SPOKE_EXPORTER, OTHER_SPOKE_EXPORTER],
        "eksClusters": [PROD.replace("/prod", "/payments")],  # this account's payments, the collector's key
    }
    optional = "payments, 210987654321/payments, 345678901234/payments, aws-123456789012-eu-west-1"
    settings(**context).check_against_the_stack(
        parse_config(LISTED % optional), account="123456789012", region="eu-west-1"
    )


def test_two_clusters_of_one_name_writing_this_accounts_layout_are_still_refused() -> None:
    with pytest.raises(InputError) as raised:
        settings(exporterClusterArns=[SPOKE_CLUSTER, OTHER_SPOKE_PAYMENTS])
    assert str(raised.value) == "cdk context: two clusters would write the same manifest in-use/<name>.json: payments"
