"""The ASL itself, run: the state machine definition as the CDK stack synthesizes it, executed by moto's Step
Functions interpreter (`mock_aws(config={"stepfunctions": {"execute_state_machine": True}})`), with the real
handlers (ecr_retention.handlers.{targets,evaluate,report}.lambda_handler) answering its Lambda tasks.

A scheduled run, a push run and a run in which one worker crashed each end as the run report says: the
execution succeeds with the report step's answer, the report in S3 lists every target with its outcome, the
registry lost exactly what the report says was deleted, and the SNS message reached the subscribed queue.

How it is wired, and what is adapted (nothing else is):

* The definition is the template's `DefinitionString` (Fn::Join), with its tokens resolved as CloudFormation
  would: each function's `Fn::GetAtt [..., Arn]` becomes a function ARN, the inventory bucket's `Ref` the moto
  bucket's name, `AWS::Partition` `aws`.
* moto's interpreter lags AWS on two spellings the CDK emits, and only those are changed in the definition given
  to moto (`adapt_for_moto`); without either change moto's CreateStateMachine refuses the definition:
  - `"ToleratedFailurePercentage": 100`, an integer in the template: moto 5.2.5's ASL parser answers "no viable
    alternative at input '"ToleratedFailurePercentage":100'" (its grammar takes a decimal), so it becomes 100.0;
  - `ResultWriter.WriterConfig` (`{"OutputType": "JSON", "Transformation": "COMPACT"}`): moto's grammar expects
    only "Resource" and "Parameters" in a ResultWriter, so that key is dropped; the ResultWriter's Resource and
    Parameters stay, and moto writes the map run's manifest under runs/map-results/.
  Everything else runs as synthesized: the Retry and Catch clauses, the Distributed Map (ProcessorConfig
  DISTRIBUTED, MaxConcurrency) reading its items with the S3 ItemReader from runs/<runId>/targets.json, and the
  report step's Parameters.
* moto invokes a task's Lambda function through moto's Lambda, which needs Docker to run code. The test replaces
  the interpreter's one call that invokes it (`lambda_eval_utils._invoke_lambda_function`) with a router that
  calls the real handler of that function (found through the function's `Handler` in the template) in this
  process, with a fake Lambda context, and answers as Lambda does: the handler's return value as the payload,
  or, when the handler raises, `FunctionError: Unhandled` with `errorType` and `errorMessage`.
* "A crashed worker" is the router raising in place of the evaluate handler whenever its event names one repository
  (as an invocation that crashed or timed out: it stores no report): the batch's invocation, then that repository's
  own. The child execution evaluates the batch's other repositories one invocation each; the report lists the
  crashed repository as failed ("stored no report"). tests/integration/workflow/test_batches_on_moto.py has more.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from importlib import import_module
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

from ecr_retention.aws.clients import set_default_factory
from ecr_retention.handlers.wiring import forget_cold_start
from support import lambda_stack
from support.infra_stacks import CONTEXT, build_stack, rules_file
from support.lambda_stack import FakeContext
from support.state_machine import SynthesizedMachine, synthesized_machine

pytestmark = pytest.mark.slow

REGION = "eu-west-1"
HOST = f"{DEFAULT_ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com"
BUCKET = "inventory-bucket"
RULES = """\
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod], optional_clusters: [dev]}
policies:
  - repositories: ["app", "team-*/*"]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
