"""Importing an adapter creates no AWS client and reads no environment: a Lambda builds them per cold start,
from its settings, and tests import the modules without any AWS configuration."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

LAMBDAS = Path(__file__).resolve().parents[3] / "lambdas"
ADAPTERS = ("s3_bucket", "sns_notifier", "dynamodb_lease", "sfn_workflow", "errors")


def test_importing_the_adapters_creates_no_client_and_reads_no_environment() -> None:
    probe = textwrap.dedent(
        f"""
        import os, boto3, boto3.session, botocore.session, botocore.config, botocore.exceptions
        import ecr_retention.domain.errors, ecr_retention.tables, ecr_retention.workflow  # what the adapters import from this project

        def refuse(*args, **kwargs):
            raise SystemExit("a client or session was created at import time")

        boto3.client = boto3.resource = boto3.session.Session.client = refuse
        botocore.session.Session.create_client = refuse
        botocore.session.get_session = refuse

        class Recording(dict):
            read = []
            def __getitem__(self, key):
                Recording.read.append(key)
                return super().__getitem__(key)
            def get(self, key, default=None):
                Recording.read.append(key)
                return super().get(key, default)
            def __contains__(self, key):
                Recording.read.append(key)
                return super().__contains__(key)

        os.environ = Recording(os.environ)
        for name in {ADAPTERS!r}:
            __import__(f"ecr_retention.aws.{{name}}")
        print(",".join(Recording.read))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(LAMBDAS)},
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""  # no environment variable was looked at
