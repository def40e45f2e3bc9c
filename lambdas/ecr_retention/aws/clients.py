"""boto3 clients for the adapters: created on first use, cached per (service, region), all with one botocore Config.

Endpoints come from boto3's own configuration (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`, profiles), which
is how the CLI and the tests point every client at a moto server; nothing here reads the environment but
`default_region`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.utils import parse_timestamp

from ecr_retention import __version__

# Total attempts per API call, the first included. Standard mode backs off with jitter, rand(0,1) x 2^attempt
# seconds capped at 20 s, on throttling and transient errors only (never on ImageTagAlreadyExists and the like),
# and stops early when the client's retry quota runs dry. Eight attempts ride out about 70 s of throttling at
# worst (35 s on average): ECR publishes no rate for DescribeImages, BatchDeleteImage or UpdateImageStorageClass
# and PutImage allows 10 a second, so concurrent repository workers do get throttled, and a burst passes in
# seconds. Beyond that the call fails, the images it covers are reported as failed and the next run retries
# them. Bounded, because standard mode also retries ECR's LimitExceededException, which is a quota, not a burst.
MAX_ATTEMPTS = 8

CLIENT_CONFIG = Config(
    # `total_max_attempts` counts the first attempt; botocore's client `max_attempts` would count retries only.
    retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
    connect_timeout=5,
    # The slowest call we make is a BatchDeleteImage of 100 images or a DescribeImages page of 1,000: seconds.
    read_timeout=30,
    user_agent_extra=f"ecr-retention/{__version__}",
)


class ClientFactory:
    """One boto3 session; each (service, region) client created once, on first use, and then shared
    (boto3 clients are thread-safe; creating them from one session is not, hence the lock).

    `on_create` sees every client this factory creates (tests attach an API-call recorder with it)."""

    def __init__(
        self,
        session: boto3.session.Session | None = None,
        *,
        config: Config = CLIENT_CONFIG,
        on_create: Callable[[Any], object] | None = None,
    ) -> None:
        self._session = session
        self._config = config
        self._on_create = on_create
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    def client(self, service: str, region: str | None = None) -> Any:
        """The client for this service in this region (None: the environment's, AWS_REGION first as the AWS CLI
        reads it, else the session's: boto3 alone would ignore AWS_REGION, issue 43)."""
        key = (service, region)
        with self._lock:
            existing = self._clients.get(key)
            if existing is not None:
                return existing
            if self._session is None:
                self._session = utc_session()
            where = region or configured_region(self._session)
            created = self._session.client(service, region_name=where, config=self._config)
            if self._on_create is not None:
                self._on_create(created)
            self._clients[key] = created
            return created

    def for_session(self, session: boto3.session.Session) -> ClientFactory:
        """A factory over other credentials (an assumed role's), with this factory's Config and on_create."""
        return ClientFactory(session, config=self._config, on_create=self._on_create)


def utc_timestamp(value: Any) -> datetime:
    """A timestamp of an AWS answer, as botocore reads it, but epoch seconds (every timestamp of ECR's JSON answers:
    two per image of a DescribeImages page) read straight into an aware UTC datetime: botocore's own reading gives
    them the local time zone (dateutil's tzlocal, whose every conversion runs Python), which the domain converts to
    UTC again; the instant is the same. Anything else (the ISO 8601 text of XML answers, a value out of range) is
    botocore's reading."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            pass
    parsed: datetime = parse_timestamp(value)
    return parsed


def utc_session() -> boto3.session.Session:
    """A boto3 session as boto3.session.Session() makes it, whose clients read timestamps with utc_timestamp (through
    botocore's documented hook, the response parser factory's defaults)."""
    core = botocore.session.get_session()
    core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=utc_timestamp)
    return boto3.session.Session(botocore_session=core)


_default_factory: ClientFactory | None = None
_default_lock = threading.Lock()


def default_factory() -> ClientFactory:
    """The process-wide factory (a Lambda container keeps its clients between invocations)."""
    global _default_factory
    with _default_lock:
        if _default_factory is None:
            _default_factory = ClientFactory()
        return _default_factory


def set_default_factory(factory: ClientFactory | None) -> None:
    """Install this factory as the process-wide one; None drops the current one (a new one on next use)."""
    global _default_factory
    with _default_lock:
        _default_factory = factory


def client(service: str, region: str | None = None) -> Any:
    """A client from the process-wide factory."""
    return default_factory().client(service, region)


def default_region() -> str | None:
    """The region the standard AWS configuration names: AWS_REGION, else AWS_DEFAULT_REGION or the profile's.
    boto3 itself ignores AWS_REGION (the AWS CLI v2 and Lambda set it), so it is read here."""
    return configured_region(boto3.session.Session())


def configured_region(session: boto3.session.Session) -> str | None:
    """AWS_REGION, else the session's Region (AWS_DEFAULT_REGION or the profile's): as the AWS CLI v2 and Lambda read
    it, where boto3 alone ignores AWS_REGION."""
    region: str | None = os.environ.get("AWS_REGION") or session.region_name
    return region