"""
REPOSITORIES = ("app", "team-a/api", "unmanaged")
WORKFLOW_HANDLERS = ("targets", "evaluate", "report")


# --- the definition, from the synthesized template ---------------------------------------------------


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> SynthesizedMachine:
    stack = build_stack(rules_file(tmp_path_factory.mktemp("rules"), RULES), CONTEXT)
    return synthesized_machine(stack, bucket=BUCKET, region=REGION)


def adapt_for_moto(definition: dict[str, Any]) -> dict[str, Any]:
    """The two spellings moto 5.2.5's interpreter does not accept yet (see the module's docstring), nothing else."""
    adapted = json.loads(json.dumps(definition))
    each = adapted["States"]["EvaluateEachRepository"]
    assert each["ToleratedFailurePercentage"] == 100
    each["ToleratedFailurePercentage"] = 100.0
    assert each["ResultWriter"].pop("WriterConfig") == {"OutputType": "JSON", "Transformation": "COMPACT"}
    return adapted


# --- the Lambda tasks, answered by the real handlers -------------------------------------------------


@dataclass
class Router:
    handlers: dict[str, str]
    crash: Callable[[str, dict[str, Any]], bool] = lambda handler, event: False
    invocations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def invoke(self, parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
        """In place of lambda_eval_utils._invoke_lambda_function: Lambda's Invoke answer, from the real handler."""
        handler = self.handlers[parameters["FunctionName"]]
        event = json.loads(parameters["Payload"])
        self.invocations.append((handler, event))
        try:
            if self.crash(handler, event):
                raise RuntimeError("the worker crashed (Task timed out after 900.00 seconds)")
            module = import_module(f"ecr_retention.handlers.{handler}")
            result = module.lambda_handler(event, FakeContext(function_name=f"ecr-retention-{handler}"))
        except Exception as error:  # what Lambda answers for an unhandled exception
            failure = {"errorMessage": str(error), "errorType": type(error).__name__, "stackTrace": []}
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": failure, "ExecutedVersion": "$LATEST"}
        return {"StatusCode": 200, "Payload": json.loads(json.dumps(result)), "ExecutedVersion": "$LATEST"}


# --- the world: moto with the state machine executing -------------------------------------------------


@dataclass
class World:
    state_machine_arn: str
    queue_url: str
    router: Router
    images: dict[str, dict[str, str]]  # repository -> tag -> digest

    def run(self, execution_input: dict[str, Any]) -> dict[str, Any]:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.start_execution(stateMachineArn=self.state_machine_arn, input=json.dumps(execution_input))[
            "executionArn"
        ]
        deadline = time.monotonic() + 120
        while True:
            described = sfn.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING":
                return dict(described)
            assert time.monotonic() < deadline, "the execution did not end within 2 minutes"
            time.sleep(0.1)

    def report(self, execution: dict[str, Any]) -> dict[str, Any]:
        output = json.loads(execution["output"])
        bucket, _, key = output["reportKey"].removeprefix("s3://").partition("/")
        body = boto3.client("s3", region_name=REGION).get_object(Bucket=bucket, Key=key)["Body"].read()
        report: dict[str, Any] = json.loads(body)
        return report

    def messages(self) -> list[dict[str, Any]]:
        sqs = boto3.client("sqs", region_name=REGION)
        received = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in received]

    def event_types(self, execution: dict[str, Any]) -> list[str]:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        history = sfn.get_execution_history(executionArn=execution["executionArn"], maxResults=1000)
        return [event["type"] for event in history["events"]]

    def object_keys(self) -> list[str]:
        listed = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=BUCKET)
        return [item["Key"] for item in listed.get("Contents", [])]

    def tags(self, repository: str, region: str = REGION) -> set[str]:
        ecr = boto3.client("ecr", region_name=region)
        details = ecr.describe_images(repositoryName=repository)["imageDetails"]
        return {tag for detail in details for tag in detail.get("imageTags", [])}


@contextmanager
def world_of(
    synthesized: SynthesizedMachine,
    rules_text: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    within: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> Iterator[World]:
    """moto with the state machine executing, the handlers' world provisioned with `rules_text` (inside `within`, say
    the ECR emulator's fidelity), and no cold start yet: what a fixture adds before its first run reaches the
    handlers."""
    router = Router(synthesized.handlers)
    monkeypatch.setattr(lambda_eval_utils, "_invoke_lambda_function", router.invoke)
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), within():
        rules = tmp_path / "retention.yaml"
        rules.write_text(rules_text)
        provisioned = lambda_stack.provision(
            monkeypatch,
            rules,
            bucket=BUCKET,
            definition=adapt_for_moto(synthesized.definition),
            repositories=REPOSITORIES,
            images_of_their_own=True,
        )
        set_default_factory(None)
        forget_cold_start()
        yield World(provisioned.state_machine_arn, provisioned.queue_url, router, provisioned.images)
        forget_cold_start()
        set_default_factory(None)


