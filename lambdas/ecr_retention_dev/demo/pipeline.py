"""Run what AWS runs: the real Lambda handlers, in the order the schedules and the state machine call them.

A deployment is the environment the CDK stack gives the functions (BUCKET_NAME, TOPIC_ARN, LEASE_TABLE, the rules
file, the collector's regions). Each deployment starts cold: the cached settings, rules and clients are dropped, as
a new function version would. The AWS inventory collector runs on its own schedule shortly before the sweep's. One sweep is what the state machine does: the targets step writes `runs/<runId>/targets.json`, the
Distributed Map reads it and invokes the evaluate function once per item, the report step gathers the results.
"""

from __future__ import annotations

import io
import json
import logging
import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ecr_retention.aws.clients import set_default_factory
from ecr_retention.cdk.constants import DEFAULT_MAP_CONCURRENCY

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, object]]


class DemoContext(LambdaContext):
    """The Lambda context a function receives, for one invocation."""

    def __init__(self, function_name: str, account: str, region: str) -> None:
        self._function_name = function_name
        self._function_version = "$LATEST"
        self._invoked_function_arn = f"arn:aws:lambda:{region}:{account}:function:{function_name}"
        self._memory_limit_in_mb = 1024
        self._aws_request_id = str(uuid.uuid4())
        self._log_group_name = f"/aws/lambda/{function_name}"
        self._log_stream_name = f"{datetime.now(UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 900_000


@dataclass(frozen=True)
class Deployment:
    """The functions' environment, as the stack sets it."""

    bucket: str
    topic_arn: str
    lease_table: str
    rules_file: Path
    account: str
    region: str
    eks_clusters: tuple[str, ...] = ()  # read through their API (demo.agentless)
    regions: tuple[str, ...] = ()  # the Regions the deployment prunes (the stack's context `regions`), home first

    def environment(self) -> dict[str, str]:
        return {
            "BUCKET_NAME": self.bucket,
            "TOPIC_ARN": self.topic_arn,
            "LEASE_TABLE": self.lease_table,
            # The stack's default mapConcurrency: the targets step sizes the run's batches by it.
            "MAP_CONCURRENCY": str(DEFAULT_MAP_CONCURRENCY),
            "RULES_FILE": str(self.rules_file),
            # The sentinel's role, as the stack names it to the sentinel and the report step: the one writer whose
            # records of removals/ count (the emulator, like every caller here, acts as one principal).
            "SENTINEL_ROLE_ARN": f"arn:aws:iam::{self.account}:role/ecr-retention-sentinel",
            # The collector's (docs/aws-inventory.md): this account in this region, no spoke account.
            "COLLECT_REGIONS": json.dumps([self.region]),
            "TASK_DEFINITION_REVISIONS": "5",
            "EKS_CLUSTERS": json.dumps(list(self.eks_clusters)),
            # inspectorInUse: the emulator serves Inspector's coverage of the ECS service's image.
            "INSPECTOR_IN_USE": "true",
            # The stack sets it only when it prunes more than its own Region.
            **({"PRUNED_REGIONS": json.dumps(list(self.regions))} if len(self.regions) > 1 else {}),
            "POWERTOOLS_SERVICE_NAME": "ecr-retention",
            "POWERTOOLS_METRICS_NAMESPACE": "EcrRetention",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }


@dataclass(frozen=True)
class Invocation:
    function: str
    result: dict[str, object]
    metrics: dict[str, float]  # what the function recorded (its CloudWatch embedded-metric output)


@dataclass
class Sweep:
    targets: Invocation
    items: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[Invocation] = field(default_factory=list)
    report: Invocation | None = None


