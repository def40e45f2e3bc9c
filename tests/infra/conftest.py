"""Shared set-up of the CDK tests: quiet jsii, and a minimal valid rules file."""

from __future__ import annotations

import os

import pytest

# jsii prints an 11-line end-of-life banner on Node 20; it starts with the first aws_cdk import,
# which happens in the test modules, after this conftest.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from support.infra_stacks import MINIMAL_RULES


@pytest.fixture(scope="session")
def minimal_rules_text() -> str:
    return MINIMAL_RULES