@pytest.fixture
def world(synthesized: SynthesizedMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with world_of(synthesized, RULES, tmp_path, monkeypatch) as world:
        yield world


def names(event: dict[str, Any]) -> list[str]:
    """The repositories an evaluate invocation was given: a batch's, or one (a batch's member)."""
    return list(event["repositories"]) if "repositories" in event else [event["repository"]]


def outcomes(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["repositoryName"], r["outcome"]) for r in report["repositories"]]


def deleted_tags(report: dict[str, Any], repository: str) -> set[str]:
    [entry] = [r for r in report["repositories"] if r["repositoryName"] == repository]
    return {tag for image in entry["deleted"] for tag in image["imageTags"]}


def test_a_scheduled_run_ends_as_its_report_says(world: World) -> None:
    execution = world.run({"trigger": "schedule"})

    assert execution["status"] == "SUCCEEDED", execution
    report = world.report(execution)
    assert json.loads(execution["output"]) == {
        "runId": report["runId"],
        "outcome": "ok",
        "reportKey": report["reportKey"],
    }
    assert report["trigger"] == "schedule"
    assert report["outcome"] == "ok"
    assert outcomes(report) == [("app", "ok"), ("team-a/api", "ok")]
    # app keeps v4 (the newest) and v2 (in use in prod); team-a/api keeps v4; unmanaged is no target.
    assert deleted_tags(report, "app") == {"v1", "v3"}
    assert deleted_tags(report, "team-a/api") == {"v1", "v2", "v3"}
    assert report["totals"]["deleted"] == 5
    assert world.tags("app") == {"v2", "v4"}
    assert world.tags("team-a/api") == {"v4"}
    assert world.tags("unmanaged") == {"v1", "v2", "v3", "v4"}
    # One batch: both repositories in one child execution and one invocation.
    assert [handler for handler, _ in world.router.invocations] == ["targets", "evaluate", "report"]
    [batch] = [event for handler, event in world.router.invocations if handler == "evaluate"]
    assert batch["repositories"] == ["app", "team-a/api"]
    [message] = world.messages()
    assert message["Subject"].startswith("ecr-retention run ok: deleted 5 images")
    assert report["runId"] in message["Message"]


def test_a_push_run_evaluates_only_the_pushed_repositories_a_policy_matches(world: World) -> None:
    execution = world.run({"trigger": "push", "repositories": ["team-a/api", "unmanaged"]})

    assert execution["status"] == "SUCCEEDED", execution
    report = world.report(execution)
    assert json.loads(execution["output"])["outcome"] == "ok"
    assert report["trigger"] == "push"
    assert outcomes(report) == [("team-a/api", "ok")]
    assert deleted_tags(report, "team-a/api") == {"v1", "v2", "v3"}
    assert world.tags("team-a/api") == {"v4"}
    assert world.tags("app") == {"v1", "v2", "v3", "v4"}
    assert world.tags("unmanaged") == {"v1", "v2", "v3", "v4"}
    evaluated = [names(event) for handler, event in world.router.invocations if handler == "evaluate"]
    assert evaluated == [["team-a/api"]]
    [message] = world.messages()
    assert message["Subject"].startswith("ecr-retention run ok: deleted 3 images")


