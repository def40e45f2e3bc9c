"""Each function's settings: read from the environment once per cold start and validated."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, field_validator

from ecr_retention import layout
from ecr_retention.domain.inventory.collection import DEFAULT_REVISIONS, RoleArn
from ecr_retention.domain.inventory.eks_clusters import EksCluster, EksClusterArn
from ecr_retention.domain.limits import MiB, SizeLimit
from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.loading import load_spoke_roles, read_json, validate_as


def default_rules_file() -> Path:
    """The rules file ships inside the function's asset (config as code), beside the package."""
    return Path(os.environ.get("LAMBDA_TASK_ROOT", ".")) / "retention.yaml"


def json_array(value: Any) -> Any:
    """A list variable's value: a JSON array (an IAM role name may contain a comma)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError('a JSON array of strings, e.g. ["eu-west-1"]') from None
        if not isinstance(value, list):
            raise ValueError('a JSON array of strings, e.g. ["eu-west-1"]')
    return value


class FunctionSettings(BaseModel):
    """Field aliases are the environment variables the CDK stack sets; each function has its own model, built
    from the mixins below, so that a function whose environment lacks a variable it needs fails at the first
    invocation of a cold container, before it does anything (handlers/wiring.py)."""

    # Each function validates only its own model, once per cold start: the other models are never built.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, defer_build=True)

    region: AwsRegion = Field(alias="AWS_REGION")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Self:
        return settings_from_environ(cls, environ)


class BucketSettings(FunctionSettings):
    bucket_name: str = Field(alias=layout.BUCKET_NAME_VARIABLE, min_length=3)


class RulesSettings(BucketSettings):
    """A function that works from the rules file, on this account's registry."""

    registry_id: str | None = Field(
        default=None, alias=layout.REGISTRY_ID_VARIABLE, pattern=r"^\d{12}$"
    )  # None: the caller's
    rules_file: Path = Field(default_factory=default_rules_file, alias=layout.RULES_FILE_VARIABLE)
    # The Regions whose registries the deployment prunes; empty: the function's own Region (pruned_regions).
    regions: tuple[AwsRegion, ...] = Field(default=(), alias=layout.PRUNED_REGIONS_VARIABLE)

    @field_validator("regions", mode="before")
    @classmethod
    def _regions_json_array(cls, value: Any) -> Any:
        return json_array(value)

    @property
    def pruned_regions(self) -> tuple[str, ...]:
        """The function's own Region first (the home registry), then the others in the order the stack names them."""
        return tuple(dict.fromkeys((self.region, *self.regions)))


class TargetsSettings(RulesSettings):
    """handlers/targets.py: the Map's concurrency sizes the run's batches (workflow.repositories_per_batch)."""

    map_concurrency: int = Field(alias=layout.MAP_CONCURRENCY_VARIABLE, ge=1)


class EvaluateSettings(RulesSettings):
    """handlers/evaluate.py: one evaluation per repository at a time, through the lease table."""

    lease_table: str = Field(alias=layout.LEASE_TABLE_VARIABLE, min_length=3)


# This deployment's sentinel role: the one writer whose records of removals/ count (services/removals.py). Unset, no
# record counts: nothing silences an alert, and no finding says what removed an image.
SENTINEL_ROLE_PATTERN = r"^arn:aws[a-z-]*:iam::\d{12}:role/"


class ReportSettings(RulesSettings):
    """handlers/report.py: the run's summary goes to the report topic; the in-use check reads the sentinel's records."""

    topic_arn: str = Field(alias=layout.TOPIC_ARN_VARIABLE, pattern=r"^arn:aws[a-z-]*:sns:")
    sentinel_role_arn: str | None = Field(
        default=None, alias=layout.SENTINEL_ROLE_ARN_VARIABLE, pattern=SENTINEL_ROLE_PATTERN
    )


class TaggerSettings(RulesSettings):
    """handlers/tagger.py"""


class SentinelSettings(RulesSettings):
    """handlers/sentinel.py: its alerts go to the report topic; its records name its role."""

    topic_arn: str = Field(alias=layout.TOPIC_ARN_VARIABLE, pattern=r"^arn:aws[a-z-]*:sns:")
    sentinel_role_arn: str | None = Field(
        default=None, alias=layout.SENTINEL_ROLE_ARN_VARIABLE, pattern=SENTINEL_ROLE_PATTERN
    )


class PushSettings(FunctionSettings):
    """handlers/push.py: it starts runs of the workflow, for the repositories a policy of the rules file manages (the
    push rule's pattern may be coarser than the rules file: infra.repository_scope.coarsened_matchers)."""

    state_machine_arn: str = Field(alias=layout.STATE_MACHINE_ARN_VARIABLE, pattern=r"^arn:aws[a-z-]*:states:")
    rules_file: Path = Field(default_factory=default_rules_file, alias=layout.RULES_FILE_VARIABLE)


# About 70 bytes an ARN: 1 MiB is thousands of clusters.
EKS_CLUSTERS_FILE = SizeLimit("eks clusters file", 1 * MiB)


class EksClustersFile(BaseModel):
    """The collector's eksClusters as the Lambda asset ships them (infra.lambda_asset): {"eksClusters": [<arn>, ...]}."""

    # Built where a collector reads the file (CollectorSettings.from_environ), as the settings are: every other
    # function imports this module and never reads it.
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


SettingsModel = TypeVar("SettingsModel", bound=BaseModel)


def settings_from_environ(model: type[SettingsModel], environ: Mapping[str, str] | None = None) -> SettingsModel:
    """The model from the environment variables its field aliases name; empty values count as unset."""
    source = os.environ if environ is None else environ
    names = {field.alias for field in model.model_fields.values() if field.alias}
    return validate_as(
        model, {name: value for name, value in source.items() if name in names and value}, "function environment"
    )
