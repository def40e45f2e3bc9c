"""Every function is deployed with PYDANTIC_DISABLE_PLUGINS (infra/constants.py FUNCTION_ENVIRONMENT): at the first
model a process builds, pydantic would otherwise read the metadata of every distribution on sys.path for entry points
of its plugin group, about 2 ms of a cold start (issue 46, item 4). Checked against pydantic itself, so that a release
that renames the variable fails here instead of silently costing the search again."""

from __future__ import annotations

import os
import subprocess
import sys

from ecr_retention.cdk import constants

# A handler imported, and one of its models validated, with the search for entry points made to fail.
IMPORT_WITHOUT_ENTRY_POINTS = """
import importlib.metadata

def entry_points(**selection):
    raise SystemExit(f"pydantic searched for plugins: entry_points({selection})")

importlib.metadata.entry_points = entry_points
from ecr_retention.handlers.evaluate import RepositoryEvaluated

RepositoryEvaluated(repository="app", outcome="ok", deleted=0, failed=0)
print("no search")
"""


def import_a_handler(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    variables = {k: v for k, v in os.environ.items() if not k.startswith("PYDANTIC_")}
    return subprocess.run(
        [sys.executable, "-c", IMPORT_WITHOUT_ENTRY_POINTS],
        env={**variables, "AWS_REGION": "eu-west-1", **environment},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_with_the_functions_environment_pydantic_searches_no_metadata_for_plugins() -> None:
    answer = import_a_handler(constants.FUNCTION_ENVIRONMENT)
    assert (answer.returncode, answer.stdout.strip()) == (0, "no search"), answer.stderr


def test_without_it_pydantic_would_search() -> None:
    answer = import_a_handler({})
    assert answer.returncode != 0
    assert "pydantic searched for plugins: entry_points({'group': 'pydantic'})" in answer.stderr