def test_a_crashed_worker_is_reported_failed_and_the_others_finish(world: World) -> None:
    world.router.crash = lambda handler, event: handler == "evaluate" and "team-a/api" in names(event)

    execution = world.run({"trigger": "schedule"})

    assert execution["status"] == "SUCCEEDED", execution  # the Map tolerates failed items; the report step ran
    report = world.report(execution)
    assert json.loads(execution["output"])["outcome"] == "partial"
    assert report["outcome"] == "partial"
    assert outcomes(report) == [("app", "ok"), ("team-a/api", "failed")]
    [failed] = [r for r in report["repositories"] if r["repositoryName"] == "team-a/api"]
    assert "stored no report" in failed["error"]
    assert deleted_tags(report, "app") == {"v1", "v3"}
    assert world.tags("app") == {"v2", "v4"}
    assert world.tags("team-a/api") == {"v1", "v2", "v3", "v4"}  # the crashed worker deleted nothing
    [message] = world.messages()
    assert "partial" in message["Subject"]
    assert "team-a/api: failed" in message["Message"]
    # The batch crashed; its child execution then gave each repository an invocation of its own.
    evaluated = [names(event) for handler, event in world.router.invocations if handler == "evaluate"]
    assert evaluated == [["app", "team-a/api"], ["app"], ["team-a/api"]]
    # The Map run itself succeeded (its failed item is within ToleratedFailurePercentage): the Catch was not taken.
    events = world.event_types(execution)
    assert "MapRunSucceeded" in events
    assert "MapStateFailed" not in events
    assert events[-1] == "ExecutionSucceeded"
    assert any(key.startswith("runs/map-results/") for key in world.object_keys())  # the ResultWriter's output


# --- a deployment that prunes two Regions -------------------------------------------------------------------

OTHER_REGION = "us-east-1"
OTHER_HOST = f"{DEFAULT_ACCOUNT_ID}.dkr.ecr.{OTHER_REGION}.amazonaws.com"
TWO_REGION_RULES = """\
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod], optional_clusters: [dev]}
policies:
  - repositories: ["app", "team-*/*"]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
  - repositories: [edge]
    regions: [us-east-1]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
"""


@dataclass
class TwoRegions:
    world: World
    other: dict[str, dict[str, str]]  # us-east-1: repository -> tag -> digest


@pytest.fixture
def two_regions(
    synthesized: SynthesizedMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TwoRegions]:
    """eu-west-1 as the scheduled world has it, app replicating to us-east-1 with its deletions; us-east-1 holds app's
    replicas v1-v4 and a v0 of its own, and `edge` (v1-v4), whose v2 prod runs from there, across Regions."""
    from ecr_retention_dev.emulator.fidelity import EcrFidelity

    with world_of(synthesized, TWO_REGION_RULES, tmp_path, monkeypatch, within=EcrFidelity) as world:
        replicate_app_to_the_other_region()
        other = boto3.client("ecr", region_name=OTHER_REGION)
        images: dict[str, dict[str, str]] = {}
        for repository, versions in (("app", range(5)), ("edge", range(1, 5))):
            other.create_repository(repositoryName=repository)
            images[repository] = {
                f"v{n}": lambda_stack.push(
                    other, repository, f"v{n}", timedelta(days=100 - n), seed=f"{repository}:v{n}"
                )
                for n in versions
            }
        assert {tag: images["app"][tag] for tag in ("v1", "v2", "v3", "v4")} == world.images["app"]  # replicas
        prod_runs(f"{OTHER_HOST}/edge:v2")
        monkeypatch.setenv("PRUNED_REGIONS", json.dumps([REGION, OTHER_REGION]))
        yield TwoRegions(world, images)


def replicate_app_to_the_other_region() -> None:
    boto3.client("ecr", region_name=REGION).put_replication_configuration(
        replicationConfiguration={
            "rules": [
                {
                    "destinations": [{"region": OTHER_REGION, "registryId": DEFAULT_ACCOUNT_ID}],
                    "repositoryFilters": [{"filter": "app", "filterType": "PREFIX_MATCH"}],
                    "deleteReplication": {"enabled": True},
                }
            ]
        }
    )


