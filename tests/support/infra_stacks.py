"""Stacks for the CDK tests: the rules files and context values they are built from, and one way to build
them as app.py does (asset bundling skipped unless asked: tests/infra/test_lambda_asset.py bundles)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ecr_retention.cdk.region_forwarder import RegionForwarderStack
    from ecr_retention.cdk.stack import EcrRetentionStack

# This repository's cdk.json, whose context app.py synthesizes with.
REPOSITORY_CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"

# tests/infra/conftest.py's `shared_stack`: the stack of a rules text and context values, built once per session.
SharedStack = Callable[[str, dict[str, Any]], "EcrRetentionStack"]

MINIMAL_RULES = """\
version: 1
safety: {clusters: [prod]}
policies:
  - repositories: ["app"]
    rules:
      - delete: {untagged: true, older_than: 1d}
"""

# Literal names, globs, a tag_in_repositories source that no policy manages, and two expected clusters.
RULES = """\
version: 1
dry_run: true
safety: {min_age: 1d, max_delete_fraction: 0.5, inventory_max_age: 8h, clusters: [prod, dev]}
tagging:
  - clusters: [prod]
    tag_prefix: deployed-prod-
policies:
  - repositories: ["app", "team-*/*"]
    rules:
      - keep: {tag_in_repositories: [frontend]}
      - delete: {tags: ["pr-*"], not_pulled_within: 14d, archive: true}
      - delete: {untagged: true, older_than: 3d}
  - repositories: ["docker.io/*"]
    rules:
      - delete: {tags: ["*"], not_pulled_within: 90d, keep_newest: 2}
"""

PROD_ARN = "arn:aws:eks:eu-west-1:123456789012:cluster/prod"
DEV_ARN = "arn:aws:eks:eu-west-1:123456789012:cluster/dev"

# Read-only roles in two workload (spoke) accounts, for the AWS inventory collector.
SPOKE_ROLE_ARNS = (
    "arn:aws:iam::210987654321:role/ecr-retention-reader",
    "arn:aws:iam::345678901234:role/platform/ecr-retention-reader",
)

CONTEXT = {
    "sweepSchedule": "cron(30 2 * * ? *)",
    "taggerSchedule": "rate(30 minutes)",
    "reportEmails": ["platform@example.com"],
    "operationsEmails": ["oncall@example.com"],
    "exporterClusterArns": [PROD_ARN, DEV_ARN],
    "mapConcurrency": 25,
}


def build_stack(
    rules_file: Path, context: dict[str, Any], *, bundle: bool = False, outdir: Path | None = None
) -> EcrRetentionStack:
    """The stack as app.py builds it, from a rules file and CDK context values (over cdk.json's)."""
    import aws_cdk as cdk

    from ecr_retention.cdk.app_context import cdk_json_context
    from ecr_retention.cdk.deploy_settings import DeploySettings
    from ecr_retention.cdk.stack import EcrRetentionStack

    skip: dict[str, object] = {} if bundle else {"aws:cdk:bundling-stacks": []}
    app = cdk.App(
        context={**cdk_json_context(REPOSITORY_CDK_JSON), **skip, **context, "config": str(rules_file)},
        outdir=str(outdir) if outdir else None,
    )
    settings = DeploySettings.from_context(app.node.try_get_context)
    return EcrRetentionStack(app, "EcrRetentionTest", settings=settings)


def build_app(rules_file: Path, context: dict[str, Any]) -> tuple[EcrRetentionStack, dict[str, RegionForwarderStack]]:
    """The stacks app.py builds: the main one and, with the context key `regions`, the forwarding stack of each other
    pruned Region, by Region."""
    import aws_cdk as cdk

    from ecr_retention.cdk.region_forwarder import forwarder_stacks

    stack = build_stack(rules_file, context)
    app = stack.node.root
    assert isinstance(app, cdk.App)
    return stack, {forwarder.region: forwarder for forwarder in forwarder_stacks(app, stack.retention)}


def rules_file(directory: Path, text: str) -> Path:
    path = directory / "retention.yaml"
    path.write_text(text)
    return path


def role_statements(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    """Every statement of every policy attached to the role (AWS::IAM::Policy resources and inline policies)."""
    resources = template["Resources"]
    statements: list[dict[str, Any]] = []
    for resource in resources.values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"].get("Roles", []):
            statements.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    for policy in resources[role_id]["Properties"].get("Policies", []):
        statements.extend(policy["PolicyDocument"]["Statement"])
    return statements


def function_role(template: dict[str, Any], handler_module: str) -> str:
    """The logical id of the role of the function whose handler is ecr_retention.handlers.<module>."""
    [function] = [
        resource
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("Handler") == f"ecr_retention.handlers.{handler_module}.lambda_handler"
    ]
    role_id: str = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return role_id
