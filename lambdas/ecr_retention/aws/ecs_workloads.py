"""ECS in one account and region, read-only (ports.EcsReader): clusters, services with their deployments and task
sets, running and pending tasks with the digests ECS resolved, ACTIVE task definitions, task definitions by ARN."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ecr_retention.aws.reading import InventoryReadFailed, read, read_unless_gone
from ecr_retention.domain.inventory.aws import (
    ContainerImage,
    EcsService,
    EcsTask,
    TaskDefinition,
    cluster_name,
    parse_task_definition_arn,
    resolved_digest,
)

PAGE_SIZE = 100  # the most ListClusters, ListServices (default 10), ListTasks and ListTaskDefinitions return
DESCRIBE_SERVICES_BATCH = 10  # DescribeServices takes at most 10 services a call
DESCRIBE_TASKS_BATCH = 100  # DescribeTasks takes at most 100 tasks a call
# Deployments a service may start tasks from; INACTIVE ones are finished and replaced.
LIVE_DEPLOYMENT_STATUSES = frozenset({"PRIMARY", "ACTIVE"})
CLUSTER_GONE = frozenset({"ClusterNotFoundException"})


class EcsWorkloads:
    """One ECS client (one account, one region). Task definitions are cached by ARN for the object's lifetime
    (and so are the ones that could not be read): create one per collection, so that a run never reads the same
    definition twice and never reuses the last run's answers."""

    def __init__(self, ecs_client: Any) -> None:
        self._client = ecs_client
        self._definitions: dict[str, TaskDefinition] = {}
        # A definition that could not be read is not asked for again in this run: after 8 throttled attempts,
        # asking once more for each service that names it would only take minutes to fail the same way.
        self._unreadable: dict[str, InventoryReadFailed] = {}

    def cluster_arns(self) -> list[str]:
        return read("ListClusters", "ECS clusters", lambda: self._list("list_clusters", "clusterArns"))

    def services(self, cluster_arn: str) -> list[EcsService]:
        where = f"ECS cluster {cluster_name(cluster_arn)}"
        arns = read_unless_gone(
            "ListServices", where, lambda: self._list("list_services", "serviceArns", cluster=cluster_arn), CLUSTER_GONE
        )
        services: list[EcsService] = []
        for batch in _batches(arns or [], DESCRIBE_SERVICES_BATCH):
            response = read_unless_gone(
                "DescribeServices",
                where,
                partial(self._client.describe_services, cluster=cluster_arn, services=batch),
                CLUSTER_GONE,
            )
            if response is None:
                return services
            _check_failures(response, "DescribeServices", where)
            services.extend(_service(cluster_arn, item) for item in response.get("services", []))
        return services

    def tasks(self, cluster_arn: str) -> list[EcsTask]:
        where = f"ECS cluster {cluster_name(cluster_arn)}"
        # Desired status RUNNING lists running tasks and the pending ones that are still to pull their images.
        arns = read_unless_gone(
            "ListTasks",
            where,
            lambda: self._list("list_tasks", "taskArns", cluster=cluster_arn, desiredStatus="RUNNING"),
            CLUSTER_GONE,
        )
        tasks: list[EcsTask] = []
        for batch in _batches(arns or [], DESCRIBE_TASKS_BATCH):
            response = read_unless_gone(
                "DescribeTasks",
                where,
                partial(self._client.describe_tasks, cluster=cluster_arn, tasks=batch),
                CLUSTER_GONE,
            )
            if response is None:
                return tasks
            _check_failures(response, "DescribeTasks", where)
            tasks.extend(self._task(cluster_arn, item) for item in response.get("tasks", []))
        return tasks

    def active_task_definition_arns(self) -> list[str]:
        # One listing of the whole account: ListTaskDefinitions' familyPrefix is a prefix (family `web` would
        # also list `web-worker`), so asking family by family would not be cheaper or simpler.
        return read(
            "ListTaskDefinitions",
            "ECS task definitions",
            lambda: self._list("list_task_definitions", "taskDefinitionArns", status="ACTIVE"),
        )

    def task_definition(self, arn: str) -> TaskDefinition:
        cached = self._definitions.get(arn)
        if cached is not None:
            return cached
        if arn in self._unreadable:
            raise self._unreadable[arn]
        try:
            response = read(
                "DescribeTaskDefinition",
                f"ECS task definition {arn}",
                lambda: self._client.describe_task_definition(taskDefinition=arn),
            )
        except InventoryReadFailed as error:
            self._unreadable[arn] = error
            raise
        definition = _task_definition(response["taskDefinition"])
        # A family ARN without a revision means its latest ACTIVE revision; both names now have an answer.
        self._definitions[arn] = self._definitions[definition.arn] = definition
        return definition

    def _list(self, operation: str, key: str, **parameters: Any) -> list[str]:
        paginator = self._client.get_paginator(operation)
        pages = paginator.paginate(**parameters, PaginationConfig={"PageSize": PAGE_SIZE})
        return [arn for page in pages for arn in page.get(key, [])]

    def _task(self, cluster_arn: str, item: dict[str, Any]) -> EcsTask:
        definition_arn = str(item.get("taskDefinitionArn", ""))
        containers = []
        for container in item.get("containers", []):
            name = str(container.get("name", ""))
            image = container.get("image") or self._image_in_definition(definition_arn, name)
            if image:
                containers.append(ContainerImage(name, str(image), resolved_digest(container.get("imageDigest"))))
        return EcsTask(
            cluster_arn=cluster_arn,
            group=str(item.get("group", "")),
            task_definition_arn=definition_arn,
            containers=tuple(containers),
        )

    def _image_in_definition(self, definition_arn: str, container: str) -> str | None:
        """DescribeTasks names each container's image; should it not, the task definition does."""
        if not definition_arn:
            return None
        for candidate in self.task_definition(definition_arn).containers:
            if candidate.container == container:
                return candidate.image
        return None


