"""Turning the objects read from a cluster into its in-use manifest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from ecr_retention.domain.inventory.manifest import InUseImage, InUseManifest, InUseSource, manifest_key
from ecr_retention.kube.errors import ExportFailed
from ecr_retention.kube.workloads import ObjectImages, Owner

SOURCE_BY_KIND: Mapping[str, InUseSource] = {
    "Pod": "pod",
    "ReplicaSet": "replicaset",
    "ControllerRevision": "controllerrevision",
    "CronJob": "cronjob",
    "Deployment": "template",
    "StatefulSet": "template",
    "DaemonSet": "template",
    "Job": "template",
}

# Pod -> ReplicaSet -> Deployment and Pod -> Job -> CronJob are two hops; the margin covers operators
# that add a level, and stops a malformed ownership cycle.
_MAX_OWNER_HOPS = 5

# namespace, workload, source, container, image, digest: the sort order of the manifest, too.
_EntryKey = tuple[str, str, InUseSource, str, str, str | None]


def build_manifest(cluster: str, generated_at: datetime, objects: Iterable[ObjectImages]) -> InUseManifest:
    """One entry per distinct (image, digest, namespace, workload, container, source); sorted, so that two
    exports of an unchanged cluster are byte-identical apart from `generatedAt`."""
    objects = list(objects)
    owners = _owners_of_intermediate_controllers(objects)
    entries: set[_EntryKey] = set()
    for obj in objects:
        workload = _top_level_workload(obj, owners)
        source = SOURCE_BY_KIND[obj.kind]
        for container in obj.containers:
            entries.add((obj.namespace, workload, source, container.container, container.image, container.digest))
    images = tuple(
        InUseImage(
            image=image,
            digest=digest,
            namespace=namespace,
            workload=workload,
            container=container,
            source=source,
        )
        for namespace, workload, source, container, image, digest in sorted(entries, key=_sort_key)
    )
    return InUseManifest(schema_version=1, cluster=cluster, generated_at=generated_at, complete=True, images=images)


def check_key_names_cluster(key: str, cluster: str) -> None:
    """The pipeline finds a cluster's manifest by its key, so a key naming another cluster is refused."""
    expected_name = manifest_key(cluster, prefix="")
    if key.rpartition("/")[2] != expected_name:
        raise ExportFailed(f"refusing key {key}: the manifest of cluster {cluster} is stored as .../{expected_name}")


def _owners_of_intermediate_controllers(objects: Iterable[ObjectImages]) -> dict[tuple[str, str, str], Owner]:
    """(kind, namespace, name) of every ReplicaSet and Job that has a controller, to that controller."""
    return {
        (obj.kind, obj.namespace, obj.name): obj.controller
        for obj in objects
        if obj.controller is not None and obj.kind in ("ReplicaSet", "Job")
    }


def _top_level_workload(obj: ObjectImages, owners: Mapping[tuple[str, str, str], Owner]) -> str:
    """`Kind/name` of what a person manages: a pod of a ReplicaSet of Deployment app is `Deployment/app`.

    An owner the exporter did not list (a ReplicaSet created after the ReplicaSet list was read) ends the
    walk at that owner.
    """
    current = obj.controller
    if current is None:
        return f"{obj.kind}/{obj.name}"
    for _ in range(_MAX_OWNER_HOPS):
        parent = owners.get((current.kind, obj.namespace, current.name))
        if parent is None:
            break
        current = parent
    return f"{current.kind}/{current.name}"


def _sort_key(entry: _EntryKey) -> tuple[str, str, str, str, str, str]:
    namespace, workload, source, container, image, digest = entry
    return namespace, workload, source, container, image, digest or ""
