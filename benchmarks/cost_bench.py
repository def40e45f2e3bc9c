"""What a run costs on AWS, counted: the state machine as the CDK stack synthesizes it, executed by moto's Step
Functions interpreter (as tests/integration/workflow/test_state_machine_on_moto.py runs it) with the real handlers
answering its Lambda tasks in this process, over a registry of --repositories repositories of --images images each.
Every billable unit of a scheduled sweep and of a push run is counted, then priced from benchmarks/prices.json (dated,
with its sources), beside the floor: the Lambda compute the evaluations themselves need.

    .venv/bin/python benchmarks/cost_bench.py [--repositories 100 1000] [--images 4] [--pushes-a-day 20]

How each unit is counted (docs/cost.md says more):
- state transitions: every state entered, in the parent execution and in each child execution of the Distributed Map
  (read from the execution's history), plus one per child execution started (the Map's own item dispatch);
- Lambda: each invocation of each function, its duration measured here (the CPU time of the thread that runs the
  handler, moto's answers included: the interpreter runs the Map's children in threads of one process, whose wall
  times share one GIL and mean nothing) rounded up to the millisecond, times the function's configured memory (the template's MemorySize); the init of a
  cold start (billed since 2025-08) at --init-seconds per cold start, one per concurrent worker of the Map at most;
- the floor: the measured time (the same CPU time) of each repository's evaluation (services.evaluate_step.run_work_item) times the evaluate
  function's memory: the compute the work needs whatever the orchestration;
- requests: every AWS API call the handlers and the interpreter made (botocore's, counted by operation), S3 by
  price class, DynamoDB by read and write, SNS publishes; KMS: one GenerateDataKey per publish to the encrypted topic;
- logs: the bytes the handlers wrote (Powertools' JSON lines) plus Lambda's START/END/REPORT lines (300 bytes an
  invocation), and the execution log's events at the state machine's log level (the history's events, without
  execution data, each with the envelope CloudWatch Logs adds);
- events: one EventBridge Scheduler invocation per sweep; a push run: the push queue's requests (ECR's events on the
  default bus are free).
Durations on moto are this machine's, without the network latency of real AWS calls: the floor measured here is lower
than on AWS, so the ratios printed are conservative. 10,000 and 100,000 repositories are extrapolated from the
counted registries, by repositories and by batches: the largest is counted again in batches of the largest size (the
targets step given one worker) when the measured tree sizes its batches by the Map's workers (said so in the output).
Asserts nothing about cost or time.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from measuring import add_tree_argument, check_tree, in_tree

if TYPE_CHECKING:
    from support.state_machine import SynthesizedMachine

PRICES = Path(__file__).resolve().parent / "prices.json"
REGION = "eu-west-1"
BUCKET = "inventory-bucket"
RULES = """\
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod], optional_clusters: [dev]}
policies:
  - repositories: ["repo-*"]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 2}
"""
PLATFORM_LOG_BYTES = 300  # START, END and REPORT lines of one invocation
LOG_ENVELOPE_BYTES = 26  # CloudWatch Logs meters each event's message plus 26 bytes
MONTH_DAYS = 30


# --- counting ---------------------------------------------------------------------------------------------------


class CountingStream(io.TextIOBase):
    """Stands in for sys.stdout while the handlers run: counts what they print (their log lines), keeps nothing."""

    def __init__(self) -> None:
        self.bytes = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self.bytes += len(text.encode())
        return len(text)

    def writable(self) -> bool:
        return True


@dataclass
class Counted:
    """The units of one run, as counted."""

    invocations: Counter[str] = field(default_factory=Counter)  # function -> invocations
    milliseconds: Counter[str] = field(default_factory=Counter)  # function -> billed milliseconds (rounded up)
    evaluation_seconds: float = 0.0  # the floor's work: run_work_item, summed
    evaluation_calls: int = 0  # the AWS API calls made inside run_work_item
    handler_calls: Counter[str] = field(default_factory=Counter)  # function -> AWS API calls its invocations made
    evaluations: int = 0
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)  # (service, operation) -> calls
    purposes: Counter[str] = field(default_factory=Counter)  # S3 calls for the product's guarantees (purpose_of)
    log_bytes_lambda: int = 0
    log_bytes_states: int = 0
    transitions: int = 0
    child_executions: int = 0
    seconds: float = 0.0  # the run's wall time here
    events: Counter[str] = field(default_factory=Counter)  # history event type -> events, every execution
    event_bytes: int = 0


_where = (
    threading.local()
)  # .handler: the function whose handler runs on this thread; .evaluating: inside run_work_item


@contextmanager
def counting_calls(counted: Callable[[], Counted]) -> Iterator[None]:
    """Every botocore API call made off the main thread (the interpreter's and the handlers'), by operation; the
    benchmark's own calls (start, describe, history) run on the main thread and are not the run's."""
    from botocore.client import BaseClient

    original = BaseClient._make_api_call
    purpose_of = purpose_of_this_tree()

    def make_api_call(client: BaseClient, operation: str, parameters: dict[str, Any]) -> Any:
        if threading.current_thread() is not threading.main_thread():
            service = client.meta.service_model.service_name
            counted().calls[service, operation] += 1
            purpose = purpose_of(operation, parameters) if service == "s3" else None
            if purpose is not None:
                counted().purposes[purpose] += 1
            handler = getattr(_where, "handler", None)
            if handler is not None:
                counted().handler_calls[handler] += 1
            if getattr(_where, "evaluating", False):
                counted().evaluation_calls += 1
        return original(client, operation, parameters)

    BaseClient._make_api_call = make_api_call  # type: ignore[method-assign]
    try:
        yield
    finally:
        BaseClient._make_api_call = original  # type: ignore[method-assign]


# What an S3 request of a run is for, when it is for what the product promises rather than for the orchestration.
CHANGE_WRITES = "each change's writes"
SNAPSHOT_READS = "kept snapshots read"


def purpose_of_this_tree() -> Callable[[str, dict[str, Any]], str | None]:
    """CHANGE_WRITES: the PUT-class requests each repository that changed makes: its own report object, stored before
    the next repository starts (a crash never loses the record of what was deleted: docs/safety.md 36), its kept
    snapshot (what reviews read), its holds listed again right before it acts (docs/safety.md 37), and, where the run
    prunes the replicas its deletions reach, what it deletes told to their evaluations before it acts.
    SNAPSHOT_READS: each repository's kept snapshot, read by its evaluation so that it is written only when what a
    review reads of it changed. None: the orchestration's (a batch's reading of the inventory, its reports object and
    its mark, the run's own records, the report step's reading)."""
    from ecr_retention import layout

    batch_reports = getattr(layout, "BATCH_REPORTS_PREFIX", "batch-")  # a checkout from before it was named (--tree)

    def purpose_of(operation: str, parameters: dict[str, Any]) -> str | None:
        key = str(parameters.get("Key", ""))
        if operation == "GetObject":
            return SNAPSHOT_READS if key.startswith(layout.SNAPSHOTS_PREFIX) else None
        if operation == "PutObject":
            folder, _, name = key.rpartition("/")
            in_run = key.startswith(layout.RUNS_PREFIX)
            own_report = in_run and folder.endswith("/repositories") and not name.startswith(batch_reports)
            told_to_replicas = in_run and folder.endswith("/deletions")
            return CHANGE_WRITES if key.startswith(layout.SNAPSHOTS_PREFIX) or own_report or told_to_replicas else None
        listing_again = operation in {"ListObjects", "ListObjectsV2"} and getattr(_where, "reading_holds_again", False)
        return CHANGE_WRITES if listing_again else None

    return purpose_of


# --- the synthesized definition ---------------------------------------------------------------------------------


def synthesize(scratch: Path) -> SynthesizedMachine:
    from support.infra_stacks import CONTEXT, build_stack, rules_file
    from support.state_machine import synthesized_machine

    return synthesized_machine(build_stack(rules_file(scratch, RULES), CONTEXT), bucket=BUCKET, region=REGION)


def map_concurrency(definition: dict[str, Any]) -> int:
    """The Map's MaxConcurrency (0: as many as Step Functions allows)."""
    maps = [state for state in definition["States"].values() if state["Type"] == "Map"]
    return int(maps[0].get("MaxConcurrency", 0))


def adapt_for_moto(definition: dict[str, Any]) -> dict[str, Any]:
    """The two spellings moto's interpreter does not accept yet (as the workflow tests adapt them), nothing else."""
    adapted = json.loads(json.dumps(definition))
    for state in adapted["States"].values():
        if state["Type"] == "Map" and "ToleratedFailurePercentage" in state:
            state["ToleratedFailurePercentage"] = float(state["ToleratedFailurePercentage"])
        if state["Type"] == "Map" and "ResultWriter" in state:
            state["ResultWriter"].pop("WriterConfig", None)
    return adapted


# --- the run -----------------------------------------------------------------------------------------------------