def _service(cluster_arn: str, item: dict[str, Any]) -> EcsService:
    arns = [
        deployment["taskDefinition"]
        for deployment in item.get("deployments", [])
        if deployment.get("status") in LIVE_DEPLOYMENT_STATUSES and deployment.get("taskDefinition")
    ]
    arns += [task_set["taskDefinition"] for task_set in item.get("taskSets", []) if task_set.get("taskDefinition")]
    if not arns and item.get("taskDefinition"):
        arns.append(item["taskDefinition"])
    return EcsService(
        cluster_arn=cluster_arn, name=str(item["serviceName"]), task_definition_arns=tuple(dict.fromkeys(arns))
    )


def _task_definition(item: dict[str, Any]) -> TaskDefinition:
    arn = str(item["taskDefinitionArn"])
    parsed = parse_task_definition_arn(arn)
    family, revision = parsed if parsed else (str(item.get("family", "")), int(item.get("revision", 0)))
    containers = tuple(
        ContainerImage(str(container.get("name", "")), str(container["image"]))
        for container in item.get("containerDefinitions", [])
        if container.get("image")
    )
    return TaskDefinition(arn=arn, family=family, revision=revision, containers=containers)


def _check_failures(response: dict[str, Any], operation: str, where: str) -> None:
    """MISSING: deleted since the list (nothing to protect). Any other failure leaves a resource unread."""
    failures = [failure for failure in response.get("failures", []) if failure.get("reason") != "MISSING"]
    if failures:
        first = failures[0]
        more = f" and {len(failures) - 1} more" if len(failures) > 1 else ""
        raise InventoryReadFailed(
            f"{where}: {operation} failed for {first.get('arn', '?')}{more}: {first.get('reason', 'unknown')}",
            code=str(first.get("reason", "Failure")),
        )


def _batches(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[start : start + size]) for start in range(0, len(items), size)]
