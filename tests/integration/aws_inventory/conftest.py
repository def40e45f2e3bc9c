"""The AWS inventory collector against moto: ECS, Lambda, EventBridge, Scheduler, STS, S3 and ECR in one process,
with moto's gaps filled (ecr_retention_dev.emulator). Clients under test come from the production
ClientFactory (its retry configuration is under test too) with an ApiCallRecorder; botocore's back-off sleeps are
skipped, its retries are not."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from ecr_retention.aws.clients import ClientFactory, set_default_factory
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.emulator.workloads import AwsFidelity, MotoWorkloads
from support.api_calls import ApiCallRecorder, instant_retries
from support.aws_workloads_scenario import BUCKET, HUB, REGION, SPOKE, SPOKE_ROLE


@pytest.fixture(autouse=True)
def isolated_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    set_default_factory(None)
    with instant_retries():
        yield
    set_default_factory(None)


@pytest.fixture
def aws() -> Iterator[AwsFidelity]:
    with mock_aws(), EcrFidelity(), AwsFidelity(page_size=2) as fidelity:
        boto3.client("s3", region_name=REGION).create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        yield fidelity


@pytest.fixture
def hub(aws: AwsFidelity) -> MotoWorkloads:
    return MotoWorkloads(boto3.session.Session(), HUB, REGION)


@pytest.fixture
def spoke(aws: AwsFidelity) -> MotoWorkloads:
    """The spoke account, seeded with its own credentials (moto keeps one backend per account)."""
    credentials = boto3.client("sts", region_name=REGION).assume_role(RoleArn=SPOKE_ROLE, RoleSessionName="seeding")[
        "Credentials"
    ]
    session = boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    return MotoWorkloads(session, SPOKE, REGION)


@pytest.fixture
def ecr(aws: AwsFidelity) -> MotoEcr:
    return MotoEcr(boto3.client("ecr", region_name=REGION))


@pytest.fixture
def recorder() -> ApiCallRecorder:
    return ApiCallRecorder()


@pytest.fixture
def factory(aws: AwsFidelity, recorder: ApiCallRecorder) -> ClientFactory:
    return ClientFactory(on_create=recorder.attach)
