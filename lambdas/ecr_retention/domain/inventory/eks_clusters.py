"""EKS clusters named by ARN: the clusters the AWS inventory collector reads through their API (`eksClusters`), and
those whose in-cluster exporter may write a manifest (`exporterClusterArns`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from pydantic import StringConstraints

# arn:<partition>:eks:<region>:<account>:cluster/<name>; EKS cluster names: 1-100 of letters, digits, - and _.
EksClusterArn = Annotated[
    str, StringConstraints(pattern=r"^arn:aws[a-z-]*:eks:[a-z0-9-]+:\d{12}:cluster/[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
]


@dataclass(frozen=True)
class EksCluster:
    """One cluster of an EksClusterArn. Its manifest is `in-use/<name>.json`, the name `safety.clusters` lists, as
    the exporter's `--cluster` names it."""

    arn: str

    @property
    def name(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]

    @property
    def region(self) -> str:
        return self.arn.split(":")[3]

    @property
    def partition(self) -> str:
        return self.arn.split(":")[1]


def partitions_and_regions(cluster_arns: Iterable[str]) -> list[tuple[str, str]]:
    """The (partition, Region) of each of the clusters, once each, sorted."""
    return sorted({(cluster.partition, cluster.region) for cluster in map(EksCluster, cluster_arns)})
