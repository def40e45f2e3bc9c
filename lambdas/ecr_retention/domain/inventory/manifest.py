"""The in-use manifest: what runs in one cluster (`s3://<bucket>/in-use/<cluster>.json`)."""

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    SerializerFunctionWrapHandler,
    StrictInt,
    StringConstraints,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from ecr_retention.domain.errors import InputError, parse_strictly
from ecr_retention.domain.holds.model import NO_HOLDS, Holds
from ecr_retention.domain.inventory.clusters import (
    ACCOUNT_PATTERN,
    THIS_ACCOUNT,
    ClusterId,
    ClusterText,
)
from ecr_retention.domain.inventory.clusters import ClusterName as ClusterName  # the manifest's, re-exported
from ecr_retention.domain.registry.digests import Digest
from ecr_retention.domain.timestamps import UtcDatetime
from ecr_retention.layout import IN_USE_PREFIX

# Kubernetes (the exporter): pod, template, replicaset, controllerrevision, cronjob.
# AWS (the inventory collector, docs/aws-inventory.md): ecs-service, ecs-task, lambda; and Amazon Inspector's coverage
# (inspectorInUse): inspector, whose entries carry Inspector's own inUseCount and lastInUseAt.
InUseSource = Literal[
    "pod", "template", "replicaset", "controllerrevision", "cronjob", "ecs-service", "ecs-task", "lambda", "inspector"
]


def _supported_schema_version(version: int) -> int:
    if version != 1:
        raise ValueError(f"unsupported schemaVersion {version}; this release reads 1")
    return version


# Strict: a manifest decides what must not be deleted, so `"complete": "true"` or `"schemaVersion": "1"`
# is a manifest nobody should trust, not a value to coerce (StrictInt also refuses true and 1.0).
SchemaVersion = Annotated[StrictInt, AfterValidator(_supported_schema_version)]


class InUseImage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True, populate_by_name=True)

    image: Annotated[str, StringConstraints(min_length=1)]
    digest: Digest | None = None
    namespace: str
    workload: str
    container: str
    source: InUseSource
    # Amazon Inspector's reading of the image (source `inspector` only, domain/inventory/inspector.py): how many ECS
    # tasks or EKS pods run it, and when one last did. Absent from every other source's entries, so that a manifest
    # written before them reads as it did.
    in_use_count: NonNegativeInt | None = Field(default=None, alias="inUseCount")
    last_in_use_at: UtcDatetime | None = Field(default=None, alias="lastInUseAt")


class Workload(BaseModel):
    """Where an in-use image runs. `cluster`: the cluster's text (domain/inventory/clusters.py), `prod` for this
    account's, `210987654321/prod` for a spoke's."""

    model_config = ConfigDict(frozen=True)

    cluster: str
    namespace: str
    workload: str
    source: InUseSource
    # Set when the workload runs a replica that our deletions reach: `us-east-1, replicated`.
    replica: str | None = None
    # Set when the in-use memory names it and no current manifest does: in a plan's reason `last seen 2d ago,
    # protected until ...`; for the sentinel and the in-use check, why the memory speaks (domain/in_use/suspect_readings.py).
    # Serialized only when set, so that a finding keeps its words past the workflow's steps and every other workload
    # (inUseBy) keeps its shape.
    remembered: str | None = None
    # Set for Amazon Inspector's reading (source `inspector`): its words, `Inspector: in use by 2 (last 2026-12-04
    # 10:12 UTC)` (domain/inventory/inspector.py). Serialized only when set, as `remembered`.
    inspector: str | None = None

    @model_serializer(mode="wrap")
    def _remembered_only_when_set(self, serialize: SerializerFunctionWrapHandler) -> dict[str, object]:
        data: dict[str, object] = serialize(self)
        for optional in ("remembered", "inspector"):
            if getattr(self, optional) is None:
                data.pop(optional, None)
        return data

    def __str__(self) -> str:
        where = f" ({self.replica})" if self.replica else ""
        when = f", {self.remembered}" if self.remembered else ""
        if self.inspector is not None:
            return f"{self.inspector}{where}{when}"
        return f"{self.cluster}{where}: {self.namespace}/{self.workload} ({self.source}){when}"

    @property
    def runs_where(self) -> tuple[str, str, str, str, str | None]:
        """The workload whatever the reading that named it: a current and a remembered usage of one image alike."""
        return (self.cluster, self.namespace, self.workload, self.source, self.replica)


