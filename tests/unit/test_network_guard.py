"""The suite's own guard: nothing may leave the loopback interface, and AWS credentials are fake."""

from __future__ import annotations

import os
import socket

import pytest


def test_connections_beyond_loopback_are_refused() -> None:
    with pytest.raises(ConnectionRefusedError, match="loopback"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)


def test_aws_credentials_are_fake() -> None:
    assert os.environ["AWS_ACCESS_KEY_ID"] == "testing"
    assert "AWS_PROFILE" not in os.environ
