"""The in-use manifest: what runs in one cluster (`s3://<bucket>/in-use/<cluster>.json`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

from ecr_retention.domain.registry import Digest
from ecr_retention.domain.timestamps import UtcDatetime

ClusterName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")]
InUseSource = Literal["pod", "template", "replicaset", "controllerrevision", "cronjob"]


class InUseImage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    image: Annotated[str, StringConstraints(min_length=1)]
    digest: Digest | None = None
    namespace: str
    workload: str
    container: str
    source: InUseSource


class Workload(BaseModel):
    """Where an in-use image runs."""

    model_config = ConfigDict(frozen=True)

    cluster: str
    namespace: str
    workload: str
    source: InUseSource

    def __str__(self) -> str:
        return f"{self.cluster}: {self.namespace}/{self.workload} ({self.source})"


class InUseManifest(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")

    schema_version: Literal[1]
    cluster: ClusterName
    generated_at: UtcDatetime
    complete: bool
    images: tuple[InUseImage, ...] = Field(default=())


def manifest_key(cluster: str, prefix: str = "in-use/") -> str:
    """Where a cluster's manifest lives in the inventory bucket."""
    return f"{prefix}{cluster}.json"


@dataclass(frozen=True)
class Inventory:
    """Every in-use manifest a run could read, and why any expected one could not be read."""

    manifests: tuple[InUseManifest, ...] = ()
    problems: Mapping[str, str] = field(default_factory=dict)  # cluster -> why its manifest is unusable
