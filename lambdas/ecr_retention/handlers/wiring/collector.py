"""The AWS inventory collector's wiring (handlers/collector.py): its settings (the spoke roles, the eksClusters, the
Regions it collects), the manifest store, its accounts, and the eksClusters' APIs."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, field_validator

from ecr_retention import layout
from ecr_retention.aws.clients import client, default_factory
from ecr_retention.domain.inventory.collection import DEFAULT_REVISIONS, RoleArn
from ecr_retention.domain.inventory.eks_clusters import EksCluster, EksClusterArn
from ecr_retention.domain.limits import MiB, SizeLimit
from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.handlers.settings import BucketSettings, json_array, settings_from_environ
from ecr_retention.handlers.wiring import once_per_cold_start
from ecr_retention.loading import load_spoke_roles, read_json, validate_as

if TYPE_CHECKING:
    from ecr_retention.aws.accounts import CollectorAccounts
    from ecr_retention.ports import ClusterAccess, ManifestStore


# About 70 bytes an ARN: 1 MiB is thousands of clusters.
EKS_CLUSTERS_FILE = SizeLimit("eks clusters file", 1 * MiB)


class EksClustersFile(BaseModel):
    """The collector's eksClusters as the Lambda asset ships them (infra.lambda_asset): {"eksClusters": [<arn>, ...]}."""

    # Built where a collector reads the file (CollectorSettings.from_environ), as the settings are: a collector
    # without eksClusters (no file in its asset) never builds it.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    arns: tuple[EksClusterArn, ...] = Field(alias="eksClusters")


class CollectorSettings(BucketSettings):
    """The AWS inventory collector's settings (handlers/collector.py); lists are JSON arrays, because an IAM
    role name may contain a comma."""

    regions: tuple[AwsRegion, ...] = Field(
        default=(), alias=layout.COLLECT_REGIONS_VARIABLE
    )  # empty: the function's region
    # The spoke roles' file, which the stack ships in the Lambda asset (the list outgrows the environment's 4 KB);
    # unset: no spoke account. role_arns is what from_environ read there, once per cold start.
    spoke_roles_file: Path | None = Field(default=None, alias=layout.SPOKE_ROLES_FILE_VARIABLE)
    role_arns: tuple[RoleArn, ...] = ()  # one read-only role per spoke; no variable of its own
    revisions: NonNegativeInt = Field(default=DEFAULT_REVISIONS, alias=layout.TASK_DEFINITION_REVISIONS_VARIABLE)
    # Read through their API (services.eks_inventory); each one's manifest is in-use/<cluster name>.json. From the
    # environment, or from the file the stack ships in the asset (the list outgrows the environment's 4 KB).
    eks_cluster_arns: tuple[EksClusterArn, ...] = Field(default=(), alias=layout.EKS_CLUSTERS_VARIABLE)
    eks_clusters_file: Path | None = Field(default=None, alias=layout.EKS_CLUSTERS_FILE_VARIABLE)
    # Amazon Inspector's coverage of this account's ECR, in each collected region (services.inspector_inventory).
    inspector_in_use: bool = Field(default=False, alias=layout.INSPECTOR_IN_USE_VARIABLE)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Self:
        settings = settings_from_environ(cls, environ)
        update: dict[str, object] = {}
        if settings.spoke_roles_file is not None:
            update["role_arns"] = load_spoke_roles(settings.spoke_roles_file).role_arns
        if settings.eks_clusters_file is not None:
            listed = validate_as(
                EksClustersFile, read_json(settings.eks_clusters_file, EKS_CLUSTERS_FILE), settings.eks_clusters_file
            )
            update["eks_cluster_arns"] = (*settings.eks_cluster_arns, *listed.arns)
        return settings.model_copy(update=update) if update else settings

    @field_validator("regions", "eks_cluster_arns", mode="before")
    @classmethod
    def _json_array(cls, value: Any) -> Any:
        return json_array(value)

    @property
    def eks_clusters(self) -> tuple[EksCluster, ...]:
        return tuple(EksCluster(arn) for arn in dict.fromkeys(self.eks_cluster_arns))

    @property
    def collect_regions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.regions)) or (self.region,)


def eks_clusters(accounts: "CollectorAccounts") -> "ClusterAccess":
    # Imported here, only when a cluster is listed: the kubernetes client adds 70 ms to a cold start (with the
    # asset's bytecode; 0.3 s without).
    from ecr_retention.aws.eks_clusters import EksClusters

    return EksClusters(accounts)


@dataclass(frozen=True)
class CollectorWiring:
    settings: CollectorSettings
    store: "ManifestStore"
    # Called once per invocation: assumed-role credentials last an hour, a warm container much longer.
    accounts: "Callable[[], CollectorAccounts]"
    # Into the eksClusters' APIs, with the invocation's accounts: a spoke's assumed role signs its clusters' tokens.
    clusters: "Callable[[CollectorAccounts], ClusterAccess]" = eks_clusters


def collector_wiring(settings: CollectorSettings) -> CollectorWiring:
    from ecr_retention.aws.accounts import AwsAccounts
    from ecr_retention.aws.s3_bucket import S3Bucket
    from ecr_retention.services.aws_inventory import BucketManifestStore

    return CollectorWiring(
        settings,
        BucketManifestStore(S3Bucket(settings.bucket_name, client("s3"))),
        accounts=lambda: AwsAccounts(default_factory(), settings.role_arns),
    )


@once_per_cold_start
def collector_at_cold_start() -> CollectorWiring:
    return collector_wiring(CollectorSettings.from_environ())
