"""Faults on the wire, end to end: the real pipeline (`run_pipeline` through the real adapters and the production
client configuration, or the real `ecr-retention run` as a subprocess) talks HTTP to moto in server mode through
support.fault_proxy.FaultProxy, which answers chosen requests with 429 and 500 bursts, ThrottlingException
bodies, slow answers, connections dropped before moto sees the request, and connections dropped after moto served
it (a BatchDeleteImage that deleted, whose answer the client never got).

Each scenario starts from the realistic registry (support.realistic_registry), runs once with faults, then without
them until the plan has nothing left to remove (the registry's fixed point: `backend` keeps the tags `frontend`
still has, so even without faults a second run deletes what the first run's `frontend` deletions freed). Before
every run the offline planner plans the registry as it is; after it:

- nothing that plan keeps (in use, young, kept by a rule, a child of a kept index, a referrer of a kept subject,
  unmanaged) changed, and nothing outside its removals is gone;
- no image is gone while an index or subject it lives and dies with stayed;
- every deletion the report claims happened, and every deletion that happened without being claimed is reported
  failed: the run reports exactly what it could not do or could not confirm;

and the registry ends where the fault-free runs leave it ("equal" scenarios: already after the first run, with an
exact report). `pytest -s` prints the FAULT MATRIX, one row per scenario.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.ecr.models import Repository, ecr_backends
from moto.server import ThreadedMotoServer

from ecr_retention.aws.clients import CLIENT_CONFIG, MAX_ATTEMPTS
from ecr_retention.aws.dynamodb_lease import LEASE_TABLE_KEY, LEASE_TABLE_TTL_ATTRIBUTE, DynamoDbLeases
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.aws.sns_notifier import SnsNotifier
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate import DEFAULT_LEASE_SECONDS
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_registry
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.scenario import LEASE_TABLE, create_inventory_bucket, create_lease_table, create_topic_with_queue
from support.api_calls import ApiCallRecorder, instant_retries
from support.expectations import State, parents, planned, without_archive_time
from support.fault_proxy import FaultProxy, FaultRule
from support.realistic_registry import (
    ACCOUNT,
    BUCKET,
    BULK_REPOSITORY,
    REGION,
    SeededRegistry,
    in_use_manifests,
    rules_text,
    seed_registry,
)

pytestmark = pytest.mark.slow

LAMBDAS = Path(__file__).resolve().parents[2] / "lambdas"
# Every in-process run's clock, and what the registry's ages are relative to. The wall clock, because the killed
# run is a subprocess with its own clock: the registry's ages stay half an hour away from every threshold.
NOW = datetime.now(UTC).replace(microsecond=0)
MAX_RUNS = 4
LATER = NOW + timedelta(seconds=DEFAULT_LEASE_SECONDS + 60)  # the runs after the faulty one: its leases expired


# --- the server and the registry ----------------------------------------------------------------------------------


@dataclass
class Moto:
    endpoint: str

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION, endpoint_url=self.endpoint)

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")).close()


@dataclass
class Pristine:
    """The realistic registry as seeded once, to restore into moto's backend before each scenario (seeding it
    through the API takes a second; a copy of the backend's repositories takes milliseconds)."""

    seeded: SeededRegistry
    repositories: dict[str, Repository]


@pytest.fixture(scope="module")
def moto() -> Iterator[Moto]:
    werkzeug = logging.getLogger("werkzeug")
    level, werkzeug.level = werkzeug.level, logging.WARNING  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    moto = Moto(f"http://{host}:{port}")
    try:
        with EcrFidelity():
            yield moto
    finally:
        moto.reset()  # moto's backends are the process's: leave them empty for the next server
        server.stop()
        werkzeug.level = level


@pytest.fixture(scope="module")
def pristine(moto: Moto) -> Pristine:
    moto.reset()
    seeded = seed_registry(MotoEcr(moto.client("ecr")), NOW)
    return Pristine(seeded, copy.deepcopy(ecr_backends[ACCOUNT][REGION].repositories))


