"""The emulator's own behaviour (ecr_retention_dev.emulator) on moto `mock_aws`: what the demo and the tests rely on it
to do as AWS does."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr

REGION = "eu-west-1"


@pytest.fixture(autouse=True)
def isolated_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint settings of the machine running the tests; tests/conftest.py supplies credentials."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_ECR", "AWS_ENDPOINT_URL_EVENTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


@pytest.fixture
def fidelity() -> Iterator[EcrFidelity]:
    with mock_aws(), EcrFidelity() as patched:
        yield patched


@pytest.fixture
def seed(fidelity: EcrFidelity) -> MotoEcr:
    return MotoEcr(boto3.client("ecr", region_name=REGION))
