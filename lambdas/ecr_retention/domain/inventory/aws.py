"""What runs in one AWS account and region (ECS services, tasks, scheduled tasks, task-definition revisions,
Lambda container-image functions), as an ordinary in-use manifest named `aws-<account>-<region>`.

Pure: the AWS reading is in `aws/` (ecs_workloads, scheduled_tasks, lambda_functions), which hands over the
small values defined here; this module names the workloads and builds the manifest's entries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

# The collector's settings, named here too for the modules that read them with the entries (collection.py).
from ecr_retention.domain.inventory.collection import DEFAULT_REVISIONS as DEFAULT_REVISIONS
from ecr_retention.domain.inventory.collection import RoleArn as RoleArn
from ecr_retention.domain.inventory.collection import account_of_role as account_of_role
from ecr_retention.domain.inventory.collection import one_role_per_account as one_role_per_account
from ecr_retention.domain.inventory.manifest import InUseImage, InUseManifest, InUseSource
from ecr_retention.layout import AWS_INVENTORY_NAME_PREFIX

# The namespace of entries that belong to no ECS cluster: task-definition revisions kept for rollback, and
# Lambda functions. ECS cluster names cannot contain '.', but tagging namespaces can, so these stay plain words.
REVISIONS_NAMESPACE = "ecs"
LAMBDA_NAMESPACE = "lambda"
LAMBDA_CONTAINER = "function"

_TASK_DEFINITION_ARN = re.compile(
    r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:task-definition/(?P<family>[^:/]+):(?P<rev>\d+)$"
)
_DIGEST_IN_URI = re.compile(r"@(?P<digest>sha256:[a-f0-9]{64})$")
_DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")


def inventory_name(account: str, region: str) -> str:
    """The manifest's `cluster` and file name: `aws-123456789012-eu-west-1` (a valid ClusterName, so
    `safety.clusters` can name it)."""
    return f"{AWS_INVENTORY_NAME_PREFIX}{account}-{region}"


@dataclass(frozen=True)
class ContainerImage:
    container: str
    image: str
    digest: str | None = None  # only where AWS resolved it: a task's containers[].imageDigest, ResolvedImageUri


@dataclass(frozen=True)
class TaskDefinition:
    arn: str  # always with its revision
    family: str
    revision: int
    containers: tuple[ContainerImage, ...]


@dataclass(frozen=True)
class EcsService:
    cluster_arn: str
    name: str
    # Every deployment that is PRIMARY or ACTIVE (a rollout, or a rollback, in progress) and every task set
    # (blue/green, external controllers): what the service may start tasks from.
    task_definition_arns: tuple[str, ...]


@dataclass(frozen=True)
class EcsTask:
    cluster_arn: str
    group: str  # "service:web", "family:nightly", or what RunTask was given
    task_definition_arn: str
    containers: tuple[ContainerImage, ...]  # with the digests ECS resolved


@dataclass(frozen=True)
class ScheduledTask:
    """An EventBridge rule target or an EventBridge Scheduler schedule that runs an ECS task."""

    cluster_arn: str
    workload: str  # "Rule/nightly", "Rule/<bus>/<rule>", "Schedule/<group>/<name>"
    task_definition: str  # an ARN, with or without revision (without: the family's latest ACTIVE revision)


@dataclass(frozen=True)
class FunctionCode:
    image_uri: str  # Code.ImageUri: as deployed (a tag or a digest reference)
    digest: str | None  # from Code.ResolvedImageUri


@dataclass(frozen=True)
class FunctionAlias:
    name: str
    versions: tuple[str, ...]  # FunctionVersion, and the versions of its RoutingConfig


@dataclass(frozen=True)
class ImageUse:
    """One workload's images, before they become manifest entries."""

    namespace: str
    workload: str
    source: InUseSource
    containers: tuple[ContainerImage, ...]


def cluster_name(cluster_arn: str) -> str:
    """arn:aws:ecs:eu-west-1:123456789012:cluster/prod -> prod (a bare name stays as it is)."""
    return cluster_arn.rsplit("/", 1)[-1]


def parse_task_definition_arn(arn: str) -> tuple[str, int] | None:
    """(family, revision) of a revisioned task-definition ARN; None for anything else."""
    match = _TASK_DEFINITION_ARN.match(arn)
    return (match["family"], int(match["rev"])) if match else None