class InUseManifest(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore", strict=True)

    schema_version: SchemaVersion
    cluster: ClusterName
    generated_at: UtcDatetime  # ISO 8601 or epoch seconds, through the one timestamp parser
    complete: bool
    # Required: a manifest without its list is not "nothing runs". Lax only to take a JSON list as a
    # tuple; the entries are strict InUseImage models.
    images: tuple[InUseImage, ...] = Field(strict=False)
    # Amazon Inspector's reading only (inspector-<account>-<region>): why Inspector may not see everything that runs
    # (Inspector or its enhanced scanning off, repositories it does not monitor), for the run's report to name.
    coverage_gaps: tuple[str, ...] | None = Field(default=None, strict=False)


class RememberedImage(InUseImage):
    """One reference of the in-use memory: what a manifest named, in which cluster, and the last reading that named
    it (`lastSeenAt`, the manifest's generatedAt). `digest` is the manifest's, or for a tag reference the digest
    its tag pointed to when the reference was last seen. `cluster`: the cluster's text, `<account>/<name>` for a
    spoke's."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid", strict=True)

    cluster: ClusterText
    last_seen_at: UtcDatetime

    @property
    def cluster_id(self) -> ClusterId:
        return ClusterId.parse(self.cluster)


class Reading(BaseModel):
    """One reading of a cluster's manifest: when it was generated and how many references it named."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid", strict=True)

    generated_at: UtcDatetime
    references: NonNegativeInt


class ClusterReadings(BaseModel):
    """A cluster's last reading and the one before it (a manifest read again unchanged is the same reading)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid", strict=True)

    last: Reading
    previous: Reading | None = None


class InUseMemory(BaseModel):
    """The in-use memory (`state/in-use-memory.json`, domain/in_use/memory.py): every reference a manifest named
    within safety.in_use_grace, which protects its image whatever becomes of the manifest. The pipeline's own state:
    strict, as a manifest is, because it decides what must not be deleted."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid", strict=True)

    schema_version: SchemaVersion
    updated_at: UtcDatetime
    clusters: dict[ClusterText, ClusterReadings] = Field(default_factory=dict, strict=False)
    images: tuple[RememberedImage, ...] = Field(default=(), strict=False)


def manifest_json(manifest: InUseManifest) -> bytes:
    """The manifest as every writer stores it (the exporter, the AWS inventory collector): camelCase keys,
    `digest` only where the cluster resolved one."""
    return manifest.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")


def manifest_key(cluster: str, prefix: str = IN_USE_PREFIX) -> str:
    """Where a cluster's manifest lives in the inventory bucket."""
    return f"{prefix}{cluster}.json"


@dataclass(frozen=True, slots=True)
class ClusterManifest:
    """A readable manifest and the cluster it is of: the account whose folder holds it, and the cluster it declares."""

    cluster: ClusterId
    manifest: InUseManifest


@dataclass(frozen=True)
class Inventory:
    """Every in-use manifest a run could read, and every file under in-use/ it could not.

    A cluster is its account and its name (domain/inventory/clusters.py). A manifest stands for the cluster its file
    is named after (`<cluster>.json`: the key is what the exporter's IAM policy, and the bucket policy for a spoke's
    folder, let each cluster write), of the account of its folder, when it declares that same name. One that declares
    another is misfiled: its images still protect, but it stands for no cluster, and for nobody else either."""

    manifests: tuple[InUseManifest, ...] = ()  # this account's clusters (in-use/<name>.json), one per name
    # A spoke account's clusters (in-use/<account>/<name>.json), by (account, name): they protect their images and
    # never stand for a cluster of this account, nor of another spoke, of the same name.
    spoke_manifests: Mapping[ClusterId, InUseManifest] = field(default_factory=dict)
    misfiled: Mapping[str, InUseManifest] = field(default_factory=dict)  # source -> manifest naming another cluster
    problems: Mapping[str, str] = field(default_factory=dict)  # source (file name or key) -> why it is unreadable
    # source -> the cluster it stands for, as the door that read it placed it (a key's folder, a directory's
    # subfolder); a source not here is read by its key (cluster_of_source).
    sources: Mapping[str, ClusterId] = field(default_factory=dict)
    # The in-use memory as the run read it: None when there is none (the first run, an offline plan without one).
    memory: InUseMemory | None = None
    # Why the memory could not be read ("<source>: <problem>"): it may protect images, so the run is blocked.
    memory_problem: str | None = None
    # The holds (domain/holds/): images people pinned for a time, read with the manifests, once per run.
    holds: Holds = NO_HOLDS

    @property
    def standing(self) -> dict[ClusterId, InUseManifest]:
        """Each cluster's manifest, by (account, name): this account's and every spoke's."""
        return {ClusterId.here(manifest.cluster): manifest for manifest in self.manifests} | dict(self.spoke_manifests)

    @property
    def protecting(self) -> tuple[ClusterManifest, ...]:
        """Every readable manifest, with the cluster it is of: all of them protect their images, whatever they stand
        for. A misfiled one is of the account of its folder and the cluster it declares."""
        misfiled = (
            ClusterManifest(ClusterId(self.cluster_of(source).account, manifest.cluster), manifest)
            for source, manifest in sorted(self.misfiled.items())
        )
        standing = (ClusterManifest(cluster, manifest) for cluster, manifest in sorted(self.standing.items()))
        return (*standing, *misfiled)

    def cluster_of(self, source: str) -> ClusterId:
        """The cluster a file or key stands for (whether or not it could be read)."""
        return self.sources.get(source) or cluster_of_source(source)


