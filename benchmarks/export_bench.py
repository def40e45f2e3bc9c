"""Export a 30,000-pod cluster from the fake Kubernetes API server with `ecr-retention export --out` and print the
exporter's wall time, CPU time and peak memory: each export a fresh process of the tree's code, medians of 3 with
the spread. Measures only; asserts nothing about time.

    make bench        (or: python benchmarks/export_bench.py [--tree CHECKOUT] [--pods 30000] [--page-size 500])

The fake API server runs in a child process (forked before anything is built here), so the CPU time and memory
printed are the exporter's own: the whole command's, from its interpreter's start to its exit (wait4's rusage).
The cluster: Deployments of 10 replicas spread over 100 namespaces, each with two old ReplicaSets at zero
replicas, an ECR app container, an init container and a non-ECR sidecar per pod, pods carrying the
managedFields, env and volumes that make real pod JSON several kilobytes; plus StatefulSets, DaemonSets,
CronJobs and Jobs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from measuring import ChildRun, Spread, add_tree_argument, run_child, tree_environment

from ecr_retention_dev.emulator.kubernetes_api import (
    FakeApiServer,
    FakeCluster,
    controller_revision,
    cron_job,
    daemon_set,
    deployment,
    job,
    owner_reference,
    pod,
    replica_set,
    stateful_set,
)

ECR = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
NAMESPACES = 100
REPLICAS = 10
TOKEN = "bench-token"


def build_cluster(pods: int) -> FakeCluster:
    cluster = FakeCluster()
    deployments = pods // REPLICAS
    for index in range(deployments):
        namespace = f"team-{index % NAMESPACES:03d}"
        name = f"service-{index:05d}"
        app = f"{ECR}/{namespace}/{name}:1.{index % 7}.{index % 13}"
        migrate = f"{ECR}/{namespace}/{name}-migrate:1.{index % 7}.{index % 13}"
        sidecar = "public.ecr.aws/aws-observability/aws-otel-collector:v0.43.1"
        containers = [("app", app), ("otel", sidecar)]
        cluster.add("deployments", deployment(namespace, name, containers, [("migrate", migrate)], replicas=REPLICAS))
        for revision in (1, 2, 3):
            tag = f"1.{index % 7}.{(index % 13) - 3 + revision}"
            cluster.add(
                "replicasets",
                replica_set(
                    namespace,
                    f"{name}-{revision:09x}",
                    name,
                    [("app", f"{ECR}/{namespace}/{name}:{tag}"), ("otel", sidecar)],
                    [("migrate", migrate)],
                    replicas=REPLICAS if revision == 3 else 0,
                    revision=revision,
                ),
            )
        for replica in range(REPLICAS):
            item = pod(
                namespace,
                f"{name}-000000003-{replica:05d}",
                containers=[
                    ("app", app, f"{ECR}/{namespace}/{name}@sha256:{index:064x}"),
                    ("otel", sidecar, f"public.ecr.aws/aws-observability/aws-otel-collector@sha256:{1:064x}"),
                ],
                init_containers=[("migrate", migrate, f"{ECR}/{namespace}/{name}-migrate@sha256:{index + 1:064x}")],
                owner=owner_reference("ReplicaSet", f"{name}-000000003", namespace),
            )
            cluster.add("pods", _realistic_bulk(item))
    for index in range(NAMESPACES):
        namespace = f"team-{index:03d}"
        cluster.add("statefulsets", stateful_set(namespace, "cache", [("redis", "redis:7.4.1")]))
        for revision, redis in enumerate(("redis:7.2.5", "redis:7.4.1"), start=1):
            cluster.add(
                "controllerrevisions",
                controller_revision(
                    namespace, "StatefulSet", "cache", f"{revision:09x}", [("redis", redis)], revision=revision
                ),
            )
        cluster.add("cronjobs", cron_job(namespace, "report", "0 * * * *", [("report", f"{ECR}/{namespace}/report:2")]))
        for run in range(3):
            cluster.add(
                "jobs",
                job(namespace, f"report-2939{run:04d}", [("report", f"{ECR}/{namespace}/report:2")], cron_job="report"),
            )
    cluster.add("daemonsets", daemon_set("kube-system", "aws-node", [("aws-node", f"{ECR}/amazon-k8s-cni:v1.19.2")]))
    return cluster


def _realistic_bulk(item: dict[str, Any]) -> dict[str, Any]:
    """What makes real pod JSON large and the exporter ignores: managedFields, env, volumes, probes."""
    item["metadata"]["managedFields"] = [
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-20T08:15:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {f"f:{key}": {} for key in ("metadata", "spec", "status", "labels", "annotations")},
        }
        for manager in ("kube-controller-manager", "kubelet")
    ]
    for container in item["spec"]["containers"]:
        container["env"] = [{"name": f"SETTING_{n}", "value": f"value-{n}"} for n in range(12)]
        container["ports"] = [{"containerPort": 8080, "protocol": "TCP", "name": "http"}]
        container["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10}
        container["volumeMounts"] = [
            {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ]
    item["spec"]["volumes"] = [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {}}]}}]
    item["spec"]["tolerations"] = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    ]
    return item


def serve(pods: int, ready: Connection) -> None:
    cluster = build_cluster(pods)
    server = FakeApiServer(cluster, token=TOKEN)
    ready.send((server.url, {plural: len(items) for plural, items in cluster.objects.items()}))
    server.serve_forever()


def export(tree: Path, kubeconfig: Path, out: Path, page_size: int | None) -> ChildRun:
    command = [sys.executable, "-m", "ecr_retention", "export", "--cluster", "bench", "--kubeconfig", str(kubeconfig)]
    command += ["--out", str(out), *(["--page-size", str(page_size)] if page_size else [])]
    with open(out.with_suffix(".stdout"), "w") as stdout:
        run = run_child(command, env=tree_environment(tree), stdout=stdout)
    if run.returncode != 0:
        raise SystemExit(f"ecr-retention export failed with exit code {run.returncode}")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tree_argument(parser)
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--page-size", type=int, help="objects per list request (default: the command's)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("fork").Process(target=serve, args=(args.pods, send), daemon=True)
    server.start()
    url, counts = receive.recv()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            kubeconfig = Path(scratch) / "kubeconfig"
            kubeconfig.write_text(
                "apiVersion: v1\nkind: Config\ncurrent-context: bench\n"
                f"clusters: [{{name: bench, cluster: {{server: '{url}'}}}}]\n"
                f"users: [{{name: bench, user: {{token: {TOKEN}}}}}]\n"
                "contexts: [{name: bench, context: {cluster: bench, user: bench}}]\n"
            )
            out = Path(scratch) / "bench.json"
            runs = [export(args.tree, kubeconfig, out, args.page_size) for _ in range(args.rounds)]
            manifest_bytes = out.stat().st_size
            entries = len(json.loads(out.read_bytes())["images"])
    finally:
        server.terminate()
        server.join()

    print(f"cluster: {', '.join(f'{count:,} {plural}' for plural, count in counts.items())}")
    print(
        f"page size: {args.page_size or 'the command default'}; manifest: {entries:,} entries, {manifest_bytes:,} bytes"
    )
    print(f"`ecr-retention export --out`, each a fresh process, medians of {args.rounds}:")
    print(f"  wall time: {Spread.of([run.wall for run in runs]).show(2, ' s')}")
    print(f"  CPU time (exporter process): {Spread.of([run.cpu for run in runs]).show(2, ' s')}")
    print(f"  peak RSS: {Spread.of([run.peak_rss_mib for run in runs]).show(0, ' MiB')}")


if __name__ == "__main__":
    main()
