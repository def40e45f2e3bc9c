"""Whether the browser tests run here: without Chromium they skip, one line per test module, saying how to get it;
with ECR_RETENTION_BROWSER_TESTS=required (.ci/run sets it) they run, and fail without it."""

from __future__ import annotations

import os

import pytest

from ecr_retention_dev.browser import missing_reason

REQUIRED_VARIABLE = "ECR_RETENTION_BROWSER_TESTS"


def required() -> bool:
    return os.environ.get(REQUIRED_VARIABLE) == "required"


def skip_module_without_chromium() -> None:
    """Call at the top of a browser test module."""
    reason = missing_reason()
    if reason is not None and not required():
        pytest.skip(f"browser tests: {reason}", allow_module_level=True)


def fail_without_chromium() -> None:
    """In the browser fixture: when the tests are required, a missing browser fails them."""
    reason = missing_reason()
    if reason is not None:
        pytest.fail(f"{REQUIRED_VARIABLE}={os.environ.get(REQUIRED_VARIABLE, '')}, but {reason}", pytrace=False)
