"""moto (in-process) for the adapters: every client is created inside `mock_aws`, so nothing reaches AWS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

REGION = "eu-west-1"


@pytest.fixture(autouse=True)
def isolated_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ambient endpoint or profile; tests/conftest.py supplies fake credentials."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield
