"""A small cluster with every case the exporter must get right, and the manifest it must produce.

- a CronJob that has no job or pod right now (batch/nightly-report)
- a CronJob with a finished Job and its Succeeded pod (batch/cleanup)
- a Deployment at zero replicas (shop/worker)
- a Deployment with an init container, its current ReplicaSet, and an old ReplicaSet at zero replicas
  that `kubectl rollout undo` returns to (shop/web), one pod still waiting for its images
- a bare pod with an ephemeral debug container (shop/debug-shell)
- an image-swapper style ECR path (ingress/edge-proxy), on two nodes: Docker and containerd imageIDs
- a non-ECR image (data/postgres)
- a bare `sha256:` imageID, which is a config digest and yields no digest (kube-system/aws-node)
- a StatefulSet whose old revision's pods are gone, its image kept only by the ControllerRevision that
  `kubectl rollout undo` restores (shop/cache), and a DaemonSet's old revision (ingress/edge-proxy)
"""

from __future__ import annotations

from typing import Any

from ecr_retention_dev.emulator.kubernetes_api import (
    FakeCluster,
    controller_revision,
    cron_job,
    daemon_set,
    deployment,
    job,
    owner_reference,
    pod,
    replica_set,
    sorted_by_key,
    stateful_set,
)

ECR = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
WEB_140 = f"{ECR}/shop/web:1.4.0"
WEB_132 = f"{ECR}/shop/web:1.3.2"
MIGRATE_140 = f"{ECR}/shop/web-migrate:1.4.0"
MIGRATE_132 = f"{ECR}/shop/web-migrate:1.3.2"
WORKER = f"{ECR}/shop/worker:2.0.1"
REPORT = f"{ECR}/batch/report:0.9.0"
CLEANUP = f"{ECR}/batch/cleanup:2.1.0"
NGINX_SWAPPED = f"{ECR}/docker.io/library/nginx:1.14.2"
NGINX_SWAPPED_OLD = f"{ECR}/docker.io/library/nginx:1.14.1"
CACHE_310 = f"{ECR}/shop/cache:3.1.0"
CACHE_304 = f"{ECR}/shop/cache:3.0.4"
NETSHOOT = f"{ECR}/tools/netshoot:0.13"
BUSYBOX = "busybox:1.36"
POSTGRES = "postgres:16.4"
AWS_NODE = "602401143452.dkr.ecr.eu-west-1.amazonaws.com/amazon-k8s-cni:v1.19.2"

WEB_140_DIGEST = "sha256:" + "a1" * 32
MIGRATE_140_DIGEST = "sha256:" + "b2" * 32
CLEANUP_DIGEST = "sha256:" + "c3" * 32
NGINX_DIGEST = "sha256:" + "d4" * 32
NETSHOOT_DIGEST = "sha256:" + "e5" * 32
BUSYBOX_DIGEST = "sha256:" + "f6" * 32
POSTGRES_DIGEST = "sha256:" + "07" * 32
AWS_NODE_CONFIG_DIGEST = "sha256:" + "18" * 32
CACHE_310_DIGEST = "sha256:" + "29" * 32