@dataclass
class Runner:
    synthesized: SynthesizedMachine
    counted: Counted = field(default_factory=Counted)
    stream: CountingStream = field(default_factory=CountingStream)

    def invoke(self, parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
        """In place of moto's Lambda invoke: the real handler, timed, its log lines counted."""
        from importlib import import_module

        from support.lambda_stack import FakeContext

        handler = self.synthesized.handlers[parameters["FunctionName"]]
        event = json.loads(parameters["Payload"])
        module = import_module(f"ecr_retention.handlers.{handler}")
        started = time.thread_time()
        _where.handler = handler
        try:
            result = module.lambda_handler(event, FakeContext(function_name=f"ecr-retention-{handler}"))
        except Exception as error:
            failure = {"errorMessage": str(error), "errorType": type(error).__name__, "stackTrace": []}
            answer = {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": failure}
        else:
            answer = {"StatusCode": 200, "Payload": json.loads(json.dumps(result))}
        elapsed = time.thread_time() - started
        _where.handler = None
        self.counted.invocations[handler] += 1
        self.counted.milliseconds[handler] += max(1, math.ceil(elapsed * 1000))
        return {**answer, "ExecutedVersion": "$LATEST"}

    def timing_evaluations(self) -> Callable[[], None]:
        """Wraps run_work_item wherever the handlers reach it: the floor's time, one repository's evaluation."""
        import ecr_retention.handlers.evaluate as handler

        try:
            import ecr_retention.services.evaluate_step as service
        except ModuleNotFoundError:  # a checkout from before the workflow's steps had a service each (--tree)
            import ecr_retention.services.run as service  # type: ignore[no-redef]

        original = service.run_work_item

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            _where.evaluating = True
            try:
                return original(*args, **kwargs)
            finally:
                _where.evaluating = False
                self.counted.evaluation_seconds += time.thread_time() - started
                self.counted.evaluations += 1

        patched = [module for module in (handler, service) if getattr(module, "run_work_item", None) is original]
        for module in patched:
            module.run_work_item = timed  # type: ignore[attr-defined]
        undo_holds = self.marking_holds_read_again()

        def undo() -> None:
            for module in patched:
                module.run_work_item = original  # type: ignore[attr-defined]
            undo_holds()

        return undo

    @staticmethod
    def marking_holds_read_again() -> Callable[[], None]:
        """Marks the calls of a repository's holds listed again before it acts (services.inventory.holds_changed_since;
        a checkout without it lists none)."""
        import ecr_retention.services.inventory as inventory

        original = getattr(inventory, "holds_changed_since", None)
        if original is None:
            return lambda: None

        def marked(*args: Any, **kwargs: Any) -> Any:
            _where.reading_holds_again = True
            try:
                return original(*args, **kwargs)
            finally:
                _where.reading_holds_again = False

        inventory.holds_changed_since = marked

        def undo() -> None:
            inventory.holds_changed_since = original

        return undo


def provision(repositories: int, images: int, machine_definition: dict[str, Any], concurrency: int) -> str:
    """Inside moto: the stack's resources, `repositories` repositories of `images` releases each (the newest two and
    one in use kept), the environment the stack gives the functions; returns the state machine's ARN."""
    import boto3
    from moto.core import DEFAULT_ACCOUNT_ID

    from ecr_retention_dev.scenario import create_lease_table
    from support.lambda_stack import push

    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="reports")["TopicArn"]
    create_lease_table(boto3.client("dynamodb", region_name=REGION), "leases")
    machine = boto3.client("stepfunctions", region_name=REGION).create_state_machine(
        name="pruning", definition=json.dumps(machine_definition), roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/sfn"
    )["stateMachineArn"]
    ecr = boto3.client("ecr", region_name=REGION)
    host = f"{DEFAULT_ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com"
    running = []
    for index in range(repositories):
        name = f"repo-{index:05d}"
        ecr.create_repository(repositoryName=name)
        digests = [push(ecr, name, f"v{n}", timedelta(days=100 - n), seed=f"{name}:v{n}") for n in range(1, images + 1)]
        running.append({"image": f"{host}/{name}@{digests[0]}", "digest": digests[0], "namespace": "prod",
                        "workload": f"Deployment/{name}", "container": "app", "source": "pod"})  # fmt: skip
    manifest = {"schemaVersion": 1, "cluster": "prod", "generatedAt": datetime.now(UTC).isoformat(),
                "complete": True, "images": running}  # fmt: skip
    s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=json.dumps(manifest))
    environment = {
        "BUCKET_NAME": BUCKET,
        "TOPIC_ARN": topic,
        "LEASE_TABLE": "leases",
        "MAP_CONCURRENCY": str(concurrency),
        "STATE_MACHINE_ARN": machine,
        "SENTINEL_ROLE_ARN": f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/ecr-retention-Sentinel",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "EcrRetention",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }
    import os

    os.environ.update(environment)
    return str(machine)


@contextmanager
def counting_events(counted: Callable[[], Counted]) -> Iterator[None]:
    """Every history event the interpreter adds, in the parent execution and in the Map's child executions (whose
    events moto keeps out of the parent's history, as AWS keeps them in each child's): the states entered and the
    execution log's events."""
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

    original = EventManager.add_event

    def add_event(
        manager: Any, context: Any, event_type: Any, event_details: Any = None, *args: Any, **kwargs: Any
    ) -> int:
        counted().events[str(event_type.value)] += 1
        counted().event_bytes += len(json.dumps(event_details or {}, default=str)) if event_details else 0
        return int(original(manager, context, event_type, event_details, *args, **kwargs))

    EventManager.add_event = add_event  # type: ignore[method-assign]
    try:
        yield
    finally:
        EventManager.add_event = original  # type: ignore[method-assign]


def count_execution(sfn: Any, arn: str, counted: Counted, log_level: str) -> None:
    """The transitions and the execution log of one run, from the events the interpreter added: a transition for
    each state entered (in the parent and in every child) and for each child execution the Map started (counted by
    the map run); at log level ALL every event is logged (ERROR: the failures only), without execution data."""
    entered = sum(n for kind, n in counted.events.items() if kind.endswith("StateEntered"))
    children = 0
    for listed in sfn.list_map_runs(executionArn=arn)["mapRuns"]:
        children += sfn.describe_map_run(mapRunArn=listed["mapRunArn"])["executionCounts"]["total"]
    counted.transitions += entered + children
    counted.child_executions += children
    logged = {kind: n for kind, n in counted.events.items()
              if log_level == "ALL" or (log_level != "OFF" and ("Failed" in kind or "TimedOut" in kind))}  # fmt: skip
    # Each logged event: its type, ids, timestamp, the execution's and the state's ARNs (about 400 bytes without
    # execution data), and CloudWatch Logs' per-event envelope.
    counted.log_bytes_states += sum(logged.values()) * (400 + LOG_ENVELOPE_BYTES)


def run(runner: Runner, machine: str, execution_input: dict[str, Any]) -> Counted:
    import boto3

    sfn = boto3.client("stepfunctions", region_name=REGION)
    runner.counted = Counted()
    bytes_before = runner.stream.bytes
    started = time.perf_counter()
    name = f"{execution_input['trigger']}-{time.time_ns()}"
    arn = sfn.start_execution(stateMachineArn=machine, name=name, input=json.dumps(execution_input))["executionArn"]
    while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        time.sleep(0.05)
    runner.counted.seconds = time.perf_counter() - started
    if described["status"] != "SUCCEEDED":
        raise SystemExit(f"the run ended {described['status']}: {described.get('error')} {described.get('cause')}")
    count_execution(sfn, arn, runner.counted, runner.synthesized.log_level)
    invocations = sum(runner.counted.invocations.values())
    runner.counted.log_bytes_lambda = runner.stream.bytes - bytes_before + invocations * PLATFORM_LOG_BYTES
    return runner.counted


# --- pricing -----------------------------------------------------------------------------------------------------

S3_WRITE_CLASS = {"PutObject", "CopyObject", "PostObject", "ListObjects", "ListObjectsV2", "ListObjectVersions",
                  "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "ListMultipartUploads"}  # fmt: skip
DYNAMODB_WRITES = {"PutItem", "DeleteItem", "UpdateItem", "BatchWriteItem"}


@dataclass(frozen=True)
class Units:
    """A run's billable units (floats: extrapolated units scale)."""

    transitions: float
    child_executions: float
    lambda_requests: float
    lambda_gb_seconds: float
    floor_gb_seconds: float
    s3_write_class: float
    s3_read_class: float
    s3_change_writes: float  # of s3_write_class: CHANGE_WRITES (purpose_of_this_tree)
    s3_snapshot_reads: float  # of s3_read_class: SNAPSHOT_READS
    logs_bytes: float
    sns_publishes: float
    kms_requests: float
    scheduler_invocations: float
    sqs_requests: float
    dynamodb_writes: float
    dynamodb_reads: float
    evaluations: float
    seconds: float

    def scaled(self, factor: float) -> Units:
        return Units(**{name: value * factor for name, value in self.__dict__.items()})

    def extrapolated(self, smaller: Units | None, size: int, smaller_size: int, target: int) -> Units:
        """Linear in the repositories: through both counted registries (a run's fixed part and each repository's
        part), or in proportion to this one alone. A unit that the larger registry counted less of (the functions'
        log lines, whose warnings are the same few per run) is held at the larger count, never extrapolated below
        it."""
        if smaller is None or smaller_size == size:
            return self.scaled(target / size)
        slopes = {
            name: max(0.0, (value - smaller.__dict__[name]) / (size - smaller_size))
            for name, value in self.__dict__.items()
        }
        return Units(**{name: value + slopes[name] * (target - size) for name, value in self.__dict__.items()})

    def extrapolated_in_batches(self, smaller: Counting, rebatched: Counting, repositories: int, batches: int) -> Units:
        """This sweep's units (counted over `rebatched.repositories` repositories in `self.child_executions` batches)
        at a registry of `repositories` in `batches` batches: each unit a run's fixed part, plus a part
        per repository, plus a part per batch (a child execution: its transitions and invocation, its reading of the
        inventory, its reports object), fitted through three counted sweeps: a smaller registry, and this one's
        registry counted again in batches of another size (`rebatched`), which tells the batch's part from the
        repository's. A part that comes out negative (noise of one or two calls) counts as none."""
        per_batch, per_repository = {}, {}
        for name, value in self.__dict__.items():
            batch_part = (value - rebatched.units.__dict__[name]) / (self.child_executions - rebatched.batches)
            per_batch[name] = max(0.0, batch_part)
            grown = value - smaller.units.__dict__[name] - per_batch[name] * (self.child_executions - smaller.batches)
            per_repository[name] = max(0.0, grown / (rebatched.repositories - smaller.repositories))
        return Units(
            **{
                name: value
                + per_repository[name] * (repositories - rebatched.repositories)
                + per_batch[name] * (batches - self.child_executions)
                for name, value in self.__dict__.items()
            }
        )


@dataclass(frozen=True)
class Counting:
    """A sweep's units with the registry it counted: its repositories and its batches (child executions)."""

    repositories: int
    batches: float
    units: Units


def units_of(
    counted: Counted, memory_mb: dict[str, int], *, trigger: str, cold_starts: float, init: float, latency: float
) -> Units:
    """`latency`: seconds each AWS API call of a handler waits on the network on AWS (none on moto in process), added
    to its invocation's duration, and to the floor for the calls of the evaluations."""
    calls = counted.calls
    s3 = {operation: n for (service, operation), n in calls.items() if service == "s3"}
    dynamodb = {operation: n for (service, operation), n in calls.items() if service == "dynamodb"}
    gb_seconds = sum(ms / 1000 * memory_mb[function] / 1024 for function, ms in counted.milliseconds.items())
    gb_seconds += cold_starts * init * memory_mb["evaluate"] / 1024
    gb_seconds += sum(n * latency * memory_mb[function] / 1024 for function, n in counted.handler_calls.items())
    publishes = sum(n for (service, operation), n in calls.items() if (service, operation) == ("sns", "Publish"))
    return Units(
        transitions=counted.transitions,
        child_executions=counted.child_executions,
        lambda_requests=sum(counted.invocations.values()) + (1 if trigger == "push" else 0),  # the push function
        lambda_gb_seconds=gb_seconds + (0.1 * memory_mb.get("push", 512) / 1024 if trigger == "push" else 0),
        floor_gb_seconds=(counted.evaluation_seconds + counted.evaluation_calls * latency)
        * memory_mb["evaluate"]
        / 1024,
        s3_write_class=sum(n for operation, n in s3.items() if operation in S3_WRITE_CLASS),
        s3_read_class=sum(n for operation, n in s3.items() if operation not in S3_WRITE_CLASS),
        s3_change_writes=counted.purposes[CHANGE_WRITES],
        s3_snapshot_reads=counted.purposes[SNAPSHOT_READS],
        logs_bytes=counted.log_bytes_lambda + counted.log_bytes_states,
        sns_publishes=publishes,
        kms_requests=publishes,
        scheduler_invocations=1 if trigger == "schedule" else 0,
        sqs_requests=3 if trigger == "push" else 0,  # send (EventBridge), receive, delete (the push function)
        dynamodb_writes=sum(n for operation, n in dynamodb.items() if operation in DYNAMODB_WRITES),
        dynamodb_reads=sum(n for operation, n in dynamodb.items() if operation not in DYNAMODB_WRITES),
        evaluations=counted.evaluations,
        seconds=counted.seconds,
    )


def guarantees_cost(units: Units, price: dict[str, float]) -> dict[str, float]:
    """Parts of the S3 line, printed apart: what the product's guarantees cost (purpose_of_this_tree)."""
    return {
        CHANGE_WRITES: units.s3_change_writes * price["s3_put_copy_post_list"],
        SNAPSHOT_READS: units.s3_snapshot_reads * price["s3_get_and_other"],
    }


def ratio_of(units: Units, price: dict[str, float], *less: str) -> float:
    """A run's cost over its floor; less the named parts of guarantees_cost, if any."""
    floor = units.floor_gb_seconds * price["lambda_gb_second_x86_64"]
    cost = sum(costs_of(units, price).values()) - sum(guarantees_cost(units, price)[part] for part in less)
    return cost / floor if floor else math.inf


def costs_of(units: Units, price: dict[str, float]) -> dict[str, float]:
    return {
        "Lambda compute (GB-s)": units.lambda_gb_seconds * price["lambda_gb_second_x86_64"],
        "Lambda requests": units.lambda_requests * price["lambda_request"],
        "state transitions": units.transitions * price["standard_transition"],
        "S3 requests": units.s3_write_class * price["s3_put_copy_post_list"]
        + units.s3_read_class * price["s3_get_and_other"],
        "CloudWatch Logs": units.logs_bytes / 1e9 * price["logs_ingested_gb"],
        "SNS, KMS, events, queue, leases": units.sns_publishes * price["sns_publish"]
        + units.kms_requests * price["kms_request"]
        + units.scheduler_invocations * price["scheduler_invocation"]
        + units.sqs_requests * price["sqs_request"]
        + units.dynamodb_writes * price["dynamodb_write_request"]
        + units.dynamodb_reads * price["dynamodb_read_request"],
    }


# --- output ------------------------------------------------------------------------------------------------------


def print_units(label: str, units: Units) -> None:
    print(
        f"  {label}: {units.evaluations:,.0f} evaluations, {units.transitions:,.0f} state transitions "
        f"({units.child_executions:,.0f} child executions), {units.lambda_requests:,.0f} Lambda invocations, "
        f"{units.lambda_gb_seconds:,.2f} GB-s (floor {units.floor_gb_seconds:,.2f}), S3 {units.s3_write_class:,.0f} "
        f"PUT/LIST ({units.s3_change_writes:,.0f} {CHANGE_WRITES}) + {units.s3_read_class:,.0f} GET "
        f"({units.s3_snapshot_reads:,.0f} {SNAPSHOT_READS}), logs {units.logs_bytes / 1e6:,.2f} MB, "
        f"DynamoDB {units.dynamodb_writes:,.0f} writes, {units.sns_publishes:,.0f} SNS, "
        f"wall {units.seconds:,.1f} s here"
    )


def print_costs(title: str, units: Units, prices: dict[str, Any], regions: list[str]) -> None:
    print(title)
    header = f"    {'':<32}" + "".join(f"{region:>14}" for region in regions)
    print(header)
    per_region = {region: costs_of(units, prices["regions"][region]) for region in regions}
    for item in next(iter(per_region.values())):
        print(f"    {item:<32}" + "".join(f"{per_region[region][item]:>14.6f}" for region in regions))
    totals = {region: sum(costs.values()) for region, costs in per_region.items()}
    floors = {
        region: units.floor_gb_seconds * prices["regions"][region]["lambda_gb_second_x86_64"] for region in regions
    }
    print(f"    {'total':<32}" + "".join(f"{totals[region]:>14.6f}" for region in regions))
    print(f"    {'floor (evaluations compute)':<32}" + "".join(f"{floors[region]:>14.6f}" for region in regions))
    print_ratios("total / floor", units, prices, regions)
    parts = {region: guarantees_cost(units, prices["regions"][region]) for region in regions}
    for part in (CHANGE_WRITES, SNAPSHOT_READS):
        print(f"    {'of S3: ' + part:<32}" + "".join(f"{parts[region][part]:>14.6f}" for region in regions))
    print_ratios("total less the first / floor", units, prices, regions, CHANGE_WRITES)
    print_ratios("total less both / floor", units, prices, regions, CHANGE_WRITES, SNAPSHOT_READS)


def print_ratios(label: str, units: Units, prices: dict[str, Any], regions: list[str], *less: str) -> None:
    print(
        f"    {label:<32}"
        + "".join(f"{ratio_of(units, prices['regions'][region], *less):>13.2f}x" for region in regions)
    )


@dataclass(frozen=True)
class Measured:
    repositories: int
    sweep: Counted
    push: Counted
    memory_mb: dict[str, int]
    concurrency: int
    # The next sweep, after --churn of the repositories received a push: the daily sweep of a steady registry.
    steady: Counted

    def units(self, init: float, latency: float) -> tuple[Units, Units, Units]:
        cold = min(self.concurrency, self.sweep.invocations["evaluate"]) + 2  # the workers, targets and report
        return (
            units_of(self.sweep, self.memory_mb, trigger="schedule", cold_starts=cold, init=init, latency=latency),
            units_of(self.push, self.memory_mb, trigger="push", cold_starts=1, init=init, latency=latency),
            units_of(self.steady, self.memory_mb, trigger="schedule", cold_starts=cold, init=init, latency=latency),
        )


def churn(repositories: int, images: int, fraction: float) -> int:
    """A push of a new release to `fraction` of the repositories (evenly spread), as between two daily sweeps: each
    such repository's next evaluation deletes one more release (its third newest is no longer among the newest two)
    and its snapshot changes; the others' evaluations find nothing to do. Returns how many were pushed to."""
    import boto3

    from support.lambda_stack import push

    ecr = boto3.client("ecr", region_name=REGION)
    every = round(1 / fraction) if fraction > 0 else 0
    pushed = 0
    for index in range(0, repositories, every or repositories + 1):
        name = f"repo-{index:05d}"
        push(ecr, name, f"v{images + 1}", timedelta(days=2), seed=f"{name}:v{images + 1}")
        pushed += 1
    return pushed


def measure(
    repositories: int, images: int, scratch: Path, churned: float = 0.1, workers: int | None = None
) -> Measured:
    """`workers`: the Map concurrency the targets step sizes the batches by (MAP_CONCURRENCY), when not the
    template's: 1 gives the largest batches, as a registry of 10,000 gets them."""
    from moto import mock_aws
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    from ecr_retention.aws.clients import set_default_factory
    from ecr_retention.handlers.wiring import forget_cold_start

    synthesized = synthesize(scratch)
    runner = Runner(synthesized)
    (scratch / "retention.yaml").write_text(RULES)
    import os

    os.environ["RULES_FILE"] = str(scratch / "retention.yaml")
    lambda_eval_utils._invoke_lambda_function = runner.invoke
    real_stdout, sys.stdout = sys.stdout, runner.stream
    undo = runner.timing_evaluations()
    concurrency = map_concurrency(synthesized.definition) or 1000
    try:
        with (
            mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
            counting_calls(lambda: runner.counted),
            counting_events(lambda: runner.counted),
        ):
            machine = provision(repositories, images, adapt_for_moto(synthesized.definition), workers or concurrency)
            set_default_factory(None)
            forget_cold_start()
            # A run first, uncounted: the imports and the wiring of each handler are the cold start's, counted apart
            # (--init-seconds), not the work's.
            run(
                runner,
                machine,
                {"trigger": "push", "repositories": ["repo-00001" if repositories > 1 else "repo-00000"]},
            )
            sweep = run(runner, machine, {"trigger": "schedule"})
            push = run(runner, machine, {"trigger": "push", "repositories": ["repo-00000"]})
            churn(repositories, images, churned)
            steady = run(runner, machine, {"trigger": "schedule"})
    finally:
        sys.stdout = real_stdout
        undo()
    return Measured(repositories, sweep, push, synthesized.memory_mb, concurrency, steady)


def batches_at(repositories: int, workers: int) -> int:
    """The child executions of a sweep of that many repositories, as the measured tree's targets step batches them."""
    try:
        from ecr_retention.workflow import repositories_per_batch
    except ImportError:  # a tree of fixed batches, or of none
        from ecr_retention import workflow

        size = getattr(workflow, "REPOSITORIES_PER_BATCH", 1)
    else:
        size = repositories_per_batch(repositories, workers)
    return math.ceil(repositories / size)


def rebatch(largest: int, smaller_size: int, sweep: Units, arguments: argparse.Namespace) -> tuple[Units, Units] | None:
    """The largest registry's sweep and next sweep counted again in batches of the largest size (the targets step
    given one worker), when the measured tree sizes its batches by the Map's workers and that changes them: what a
    batch costs apart from its repositories, for the extrapolation. None otherwise."""
    if largest == smaller_size or batches_at(largest, 1) == sweep.child_executions:
        return None
    with tempfile.TemporaryDirectory(prefix="cost-bench-") as scratch:
        counted = measure(largest, arguments.images, Path(scratch), arguments.churn, workers=1)
    again, _, steady = counted.units(arguments.init_seconds, arguments.call_latency_ms / 1000)
    print(f"counted again, {largest:,} repositories in {again.child_executions:,.0f} batches (the Map's workers 1):")
    print_units("scheduled sweep (every repository changed)", again)
    print_units(f"next scheduled sweep ({arguments.churn:.0%} of repositories pushed to)", steady)
    return again, steady


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--repositories", type=int, nargs="+", default=[100, 1_000])
    parser.add_argument("--images", type=int, default=4, help="images of each repository")
    parser.add_argument("--pushes-a-day", type=int, default=20, help="push runs a day, for the month's cost")
    parser.add_argument("--init-seconds", type=float, default=0.35, help="a cold start's init (asset_bench's figure)")
    parser.add_argument("--regions", nargs="+", default=["us-east-1", "eu-west-1"])
    parser.add_argument(
        "--call-latency-ms",
        type=float,
        default=20.0,
        help="what each AWS API call of a function waits on AWS, added to its duration (moto answers in process)",
    )
    parser.add_argument(
        "--churn",
        type=float,
        default=0.1,
        help="the share of repositories pushed to between the first sweep and the next (the daily sweep counted too)",
    )
    arguments = parser.parse_args()
    in_tree(arguments.tree)
    check_tree(arguments.tree)

    prices = json.loads(PRICES.read_text())
    print(f"prices: benchmarks/prices.json, as of {prices['asOf']} ({', '.join(sorted(prices['sources']))} pricing)")
    latency = arguments.call_latency_ms / 1000
    measured: list[tuple[int, Units, Units, Units]] = []
    concurrency, memory_mb = 0, {"evaluate": 1024}
    for repositories in arguments.repositories:
        with tempfile.TemporaryDirectory(prefix="cost-bench-") as scratch:
            counted = measure(repositories, arguments.images, Path(scratch), arguments.churn)
        concurrency, memory_mb = counted.concurrency, counted.memory_mb
        sweep, push, steady = counted.units(arguments.init_seconds, latency)
        sweep_moto, _, _ = counted.units(arguments.init_seconds, 0.0)
        measured.append((repositories, sweep, push, steady))
        print(f"counted, {repositories:,} repositories x {arguments.images} images, on moto's interpreter:")
        print_units("scheduled sweep (every repository changed)", sweep)
        print_units(f"next scheduled sweep ({arguments.churn:.0%} of repositories pushed to)", steady)
        print_units("push run (1 repository)", push)
        calls = counted.sweep.calls
        print(f"  the sweep's API calls: {', '.join(f'{s}:{o} {n:,}' for (s, o), n in sorted(calls.items()))}")
        calls = counted.steady.calls
        print(f"  the next sweep's API calls: {', '.join(f'{s}:{o} {n:,}' for (s, o), n in sorted(calls.items()))}")
        events = counted.sweep.events
        print(f"  the sweep's execution events: {', '.join(f'{k} {n:,}' for k, n in sorted(events.items()))}")
        print(
            f"  CPU time here: {counted.sweep.evaluation_seconds / max(1, counted.sweep.evaluations) * 1000:,.1f} ms "
            f"an evaluation, {counted.sweep.evaluation_calls / max(1, counted.sweep.evaluations):,.1f} AWS calls an "
            f"evaluation; without the calls' latency the sweep costs "
            f"{ratio_of(sweep_moto, prices['regions']['us-east-1']):,.2f}x its floor"
        )
    largest, sweep, push, steady = measured[-1]
    smaller_size, smaller, _, smaller_steady = measured[0]
    rebatched = rebatch(largest, smaller_size, sweep, arguments)
    for repositories, units in [(n, u) for n, u, _, _ in measured]:
        print_costs(f"scheduled sweep of {repositories:,} repositories (counted), USD:", units, prices,
                    arguments.regions)  # fmt: skip
    how = f"{smaller_size:,} and {largest:,}" if smaller_size != largest else f"{largest:,}"
    how += "" if rebatched is None else f" (and {largest:,} in batches of another size)"

    def at(target: int, units: Units, smaller_units: Units, index: int) -> Units:
        if rebatched is None:
            return units.extrapolated(smaller_units, largest, smaller_size, target)
        return units.extrapolated_in_batches(
            Counting(smaller_size, smaller_units.child_executions, smaller_units),
            Counting(largest, rebatched[index].child_executions, rebatched[index]),
            target,
            batches_at(target, concurrency),
        )

    for target in (10_000, 100_000):
        print_costs(
            f"scheduled sweep of {target:,} repositories (extrapolated from {how} counted), USD:",
            at(target, sweep, smaller, 0),
            prices,
            arguments.regions,
        )
    print_costs(
        f"next scheduled sweep of 10,000 repositories, {arguments.churn:.0%} pushed to (extrapolated from {how}), USD:",
        at(10_000, steady, smaller_steady, 1),
        prices,
        arguments.regions,
    )
    print_costs("push run of 1 repository (counted), USD:", push, prices, arguments.regions)
    for target in (10_000,):
        scaled = at(target, steady, smaller_steady, 1)
        month = {
            region: MONTH_DAYS
            * (
                sum(costs_of(scaled, prices["regions"][region]).values())
                + arguments.pushes_a_day * sum(costs_of(push, prices["regions"][region]).values())
            )
            for region in arguments.regions
        }
        shown = ", ".join(f"{region} {value:.4f}" for region, value in month.items())
        print(f"month ({MONTH_DAYS} days): a daily sweep of {target:,} repositories ({arguments.churn:.0%} pushed to) "
              f"+ {arguments.pushes_a_day} push runs a day, USD: {shown}")  # fmt: skip
    at_10k = at(10_000, sweep, smaller, 0)
    ratio = ratio_of(at_10k, prices["regions"]["us-east-1"])
    push_cost = sum(costs_of(push, prices["regions"]["us-east-1"]).values())
    sweep_cost = sum(costs_of(at_10k, prices["regions"]["us-east-1"]).values())
    print(f"FIGURE sweep_10k_usd {sweep_cost:.4f}")
    print(f"FIGURE sweep_10k_cost_over_floor {ratio:.3f}")
    steady_10k = at(10_000, steady, smaller_steady, 1)
    print(f"FIGURE next_sweep_10k_usd {sum(costs_of(steady_10k, prices['regions']['us-east-1']).values()):.4f}")
    print(f"FIGURE next_sweep_10k_cost_over_floor {ratio_of(steady_10k, prices['regions']['us-east-1']):.3f}")
    east = prices["regions"]["us-east-1"]
    less_writes = ratio_of(steady_10k, east, CHANGE_WRITES)
    print(f"FIGURE next_sweep_10k_less_change_writes_over_floor {less_writes:.3f}")
    orchestration = ratio_of(steady_10k, east, CHANGE_WRITES, SNAPSHOT_READS)
    print(f"FIGURE next_sweep_10k_less_guarantees_over_floor {orchestration:.3f}")
    print(f"FIGURE push_run_usd {push_cost:.6f}")
    # The Map's wall time: its evaluations' time (CPU here and the calls' latency, as the floor counts it) spread over
    # its workers; the targets and report steps add seconds.
    minutes = [
        units.floor_gb_seconds / (memory_mb["evaluate"] / 1024) / concurrency / 60 for units in (at_10k, steady_10k)
    ]
    print(
        f"the Map's time for 10,000 repositories on AWS, estimated (its evaluations' time over {concurrency} workers): "
        f"sweep {minutes[0]:.1f} min, next sweep {minutes[1]:.1f} min"
    )
    print(f"FIGURE sweep_10k_map_minutes {minutes[0]:.1f}")
    print(f"FIGURE next_sweep_10k_map_minutes {minutes[1]:.1f}")


if __name__ == "__main__":
    import os

    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # moto's; never real credentials
        os.environ[variable] = "testing"
    os.environ.pop("AWS_PROFILE", None)
    main()
