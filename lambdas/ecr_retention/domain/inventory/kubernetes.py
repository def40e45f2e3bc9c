"""The Kubernetes kinds whose objects name container images: what a cluster's in-use reading lists, cluster-wide,
whether the in-cluster exporter or the agentless collector reads it (ecr_retention.kube). The ports speak these."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """One kind a reading of a cluster lists, cluster-wide (the exporter, the agentless collector)."""

    kind: str
    api_group: str  # "" is the core group
    version: str
    plural: str

    @property
    def list_path(self) -> str:
        prefix = "/api" if not self.api_group else f"/apis/{self.api_group}"
        return f"{prefix}/{self.version}/{self.plural}"


POD = Resource("Pod", "", "v1", "pods")
DEPLOYMENT = Resource("Deployment", "apps", "v1", "deployments")
STATEFUL_SET = Resource("StatefulSet", "apps", "v1", "statefulsets")
DAEMON_SET = Resource("DaemonSet", "apps", "v1", "daemonsets")
REPLICA_SET = Resource("ReplicaSet", "apps", "v1", "replicasets")
# StatefulSet and DaemonSet rollback history: `kubectl rollout undo` restores a revision's pod template.
CONTROLLER_REVISION = Resource("ControllerRevision", "apps", "v1", "controllerrevisions")
JOB = Resource("Job", "batch", "v1", "jobs")
CRON_JOB = Resource("CronJob", "batch", "v1", "cronjobs")

# Every kind whose objects name images. The ClusterRole in deploy/ grants get/list on exactly these.
COLLECTED_RESOURCES: tuple[Resource, ...] = (
    POD,
    DEPLOYMENT,
    STATEFUL_SET,
    DAEMON_SET,
    REPLICA_SET,
    CONTROLLER_REVISION,
    JOB,
    CRON_JOB,
)
