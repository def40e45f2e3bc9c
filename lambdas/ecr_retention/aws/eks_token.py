"""The bearer token an EKS cluster's API server accepts from an IAM identity, built as `aws eks get-token` and
aws-iam-authenticator build it: a presigned STS GetCallerIdentity URL whose signature covers the `x-k8s-aws-id`
header (the cluster's name), base64url-encoded without padding, behind `k8s-aws-v1.`.

botocore signs it (SigV4, query-string form); nothing here computes a signature. The API server replays the URL
against STS to learn who is calling, and refuses it 15 minutes after it was signed.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ecr_retention.clock import utc_now

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_NAME_HEADER = "x-k8s-aws-id"
# X-Amz-Expires of the presigned URL, as awscli's get-token and aws-iam-authenticator set it. The API server does
# not use it: it accepts a token for 15 minutes from X-Amz-Date whatever it says.
PRESIGNED_URL_SECONDS = 60
# Both reference clients treat a token as expired 14 minutes after signing (awscli TOKEN_EXPIRATION_MINS,
# aws-iam-authenticator's presignedURLExpiration minus a minute). We take a new one after 10: a page request that
# starts just before the limit still carries a token with minutes to spare, and signing costs no AWS call.
TOKEN_REFRESH_AFTER = timedelta(minutes=10)
# botocore passes client parameters through this context key from provide-client-params to before-sign.
_CONTEXT_KEY = "eks_cluster_name"
_HANDLER_ID = "ecr-retention-eks-cluster-name"


def presigned_token(sts_client: Any, cluster: str) -> str:
    """A new token for `cluster` from this STS client's credentials, region and endpoint (the regional endpoint
    of the cluster's region, when the client was created for it)."""
    _register_cluster_header(sts_client)
    url: str = sts_client.generate_presigned_url(
        "get_caller_identity",
        Params={"ClusterName": cluster},
        ExpiresIn=PRESIGNED_URL_SECONDS,
        HttpMethod="GET",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")


def _register_cluster_header(sts_client: Any) -> None:
    # GetCallerIdentity takes no parameters: ClusterName is moved from the call's parameters into its context
    # before validation, then into a header before signing, so that the signature covers it. Registered once per
    # client (unique ids); a GetCallerIdentity call without ClusterName is left as it is.
    events = sts_client.meta.events
    events.register(
        "provide-client-params.sts.GetCallerIdentity", _take_cluster_name, unique_id=_HANDLER_ID + "-params"
    )
    events.register("before-sign.sts.GetCallerIdentity", _add_cluster_header, unique_id=_HANDLER_ID + "-header")


def _take_cluster_name(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    if "ClusterName" in params:
        context[_CONTEXT_KEY] = params.pop("ClusterName")


def _add_cluster_header(request: Any, **_: Any) -> None:
    cluster = request.context.get(_CONTEXT_KEY)
    if cluster is not None:
        request.headers[CLUSTER_NAME_HEADER] = cluster


class ClusterToken:
    """The current token for one cluster, signed again once it is TOKEN_REFRESH_AFTER old.

    `refresh(configuration)` is a kubernetes client `refresh_api_key_hook`: the client calls it before every
    request it authenticates, so each page of a long list goes out with a token that is still valid."""

    def __init__(
        self,
        sts_client: Any,
        cluster: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        sign: Callable[[Any, str], str] = presigned_token,
    ) -> None:
        self._sts_client = sts_client
        self._cluster = cluster
        self._clock = clock
        self._sign = sign
        self._token: str | None = None
        self._signed_at: datetime | None = None
        self._lock = threading.Lock()

    def current(self) -> str:
        with self._lock:
            now = self._clock()
            if self._token is None or self._signed_at is None or now - self._signed_at >= TOKEN_REFRESH_AFTER:
                self._token = self._sign(self._sts_client, self._cluster)
                self._signed_at = now
            return self._token

    def refresh(self, configuration: Any) -> None:
        configuration.api_key["authorization"] = self.current()
        configuration.api_key_prefix["authorization"] = "Bearer"
