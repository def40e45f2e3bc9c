"""The client factory: one botocore Config for every adapter, clients created lazily and cached, endpoints from
boto3's own configuration. No network: creating a client sends nothing."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from ecr_retention import __version__
from ecr_retention.aws import clients as clients_module
from ecr_retention.aws.clients import CLIENT_CONFIG, MAX_ATTEMPTS, ClientFactory

from .conftest import REGION


@pytest.fixture
def no_default_factory() -> Iterator[None]:
    clients_module.set_default_factory(None)
    yield
    clients_module.set_default_factory(None)


def test_every_client_has_bounded_standard_retries_timeouts_and_our_user_agent() -> None:
    config = ClientFactory().client("ecr").meta.config

    assert config.retries == {"mode": "standard", "total_max_attempts": MAX_ATTEMPTS}
    assert (config.connect_timeout, config.read_timeout) == (5, 30)
    assert config.user_agent_extra == f"ecr-retention/{__version__}"


def test_the_user_agent_is_sent_with_each_request() -> None:
    client = ClientFactory().client("ecr")
    sent: list[str] = []

    def capture(request: Any, **_: Any) -> None:
        sent.append(
            request.headers["User-Agent"].decode()
            if isinstance(request.headers["User-Agent"], bytes)
            else request.headers["User-Agent"]
        )
        raise RuntimeError("stop before the network")

    client.meta.events.register("before-send", capture)
    with pytest.raises(RuntimeError, match="stop before the network"):
        client.describe_repositories()

    assert f"ecr-retention/{__version__}" in sent[0]


def test_clients_are_created_once_per_service_and_region() -> None:
    created: list[Any] = []
    factory = ClientFactory(on_create=created.append)

    ecr = factory.client("ecr")
    assert factory.client("ecr") is ecr
    assert factory.client("ecr", "us-east-1") is not ecr
    assert factory.client("s3") is not ecr

    assert created == [ecr, factory.client("ecr", "us-east-1"), factory.client("s3")]
    assert ecr.meta.region_name == REGION
    assert factory.client("ecr", "us-east-1").meta.region_name == "us-east-1"


def test_endpoints_come_from_the_standard_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5055")
    monkeypatch.setenv("AWS_ENDPOINT_URL_ECR", "http://127.0.0.1:5056")
    factory = ClientFactory()

    assert factory.client("ecr").meta.endpoint_url == "http://127.0.0.1:5056"
    assert factory.client("s3").meta.endpoint_url == "http://127.0.0.1:5055"


def test_the_default_factory_is_created_on_first_use_and_can_be_replaced(no_default_factory: None) -> None:
    first = clients_module.default_factory()
    assert clients_module.default_factory() is first
    assert clients_module.client("ecr") is first.client("ecr")

    replacement = ClientFactory()
    clients_module.set_default_factory(replacement)
    assert clients_module.client("ecr") is replacement.client("ecr")


def test_importing_the_adapters_creates_no_session_or_client(
    monkeypatch: pytest.MonkeyPatch, no_default_factory: None
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a boto3 session or client was created at import time")

    monkeypatch.setattr(boto3.session, "Session", refuse)
    monkeypatch.setattr(boto3, "client", refuse)

    importlib.reload(clients_module)
    importlib.reload(importlib.import_module("ecr_retention.aws.ecr_registry"))

    assert clients_module.CLIENT_CONFIG.retries == CLIENT_CONFIG.retries


def test_the_default_region_is_aws_region_when_it_is_the_only_one_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 reads AWS_DEFAULT_REGION and profiles only; the AWS CLI v2 and Lambda set AWS_REGION, and the
    pipeline commands tell the operator to set it."""
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")

    assert clients_module.default_region() == "ap-southeast-2"


def test_aws_region_wins_over_aws_default_region_as_in_the_aws_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")

    assert clients_module.default_region() == "ap-southeast-2"
