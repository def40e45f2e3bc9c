"""The CDK app: validates the rules file, then synthesizes the EcrRetention stack under cdk-nag.

`python app.py` writes `cdk.out` offline, without Docker and without calling AWS. The rules file is
`retention.yaml` unless `-c config=PATH` (CDK context `config`) names another one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from ecr_retention.domain.errors import InputError
from ecr_retention.loading import load_config
from infra import constants
from infra.app_context import cdk_json_context
from infra.stack import EcrRetentionStack


def main() -> int:
    # The CDK CLI sets CDK_OUTDIR; an explicit outdir would override it and hide the assembly from the CLI.
    app = cdk.App(outdir=os.environ.get("CDK_OUTDIR", "cdk.out"), context=cdk_json_context())
    rules_file = Path(app.node.try_get_context(constants.RULES_FILE_CONTEXT_KEY) or constants.DEFAULT_RULES_FILE)
    try:
        config = load_config(rules_file)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    EcrRetentionStack(
        app,
        constants.STACK_NAME,
        config=config,
        description=constants.STACK_DESCRIPTION,
        tags=dict(constants.STACK_TAGS),
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