@pytest.fixture(autouse=True)
def isolated_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@dataclass
class World:
    """The realistic registry, freshly restored, with its bucket, lease table and a topic with a queue."""

    moto: Moto
    seeded: SeededRegistry
    topic_arn: str
    queue_url: str
    ecr: MotoEcr

    def state(self) -> State:
        return self.ecr.state(self.seeded.repositories)

    def plan(self) -> tuple[Snapshot, Plan]:
        """The registry as it is now, and the offline planner's plan of it."""
        snapshot = snapshot_registry(EcrRegistry(self.moto.client("ecr"), ACCOUNT, REGION), MemoryManifestCache())
        inventory = read_inventory_from_bucket(S3Bucket(BUCKET, self.moto.client("s3")))
        return snapshot, plan_registry(parse_config(rules_text(dry_run=False)), snapshot, inventory, NOW)

    def keys(self, prefix: str) -> list[str]:
        pages = self.moto.client("s3").get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [entry["Key"] for page in pages for entry in page.get("Contents", [])]

    def messages(self) -> list[dict[str, Any]]:
        sqs = self.moto.client("sqs")
        received = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return [json.loads(message["Body"]) for message in received.get("Messages", [])]

    def report(self, key: str) -> RunReport:
        body = self.moto.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read()
        return RunReport.model_validate(json.loads(body))

    def label(self, digest: str) -> str:
        return self.seeded.label_of(digest)


def fresh_world(moto: Moto, pristine: Pristine) -> World:
    moto.reset()
    ecr_backends[ACCOUNT][REGION].repositories = copy.deepcopy(pristine.repositories)
    create_inventory_bucket(moto.client("s3"), in_use_manifests(pristine.seeded), name=BUCKET)
    create_lease_table(moto.client("dynamodb"))
    topic_arn, queue_url = create_topic_with_queue(moto.client("sns"), moto.client("sqs"))
    return World(moto, pristine.seeded, topic_arn, queue_url, MotoEcr(moto.client("ecr")))


def comparable(state: State) -> State:
    """moto stamps lastArchivedAt with the wall clock."""
    return {
        repository: {d: without_archive_time(v) for d, v in details.items()} for repository, details in state.items()
    }


@dataclass
class RunResult:
    report: RunReport | None  # what the run returned, or the report it stored before it died
    error: Exception | None
    recorder: ApiCallRecorder

    @property
    def retries(self) -> int:
        return sum((call.attempts or 1) - 1 for call in self.recorder.calls)


def run_through(world: World, endpoint: str, client_config: Config = CLIENT_CONFIG, now: datetime = NOW) -> RunResult:
    """One whole run in this process, every client pointed at `endpoint` with the production configuration (or
    a variant of it); botocore's back-off sleeps are skipped, its retries are not."""
    recorder = ApiCallRecorder()

    def client(service: str) -> Any:
        return recorder.attach(boto3.client(service, region_name=REGION, endpoint_url=endpoint, config=client_config))

    adapters = Adapters(
        registry=EcrRegistry(client("ecr"), ACCOUNT, REGION),
        bucket=S3Bucket(BUCKET, client("s3")),
        notifier=SnsNotifier(world.topic_arn, client("sns")),
        leases=DynamoDbLeases(LEASE_TABLE, client("dynamodb"), clock=lambda: now),
        clock=lambda: now,
        renderers=RENDERERS,
    )
    reports_before = set(world.keys("reports/"))
    with instant_retries():
        try:
            return RunResult(run_pipeline(parse_config(rules_text(dry_run=False)), adapters), None, recorder)
        except Exception as error:  # a run that dies is a result too: it must not have changed anything unreported
            stored = sorted(key for key in set(world.keys("reports/")) - reports_before if key.endswith(".json"))
            return RunResult(world.report(stored[0]) if stored else None, error, recorder)


# --- what every run must satisfy ---------------------------------------------------------------------------------


@dataclass
class RunCheck:
    """What one run did to the registry, and what its report says about it (repository -> digests)."""

    protected: int  # images its plan keeps, each verified unchanged
    gone: dict[str, set[str]]
    claimed: dict[str, set[str]]
    unconfirmed: dict[str, set[str]]  # gone but not claimed: reported failed

    @property
    def happened(self) -> int:
        return sum(len(d) for d in self.gone.values())

    @property
    def claimed_count(self) -> int:
        return sum(len(d) for d in self.claimed.values())

    @property
    def exact(self) -> bool:
        return all(self.claimed.get(name, set()) == digests for name, digests in self.gone.items())


