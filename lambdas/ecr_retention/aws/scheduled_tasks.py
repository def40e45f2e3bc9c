"""ECS tasks started on a schedule or by an event, read-only (ports.ScheduledTaskReader): EventBridge rule
targets with EcsParameters on every event bus, and EventBridge Scheduler schedules whose target is an ECS
cluster (EcsParameters) or the universal target `aws-sdk:ecs:runTask`."""

from __future__ import annotations

import json
from typing import Any

from ecr_retention.aws.reading import InventoryReadFailed, read, read_unless_gone
from ecr_retention.domain.inventory.aws import ScheduledTask, rule_workload, schedule_workload

PAGE_SIZE = 100  # the most ListEventBuses, ListRules, ListTargetsByRule and ListSchedules return
RUN_TASK_UNIVERSAL_TARGET = ":aws-sdk:ecs:runTask"
SCHEDULE_GONE = frozenset({"ResourceNotFoundException"})
RULE_GONE = frozenset({"ResourceNotFoundException"})


class ScheduledTasks:
    def __init__(self, events_client: Any, scheduler_client: Any) -> None:
        self._events = events_client
        self._scheduler = scheduler_client

    def event_buses(self) -> list[str]:
        return read("ListEventBuses", "EventBridge event buses", self._event_bus_names)

    def rules(self, bus: str) -> list[str]:
        def names() -> list[str]:
            pages = self._events.get_paginator("list_rules").paginate(
                EventBusName=bus, PaginationConfig={"PageSize": PAGE_SIZE}
            )
            return [str(rule["Name"]) for page in pages for rule in page.get("Rules", [])]

        return read("ListRules", f"EventBridge bus {bus}", names)

    def rule_tasks(self, bus: str, rule: str) -> list[ScheduledTask]:
        def targets() -> list[dict[str, Any]]:
            pages = self._events.get_paginator("list_targets_by_rule").paginate(
                Rule=rule, EventBusName=bus, PaginationConfig={"PageSize": PAGE_SIZE}
            )
            return [target for page in pages for target in page.get("Targets", [])]

        found = read_unless_gone("ListTargetsByRule", f"EventBridge rule {bus}/{rule}", targets, RULE_GONE) or []
        return [
            ScheduledTask(
                cluster_arn=str(target["Arn"]),
                workload=rule_workload(bus, rule),
                task_definition=str(target["EcsParameters"]["TaskDefinitionArn"]),
            )
            for target in found
            if (target.get("EcsParameters") or {}).get("TaskDefinitionArn")
        ]

    def schedules(self) -> list[tuple[str, str]]:
        def ecs_schedules() -> list[tuple[str, str]]:
            pages = self._scheduler.get_paginator("list_schedules").paginate(PaginationConfig={"PageSize": PAGE_SIZE})
            return [
                (str(schedule.get("GroupName", "default")), str(schedule["Name"]))
                for page in pages
                for schedule in page.get("Schedules", [])
                if _may_run_ecs_task(str((schedule.get("Target") or {}).get("Arn", "")))
            ]

        return read("ListSchedules", "EventBridge Scheduler schedules", ecs_schedules)

    def schedule_task(self, group: str, name: str) -> ScheduledTask | None:
        where = f"EventBridge Scheduler schedule {group}/{name}"
        schedule = read_unless_gone(
            "GetSchedule", where, lambda: self._scheduler.get_schedule(GroupName=group, Name=name), SCHEDULE_GONE
        )
        if schedule is None:
            return None
        target = schedule.get("Target") or {}
        arn = str(target.get("Arn", ""))
        definition: str | None
        if arn.endswith(RUN_TASK_UNIVERSAL_TARGET):
            cluster, definition = _run_task_target(target, where)
        else:
            cluster, definition = arn, (target.get("EcsParameters") or {}).get("TaskDefinitionArn")
        if not definition:
            return None
        return ScheduledTask(
            cluster_arn=cluster, workload=schedule_workload(group, name), task_definition=str(definition)
        )

    def _event_bus_names(self) -> list[str]:
        # ListEventBuses has no botocore paginator: follow NextToken by hand.
        names: list[str] = []
        token: str | None = None
        while True:
            request: dict[str, Any] = {"Limit": PAGE_SIZE}
            if token:
                request["NextToken"] = token
            response = self._events.list_event_buses(**request)
            names.extend(str(bus["Name"]) for bus in response.get("EventBuses", []))
            token = response.get("NextToken")
            if not token:
                return names


def _may_run_ecs_task(target_arn: str) -> bool:
    return (":ecs:" in target_arn and ":cluster/" in target_arn) or target_arn.endswith(RUN_TASK_UNIVERSAL_TARGET)


def _run_task_target(target: dict[str, Any], where: str) -> tuple[str, str]:
    """The cluster and task definition of an aws-sdk:ecs:runTask target, read from its Input."""
    request = _run_task_request(target.get("Input"))
    definition = request.get("TaskDefinition")
    cluster = str(request.get("Cluster") or "default")
    if not isinstance(definition, str) or not definition:
        # It runs a task nobody can name: its images cannot be protected, so say so.
        raise InventoryReadFailed(
            f"{where}: its aws-sdk:ecs:runTask target's Input names no TaskDefinition", code="UnreadableTarget"
        )
    return cluster, definition


def _run_task_request(text: object) -> dict[str, Any]:
    """The RunTask request a universal target sends (its Input, JSON with the API's member names)."""
    if not isinstance(text, str):
        return {}
    try:
        request = json.loads(text)
    except ValueError:
        return {}
    return request if isinstance(request, dict) else {}
