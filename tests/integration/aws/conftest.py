"""The ECR adapter against moto (`mock_aws`) made faithful by the emulator's EcrFidelity.

The adapter's client comes from the production ClientFactory (its retry configuration is under test too), with
an ApiCallRecorder attached; the registry is seeded through a separate client, so the recorder sees only the
adapter's calls. botocore's back-off sleeps are skipped; its retries are not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID

from ecr_retention.aws.clients import ClientFactory
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from support.api_calls import ApiCallRecorder, instant_retries

ACCOUNT = DEFAULT_ACCOUNT_ID
REGION = "eu-west-1"


@pytest.fixture(autouse=True)
def isolated_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint or retry settings of the machine running the tests; tests/conftest.py supplies credentials."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_ECR", "AWS_ENDPOINT_URL_STS"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@pytest.fixture(autouse=True)
def retry_delays() -> Iterator[list[float]]:
    with instant_retries() as delays:
        yield delays


@pytest.fixture
def fidelity() -> Iterator[EcrFidelity]:
    with mock_aws(), EcrFidelity() as patched:
        yield patched


@pytest.fixture
def recorder() -> ApiCallRecorder:
    return ApiCallRecorder()


@pytest.fixture
def clients(fidelity: EcrFidelity, recorder: ApiCallRecorder) -> ClientFactory:
    return ClientFactory(on_create=recorder.attach)


@pytest.fixture
def ecr_client(clients: ClientFactory) -> Any:
    return clients.client("ecr", REGION)


@pytest.fixture
def seed(fidelity: EcrFidelity) -> MotoEcr:
    return MotoEcr(boto3.client("ecr", region_name=REGION))


@pytest.fixture
def registry(ecr_client: Any) -> EcrRegistry:
    return EcrRegistry(ecr_client, ACCOUNT, REGION)
