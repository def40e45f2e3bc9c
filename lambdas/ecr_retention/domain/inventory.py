"""The in-use manifest: what runs in one cluster (`s3://<bucket>/in-use/<cluster>.json`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StringConstraints
from pydantic.alias_generators import to_camel

from ecr_retention.domain.registry import Digest
from ecr_retention.domain.timestamps import UtcDatetime

ClusterName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")]
InUseSource = Literal["pod", "template", "replicaset", "cronjob"]


def _supported_schema_version(version: int) -> int:
    if version != 1:
        raise ValueError(f"unsupported schemaVersion {version}; this release reads 1")
    return version


# Strict: a manifest decides what must not be deleted, so `"complete": "true"` or `"schemaVersion": "1"`
# is a manifest nobody should trust, not a value to coerce (StrictInt also refuses true and 1.0).
SchemaVersion = Annotated[StrictInt, AfterValidator(_supported_schema_version)]


class InUseImage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)

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
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore", strict=True)

    schema_version: SchemaVersion
    cluster: ClusterName
    generated_at: UtcDatetime  # ISO 8601 or epoch seconds, through the one timestamp parser
    complete: bool
    # Required: a manifest without its list is not "nothing runs". Lax only to take a JSON list as a
    # tuple; the entries are strict InUseImage models.
    images: tuple[InUseImage, ...] = Field(strict=False)


def manifest_key(cluster: str, prefix: str = "in-use/") -> str:
    """Where a cluster's manifest lives in the inventory bucket."""
    return f"{prefix}{cluster}.json"


@dataclass(frozen=True)
class Inventory:
    """Every in-use manifest a run could read, and why any expected one could not be read."""

    manifests: tuple[InUseManifest, ...] = ()
    problems: Mapping[str, str] = field(default_factory=dict)  # cluster -> why its manifest is unusable
