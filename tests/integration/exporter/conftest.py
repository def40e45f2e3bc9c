"""Fixtures for the exporter: the fake API server on 127.0.0.1, kubeconfigs pointing at it, moto S3."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from ecr_retention_dev.emulator.kubernetes_api import FakeApiServer, FakeCluster
from tests.integration.exporter import realistic_cluster

BUCKET = "inventory-123456789012-eu-west-1"
REGION = "eu-west-1"
TOKEN = "test-token"

KubeconfigFactory = Callable[..., Path]


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ambient Kubernetes or AWS endpoint configuration; tests/conftest.py supplies fake credentials."""
    for name in (
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "KUBECONFIG",
        "KUBERNETES_SERVICE_HOST",
        "KUBERNETES_SERVICE_PORT",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config of the machine running the tests


@pytest.fixture
def cluster() -> FakeCluster:
    return realistic_cluster.build()


@pytest.fixture
def api_server(cluster: FakeCluster) -> Iterator[FakeApiServer]:
    with FakeApiServer(cluster, token=TOKEN) as server:
        yield server


@pytest.fixture
def make_kubeconfig(tmp_path: Path) -> KubeconfigFactory:
    """Write a kubeconfig for a server URL with a static token, or with any `user` entry (exec plugins)."""

    def make(server_url: str, *, user: Mapping[str, Any] | None = None, name: str = "kubeconfig") -> Path:
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": server_url}}],
            "users": [{"name": "exporter", "user": dict(user) if user is not None else {"token": TOKEN}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "exporter"}}],
            "current-context": "fake",
        }
        path = tmp_path / name
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
        return path

    return make


@pytest.fixture
def kubeconfig(api_server: FakeApiServer, make_kubeconfig: KubeconfigFactory) -> Path:
    return make_kubeconfig(api_server.url)


@pytest.fixture
def s3() -> Iterator[Any]:
    """moto S3 with the inventory bucket; every boto3 client created inside talks to moto."""
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield client


@pytest.fixture
def stored_keys(s3: Any) -> Callable[[], list[str]]:
    """The keys in the inventory bucket now."""

    def keys() -> list[str]:
        return [entry["Key"] for entry in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]

    return keys
