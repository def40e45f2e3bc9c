"""Reading container images out of Kubernetes objects, as the API server returns them in JSON.

Pure functions over plain dicts: no client, no I/O, so every rule here is tested without a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ecr_retention.domain.inventory.kubernetes import (
    CONTROLLER_REVISION,
    CRON_JOB,
    POD,
    Resource,
)
from ecr_retention.domain.patterns import matches_any

# `<repository>@sha256:<hex>`, with or without a runtime scheme such as `docker-pullable://`.
_IMAGE_ID_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
_MANIFEST_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class Owner:
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class ContainerImage:
    container: str
    image: str
    digest: str | None = None


@dataclass(frozen=True, slots=True)
class ObjectImages:
    """The images one object names, and the controller that owns the object, if any."""

    kind: str
    namespace: str
    name: str
    controller: Owner | None
    containers: tuple[ContainerImage, ...]


@dataclass(frozen=True, slots=True)
class NamespaceFilter:
    """Which namespaces are exported: those matching an include glob and no exclude glob."""

    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()

    def admits(self, namespace: str) -> bool:
        return matches_any(namespace, self.include) and not matches_any(namespace, self.exclude)


def manifest_digest_from_image_id(image_id: str | None) -> str | None:
    """The manifest digest in a container status `imageID`, when it has the `repository@sha256:` form.

    Docker reports `docker-pullable://repo@sha256:...`, containerd and CRI-O `repo@sha256:...`. A bare
    `sha256:...` (or `docker://sha256:...`) is the image's config digest, which names no manifest in a
    registry, so it is not a digest the pruner may rely on.
    """
    if not image_id:
        return None
    repository, at, digest = _IMAGE_ID_SCHEME.sub("", image_id.strip()).rpartition("@")
    if not at or not repository or not _MANIFEST_DIGEST.match(digest):
        return None
    return digest


def read_pod(pod: Mapping[str, Any]) -> ObjectImages:
    """Containers, init containers and ephemeral containers, each with the digest the node resolved."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    # Container names are unique across the three lists of one pod, so one map serves them all.
    image_ids = {
        entry.get("name"): entry.get("imageID")
        for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
        for entry in status.get(key) or ()
    }
    containers = tuple(
        ContainerImage(name, image, manifest_digest_from_image_id(image_ids.get(name)))
        for name, image in _containers(spec, ("containers", "initContainers", "ephemeralContainers"))
    )
    return _object_images("Pod", pod, containers)


def read_workload(kind: str, workload: Mapping[str, Any]) -> ObjectImages:
    """A Deployment, StatefulSet, DaemonSet, ReplicaSet or Job: the images of its pod template."""
    template_spec = (((workload.get("spec") or {}).get("template") or {}).get("spec")) or {}
    return _object_images(kind, workload, _template_images(template_spec))


def read_cron_job(cron_job: Mapping[str, Any]) -> ObjectImages:
    """A CronJob: the images of the pod template inside its job template, whether or not a job runs now."""
    job_spec = (((cron_job.get("spec") or {}).get("jobTemplate") or {}).get("spec")) or {}
    template_spec = ((job_spec.get("template") or {}).get("spec")) or {}
    return _object_images("CronJob", cron_job, _template_images(template_spec))


def read_controller_revision(revision: Mapping[str, Any]) -> ObjectImages:
    """A ControllerRevision: the images of the pod template it records, owned by its StatefulSet or DaemonSet.

    Both controllers store `data` as a patch of the whole pod template (`{"spec": {"template": {...,
    "$patch": "replace"}}}`), so the containers listed there are all the revision runs. `data` is free-form
    for other controllers that keep ControllerRevisions; one without a pod template names no image.
    """
    template = _mapping(_mapping(_mapping(revision.get("data")).get("spec")).get("template"))
    return _object_images("ControllerRevision", revision, _template_images(_mapping(template.get("spec"))))


def read_object(resource: Resource, item: Mapping[str, Any]) -> ObjectImages:
    if resource is POD:
        return read_pod(item)
    if resource is CRON_JOB:
        return read_cron_job(item)
    if resource is CONTROLLER_REVISION:
        return read_controller_revision(item)
    return read_workload(resource.kind, item)


def _template_images(pod_spec: Mapping[str, Any]) -> tuple[ContainerImage, ...]:
    # Ephemeral containers exist only on live pods; a template cannot hold them.
    return tuple(ContainerImage(name, image) for name, image in _containers(pod_spec, ("containers", "initContainers")))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _containers(pod_spec: Mapping[str, Any], keys: Sequence[str]) -> Iterator[tuple[str, str]]:
    for key in keys:
        for container in pod_spec.get(key) or ():
            if not isinstance(container, Mapping):  # a ControllerRevision's `data` is not validated by the API
                continue
            image = container.get("image")
            image = image.strip() if isinstance(image, str) else ""
            # A template may leave the image to an admission webhook; there is nothing to protect yet.
            if image:
                yield container.get("name") or "", image


def _object_images(kind: str, item: Mapping[str, Any], containers: tuple[ContainerImage, ...]) -> ObjectImages:
    metadata = item.get("metadata") or {}
    return ObjectImages(
        kind=kind,
        namespace=metadata.get("namespace") or "",
        name=metadata.get("name") or "",
        controller=_controller(metadata),
        containers=containers,
    )


def _controller(metadata: Mapping[str, Any]) -> Owner | None:
    for reference in metadata.get("ownerReferences") or ():
        if reference.get("controller") and reference.get("kind") and reference.get("name"):
            return Owner(reference["kind"], reference["name"])
    return None
