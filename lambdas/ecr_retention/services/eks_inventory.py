"""The EKS clusters that the AWS inventory collector reads through their API, with nothing installed in them
(`eksClusters`, docs/aws-inventory.md): for each, the manifest the in-cluster exporter would write,
`in-use/<cluster name>.json`, listed and built by the code the exporter uses too (kube.workloads, kube.manifest).

A cluster that cannot be described, authenticated to or listed is stored `complete: false`, with what was read
before the failure (it still protects those images) and the failure named in the collection: an expected cluster
then blocks every deletion, and none ever gets an empty manifest that claims to be complete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

from ecr_retention.clock import utc_now
from ecr_retention.domain.inventory.eks_clusters import EksCluster
from ecr_retention.domain.inventory.kubernetes import COLLECTED_RESOURCES
from ecr_retention.kube.manifest import build_manifest
from ecr_retention.kube.workloads import ObjectImages, read_object
from ecr_retention.ports import ClusterAccess, ManifestStore, ReadFailed
from ecr_retention.services.aws_inventory import ManifestCollection, stored_collection


def collect_cluster(cluster: EksCluster, access: ClusterAccess, *, generated_at: datetime) -> ManifestCollection:
    """Every collected kind of one cluster, across all namespaces. Stops at the first failure: an unreachable API
    server fails every kind alike, each after its connect attempts (about 40 s when nothing answers)."""
    objects: list[ObjectImages] = []
    counts: dict[str, int] = {}
    problems: list[str] = []
    try:
        lister = access.lister(cluster)
        for resource in COLLECTED_RESOURCES:
            found = lister.list_all(resource, partial(read_object, resource))
            counts[resource.plural] = len(found)
            objects.extend(found)
    except ReadFailed as error:
        problems.append(f"cluster {cluster.arn}: {error}")
    manifest = build_manifest(cluster.name, generated_at, objects)
    if problems:
        manifest = manifest.model_copy(update={"complete": False})
    return ManifestCollection(manifest=manifest, problems=tuple(problems), counts=counts)


def export_eks_inventory(
    clusters: Sequence[EksCluster],
    access: ClusterAccess,
    store: ManifestStore,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> list[ManifestCollection]:
    """Collect and store one manifest per cluster, each whole in one write; a manifest that cannot be stored is
    reported in its collection (`store_error`), as export_aws_inventory does."""
    collections = []
    for cluster in clusters:
        # Taken before the first read, so that the manifest never claims to be fresher than its oldest data.
        generated_at = clock()
        collections.append(stored_collection(collect_cluster(cluster, access, generated_at=generated_at), store))
    return collections
