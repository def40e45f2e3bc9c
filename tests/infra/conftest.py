"""Shared set-up of the CDK tests: quiet jsii, a minimal valid rules file, and the stacks the tests only read, each
built once per session (per xdist worker): a synthesis costs about 15 s, and five modules read the same stack."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import pytest

# jsii prints an 11-line end-of-life banner on Node 20; it starts with the first aws_cdk import,
# which happens in the test modules, after this conftest.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from support.infra_stacks import MINIMAL_RULES, SharedStack, build_stack, rules_file

if TYPE_CHECKING:
    from ecr_retention.cdk.stack import EcrRetentionStack


@pytest.fixture(scope="session")
def minimal_rules_text() -> str:
    return MINIMAL_RULES


@pytest.fixture(scope="session")
def shared_stack(tmp_path_factory: pytest.TempPathFactory) -> SharedStack:
    """The stack of a rules text and context values, built on first use and then shared: only for tests that read it
    (a test that patches the build, adds constructs or validates with an aspect builds its own)."""
    built: dict[str, EcrRetentionStack] = {}

    def stack(rules: str, context: dict[str, Any]) -> EcrRetentionStack:
        key = json.dumps([rules, context], sort_keys=True)
        if key not in built:
            built[key] = build_stack(rules_file(tmp_path_factory.mktemp("rules"), rules), context)
        return built[key]

    return stack
