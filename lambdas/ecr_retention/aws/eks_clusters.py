"""Into an EKS cluster's API from outside it (ports.ClusterAccess): eks:DescribeCluster for the endpoint and the CA,
a token signed with the credentials of the cluster's account (the collector's own, or the spoke role it assumes),
and the shared lister (kube.client) over the official kubernetes client. The cluster authorizes the role through an EKS
access entry (infra.eks_access, infra/cloudformation/spoke-eks-access.yaml); nothing runs in the cluster.

Imported only when eksClusters lists a cluster: the kubernetes client adds 70 ms to a cold start (with the asset's
bytecode; 0.3 s without).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ecr_retention.aws.accounts import CollectorAccounts
from ecr_retention.aws.clients import ClientFactory
from ecr_retention.aws.eks_token import ClusterToken
from ecr_retention.aws.reading import read
from ecr_retention.domain.inventory.eks_clusters import EksCluster
from ecr_retention.domain.inventory.kubernetes import Resource
from ecr_retention.kube.client import ClusterLister, connect_with_token
from ecr_retention.kube.errors import ExportFailed
from ecr_retention.ports import ReadFailed

Item = TypeVar("Item")


class EksClusters:
    """One object per collection run, over the run's accounts (aws.accounts.AwsAccounts)."""

    def __init__(self, accounts: CollectorAccounts) -> None:
        self._accounts = accounts

    def lister(self, cluster: EksCluster) -> ClusterObjects:
        try:
            factory = self._accounts.factory_for(cluster.account)
        except ValueError as error:  # settings that name a cluster of an account the collector cannot enter
            raise ClusterUnreadable(f"{error} (list a spoke role of that account in spokeRoleArns)") from None
        endpoint, ca_pem = self._endpoint(factory, cluster)
        token = _SigningFailuresAreExportFailures(ClusterToken(factory.client("sts", cluster.region), cluster.name))
        try:
            token.first()
        except ExportFailed as error:
            raise ClusterUnreadable(str(error)) from None
        return ClusterObjects(ClusterLister(connect_with_token(endpoint, ca_pem, token)))

    def _endpoint(self, factory: ClientFactory, cluster: EksCluster) -> tuple[str, str]:
        description = read(
            "DescribeCluster",
            f"EKS cluster {cluster.name}",
            lambda: factory.client("eks", cluster.region).describe_cluster(name=cluster.name),
        )["cluster"]
        endpoint = description.get("endpoint")
        ca_data = (description.get("certificateAuthority") or {}).get("data")
        if not endpoint or not ca_data:
            # A cluster being created has neither yet.
            raise ClusterUnreadable(
                f"EKS cluster {cluster.name} has no API endpoint or CA yet (status {description.get('status')})"
            )
        try:
            ca_pem = base64.b64decode(ca_data, validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError):
            raise ClusterUnreadable(
                f"EKS cluster {cluster.name}: its certificate authority data is not base64 PEM"
            ) from None
        return endpoint, ca_pem


class ClusterUnreadable(ReadFailed):
    """The cluster's API cannot be reached with what DescribeCluster and the credentials give, or a list failed."""


class ClusterObjects:
    """The shared lister (kube.client) as the port has it (ports.ObjectLister): its failures, which the in-cluster
    exporter shares (kube.errors.ExportFailed), are the collector's ReadFailed here."""

    def __init__(self, lister: ClusterLister) -> None:
        self._lister = lister

    def list_all(self, resource: Resource, read: Callable[[Mapping[str, Any]], Item | None]) -> list[Item]:
        try:
            return self._lister.list_all(resource, read)
        except ExportFailed as error:
            raise ClusterUnreadable(str(error)) from None


class _SigningFailuresAreExportFailures:
    """The kubernetes client calls `refresh` in the middle of a list: a token that cannot be signed (credentials
    gone) fails that list like any other request would, with a message, never with a stray botocore error."""

    def __init__(self, token: ClusterToken) -> None:
        self._token = token

    def first(self) -> None:
        self._sign()

    def refresh(self, configuration: Any) -> None:
        try:
            self._token.refresh(configuration)
        except (BotoCoreError, ClientError) as error:
            raise ExportFailed(f"signing the cluster token failed: {error}") from None

    def _sign(self) -> str:
        try:
            return self._token.current()
        except (BotoCoreError, ClientError) as error:
            raise ExportFailed(f"signing the cluster token failed: {error}") from None
