"""What the pipeline commands share: the adapters built from the standard AWS environment (credentials,
region, `AWS_ENDPOINT_URL`), and AWS failures turned into one line."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.replication import REGION_PATTERN
from ecr_retention.loading import known_regions

BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$")
SENTINEL_ROLE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$")


class AwsFailure(Exception):
    """An AWS call failed after its retries (credentials, permissions, the network): exit 1, one line."""


REGION = re.compile(REGION_PATTERN)


def region_options(regions: Sequence[str], option: str = "--region") -> tuple[str, ...]:
    """Each --region once, in order; a name that is no Region, or one botocore's partition data does not list
    (`mars-north-1`, issue 43), is bad input."""
    known = known_regions()
    for region in regions:
        if not REGION.match(region):
            raise InputError(f"{option}: {region!r} is not an AWS Region (such as us-east-1)")
        problem = known.problem(region) if known is not None else None
        if problem is not None:
            raise InputError(f"{option}: {problem}")
    return tuple(dict.fromkeys(regions))


def bucket_name(text: str) -> str:
    if not BUCKET_NAME.match(text):
        raise InputError(f"--bucket: {text!r} is not an S3 bucket name")
    return text


def topic_arn(text: str) -> str:
    if not TOPIC_ARN.match(text):
        raise InputError(f"--topic-arn: {text!r} is not an SNS topic ARN")
    return text


def sentinel_role(text: str) -> str:
    if not SENTINEL_ROLE.match(text):
        raise InputError(f"--sentinel-role: {text!r} is not an IAM role ARN (arn:aws:iam::123456789012:role/...)")
    return text


@dataclass(frozen=True)
class AwsSession:
    """Adapters over one boto3 session; imported lazily so that offline commands never load boto3."""

    region: str
    registry_id: str
    caller: str = ""  # the caller's ARN (GetCallerIdentity): who places a hold, unless --owner says

    @classmethod
    def from_environment(cls) -> AwsSession:
        from ecr_retention.aws.clients import client, default_region

        region = default_region()
        if not region:
            raise InputError("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)")
        with aws_errors():
            identity = client("sts", region=region).get_caller_identity()
        return cls(region=region, registry_id=identity["Account"], caller=identity.get("Arn", ""))

    def registry(self, region: str | None = None) -> Any:
        """The account's registry in this session's Region, or in `region` (through a client of that Region)."""
        from ecr_retention.aws.clients import client
        from ecr_retention.aws.ecr_registry import EcrRegistry

        where = region or self.region
        return EcrRegistry(client("ecr", region=where), self.registry_id, where)

    def bucket(self, name: str) -> Any:
        from ecr_retention.aws.clients import client
        from ecr_retention.aws.s3_bucket import S3Bucket

        return S3Bucket(name, client("s3", region=self.region))

    def notifier(self, arn: str | None) -> Any:
        if arn is None:
            return None
        from ecr_retention.aws.clients import client
        from ecr_retention.aws.sns_notifier import SnsNotifier

        return SnsNotifier(arn, client("sns", region=self.region))

    def leases(self, table: str | None) -> Any:
        if table is None:
            return None
        from ecr_retention.aws.clients import client
        from ecr_retention.aws.dynamodb_lease import DynamoDbLeases

        return DynamoDbLeases(table, client("dynamodb", region=self.region))


def s3_bucket(name: str) -> Any:
    """The inventory bucket alone, for commands that only read it (`plan --bucket`, `diff --bucket`): no STS call,
    so that a role allowed s3:GetObject and s3:ListBucket and nothing else is enough."""
    from ecr_retention.aws.clients import client, default_region
    from ecr_retention.aws.s3_bucket import S3Bucket

    region = default_region()
    if not region:
        raise InputError("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)")
    return S3Bucket(name, client("s3", region=region))


@contextmanager
def aws_errors() -> Iterator[None]:
    """Turn an AWS failure (after botocore's retries) into AwsFailure: one line naming the operation and error."""
    from ecr_retention.aws.errors import describe_aws_error

    try:
        yield
    except Exception as error:
        message = describe_aws_error(error)
        if message is None:
            raise
        raise AwsFailure(message) from None
