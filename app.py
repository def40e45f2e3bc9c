"""The CDK app: reads the deployment settings and the rules file, then synthesizes the EcrRetention stack
under cdk-nag.

`python app.py` writes `cdk.out` without Docker and without calling AWS (bundling the functions fetches the
pinned wheels from the package index). Settings come from the CDK context (cdk.json, `-c key=value`); the
rules file is `retention.yaml` unless the context key `config` names another one. docs/deploy.md lists both.
With the context key `regions`, the app also synthesizes one EcrRetentionEvents-<region> stack per pruned Region
other than the home one, which forwards that Region's ECR events to the home Region (`cdk deploy --all`,
docs/regions.md).
"""

from __future__ import annotations

import os
import sys

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk import constants
from ecr_retention.cdk.app_context import cdk_json_context
from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.cdk.policy_sizes import check_policy_sizes
from ecr_retention.cdk.region_forwarder import forwarder_stacks
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.domain.errors import InputError
from ecr_retention.loading import load_config


def main() -> int:
    # The CDK CLI sets CDK_OUTDIR; an explicit outdir would override it and hide the assembly from the CLI.
    app = cdk.App(outdir=os.environ.get("CDK_OUTDIR", "cdk.out"), context=cdk_json_context())
    try:
        settings = DeploySettings.from_context(app.node.try_get_context)
        # The stack has no fixed Region: with `regions`, the CLI must deploy it to the home Region.
        settings.check_cli_region(os.environ.get("CDK_DEFAULT_REGION"))
        config = load_config(settings.rules_file)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    try:
        stack = EcrRetentionStack(
            app,
            constants.STACK_NAME,
            config=config,
            settings=settings,
            description=constants.STACK_DESCRIPTION,
            tags=dict(constants.STACK_TAGS),
        )
        forwarders = forwarder_stacks(app, stack)
    except InputError as error:  # the context and the rules file disagree (DeploySettings.check_against_the_stack)
        print(f"error: {error}", file=sys.stderr)
        return 2
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()
    # A policy over its AWS size limit would fail the deploy and roll it back: said here, in one line.
    try:
        for name in [constants.STACK_NAME, *(forwarder.stack_name for forwarder in forwarders)]:
            check_policy_sizes(assembly.get_stack_by_name(name).template, stack_name=name)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
