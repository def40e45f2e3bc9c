"""The EKS bearer token: what the API server decodes and replays against STS, and when a new one is signed."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from ecr_retention.aws.eks_token import TOKEN_REFRESH_AFTER, ClusterToken, presigned_token

SIGNED_AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def sts(region: str = "eu-west-1") -> Any:
    session = boto3.session.Session(aws_access_key_id="AKIAEXAMPLEKEY", aws_secret_access_key="secret")
    return session.client("sts", region_name=region)


def decoded(token: str) -> tuple[str, dict[str, str]]:
    assert token.startswith("k8s-aws-v1.")
    encoded = token.removeprefix("k8s-aws-v1.")
    assert "=" not in encoded  # unpadded, as aws-iam-authenticator writes it
    url = urlsplit(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
    assert url.scheme == "https"
    return str(url.hostname), {key: values[-1] for key, values in parse_qs(url.query).items()}


@pytest.mark.parametrize("region", ["eu-west-1", "us-east-1", "ap-southeast-2"])
def test_the_token_is_a_presigned_get_caller_identity_on_the_regional_sts_endpoint(region: str) -> None:
    host, query = decoded(presigned_token(sts(region), "prod"))

    assert host == f"sts.{region}.amazonaws.com"
    assert query["Action"] == "GetCallerIdentity"
    assert query["Version"] == "2011-06-15"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Credential"].split("/")[0] == "AKIAEXAMPLEKEY"
    assert query["X-Amz-Credential"].split("/")[2:] == [region, "sts", "aws4_request"]
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]
    assert len(query["X-Amz-Signature"]) == 64
    assert "ClusterName" not in query  # carried by the signed header only


class Signed(Exception):
    """Raised by the spy once the request is about to be signed: nothing is sent."""


def headers_signed(client: Any) -> list[dict[str, str]]:
    seen: list[dict[str, str]] = []

    def spy(request: Any, **_: Any) -> None:
        seen.append({name.lower(): value for name, value in request.headers.items()})
        if request.context.get("spy_stops"):
            raise Signed

    client.meta.events.register("before-sign.sts.GetCallerIdentity", spy)  # after the token's own handlers
    return seen


def test_the_signature_covers_the_cluster_name_in_the_header() -> None:
    client = sts()
    presigned_token(client, "warm-up")  # registers the token's handlers first
    seen = headers_signed(client)

    presigned_token(client, "prod")

    assert seen[-1]["x-k8s-aws-id"] == "prod"


def test_an_ordinary_get_caller_identity_of_the_same_client_goes_without_the_header() -> None:
    client = sts()
    presigned_token(client, "prod")
    seen = headers_signed(client)
    client.meta.events.register(
        "before-call.sts.GetCallerIdentity", lambda context, **_: context.update(spy_stops=True)
    )

    with pytest.raises(Signed):
        client.get_caller_identity()

    assert "x-k8s-aws-id" not in seen[-1]


class Clock:
    def __init__(self) -> None:
        self.now = SIGNED_AT

    def __call__(self) -> datetime:
        return self.now


def test_a_token_is_reused_until_it_is_ten_minutes_old_then_signed_again() -> None:
    clock = Clock()
    signed: list[datetime] = []

    def sign(_client: Any, cluster: str) -> str:
        signed.append(clock.now)
        return f"k8s-aws-v1.{cluster}-{len(signed)}"

    token = ClusterToken(object(), "prod", clock=clock, sign=sign)

    first = token.current()
    clock.now = SIGNED_AT + TOKEN_REFRESH_AFTER - timedelta(seconds=1)
    assert token.current() == first
    clock.now = SIGNED_AT + TOKEN_REFRESH_AFTER
    assert token.current() != first
    assert signed == [SIGNED_AT, SIGNED_AT + TOKEN_REFRESH_AFTER]
    assert timedelta(minutes=14) > TOKEN_REFRESH_AFTER  # before either reference client considers it expired


def test_the_refresh_hook_sets_the_bearer_header_of_the_kubernetes_configuration() -> None:
    from kubernetes import client

    configuration = client.Configuration()
    token = ClusterToken(sts(), "prod", clock=Clock())

    token.refresh(configuration)

    assert configuration.auth_settings()["BearerToken"]["value"].startswith("Bearer k8s-aws-v1.")
