"""Every test: fake AWS credentials, and network only on loopback (nothing may reach real AWS)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

# Property tests draw the same examples on every machine and in CI (derandomize: a seed derived from each test), so
# a failure reproduces and a green CI means the same examples passed. HYPOTHESIS_PROFILE=explore draws new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, max_examples=1_000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}
os.environ.update(FAKE_AWS)
os.environ.pop("AWS_PROFILE", None)

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
# Each test's tier, by its folder: `-m unit`, `-m "not e2e"`, ... select them.
TIERS = {"unit": "unit", "golden": "unit", "integration": "integration", "infra": "infra", "e2e": "e2e"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(item.config.rootpath).parts
        tier = TIERS.get(parts[1]) if len(parts) > 1 and parts[0] == "tests" else None
        if tier is not None:
            item.add_marker(tier)


@pytest.fixture(autouse=True, scope="session")
def _loopback_only() -> Iterator[None]:
    original_connect, original_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
            raise ConnectionRefusedError(f"tests may only connect to loopback addresses, not {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        check(self, address)
        original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(self, address)
        return original_connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect, socket.socket.connect_ex = original_connect, original_connect_ex  # type: ignore[method-assign]