def newest_revisions(arns: Iterable[str], keep: int) -> list[str]:
    """The `keep` newest revisions of each family among these ARNs, what a rollback goes back to; sorted."""
    by_family: dict[str, list[tuple[int, str]]] = {}
    for arn in arns:
        parsed = parse_task_definition_arn(arn)
        if parsed is not None:
            by_family.setdefault(parsed[0], []).append((parsed[1], arn))
    kept = [arn for revisions in by_family.values() for _, arn in sorted(revisions, reverse=True)[:keep]]
    return sorted(kept)


def task_workload(group: str) -> str:
    """What a person manages: a task of group `service:web` is `Service/web`; any other task is `Task/<group>`
    (RunTask's default group is `family:<family>`)."""
    kind, _, name = group.partition(":")
    if kind == "service" and name:
        return f"Service/{name}"
    return f"Task/{group}" if group else "Task/-"


def rule_workload(bus: str, rule: str) -> str:
    return f"Rule/{rule}" if bus == "default" else f"Rule/{bus}/{rule}"


def schedule_workload(group: str, name: str) -> str:
    return f"Schedule/{group}/{name}"


def revision_workload(definition: TaskDefinition) -> str:
    return f"TaskDefinition/{definition.family}:{definition.revision}"


def function_workload(function: str, qualifier: str) -> str:
    return f"Function/{function}:{qualifier}"


def digest_of_resolved_uri(resolved_image_uri: str | None) -> str | None:
    """`<repository>@sha256:<hex>` -> `sha256:<hex>`; None when absent or not of that form."""
    if not resolved_image_uri:
        return None
    match = _DIGEST_IN_URI.search(resolved_image_uri)
    return match["digest"] if match else None


def resolved_digest(text: object) -> str | None:
    """A digest AWS reported (a task container's imageDigest), or None when absent or not a sha256 digest:
    the image reference still protects what its tag points to."""
    return text if isinstance(text, str) and _DIGEST.match(text) else None


def task_definition_use(namespace: str, workload: str, source: InUseSource, definition: TaskDefinition) -> ImageUse:
    return ImageUse(namespace=namespace, workload=workload, source=source, containers=definition.containers)


def task_use(task: EcsTask) -> ImageUse:
    return ImageUse(
        namespace=cluster_name(task.cluster_arn),
        workload=task_workload(task.group),
        source="ecs-task",
        containers=task.containers,
    )


def function_use(function: str, qualifier: str, code: FunctionCode) -> ImageUse:
    return ImageUse(
        namespace=LAMBDA_NAMESPACE,
        workload=function_workload(function, qualifier),
        source="lambda",
        containers=(ContainerImage(LAMBDA_CONTAINER, code.image_uri, code.digest),),
    )


# namespace, workload, source, container, image, digest: the manifest's sort order, too.
_EntryKey = tuple[str, str, InUseSource, str, str, str | None]


def build_aws_manifest(name: str, generated_at: datetime, uses: Iterable[ImageUse], *, complete: bool) -> InUseManifest:
    """One entry per distinct (image, digest, namespace, workload, container, source), sorted, so that two
    collections of an unchanged account are byte-identical apart from `generatedAt`."""
    entries: set[_EntryKey] = {
        (use.namespace, use.workload, use.source, container.container, container.image, container.digest)
        for use in uses
        for container in use.containers
        if container.image
    }
    images = tuple(
        InUseImage(
            image=image, digest=digest, namespace=namespace, workload=workload, container=container, source=source
        )
        for namespace, workload, source, container, image, digest in sorted(entries, key=_sort_key)
    )
    return InUseManifest(schema_version=1, cluster=name, generated_at=generated_at, complete=complete, images=images)


def count_summary(counts: Mapping[str, int]) -> str:
    """`3 clusters, 5 services, ...` in the given order."""
    return ", ".join(f"{count} {what}" for what, count in counts.items())


def _sort_key(entry: _EntryKey) -> tuple[str, str, str, str, str, str]:
    namespace, workload, source, container, image, digest = entry
    return namespace, workload, source, container, image, digest or ""