def prod_runs(image: str) -> None:
    """prod's manifest also names `image` (a template's)."""
    s3 = boto3.client("s3", region_name=REGION)
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key="in-use/prod.json")["Body"].read())
    workload = {"namespace": "prod", "workload": "Deployment/cdn", "container": "cdn", "source": "template"}
    manifest["images"].append({"image": image, **workload})
    s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=json.dumps(manifest))


def regional_outcomes(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((r["region"], r["repositoryName"], r["outcome"]) for r in report["repositories"])


def regional_deleted(report: dict[str, Any], region: str, repository: str) -> set[str]:
    [entry] = [r for r in report["repositories"] if (r["region"], r["repositoryName"]) == (region, repository)]
    return {tag for image in entry["deleted"] for tag in image["imageTags"]}


def test_one_run_prunes_both_registries_and_keeps_what_either_runs(two_regions: TwoRegions) -> None:
    world = two_regions.world

    execution = world.run({"trigger": "schedule"})

    assert execution["status"] == "SUCCEEDED", execution
    report = world.report(execution)
    assert report["outcome"] == "ok"
    assert regional_outcomes(report) == [
        ("eu-west-1", "app", "ok"),
        ("eu-west-1", "team-a/api", "ok"),
        ("us-east-1", "app", "ok"),
        ("us-east-1", "edge", "ok"),
    ]
    # eu-west-1 as before; its app deletions replicate to us-east-1, whose own rules decide only its own v0.
    assert regional_deleted(report, "eu-west-1", "app") == {"v1", "v3"}
    assert regional_deleted(report, "us-east-1", "app") == {"v0"}
    # edge: v2 runs in prod (a cluster of the other Region, pulling across), v4 is the newest.
    assert regional_deleted(report, "us-east-1", "edge") == {"v1", "v3"}
    assert world.tags("app", REGION) == {"v2", "v4"}
    assert world.tags("app", OTHER_REGION) == {"v2", "v4"}
    assert world.tags("edge", OTHER_REGION) == {"v2", "v4"}
    assert world.tags("team-a/api", REGION) == {"v4"}
    assert report["totals"]["deleted"] == 2 + 3 + 1 + 2
    items = [event for handler, event in world.router.invocations if handler == "evaluate"]
    assert sorted((item["region"] or REGION, name) for item in items for name in names(item)) == [
        ("eu-west-1", "app"),
        ("eu-west-1", "team-a/api"),
        ("us-east-1", "app"),
        ("us-east-1", "edge"),
    ]


def test_a_push_in_the_other_region_evaluates_that_registry_only(two_regions: TwoRegions) -> None:
    world = two_regions.world

    execution = world.run({"trigger": "push", "repositories": ["edge", "app"], "region": OTHER_REGION})

    assert execution["status"] == "SUCCEEDED", execution
    report = world.report(execution)
    assert regional_outcomes(report) == [("us-east-1", "app", "ok"), ("us-east-1", "edge", "ok")]
    # The replicas of eu-west-1's app are eu-west-1's to decide: only v0, us-east-1's own, goes.
    assert regional_deleted(report, "us-east-1", "app") == {"v0"}
    [replicas] = [r for r in report["repositories"] if (r["region"], r["repositoryName"]) == (OTHER_REGION, "app")]
    kept = {tag: entry for entry in replicas["keptImages"] for tag in entry["imageTags"]}
    # v2 is the digest prod runs (pinned, from eu-west-1): in use comes first among its reasons.
    assert {tag: entry["kind"] for tag, entry in kept.items()} == {
        "v1": "replica",
        "v2": "in-use",
        "v3": "replica",
        "v4": "replica",
    }
    assert "eu-west-1's rules decide it" in kept["v1"]["detail"]
    assert world.tags("app", OTHER_REGION) == {"v1", "v2", "v3", "v4"}
    assert world.tags("app", REGION) == {"v1", "v2", "v3", "v4"}
    assert world.tags("edge", OTHER_REGION) == {"v2", "v4"}