def check_run(
    world: World,
    snapshot: Snapshot,
    plan: Plan,
    before: State,
    after: State,
    result: RunResult,
    *,
    killed: bool = False,
) -> RunCheck:
    deletes, archives = planned(plan, "delete"), planned(plan, "archive")
    gone = {name: set(details) - set(after.get(name, {})) for name, details in before.items()}
    archived = {
        name: {d for d in details if d in after[name] and after[name][d]["imageStatus"] != details[d]["imageStatus"]}
        for name, details in before.items()
    }
    protected = 0
    for repository_plan in plan.repositories:
        name = repository_plan.repository_name
        for kept in (d.image_digest for d in repository_plan.images if d.action == "keep"):
            assert after[name].get(kept) == before[name][kept], ("a kept image changed", name, world.label(kept))
            protected += 1
        assert gone[name] <= deletes.get(name, set()), (
            "gone, not planned",
            name,
            gone[name] - deletes.get(name, set()),
        )
        assert archived[name] <= archives.get(name, set()), ("archived, not planned", name)
    for repository in snapshot.repositories:
        name, links = repository.repository_name, parents(repository)
        for digest in gone[name]:
            stayed = [parent for parent in links.get(digest, ()) if parent in after[name]]
            assert not stayed, ("went before its index or subject", name, world.label(digest), stayed)
    if result.report is None:
        changed = {name: digests for name, digests in gone.items() if digests} | {
            name: digests for name, digests in archived.items() if digests
        }
        assert killed or not changed, f"the run died after changing the registry, without a report: {result.error}"
        return RunCheck(protected, gone, {}, {})
    claimed, unconfirmed = {}, {}
    for entry in result.report.repositories:
        name = entry.repository_name
        claimed[name] = {e.image_digest for e in entry.deleted}
        assert claimed[name] <= gone[name], ("claimed deleted, still there", name, claimed[name] - gone[name])
        for e in entry.archived:
            assert after[name][e.image_digest]["imageStatus"] == "ARCHIVED", ("claimed archived", name)
        failed = {e.image_digest for e in entry.failed}
        unconfirmed[name] = gone[name] - claimed[name]
        for digest in unconfirmed[name]:
            assert digest in failed, ("gone, neither claimed nor reported failed", name, world.label(digest))
        listed = [e.image_digest for e in (*entry.deleted, *entry.archived, *entry.cancelled, *entry.failed)]
        assert len(listed) == len(set(listed)), ("an image reported twice", name)
    return RunCheck(protected, gone, claimed, unconfirmed)


def removals(plan: Plan) -> int:
    return sum(1 for r in plan.repositories for d in r.images if d.removes)


def runs_to_fixed_point(
    world: World, proxy: FaultProxy, client_config: Config = CLIENT_CONFIG, *, first_only: bool = False
) -> list[tuple[RunResult, RunCheck, State]]:
    """The first run with the proxy's faults (and `client_config`), then runs without faults while the plan still
    removes something.
    The later runs come when a lease the first run could not release has expired: the registry's ages are half
    an hour away from every threshold, so they decide as at NOW."""
    runs: list[tuple[RunResult, RunCheck, State]] = []
    for number in range(1 if first_only else MAX_RUNS):
        snapshot, plan = world.plan()
        if runs and not removals(plan):
            break
        before = world.state()
        if number == 0:
            result = run_through(world, proxy.endpoint, client_config, NOW)
        else:  # without faults, and with the production configuration
            result = run_through(world, proxy.endpoint, CLIENT_CONFIG, LATER)
        after = world.state()
        runs.append((result, check_run(world, snapshot, plan, before, after, result), after))
        proxy.clear()
    return runs


# --- the matrix ----------------------------------------------------------------------------------------------------


@dataclass
class Row:
    fault: str
    runs: int
    injected: int
    retries: int
    protected: int
    claimed: int
    happened: int
    outcome: str


MATRIX: list[Row] = []
HEADER = ("fault", "runs", "injected", "retries", "protected", "claimed/happened", "outcome")


@pytest.fixture(scope="module", autouse=True)
def fault_matrix() -> Iterator[list[Row]]:
    yield MATRIX
    if not MATRIX:
        return
    cells = [
        (
            r.fault,
            str(r.runs),
            str(r.injected),
            str(r.retries),
            str(r.protected),
            f"{r.claimed}/{r.happened}",
            r.outcome,
        )
        for r in MATRIX
    ]
    widths = [max(len(row[i]) for row in [HEADER, *cells]) for i in range(len(HEADER))]
    print("\n\n===== FAULT MATRIX =====")
    print("runs: until the plan removes nothing more (faults in the first run only); injected: requests the proxy")
    print("answered with the fault; retries: botocore's; protected: images the first run's plan keeps, each verified")
    print("unchanged; claimed/happened: deletions the reports claim / deletions that happened, over all runs")
    for row in [HEADER, tuple("-" * w for w in widths), *cells]:
        print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print()


def describe(runs: list[tuple[RunResult, RunCheck, State]], reference: Reference) -> str:
    parts = []
    for number, (result, check, _) in enumerate(runs, start=1):
        if result.report is None:
            parts.append(f"run {number} died, nothing changed ({type(result.error).__name__})")
            continue
        report = result.report
        if result.error is not None:
            parts.append(f"run {number} {report.outcome}, report stored, then {type(result.error).__name__}")
            continue
        codes = Counter(e.error_code or "?" for r in report.repositories for e in r.failed)
        outcomes = Counter(r.outcome for r in report.repositories if r.outcome not in ("ok", "unmanaged"))
        text = f"run {number} {report.outcome}"
        details = [f"{n} {code}" for code, n in sorted(codes.items())]
        details += [f"{n} repository {outcome}" for outcome, n in sorted(outcomes.items()) if outcome != "partial"]
        if details:
            text += " (" + ", ".join(details) + ")"
        unconfirmed = sum(len(d) for d in check.unconfirmed.values())
        if unconfirmed:
            text += f" [{unconfirmed} gone, reported NotConfirmed]"
        parts.append(text)
    final = comparable(runs[-1][2])
    same = final in (reference.final, reference.after_first)
    return "; ".join(parts) + ("; registry = fault-free" if same else "; registry DIFFERS")


# --- the reference -------------------------------------------------------------------------------------------------


@dataclass
class Reference:
    after_first: State
    final: State


@pytest.fixture(scope="module")
def reference(moto: Moto, pristine: Pristine) -> Reference:
    """Where runs without faults (through the proxy, with no rule) leave the registry: after the first, and at
    the fixed point."""
    world = fresh_world(moto, pristine)
    with FaultProxy(moto.endpoint, seed=0) as proxy:
        runs = runs_to_fixed_point(world, proxy)
    for result, check, _ in runs:
        assert result.report is not None, result.error
        assert result.report.outcome == "ok"
        assert check.exact
    assert len(runs) == 2  # the second deletes what frontend's deletions freed in backend
    reference = Reference(comparable(runs[0][2]), comparable(runs[-1][2]))
    MATRIX.append(
        Row(
            "none",
            len(runs),
            0,
            sum(result.retries for result, _, _ in runs),
            runs[0][1].protected,
            sum(check.claimed_count for _, check, _ in runs),
            sum(check.happened for _, check, _ in runs),
            describe(runs, reference),
        )
    )
    return reference


# --- the scenarios -------------------------------------------------------------------------------------------------

JSON_SERVICES = frozenset({"ecr", "dynamodb"})  # whose errors are JSON bodies with __type
ALL_SERVICES = frozenset({"ecr", "s3", "dynamodb", "sns"})
# An error without a body is one botocore cannot parse for SNS's query protocol (and does not retry): its own row.
BODYLESS_OK = ALL_SERVICES - {"sns"}
BATCH_DELETE = frozenset({"BatchDeleteImage"})


@dataclass(frozen=True)
class Scenario:
    name: str
    rules: Callable[[], list[FaultRule]]  # fresh rules (they count) for each use
    # "equal": the first run leaves the registry the first fault-free run leaves, with an exact report;
    # "converges": the first run may fall short, reporting what it could not do or confirm.
    expect: str
    seed: int = 7
    client_config: Config = CLIENT_CONFIG


# Short enough to give up on an answer held 2 s, long enough that no other answer of a loaded CI machine hits it.
READ_TIMEOUT_CONFIG = CLIENT_CONFIG.merge(Config(read_timeout=1.5))

