"""The report step reads the registry's repository creation templates once a run (services/templates.py): their model
(domain/registry/creation_templates.py) is loaded only where an answer holds a template (aws/ecr_registry.py
_templates_read), so that a registry without any builds none of its three models, at the cold start or after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.ports import TemplatesUnreadable

ACCOUNT = "123456789012"
REGION = "eu-west-1"
CREATION_TEMPLATES = "ecr_retention.domain.registry.creation_templates"
TEMPLATE = {"prefix": "ROOT", "appliedFor": ["CREATE_ON_PUSH"]}
# In a fresh interpreter: the templates read from one stubbed answer (argv[1], JSON), then whether their model is
# loaded; the same for the report step's import before it.
READ_IN_A_FRESH_PROCESS = """
import json, sys
import boto3
from botocore.stub import Stubber
import ecr_retention.handlers.report
from ecr_retention.aws.ecr_registry import EcrRegistry
loaded_at_import = "{module}" in sys.modules
client = boto3.client("ecr", region_name="{region}", aws_access_key_id="testing", aws_secret_access_key="testing")
with Stubber(client) as stubber:
    stubber.add_response("describe_repository_creation_templates", json.loads(sys.argv[1]))
    templates = EcrRegistry(client, "{account}", "{region}").creation_templates()
print(json.dumps([loaded_at_import, [t.prefix for t in templates], "{module}" in sys.modules]))
"""


def read_in_a_fresh_process(answer: dict[str, Any]) -> tuple[bool, list[str], bool]:
    code = READ_IN_A_FRESH_PROCESS.format(module=CREATION_TEMPLATES, region=REGION, account=ACCOUNT)
    environment = {**os.environ, "AWS_REGION": REGION, "POWERTOOLS_TRACE_DISABLED": "true"}
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(answer)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=environment,
    )
    loaded_at_import, prefixes, loaded_after = json.loads(done.stdout)
    return loaded_at_import, prefixes, loaded_after


def test_a_registry_without_creation_templates_loads_none_of_their_models() -> None:
    loaded_at_import, prefixes, loaded_after = read_in_a_fresh_process(
        {"registryId": ACCOUNT, "repositoryCreationTemplates": []}
    )

    assert (loaded_at_import, prefixes, loaded_after) == (False, [], False)


def test_a_registry_with_a_creation_template_loads_their_model_where_it_reads_them() -> None:
    loaded_at_import, prefixes, loaded_after = read_in_a_fresh_process(
        {"registryId": ACCOUNT, "repositoryCreationTemplates": [TEMPLATE]}
    )

    assert (loaded_at_import, prefixes, loaded_after) == (False, ["ROOT"], True)


def test_a_template_the_model_cannot_read_makes_the_templates_unreadable_naming_the_field() -> None:
    client = boto3.client("ecr", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    unreadable = {"prefix": "p" * 257, "appliedFor": ["CREATE_ON_PUSH"]}  # ECR's prefixes have at most 256
    with Stubber(client) as stubber:
        stubber.add_response(
            "describe_repository_creation_templates",
            {"registryId": ACCOUNT, "repositoryCreationTemplates": [unreadable]},
        )
        with pytest.raises(TemplatesUnreadable) as raised:
            EcrRegistry(client, ACCOUNT, REGION).creation_templates()

    assert str(raised.value).startswith(
        "DescribeRepositoryCreationTemplates answered a template this tool cannot read:"
    )
    assert "prefix" in str(raised.value)
