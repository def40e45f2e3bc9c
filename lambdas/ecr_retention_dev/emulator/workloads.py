"""moto's ECS, Lambda, EventBridge, Scheduler and STS for the AWS inventory collector: the gaps it has filled in,
faults on demand, and helpers that seed workloads as AWS would show them.

Used by `ecr-retention demo` (an ECS service and a Lambda function that use the demo registry's images) and by the
tests. moto is a development dependency: only the demo command and the tests import this module.

moto 5.2.5 gaps filled here, by patching `BaseResponse.call_action` for the length of a `with AwsFidelity():`
block, or by editing moto's backend where no API can do it (the backend is in this process, so the edits hold for
the in-process `mock_aws` and for a `ThreadedMotoServer` alike):

- Paging: ECS ListClusters, ListServices, ListTasks, ListTaskDefinitions and Lambda ListFunctions, ListAliases
  return everything in one page (moto ignores maxResults/MaxItems and tokens). Here they honour the request's page
  size, capped at `page_size` so that a handful of resources spans several pages (AWS too may return fewer items
  than asked for), with `nextToken`/`NextMarker`. EventBridge and Scheduler lists page natively in moto.
- Faults: `fail`/`throttle` answer chosen requests of any operation of these services with an error response
  (botocore then retries for real, so a throttle that ends before the client's attempts do is survived).
- A rollout or rollback in progress: moto's UpdateService does not add a deployment; `roll_back` sets the
  service's deployments as ECS shows them mid-rollback (PRIMARY: the target, ACTIVE: the one being replaced).
- RunTask needs a container instance (one is registered per cluster), reports only the first container and no
  `imageDigest`; `run_tasks` fills in every container with the digest ECS would have resolved.
- Lambda: `ResolvedImageUri` carries a digest moto makes up (sha256 of the URI text) and, after
  UpdateFunctionCode, every published version reports the new ImageUri. `image_function`, `publish` and
  `update_image` set the digest of the image really pushed, and give each published version its own code.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from moto.awslambda.models import lambda_backends
from moto.core.responses import BaseResponse
from moto.ecs.models import ecs_backends

# (service, operation) -> (items key, request token, request page size, response token, where the request has them)
PAGED: Mapping[tuple[str, str], tuple[str, str, str, str, str]] = {
    ("ecs", "ListClusters"): ("clusterArns", "nextToken", "maxResults", "nextToken", "json"),
    ("ecs", "ListServices"): ("serviceArns", "nextToken", "maxResults", "nextToken", "json"),
    ("ecs", "ListTasks"): ("taskArns", "nextToken", "maxResults", "nextToken", "json"),
    ("ecs", "ListTaskDefinitions"): ("taskDefinitionArns", "nextToken", "maxResults", "nextToken", "json"),
    ("lambda", "ListFunctions"): ("Functions", "Marker", "MaxItems", "NextMarker", "query"),
    ("lambda", "ListAliases"): ("Aliases", "Marker", "MaxItems", "NextMarker", "query"),
}
XML_SERVICES = frozenset({"sts"})


@dataclass
class _Fault:
    service: str
    operation: str
    code: str
    status: int
    first: int
    last: int


@dataclass
class AwsFidelity:
    """`with AwsFidelity(page_size=2) as aws:` inside `mock_aws()`. `served` counts the requests moto answered
    per (service, operation), retries and injected faults included."""

    page_size: int = 100
    served: Counter[tuple[str, str]] = field(default_factory=Counter)
    _faults: list[_Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(
        self, service: str, operation: str, code: str, *, times: int = 1, after: int = 0, status: int = 400
    ) -> None:
        """Answer `times` requests of the operation (counted from now, after the first `after`) with an error."""
        with self._lock:
            start = self.served[(service, operation)] + after + 1
            self._faults.append(_Fault(service, operation, code, status, start, start + times - 1))

    def throttle(self, service: str, operation: str, *, times: int = 1, after: int = 0) -> None:
        code, status = ("TooManyRequestsException", 429) if service == "lambda" else ("ThrottlingException", 400)
        self.fail(service, operation, code, times=times, after=after, status=status)

    @contextmanager
    def patched(self) -> Iterator[AwsFidelity]:
        original = BaseResponse.call_action
        fidelity = self

        def call_action(response: BaseResponse) -> Any:
            return fidelity._serve(response, original)

        with mock.patch.object(BaseResponse, "call_action", call_action):
            yield self

    def __enter__(self) -> AwsFidelity:
        self._context = self.patched()
        return self._context.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self._context.__exit__(*exc_info)

    def _serve(self, response: BaseResponse, original: Callable[[BaseResponse], Any]) -> Any:
        key = (response.boto3_service_name, response._get_action())
        with self._lock:
            self.served[key] += 1
            number = self.served[key]
            fault = next(
                (f for f in self._faults if (f.service, f.operation) == key and f.first <= number <= f.last), None
            )
        if fault is not None:
            return _error(key[0], fault)
        if key in PAGED:
            return self._page(response, original, *PAGED[key])
        return original(response)

    def _page(
        self,
        response: BaseResponse,
        original: Callable[[BaseResponse], Any],
        items_key: str,
        token_name: str,
        size_name: str,
        next_name: str,
        where: str,
    ) -> Any:
        if where == "json":
            token, size = response._get_param(token_name), response._get_param(size_name)
        else:
            token = response.querystring.get(token_name, [None])[0]
            size = response.querystring.get(size_name, [None])[0]
        status, headers, body = original(response)
        document = json.loads(body)
        items = document.get(items_key, [])
        offset = int(json.loads(base64.b64decode(token))["offset"]) if token else 0
        count = min(int(size) if size else 100, self.page_size)
        document[items_key] = items[offset : offset + count]
        document.pop(next_name, None)
        if offset + count < len(items):
            document[next_name] = base64.b64encode(json.dumps({"offset": offset + count}).encode()).decode()
        return status, headers, json.dumps(document, default=str)


def _error(service: str, fault: _Fault) -> tuple[int, dict[str, str], str]:
    if service in XML_SERVICES:
        body = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{fault.code}</Code><Message>injected {fault.code}"
            "</Message></Error><RequestId>00000000-0000-4000-8000-000000000000</RequestId></ErrorResponse>"
        )
        return fault.status, {"Content-Type": "text/xml"}, body
    body = json.dumps({"__type": fault.code, "message": f"injected {fault.code}"})
    return fault.status, {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": fault.code}, body


# ---------------------------------------------------------------------------------------------------------------
# Seeding workloads


class MotoWorkloads:
    """ECS, Lambda, EventBridge and Scheduler of one account in one region, seeded through their APIs (with a
    boto3 session of that account: moto keeps one backend per account), plus the backend edits above.
    `endpoint_url` names a moto server (in this process); without it the clients go where the session sends them."""

    def __init__(self, session: Any, account: str, region: str, *, endpoint_url: str | None = None) -> None:
        self.account = account
        self.region = region
        options = {"region_name": region, "endpoint_url": endpoint_url}
        self.ecs = session.client("ecs", **options)
        self.ec2 = session.client("ec2", **options)
        self.events = session.client("events", **options)
        self.scheduler = session.client("scheduler", **options)
        self.lambda_ = session.client("lambda", **options)
        self.iam = session.client("iam", **options)
        self._instances: set[str] = set()
        self._role: str | None = None

    # ECS

    def cluster(self, name: str) -> str:
        return str(self.ecs.create_cluster(clusterName=name)["cluster"]["clusterArn"])

    def task_definition(self, family: str, containers: Mapping[str, str]) -> str:
        """A new revision of the family: container name -> image."""
        definitions = [{"name": name, "image": image, "memory": 128} for name, image in containers.items()]
        response = self.ecs.register_task_definition(family=family, containerDefinitions=definitions)
        return str(response["taskDefinition"]["taskDefinitionArn"])

    def deregister(self, arn: str) -> None:
        self.ecs.deregister_task_definition(taskDefinition=arn)

    def service(self, cluster: str, name: str, task_definition: str, **extra: Any) -> str:
        response = self.ecs.create_service(
            cluster=cluster, serviceName=name, taskDefinition=task_definition, desiredCount=2, **extra
        )
        return str(response["service"]["serviceArn"])

    def roll_back(self, cluster: str, name: str, *, failed: str, target: str, finished: str | None = None) -> None:
        """The service mid-rollback, as DescribeServices shows it after the circuit breaker tripped: the
        previous task definition is PRIMARY again, the failed deployment is ACTIVE until its tasks drain, and an
        older, finished deployment (`finished`) is INACTIVE."""
        service = ecs_backends[self.account][self.region].services[f"{cluster}:{name}"]
        template = dict(service.deployments[0])
        deployments = [
            {**template, "id": "ecs-svc/1000000000000000002", "status": "PRIMARY", "taskDefinition": target},
            {**template, "id": "ecs-svc/1000000000000000001", "status": "ACTIVE", "taskDefinition": failed},
        ]
        deployments[0]["rolloutState"], deployments[1]["rolloutState"] = "IN_PROGRESS", "FAILED"
        if finished is not None:
            deployments.append(
                {**template, "id": "ecs-svc/1000000000000000000", "status": "INACTIVE", "taskDefinition": finished}
            )
        service.deployments = deployments
        service.task_definition = target

    def run_tasks(
        self, cluster: str, task_definition: str, *, group: str, digests: Mapping[str, str], count: int = 1
    ) -> list[str]:
        """Running tasks with every container of the definition and the digest ECS resolved for each."""
        self._container_instance(cluster)
        tasks: list[dict[str, Any]] = []
        while len(tasks) < count:  # RunTask starts at most 10 a call, and moto places them by instance memory
            asked = min(10, count - len(tasks))
            started = self.ecs.run_task(cluster=cluster, taskDefinition=task_definition, count=asked, group=group)
            tasks.extend(started["tasks"])
            if len(started["tasks"]) < asked:
                self._container_instance(cluster, another=True)
        definition = self.ecs.describe_task_definition(taskDefinition=task_definition)["taskDefinition"]
        backend = ecs_backends[self.account][self.region]
        arns = []
        for described in tasks:
            task = backend.tasks[cluster][described["taskArn"]]
            # Plain dicts, which moto serialises as given: its Container model names only the first container of
            # the definition and has no imageDigest.
            containers: Any = [
                {
                    "containerArn": f"{described['taskArn']}/{container['name']}",
                    "taskArn": described["taskArn"],
                    "name": container["name"],
                    "image": container["image"],
                    "imageDigest": digests[container["name"]],
                    "lastStatus": "RUNNING",
                }
                for container in definition["containerDefinitions"]
            ]
            task.containers = containers
            arns.append(described["taskArn"])
        return arns

    def rule_task(self, rule: str, cluster_arn: str, task_definition: str, *, bus: str = "default") -> None:
        if bus != "default":
            with suppress(self.events.exceptions.ResourceAlreadyExistsException):
                self.events.create_event_bus(Name=bus)
        self.events.put_rule(Name=rule, ScheduleExpression="cron(0 3 * * ? *)", EventBusName=bus)
        self.events.put_targets(
            Rule=rule,
            EventBusName=bus,
            Targets=[
                {
                    "Id": "task",
                    "Arn": cluster_arn,
                    "RoleArn": f"arn:aws:iam::{self.account}:role/ecs-events",
                    "EcsParameters": {"TaskDefinitionArn": task_definition, "TaskCount": 1},
                }
            ],
        )

    def schedule_task(self, group: str, name: str, cluster_arn: str, task_definition: str) -> None:
        if group != "default":
            with suppress(self.scheduler.exceptions.ConflictException):
                self.scheduler.create_schedule_group(Name=group)
        self.scheduler.create_schedule(
            Name=name,
            GroupName=group,
            ScheduleExpression="rate(1 hour)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={
                "Arn": cluster_arn,
                "RoleArn": f"arn:aws:iam::{self.account}:role/scheduler",
                "EcsParameters": {"TaskDefinitionArn": task_definition},
            },
        )

    # Lambda

    def image_function(self, name: str, image_uri: str, digest: str) -> None:
        self.lambda_.create_function(
            FunctionName=name, Role=self._function_role(), PackageType="Image", Code={"ImageUri": image_uri}
        )
        self._latest(name).code_sha_256 = digest.removeprefix("sha256:")

    def zip_function(self, name: str) -> None:
        self.lambda_.create_function(
            FunctionName=name,
            Role=self._function_role(),
            Runtime="python3.12",
            Handler="app.handler",
            Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18},
        )

    def publish(self, name: str) -> str:
        version = str(self.lambda_.publish_version(FunctionName=name)["Version"])
        for published in self._functions(name)["versions"]:
            published.code = dict(published.code)  # its own code: a later update must not change it
        return version

    def update_image(self, name: str, image_uri: str, digest: str) -> None:
        self.lambda_.update_function_code(FunctionName=name, ImageUri=image_uri)
        self._latest(name).code_sha_256 = digest.removeprefix("sha256:")

    def alias(self, name: str, alias: str, version: str, *, also: Mapping[str, float] | None = None) -> None:
        extra: dict[str, Any] = {}
        if also:
            extra["RoutingConfig"] = {"AdditionalVersionWeights": dict(also)}
        self.lambda_.create_alias(FunctionName=name, Name=alias, FunctionVersion=version, **extra)

    def _functions(self, name: str) -> dict[str, Any]:
        functions: dict[str, Any] = lambda_backends[self.account][self.region]._lambdas._functions[name]
        return functions

    def _latest(self, name: str) -> Any:
        return self._functions(name)["latest"]

    def _function_role(self) -> str:
        if self._role is None:
            trust = {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ],
            }
            self._role = str(
                self.iam.create_role(RoleName="function", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
            )
        return self._role

    def _container_instance(self, cluster: str, *, another: bool = False) -> None:
        if cluster in self._instances and not another:
            return
        instance = self.ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]
        document = {
            "instanceId": instance["InstanceId"],
            "region": self.region,
            "availabilityZone": f"{self.region}a",
            "instanceType": "m5.large",
            "accountId": self.account,
            "privateIp": "10.0.0.10",
            "imageId": "ami-12c6146b",
        }
        self.ecs.register_container_instance(cluster=cluster, instanceIdentityDocument=json.dumps(document))
        self._instances.add(cluster)
