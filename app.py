"""The CDK app: reads the deployment settings from the CDK context, then synthesizes the EcrRetention stack (the
package's EcrRetention construct in a stack of its own, ecr_retention.cdk.stack) under cdk-nag. It uses the installed
package as any other app does (docs/deploy.md, "In your own CDK app"); the context keys are this app's way of filling
DeploySettings.

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
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from ecr_retention.cdk import constants
from ecr_retention.cdk.app_context import cdk_json_context
from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.cdk.policy_sizes import check_policy_sizes
from ecr_retention.cdk.region_forwarder import forwarder_stacks
from ecr_retention.cdk.stack import EcrRetentionStack
from ecr_retention.domain.errors import InputError


def main() -> int:
    # The CDK CLI sets CDK_OUTDIR; an explicit outdir would override it and hide the assembly from the CLI.
    app = cdk.App(
        outdir=os.environ.get("CDK_OUTDIR", "cdk.out"), context=cdk_json_context(Path(__file__).parent / "cdk.json")
    )
    try:
        settings = DeploySettings.from_context(app.node.try_get_context)
        # The stack has no fixed Region: with `regions`, the CLI must deploy it to the home Region.
        settings.check_cli_region(os.environ.get("CDK_DEFAULT_REGION"))
        # The rules file (the context key `config`) is read and validated by the construct; a bad one, or a context
        # that disagrees with it (DeploySettings.check_against_the_stack), is one line.
        stack = EcrRetentionStack(
            app,
            constants.STACK_NAME,
            settings=settings,
            description=constants.STACK_DESCRIPTION,
            tags=dict(constants.STACK_TAGS),
        )
        forwarders = forwarder_stacks(app, stack.retention)
    except InputError as error:
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
