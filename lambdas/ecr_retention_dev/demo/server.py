"""The embedded AWS: moto in server mode on a free loopback port, in this process, with ECR made faithful.

The process environment points every boto3 client at it (`AWS_ENDPOINT_URL`) with fake credentials, and ignores
the user's AWS configuration files and profile, for the length of the `with` block only: the user's real
settings come back afterwards, and no request can leave the machine.
"""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.inspector import InspectorCoverage

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@dataclass(frozen=True)
class Emulator:
    endpoint: str
    region: str
    fidelity: EcrFidelity
    inspector: InspectorCoverage  # Amazon Inspector's ListCoverage, which moto lacks

    def client(self, service: str, region: str | None = None) -> Any:
        """A client of its own (not the pipeline's), for seeding and for reading the result back; of its Region, or of
        `region` (the emulator serves every Region)."""
        return boto3.session.Session().client(service, region_name=region or self.region, endpoint_url=self.endpoint)

    def cli_environment(self) -> dict[str, str]:
        """What the AWS CLI (or `ecr-retention run`) needs to talk to the emulator."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            **FAKE_CREDENTIALS,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,  # the AWS CLI v1 reads only this one
        }


@contextmanager
def scoped_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Every AWS_* variable of the caller removed (profiles, endpoints, credentials), these set; all restored."""
    saved = dict(os.environ)
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        del os.environ[name]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def quiet_request_log() -> Iterator[None]:
    """moto's server logs every request through werkzeug; the demo prints what matters itself."""
    werkzeug = logging.getLogger("werkzeug")
    level = werkzeug.level
    werkzeug.setLevel(logging.WARNING)
    try:
        yield
    finally:
        werkzeug.setLevel(level)


@contextmanager
def running_emulator(region: str) -> Iterator[Emulator]:
    """moto on 127.0.0.1 (a free port), its state reset before and after, the process pointed at it."""
    with ExitStack() as stack:
        stack.enter_context(quiet_request_log())
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        stack.callback(server.stop)
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        reset(endpoint)  # moto's backends live in the process: start from an empty account
        stack.callback(reset, endpoint)
        stack.enter_context(
            scoped_environment(
                {
                    "AWS_ENDPOINT_URL": endpoint,
                    **FAKE_CREDENTIALS,
                    "AWS_REGION": region,
                    "AWS_DEFAULT_REGION": region,
                    "AWS_CONFIG_FILE": os.devnull,
                    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                    "AWS_EC2_METADATA_DISABLED": "true",
                    # A proxy from the environment must not see loopback requests (botocore honours these).
                    "NO_PROXY": "127.0.0.1,localhost",
                    "no_proxy": "127.0.0.1,localhost",
                }
            )
        )
        fidelity = stack.enter_context(EcrFidelity())
        inspector = stack.enter_context(InspectorCoverage())
        yield Emulator(endpoint=endpoint, region=region, fidelity=fidelity, inspector=inspector)


def reset(endpoint: str) -> None:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
    with direct.open(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10) as response:
        response.read()