def build() -> FakeCluster:
    cluster = FakeCluster()
    web_current, web_previous = "web-7d4b9c8f6", "web-5f8d7b6c4d"
    cluster.add(
        "pods",
        *sorted_by_key(
            [
                pod(
                    "batch",
                    "cleanup-29394720-x7k2p",
                    containers=[("cleanup", CLEANUP, f"docker-pullable://{ECR}/batch/cleanup@{CLEANUP_DIGEST}")],
                    owner=owner_reference("Job", "cleanup-29394720", "batch"),
                    phase="Succeeded",
                ),
                pod(
                    "data",
                    "postgres-0",
                    containers=[("postgres", POSTGRES, f"docker.io/library/postgres@{POSTGRES_DIGEST}")],
                    owner=owner_reference("StatefulSet", "postgres", "data"),
                ),
                pod(
                    "ingress",
                    "edge-proxy-7kq2w",
                    containers=[
                        ("nginx", NGINX_SWAPPED, f"docker-pullable://{ECR}/docker.io/library/nginx@{NGINX_DIGEST}")
                    ],
                    owner=owner_reference("DaemonSet", "edge-proxy", "ingress"),
                ),
                pod(
                    "ingress",
                    "edge-proxy-m4x8z",
                    containers=[("nginx", NGINX_SWAPPED, f"{ECR}/docker.io/library/nginx@{NGINX_DIGEST}")],
                    owner=owner_reference("DaemonSet", "edge-proxy", "ingress"),
                    node="ip-10-0-2-41.eu-west-1.compute.internal",
                ),
                pod(
                    "kube-system",
                    "aws-node-9fz4c",
                    containers=[("aws-node", AWS_NODE, AWS_NODE_CONFIG_DIGEST)],
                    owner=owner_reference("DaemonSet", "aws-node", "kube-system"),
                ),
                pod(  # the StatefulSet's pod was replaced by the rollout to 3.1.0: nothing runs 3.0.4
                    "shop",
                    "cache-0",
                    containers=[("redis", CACHE_310, f"{ECR}/shop/cache@{CACHE_310_DIGEST}")],
                    owner=owner_reference("StatefulSet", "cache", "shop"),
                ),
                pod(
                    "shop",
                    "debug-shell",
                    containers=[("shell", BUSYBOX, f"docker.io/library/busybox@{BUSYBOX_DIGEST}")],
                    ephemeral_containers=[("debugger-x2b4", NETSHOOT, f"{ECR}/tools/netshoot@{NETSHOOT_DIGEST}")],
                ),
                *(
                    pod(
                        "shop",
                        f"{web_current}-{suffix}",
                        containers=[("web", WEB_140, f"{ECR}/shop/web@{WEB_140_DIGEST}")],
                        init_containers=[("migrate", MIGRATE_140, f"{ECR}/shop/web-migrate@{MIGRATE_140_DIGEST}")],
                        owner=owner_reference("ReplicaSet", web_current, "shop"),
                    )
                    for suffix in ("2xk9p", "q8zr5")
                ),
                pod(  # scheduled, still pulling: no imageID yet
                    "shop",
                    f"{web_current}-zz1tt",
                    containers=[("web", WEB_140, "")],
                    init_containers=[("migrate", MIGRATE_140, "")],
                    owner=owner_reference("ReplicaSet", web_current, "shop"),
                    phase="Pending",
                ),
            ]
        ),
    )
    cluster.add(
        "deployments",
        deployment("shop", "web", [("web", WEB_140)], [("migrate", MIGRATE_140)], replicas=3),
        deployment("shop", "worker", [("worker", WORKER)], replicas=0),
    )
    cluster.add(
        "replicasets",
        replica_set(
            "shop", web_previous, "web", [("web", WEB_132)], [("migrate", MIGRATE_132)], replicas=0, revision=2
        ),
        replica_set("shop", web_current, "web", [("web", WEB_140)], [("migrate", MIGRATE_140)], replicas=3, revision=3),
        replica_set("shop", "worker-6c9f8d7b5", "worker", [("worker", WORKER)], replicas=0),
    )
    cluster.add(
        "statefulsets",
        stateful_set("data", "postgres", [("postgres", POSTGRES)]),
        stateful_set("shop", "cache", [("redis", CACHE_310)]),
    )
    cluster.add(
        "controllerrevisions",
        controller_revision("data", "StatefulSet", "postgres", "6d4f8b9c7", [("postgres", POSTGRES)], revision=1),
        controller_revision(
            "ingress", "DaemonSet", "edge-proxy", "5c8d7f9b6", [("nginx", NGINX_SWAPPED_OLD)], revision=1
        ),
        controller_revision("ingress", "DaemonSet", "edge-proxy", "7b9f6d8c5", [("nginx", NGINX_SWAPPED)], revision=2),
        controller_revision("shop", "StatefulSet", "cache", "5f7c9d8b4", [("redis", CACHE_304)], revision=1),
        controller_revision("shop", "StatefulSet", "cache", "8d6b4c7f9", [("redis", CACHE_310)], revision=2),
    )
    cluster.add(
        "daemonsets",
        daemon_set("ingress", "edge-proxy", [("nginx", NGINX_SWAPPED)]),
        daemon_set("kube-system", "aws-node", [("aws-node", AWS_NODE)]),
    )
    cluster.add("jobs", job("batch", "cleanup-29394720", [("cleanup", CLEANUP)], cron_job="cleanup"))
    cluster.add(
        "cronjobs",
        cron_job("batch", "cleanup", "*/30 * * * *", [("cleanup", CLEANUP)]),
        cron_job("batch", "nightly-report", "0 3 * * *", [("report", REPORT)]),
    )
    return cluster


