"""The demo's agentless cluster: nothing is installed in `dev`; the AWS inventory collector reads it through its API
(`eksClusters`, docs/aws-inventory.md), as it would an EKS cluster with an access entry. The emulator's EKS
describes the cluster with the endpoint and CA of a fake Kubernetes API server on 127.0.0.1, over HTTPS with a
certificate of its own, which serves dev's workloads and accepts only EKS tokens. prod and us-prod keep the other
path: their exporters' manifests are in the bucket from the start.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

from moto.eks.models import eks_backends

from ecr_retention_dev.demo.registry import InUseEntry
from ecr_retention_dev.emulator.kubernetes_api import (
    FakeApiServer,
    FakeCluster,
    cron_job,
    deployment,
    eks_token_problem,
    owner_reference,
    pod,
    replica_set,
    self_signed_tls,
)

AGENTLESS_CLUSTER = "dev"
INIT_CONTAINER = "init"  # the demo's name for an init container (registry.seed_registry)


@dataclass
class AgentlessCluster:
    """The fake API server, and the cluster's ARN once the emulator describes it."""

    server: FakeApiServer
    ca_pem: bytes
    arn: str = ""

    def publish(self, entries: Iterable[InUseEntry], eks: Any, account: str, region: str) -> str:
        """Serve the workloads behind `entries` and create the EKS cluster that points at them; its ARN."""
        self.server.cluster.objects.update(cluster_objects(entries).objects)
        created = eks.create_cluster(
            name=AGENTLESS_CLUSTER,
            roleArn=f"arn:aws:iam::{account}:role/eks-cluster",
            resourcesVpcConfig={"subnetIds": ["subnet-0a1b2c3d4e5f60718"]},
            accessConfig={"authenticationMode": "API"},
        )
        # moto invents an endpoint and CA: the cluster's own are the fake server's (the emulator runs in-process).
        described = eks_backends[account][region].clusters[AGENTLESS_CLUSTER]
        described.endpoint = self.server.url
        described.certificate_authority = {"data": base64.b64encode(self.ca_pem).decode("ascii")}
        self.arn = str(created["cluster"]["arn"])
        return self.arn


@contextmanager
def serving_agentless_cluster(emulator_endpoint: str) -> Iterator[AgentlessCluster]:
    """The fake API server for the demo's lifetime. Tokens are presigned against the emulator's STS endpoint (the
    demo points every client at it), so that is the STS endpoint the server accepts in a token."""
    emulator = urlsplit(emulator_endpoint)

    def through_the_emulator(url: SplitResult) -> bool:
        return url.netloc == emulator.netloc

    with tempfile.TemporaryDirectory(prefix="ecr-retention-demo-tls-") as directory:
        context, ca_file = self_signed_tls(Path(directory))
        ca_pem = ca_file.read_bytes()
    server = FakeApiServer(
        FakeCluster(),
        tls_context=context,
        authenticate=lambda token: eks_token_problem(token, sts_endpoint=through_the_emulator),
    )
    with server:
        yield AgentlessCluster(server, ca_pem)


def cluster_objects(entries: Iterable[InUseEntry]) -> FakeCluster:
    """What runs in the cluster, as its API lists it: each Deployment with its ReplicaSet and a pod still pulling
    its images (so no digest), each CronJob; their containers are the entries' (`init` is an init container)."""
    workloads: dict[tuple[str, str], list[InUseEntry]] = {}
    for entry in entries:
        workloads.setdefault((entry.namespace, entry.workload), []).append(entry)
    cluster = FakeCluster()
    for (namespace, workload), uses in sorted(workloads.items()):
        kind, name = workload.split("/", 1)
        containers = [(u.container, u.image) for u in uses if u.container != INIT_CONTAINER]
        init = [(u.container, u.image) for u in uses if u.container == INIT_CONTAINER]
        if kind == "CronJob":
            cluster.add("cronjobs", cron_job(namespace, name, "0 6 * * *", containers))
        elif kind == "Deployment":
            add_deployment(cluster, namespace, name, containers, init)
        else:
            raise ValueError(f"the demo's agentless cluster has no {kind} ({workload})")
    return cluster


def add_deployment(
    cluster: FakeCluster,
    namespace: str,
    name: str,
    containers: list[tuple[str, str]],
    init: list[tuple[str, str]],
) -> None:
    """The Deployment, its ReplicaSet, and its pod, Pending: still pulling its images, so no digest yet."""
    replicas = f"{name}-7c9d8f6b5"
    cluster.add("deployments", deployment(namespace, name, containers, init))
    cluster.add("replicasets", replica_set(namespace, replicas, name, containers, init))
    cluster.add(
        "pods",
        pod(
            namespace,
            f"{replicas}-x2x9k",
            containers=[(c, image, "") for c, image in containers],
            init_containers=[(c, image, "") for c, image in init],
            owner=owner_reference("ReplicaSet", replicas, namespace),
            phase="Pending",
        ),
    )