SCENARIOS = [
    Scenario(
        "HTTP 429 bursts (ECR, S3, DynamoDB, p=0.2, 3 a burst)",
        lambda: [FaultRule("status", status=429, services=BODYLESS_OK, probability=0.2, burst=3)],
        "equal",
    ),
    Scenario(
        "SNS Publish answered HTTP 429 without a body (not retried)",
        lambda: [FaultRule("status", status=429, operations=frozenset({"Publish"}), burst=MAX_ATTEMPTS)],
        "converges",
    ),
    Scenario(
        "HTTP 500 bursts (ECR, S3, DynamoDB, p=0.2, 2 a burst)",
        lambda: [FaultRule("status", status=500, services=BODYLESS_OK, probability=0.2, burst=2)],
        "equal",
    ),
    Scenario(
        f"ThrottlingException bodies (ECR, DynamoDB, p=0.2, {MAX_ATTEMPTS - 1} a burst)",
        lambda: [FaultRule("throttling", services=JSON_SERVICES, probability=0.2, burst=MAX_ATTEMPTS - 1)],
        "equal",
    ),
    Scenario(
        "slow answers (all services, p=0.2, +30 ms)",
        lambda: [FaultRule("slow", services=ALL_SERVICES, probability=0.2, delay=0.03)],
        "equal",
    ),
    Scenario(
        "connections dropped before moto (all services, p=0.15)",
        lambda: [FaultRule("drop", services=ALL_SERVICES, probability=0.15)],
        "equal",
    ),
    Scenario(
        "BatchDeleteImage served, answer dropped (p=0.5)",
        lambda: [FaultRule("drop_after_forward", operations=BATCH_DELETE, probability=0.5)],
        "converges",
    ),
    Scenario(
        "BatchDeleteImage served, answer after the read timeout (2 calls)",
        lambda: [FaultRule("slow", operations=BATCH_DELETE, probability=0.5, delay=2.0, limit=2)],
        "converges",
        seed=3,
        client_config=READ_TIMEOUT_CONFIG,
    ),
    Scenario(
        f"ThrottlingException storm: one BatchDeleteImage throttled {MAX_ATTEMPTS} times",
        lambda: [FaultRule("throttling", operations=BATCH_DELETE, after=2, burst=MAX_ATTEMPTS, limit=1)],
        "converges",
    ),
    Scenario(
        f"HTTP 500 storm: one UpdateImageStorageClass answered 500 {MAX_ATTEMPTS} times",
        lambda: [
            FaultRule(
                "status", status=500, operations=frozenset({"UpdateImageStorageClass"}), burst=MAX_ATTEMPTS, limit=1
            )
        ],
        "converges",
    ),
    Scenario(
        "in-use manifest unreadable: S3 GetObject in-use/ dropped every attempt",
        lambda: [
            FaultRule(
                "drop",
                operations=frozenset({"GetObject"}),
                path_prefix=f"/{BUCKET}/in-use/",
                burst=MAX_ATTEMPTS,
                limit=1,
            )
        ],
        "converges",
    ),
    Scenario(
        "lease not taken: DynamoDB PutItem (4th repository) dropped every attempt",
        lambda: [FaultRule("drop", operations=frozenset({"PutItem"}), after=3, burst=MAX_ATTEMPTS, limit=1)],
        "converges",
    ),
    Scenario(
        "lease not released: DynamoDB DeleteItem (1st repository) dropped every attempt",
        lambda: [FaultRule("drop", operations=frozenset({"DeleteItem"}), burst=MAX_ATTEMPTS, limit=1)],
        "converges",
    ),
    Scenario(
        "everything at once (p=0.05 each; BatchDeleteImage answers dropped p=0.3)",
        lambda: [
            FaultRule("status", status=429, services=BODYLESS_OK, probability=0.05, burst=2),
            FaultRule("status", status=500, services=BODYLESS_OK, probability=0.05, burst=2),
            FaultRule("throttling", services=JSON_SERVICES, probability=0.05, burst=3),
            FaultRule("slow", services=ALL_SERVICES, probability=0.05, delay=0.02),
            FaultRule("drop", services=ALL_SERVICES, probability=0.05),
            FaultRule("drop_after_forward", operations=BATCH_DELETE, probability=0.3),
        ],
        "converges",
        seed=2,
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.name)
def test_a_faulty_run_deletes_nothing_protected_claims_nothing_false_and_the_runs_converge(
    moto: Moto, pristine: Pristine, reference: Reference, scenario: Scenario
) -> None:
    world = fresh_world(moto, pristine)
    with FaultProxy(moto.endpoint, seed=scenario.seed) as proxy:
        proxy.add(*scenario.rules())
        runs = runs_to_fixed_point(world, proxy, scenario.client_config, first_only=scenario.expect == "equal")
        injected = len(proxy.faults())
    MATRIX.append(
        Row(
            scenario.name,
            len(runs),
            injected,
            sum(result.retries for result, _, _ in runs),
            runs[0][1].protected,
            sum(check.claimed_count for _, check, _ in runs),
            sum(check.happened for _, check, _ in runs),
            describe(runs, reference),
        )
    )
    assert injected > 0, "the scenario injected no fault"
    first, first_check, after_first = runs[0]
    if scenario.expect == "equal":  # and so the same fixed point
        assert first.error is None
        assert first.report is not None
        assert first.report.outcome == "ok"
        assert first_check.exact
        assert comparable(after_first) == reference.after_first
        return
    for result, check, _ in runs[1:]:
        assert result.error is None
        assert result.report is not None
        assert result.report.outcome == "ok"
        assert check.exact
    assert comparable(runs[-1][2]) == reference.final, "the runs did not end where the fault-free runs end"


# --- a run killed between two BatchDeleteImage calls ----------------------------------------------------------------


def ecr_retention_process(world: World, endpoint: str, rules: Path) -> subprocess.Popen[str]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("AWS_ENDPOINT_URL", "AWS_PROFILE"))
    }
    environment |= {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "PYTHONPATH": os.pathsep.join([str(LAMBDAS), environment.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    arguments = ["--config", str(rules), "--bucket", BUCKET, "--topic-arn", world.topic_arn]
    return subprocess.Popen(
        [sys.executable, "-m", "ecr_retention", "run", *arguments, "--lease-table", LEASE_TABLE, "--format", "json"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, RunReport]:
    stdout, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    return process.returncode, RunReport.model_validate(json.loads(stdout))


def killed_before(world: World, proxy: FaultProxy, hold: FaultRule, rules: Path) -> State:
    """Start `ecr-retention run`, and SIGKILL it while the proxy holds the request `hold` matches (moto never sees
    that request). Returns the registry as the killed run left it."""
    proxy.add(hold)
    process = ecr_retention_process(world, proxy.endpoint, rules)
    try:
        assert proxy.held.wait(timeout=60), "the run never made the request to hold"
    finally:
        process.kill()  # SIGKILL: no handler runs, no report, no lease release
        process.communicate(timeout=30)
    proxy.release.set()
    proxy.clear()
    assert process.returncode == -signal.SIGKILL
    assert world.keys("reports/") == []  # the killed run stored no report: none claims anything
    assert world.messages() == []
    return world.state()


def expire_lease(world: World, repository: str) -> None:
    """What fifteen minutes do to a lease the killed run held."""
    world.moto.client("dynamodb").update_item(
        TableName=LEASE_TABLE,
        Key={LEASE_TABLE_KEY: {"S": repository}},
        UpdateExpression="SET #expires = :past",
        ExpressionAttributeNames={"#expires": LEASE_TABLE_TTL_ATTRIBUTE},
        ExpressionAttributeValues={":past": {"N": "0"}},
    )


def run_process(world: World, endpoint: str, rules: Path, before: State) -> tuple[int, RunReport, RunCheck, State]:
    snapshot, plan = world.plan()
    process = ecr_retention_process(world, endpoint, rules)
    stdout, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    report = RunReport.model_validate(json.loads(stdout))
    after = world.state()
    return (
        process.returncode,
        report,
        check_run(world, snapshot, plan, before, after, RunResult(report, None, ApiCallRecorder())),
        after,
    )


def test_a_run_killed_between_two_batch_delete_image_calls_is_finished_by_the_next_runs(
    moto: Moto, pristine: Pristine, reference: Reference, tmp_path: Path
) -> None:
    world = fresh_world(moto, pristine)
    rules = tmp_path / "retention.yaml"
    rules.write_text(rules_text(dry_run=False))
    snapshot, plan = world.plan()
    before = world.state()
    with FaultProxy(moto.endpoint, seed=0) as proxy:
        # The bulk repository deletes 716 builds in one wave, in calls of 100: the run dies after the first.
        hold = FaultRule("hold", operations=BATCH_DELETE, body_contains=BULK_REPOSITORY.encode(), after=1, limit=1)
        killed_state = killed_before(world, proxy, hold, rules)
        killed = check_run(
            world, snapshot, plan, before, killed_state, RunResult(None, None, ApiCallRecorder()), killed=True
        )
        assert len(killed.gone[BULK_REPOSITORY]) == 100
        assert [e.request.operation for e in proxy.faults("hold")] == ["BatchDeleteImage"]

        # The next run finds the bulk repository's lease still held by the killed run (it lasts 15 minutes), so
        # it leaves that repository alone and reports it busy; the rest is done and reported exactly.
        code, busy_run, busy, busy_state = run_process(world, proxy.endpoint, rules, killed_state)
        assert (code, busy_run.outcome) == (1, "partial")
        assert {r.repository_name: r.outcome for r in busy_run.repositories if r.outcome != "ok"} == {
            BULK_REPOSITORY: "busy"
        }
        assert busy.exact
        assert busy_state[BULK_REPOSITORY] == killed_state[BULK_REPOSITORY]

        # Once the lease has expired, the next run finishes the job, and its report is exact.
        expire_lease(world, BULK_REPOSITORY)
        code, last_run, last, _ = run_process(world, proxy.endpoint, rules, busy_state)
    assert (code, last_run.outcome) == (0, "ok")
    assert last.exact
    assert len(last.gone[BULK_REPOSITORY]) == 616
    assert comparable(world.state()) == reference.final
    MATRIX.append(
        Row(
            "`ecr-retention run` SIGKILLed between two BatchDeleteImage calls",
            3,
            1,
            0,
            killed.protected,
            busy.claimed_count + last.claimed_count,
            killed.happened + busy.happened + last.happened,
            f"killed: {killed.happened} gone, no report; run 2 partial (1 repository busy: the killed run's "
            "lease); lease expired; run 3 ok; registry = fault-free",
        )
    )


def test_a_run_killed_between_a_subjects_wave_and_its_referrers_wave_strands_only_the_referrers(
    moto: Moto, pristine: Pristine, reference: Reference, tmp_path: Path
) -> None:
    """Subjects go a wave before their referrers (so that a subject's failed deletion keeps them). A run killed
    between the two waves strands the referrers of what it removed: nothing a kept image needs is gone, but the
    cosign signature of a deleted release is now an ordinary image for the rules (SPEC: a cosign signature whose
    subject is absent; only OCI referrers are removed as orphans), and the signature of an archived build stays
    with its subject, which is archived already; app's rules select neither, so later runs keep both. The one case where runs do not reach the fault-free
    registry; it is named here so that nobody mistakes it for convergence."""
    world = fresh_world(moto, pristine)
    rules = tmp_path / "retention.yaml"
    rules.write_text(rules_text(dry_run=False))
    snapshot, plan = world.plan()
    before = world.state()
    with FaultProxy(moto.endpoint, seed=0) as proxy:
        # app (the first repository): its releases and builds go in one call, then the signature of v1.0.0.
        hold = FaultRule("hold", operations=BATCH_DELETE, body_contains=b'"app"', after=1, limit=1)
        killed_state = killed_before(world, proxy, hold, rules)
        killed = check_run(
            world, snapshot, plan, before, killed_state, RunResult(None, None, ApiCallRecorder()), killed=True
        )
        left = planned(plan, "delete")["app"] - killed.gone["app"]
        assert [world.label(digest) for digest in left] == ["app v1.0.0 signature"]
        assert world.seeded.digest("app v1.0.0") in killed.gone["app"]

        expire_lease(world, "app")
        code, next_run, after_next, after = run_process(world, proxy.endpoint, rules, killed_state)
    assert (code, next_run.outcome) == (0, "ok")
    assert after_next.exact
    # The deleted release's signature stays, and so does the archived build's signature, ACTIVE: its subject is
    # archived already, so no rule archives it again, and its referrer stays with it.
    stranded = {world.seeded.digest(label): label for label in ("app v1.0.0 signature", "app pr-101 signature")}
    app = comparable(after)["app"]
    assert {world.label(d) for d in app.keys() - reference.final["app"].keys()} == {"app v1.0.0 signature"}
    assert {world.label(d) for d, detail in app.items() if detail != reference.final["app"].get(d)} == set(
        stranded.values()
    )
    assert all(app[digest] == comparable(before)["app"][digest] for digest in stranded)
    MATRIX.append(
        Row(
            "`ecr-retention run` SIGKILLed between a subject's and its referrer's wave",
            2,
            1,
            0,
            killed.protected,
            after_next.claimed_count,
            killed.happened + after_next.happened,
            f"killed: {killed.happened} gone, no report; run 2 ok; app = fault-free but for 2 stranded signatures "
            "(of a deleted and of an archived image: no rule selects them now)",
        )
    )