def _entry(
    namespace: str, workload: str, source: str, container: str, image: str, digest: str | None = None
) -> dict[str, Any]:
    entry = {"image": image, "namespace": namespace, "workload": workload, "container": container, "source": source}
    if digest is not None:
        entry["digest"] = digest
    return entry


# Sorted by namespace, workload, source, container, image, digest (absent first).
EXPECTED_IMAGES: list[dict[str, Any]] = [
    _entry("batch", "CronJob/cleanup", "cronjob", "cleanup", CLEANUP),
    _entry("batch", "CronJob/cleanup", "pod", "cleanup", CLEANUP, CLEANUP_DIGEST),
    _entry("batch", "CronJob/cleanup", "template", "cleanup", CLEANUP),
    _entry("batch", "CronJob/nightly-report", "cronjob", "report", REPORT),
    _entry("data", "StatefulSet/postgres", "controllerrevision", "postgres", POSTGRES),
    _entry("data", "StatefulSet/postgres", "pod", "postgres", POSTGRES, POSTGRES_DIGEST),
    _entry("data", "StatefulSet/postgres", "template", "postgres", POSTGRES),
    _entry("ingress", "DaemonSet/edge-proxy", "controllerrevision", "nginx", NGINX_SWAPPED_OLD),
    _entry("ingress", "DaemonSet/edge-proxy", "controllerrevision", "nginx", NGINX_SWAPPED),
    _entry("ingress", "DaemonSet/edge-proxy", "pod", "nginx", NGINX_SWAPPED, NGINX_DIGEST),
    _entry("ingress", "DaemonSet/edge-proxy", "template", "nginx", NGINX_SWAPPED),
    _entry("kube-system", "DaemonSet/aws-node", "pod", "aws-node", AWS_NODE),
    _entry("kube-system", "DaemonSet/aws-node", "template", "aws-node", AWS_NODE),
    _entry("shop", "Deployment/web", "pod", "migrate", MIGRATE_140),
    _entry("shop", "Deployment/web", "pod", "migrate", MIGRATE_140, MIGRATE_140_DIGEST),
    _entry("shop", "Deployment/web", "pod", "web", WEB_140),
    _entry("shop", "Deployment/web", "pod", "web", WEB_140, WEB_140_DIGEST),
    _entry("shop", "Deployment/web", "replicaset", "migrate", MIGRATE_132),
    _entry("shop", "Deployment/web", "replicaset", "migrate", MIGRATE_140),
    _entry("shop", "Deployment/web", "replicaset", "web", WEB_132),
    _entry("shop", "Deployment/web", "replicaset", "web", WEB_140),
    _entry("shop", "Deployment/web", "template", "migrate", MIGRATE_140),
    _entry("shop", "Deployment/web", "template", "web", WEB_140),
    _entry("shop", "Deployment/worker", "replicaset", "worker", WORKER),
    _entry("shop", "Deployment/worker", "template", "worker", WORKER),
    _entry("shop", "Pod/debug-shell", "pod", "debugger-x2b4", NETSHOOT, NETSHOOT_DIGEST),
    _entry("shop", "Pod/debug-shell", "pod", "shell", BUSYBOX, BUSYBOX_DIGEST),
    _entry("shop", "StatefulSet/cache", "controllerrevision", "redis", CACHE_304),
    _entry("shop", "StatefulSet/cache", "controllerrevision", "redis", CACHE_310),
    _entry("shop", "StatefulSet/cache", "pod", "redis", CACHE_310, CACHE_310_DIGEST),
    _entry("shop", "StatefulSet/cache", "template", "redis", CACHE_310),
]