ManifestDocument = tuple[str, bytes | InputError]
# The spoke account of a source (a key's folder, a directory's subfolder), None for this account's.
AccountOf = Callable[[str], str | None]


def cluster_of_source(source: str, account_of: AccountOf | None = None) -> ClusterId:
    """The cluster a file or key stands for: `in-use/prod.json` -> `prod` of this account,
    `in-use/210987654321/prod.json` -> `prod` of account 210987654321."""
    account = (account_of or spoke_account_of_source)(source)
    name = PurePosixPath(source).name.removesuffix(".json")
    return ClusterId(THIS_ACCOUNT if account is None else account, name)


def read_inventory(documents: Iterable[ManifestDocument], account_of: AccountOf | None = None) -> Inventory:
    """Read every document under in-use/, whatever the door (a CLI directory, an S3 prefix): each is its
    source (file name or key) and its bytes, or the InputError that stopped its reader (too large, I/O).
    `account_of`: the spoke account of a source (default: a bucket key's folder, spoke_account_of_source).

    Fail closed, one rule: a document that cannot be read for any reason is a problem named by its
    source, never skipped, because the images it lists may be running; the planner blocks on it (or warns, for a
    spoke's cluster that no safety list names: domain/in_use/index.py)."""
    reader = _Reader()
    for source, raw in sorted(documents, key=lambda document: document[0]):
        reader.add(source, cluster_of_source(source, account_of), raw)
    return Inventory(
        manifests=tuple(manifest for cluster, manifest in sorted(reader.manifests.items()) if cluster.of_this_account),
        spoke_manifests={
            cluster: manifest for cluster, manifest in reader.manifests.items() if not cluster.of_this_account
        },
        misfiled=reader.misfiled,
        problems=reader.problems,
        sources=reader.sources,
    )


@dataclass
class _Reader:
    """What read_inventory has read so far."""

    manifests: dict[ClusterId, InUseManifest] = field(default_factory=dict)
    misfiled: dict[str, InUseManifest] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    sources: dict[str, ClusterId] = field(default_factory=dict)
    firsts: dict[ClusterId, str] = field(default_factory=dict)  # the source of each cluster's manifest

    def add(self, source: str, cluster: ClusterId, raw: bytes | InputError) -> None:
        self.sources[source] = cluster
        try:
            manifest = parse_manifest(source, raw)
        except InputError as error:
            self.problems[source] = str(error).removeprefix(f"{source}: ")
            return
        if manifest.cluster != cluster.name:
            self.misfiled[source] = manifest
        elif cluster in self.manifests:  # two sources for one (account, name): in-use/x.json and in-use/team/x.json
            self.problems[source] = f"cluster {cluster} already has a manifest in {self.firsts[cluster]}"
        else:
            self.manifests[cluster], self.firsts[cluster] = manifest, source


SPOKE_ACCOUNT = re.compile(ACCOUNT_PATTERN)


def spoke_account_of_source(source: str) -> str | None:
    """The account of a spoke's manifest key, `in-use/210987654321/payments.json` -> `210987654321`; None for a key
    of this account's layout (`in-use/prod.json`) or a file of a directory."""
    parts = PurePosixPath(source).parts
    if len(parts) == 3 and parts[0] == IN_USE_PREFIX.rstrip("/") and SPOKE_ACCOUNT.fullmatch(parts[1]):
        return parts[1]
    return None


def parse_manifest(source: str, raw: bytes | InputError) -> InUseManifest:
    """One manifest, strictly; InputError("<source>: <problem>") when it cannot be trusted."""
    return parse_strictly(
        source, raw, InUseManifest, "an in-use manifest is a JSON object with schemaVersion, cluster and images"
    )


def parse_memory(source: str, raw: bytes | InputError) -> InUseMemory:
    """The in-use memory, strictly; InputError("<source>: <problem>") when it cannot be trusted."""
    return parse_strictly(source, raw, InUseMemory, "the in-use memory is a JSON object with schemaVersion and images")


def with_memory(inventory: Inventory, source: str, raw: bytes | InputError | None) -> Inventory:
    """The inventory with the memory read from `source`, whatever the door (a file offline, the bucket): `raw` None
    is no memory yet (the first run); one that cannot be read is the inventory's memory_problem, which blocks."""
    if raw is None:
        return inventory
    try:
        return replace(inventory, memory=parse_memory(source, raw))
    except InputError as error:
        problem = str(error).removeprefix(f"{source}: ")
        return replace(inventory, memory_problem=f"{source}: unreadable in-use memory: {problem}")


def memory_json(memory: InUseMemory) -> bytes:
    return memory.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")
