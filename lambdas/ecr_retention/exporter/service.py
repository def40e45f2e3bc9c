"""One export: list every collected kind, build the manifest, store it whole, or store nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ecr_retention.domain.inventory.kubernetes import COLLECTED_RESOURCES, Resource
from ecr_retention.domain.inventory.manifest import InUseManifest, manifest_json
from ecr_retention.exporter.storage import check_manifest_path, put_manifest, write_manifest_file
from ecr_retention.kube.client import ClusterLister
from ecr_retention.kube.manifest import build_manifest, check_key_names_cluster
from ecr_retention.kube.workloads import NamespaceFilter, ObjectImages, read_object


class Destination(Protocol):
    def check(self, cluster: str) -> None:
        """Raise when this destination can never take the cluster's manifest; called before any list."""
        ...

    def store(self, cluster: str, body: bytes) -> None: ...


@dataclass(frozen=True)
class S3Destination:
    bucket: str
    key: str
    s3_client: Any = field(repr=False)

    def check(self, cluster: str) -> None:
        check_key_names_cluster(self.key, cluster)

    def store(self, cluster: str, body: bytes) -> None:
        check_key_names_cluster(self.key, cluster)
        put_manifest(self.s3_client, self.bucket, self.key, body)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


@dataclass(frozen=True)
class FileDestination:
    path: Path

    def check(self, cluster: str) -> None:
        check_manifest_path(self.path, f"manifest file {self.path}")

    def store(self, cluster: str, body: bytes) -> None:
        write_manifest_file(self.path, body)

    def __str__(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class ExportSummary:
    manifest: InUseManifest
    objects_by_kind: Mapping[str, int]  # plural resource name -> objects read in the exported namespaces


def export_inventory(
    cluster: str,
    lister: ClusterLister,
    destination: Destination,
    *,
    namespaces: NamespaceFilter | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ExportSummary:
    """Raises InputError, having listed nothing, when the destination can never take the manifest, and
    ExportFailed, having stored nothing, when any list or the upload fails."""
    destination.check(cluster)
    # Taken before the first list, so that the manifest never claims to be fresher than its oldest data.
    generated_at = clock()
    objects, objects_by_kind = collect_objects(lister, namespaces or NamespaceFilter())
    manifest = build_manifest(cluster, generated_at, objects)
    destination.store(cluster, manifest_json(manifest))
    return ExportSummary(manifest=manifest, objects_by_kind=objects_by_kind)


def collect_objects(lister: ClusterLister, namespaces: NamespaceFilter) -> tuple[list[ObjectImages], dict[str, int]]:
    objects: list[ObjectImages] = []
    objects_by_kind: dict[str, int] = {}
    for resource in COLLECTED_RESOURCES:
        found = lister.list_all(resource, _reader(resource, namespaces))
        objects_by_kind[resource.plural] = len(found)
        objects.extend(found)
    return objects, objects_by_kind


def _reader(resource: Resource, namespaces: NamespaceFilter) -> Callable[[Mapping[str, Any]], ObjectImages | None]:
    def read(item: Mapping[str, Any]) -> ObjectImages | None:
        namespace = (item.get("metadata") or {}).get("namespace") or ""
        return read_object(resource, item) if namespaces.admits(namespace) else None

    return read