def scheduler_event(account: str, region: str, schedule: str) -> dict[str, Any]:
    """What EventBridge Scheduler delivers to a function target."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "account": account,
        "time": f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}",
        "region": region,
        "resources": [f"arn:aws:scheduler:{region}:{account}:schedule/default/{schedule}"],
        "detail": "{}",
    }


class Functions:
    """The deployed functions, invoked as their triggers invoke them."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment

    def collector(self) -> Invocation:
        """The AWS inventory collector on its schedule (EventBridge Scheduler), before the sweep's."""
        from ecr_retention.handlers import collector

        event = scheduler_event(self.deployment.account, self.deployment.region, "ecr-retention-collector")
        return invoke("ecr-retention-collector", collector.lambda_handler, event, self.deployment)

    def tagger(self) -> Invocation:
        """The tagger on its schedule (EventBridge Scheduler)."""
        from ecr_retention.handlers import tagger

        event = scheduler_event(self.deployment.account, self.deployment.region, "ecr-retention-tagger")
        return invoke("ecr-retention-tagger", tagger.lambda_handler, event, self.deployment)

    def sentinel(self, event: dict[str, Any]) -> Invocation:
        """The sentinel, invoked by one of its EventBridge rules with the event the rule matched."""
        from ecr_retention.handlers import sentinel

        return invoke("ecr-retention-sentinel", sentinel.lambda_handler, event, self.deployment)

    def sweep(self, read_object: Callable[[str, str], bytes]) -> Sweep:
        """One scheduled execution of the state machine: targets -> evaluate per item -> report."""
        from ecr_retention.handlers import evaluate, report, targets

        started = invoke("ecr-retention-targets", targets.lambda_handler, {"trigger": "schedule"}, self.deployment)
        sweep = Sweep(targets=started)
        # The Distributed Map's ItemReader: the JSON array the targets step wrote, one invocation per item.
        sweep.items = json.loads(read_object(self.deployment.bucket, str(started.result["targetsKey"])))
        for item in sweep.items:
            sweep.evaluations.append(invoke("ecr-retention-evaluate", evaluate.lambda_handler, item, self.deployment))
        sweep.report = invoke("ecr-retention-report", report.lambda_handler, dict(started.result), self.deployment)
        return sweep


@contextmanager
def deployed(deployment: Deployment) -> Iterator[Functions]:
    """The functions of one deployment: its environment set, a cold start, INFO logs quiet."""
    with function_environment(deployment), quiet_function_logs():
        yield Functions(deployment)


def invoke(function: str, handler: Handler, event: dict[str, Any], deployment: Deployment) -> Invocation:
    """One invocation. Its standard output is read for the metrics it recorded; any other line is passed on."""
    captured = io.StringIO()
    with redirect_stdout(captured), warnings.catch_warnings():
        # A step that records no metric of its own is normal here; Powertools warns about it.
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        result = handler(event, DemoContext(function, deployment.account, deployment.region))
    metrics: dict[str, float] = {}
    for line in captured.getvalue().splitlines():
        recorded = embedded_metrics(line)
        if recorded is None:
            print(line)
        else:
            metrics.update(recorded)
    return Invocation(function, result, metrics)


def embedded_metrics(line: str) -> dict[str, float] | None:
    """The metric values of one CloudWatch embedded-metric-format line; None for any other line."""
    try:
        document = json.loads(line)
    except ValueError:
        return None
    if not isinstance(document, dict) or "_aws" not in document:
        return None
    names = [
        metric["Name"]
        for directive in document["_aws"].get("CloudWatchMetrics", [])
        for metric in directive.get("Metrics", [])
    ]
    values: dict[str, float] = {}
    for name in names:
        value = document.get(name)
        if isinstance(value, list):
            value = sum(value)
        if isinstance(value, int | float):
            values[name] = float(value)
    return values


@contextmanager
def function_environment(deployment: Deployment) -> Iterator[None]:
    """The deployment's variables set, and a cold start: no settings, rules or clients cached from before."""
    from ecr_retention.handlers.wiring import forget_cold_start

    saved = {name: os.environ.get(name) for name in deployment.environment()}
    os.environ.update(deployment.environment())
    set_default_factory(None)
    forget_cold_start()
    try:
        yield
    finally:
        forget_cold_start()
        set_default_factory(None)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def quiet_function_logs() -> Iterator[None]:
    """The functions log every event at INFO for CloudWatch; the demo shows warnings and errors only."""
    from ecr_retention.handlers.observability import logger

    level = logger.log_level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
