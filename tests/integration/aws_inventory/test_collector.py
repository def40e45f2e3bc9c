"""The AWS inventory collector on moto: what it reads, how (pages, batches, one DescribeTaskDefinition per ARN),
what the plan then keeps, and what a failed read does (an incomplete manifest that blocks the run)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
import yaml

from ecr_retention.aws.accounts import AwsAccounts
from ecr_retention.aws.clients import MAX_ATTEMPTS, ClientFactory
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.cdk.spoke_templates import SPOKE_READER_ROLE, template_path
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.inventory.manifest import InUseManifest
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.ports import StorageUnavailable
from ecr_retention.services.aws_inventory import BucketManifestStore, ManifestCollection, export_aws_inventory
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_registry
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.emulator.workloads import AwsFidelity, MotoWorkloads
from support.api_calls import ApiCallRecorder
from support.aws_workloads_scenario import (
    BUCKET,
    HOST,
    HUB,
    HUB_SOURCE,
    REGION,
    RULES,
    SPOKE_ROLE,
    SPOKE_SOURCE,
    HubScenario,
    seed_hub,
)


def bucket() -> S3Bucket:
    return S3Bucket(BUCKET, boto3.client("s3", region_name=REGION))


def collect(factory: ClientFactory, *roles: str, revisions: int = 5) -> list[ManifestCollection]:
    return export_aws_inventory(
        AwsAccounts(factory, roles), [REGION], BucketManifestStore(bucket()), revisions=revisions
    )


def stored_manifest(name: str) -> InUseManifest:
    body = boto3.client("s3", region_name=REGION).get_object(Bucket=BUCKET, Key=f"in-use/{name}.json")["Body"].read()
    return InUseManifest.model_validate(json.loads(body))


def entries(manifest: InUseManifest) -> set[tuple[str, str, str, str, str, str | None]]:
    return {(e.namespace, e.workload, e.source, e.container, e.image, e.digest) for e in manifest.images}


def plan_hub(rules: str = RULES) -> Plan:
    snapshot = snapshot_registry(
        EcrRegistry(boto3.client("ecr", region_name=REGION), HUB, REGION), MemoryManifestCache()
    )
    return plan_registry(
        parse_config(rules, "retention.yaml"), snapshot, read_inventory_from_bucket(bucket()), datetime.now(UTC)
    )


def deleted(plan: Plan) -> set[str]:
    return {d.image_digest for repository in plan.repositories for d in repository.images if d.action == "delete"}


def in_use_reasons(plan: Plan, digest: str) -> list[str]:
    return [
        r.detail
        for repository in plan.repositories
        for d in repository.images
        if d.image_digest == digest
        for r in d.reasons
        if r.kind == "in-use"
    ]


@pytest.fixture
def scenario(ecr: MotoEcr, hub: MotoWorkloads) -> HubScenario:
    return seed_hub(ecr, hub)


def test_collects_services_mid_rollback_tasks_schedules_revisions_and_image_functions(
    scenario: HubScenario, factory: ClientFactory
) -> None:
    [collection] = collect(factory)

    manifest = stored_manifest(HUB_SOURCE)
    assert collection.problems == ()
    assert manifest.cluster == HUB_SOURCE
    assert manifest.complete is True
    found = entries(manifest)
    web, batch = scenario.web_revisions, scenario.batch_revisions
    digest = scenario.digest
    expected = {
        # both sides of the rollback; the INACTIVE deployment (web:1) is not there
        ("prod", "Service/web", "ecs-service", "web", f"{HOST}/web:v2", None),
        ("prod", "Service/web", "ecs-service", "web", f"{HOST}/web:v3", None),
        ("prod", "Service/web", "ecs-service", "envoy", "public.ecr.aws/envoy:v1", None),
        # running tasks, with the digest ECS resolved when the tag pointed elsewhere
        ("prod", "Task/family:worker", "ecs-task", "worker", f"{HOST}/worker:latest", digest("worker:A")),
        # scheduled tasks: a rule on the default bus, a Scheduler schedule in its group
        ("prod", "Rule/nightly", "ecs-task", "job", f"{HOST}/batch:v1", None),
        ("prod", "Schedule/reports/hourly", "ecs-task", "job", f"{HOST}/batch:v2", None),
        # the five newest ACTIVE revisions of each family
        *(("ecs", f"TaskDefinition/web:{n}", "ecs-task", "web", f"{HOST}/web:v{n}", None) for n in range(4, 9)),
        *(("ecs", f"TaskDefinition/batch:{n}", "ecs-task", "job", f"{HOST}/batch:v{n}", None) for n in range(4, 9)),
        ("ecs", "TaskDefinition/worker:1", "ecs-task", "worker", f"{HOST}/worker:latest", None),
        # every version and alias of the image function, with its resolved digest
        ("lambda", "Function/api:1", "lambda", "function", f"{HOST}/api:stable", digest("api:S1")),
        ("lambda", "Function/api:live", "lambda", "function", f"{HOST}/api:stable", digest("api:S1")),
        ("lambda", "Function/api:2", "lambda", "function", f"{HOST}/api:stable", digest("api:S2")),
        ("lambda", "Function/api:canary", "lambda", "function", f"{HOST}/api:stable", digest("api:S2")),
        ("lambda", "Function/api:$LATEST", "lambda", "function", f"{HOST}/api:stable", digest("api:S2")),
    }
    assert expected <= found
    assert not any(e[4] == f"{HOST}/web:v1" for e in found)
    assert not any("legacy" in e[1] for e in found)  # a zip function has no image
    assert collection.counts == {
        "clusters": 1,
        "services": 1,
        "tasks": 3,
        "scheduled tasks": 2,
        "task definitions": 11,
        "functions": 1,
        "function versions": 3,
    }
    assert web[0] not in json.dumps(manifest.model_dump(mode="json"))
    assert batch[2] not in str(found)


def test_plan_keeps_every_image_ecs_and_lambda_use_and_deletes_the_rest(
    scenario: HubScenario, factory: ClientFactory
) -> None:
    collect(factory)

    plan = plan_hub()

    assert plan.blocked == ()
    assert deleted(plan) == scenario.unused
    for name in (
        "web:v2",
        "web:v3",
        "web:v4",
        "web:v8",
        "worker:A",
        "worker:B",
        "batch:v1",
        "batch:v2",
        "api:S1",
        "api:S2",
    ):
        assert in_use_reasons(plan, scenario.digest(name)), name
    # Only version 1 of the function still names S1, by the digest Lambda resolved: that alone keeps it.
    assert any("Function/api:live (lambda)" in detail for detail in in_use_reasons(plan, scenario.digest("api:S1")))
    assert any(
        "Task/family:worker (ecs-task)" in detail for detail in in_use_reasons(plan, scenario.digest("worker:A"))
    )


def test_lists_follow_every_page_and_describes_go_in_batches(
    aws: AwsFidelity, hub: MotoWorkloads, factory: ClientFactory, recorder: ApiCallRecorder
) -> None:
    aws.page_size = 40
    hub.cluster("busy")
    definitions = [hub.task_definition("svc", {"app": f"{HOST}/app:{n}"}) for n in range(1, 4)]
    for number in range(12):
        hub.service("busy", f"svc-{number}", definitions[number % 3])
    hub.run_tasks("busy", definitions[0], group="family:svc", digests={"app": "sha256:" + "a" * 64}, count=230)

    [collection] = collect(factory)

    assert collection.problems == ()
    assert collection.counts["services"] == 12
    assert collection.counts["tasks"] == 230
    calls = recorder.counts("ecs")
    assert calls["ListTasks"] == 6  # 230 tasks, 40 a page
    assert [len(call.params["tasks"]) for call in recorder.of("DescribeTasks")] == [100, 100, 30]
    assert [len(call.params["services"]) for call in recorder.of("DescribeServices")] == [10, 2]
    assert {call.params["maxResults"] for call in recorder.of("ListTasks")} == {100}  # asked for full pages
    # One DescribeTaskDefinition per distinct ARN, although 12 services and the revisions name the same three.
    described = Counter(call.params["taskDefinition"] for call in recorder.of("DescribeTaskDefinition"))
    assert set(described.values()) == {1}
    assert set(described) == set(definitions)


def test_a_task_definition_that_cannot_be_read_is_asked_for_once_and_named_once(
    aws: AwsFidelity, hub: MotoWorkloads, factory: ClientFactory
) -> None:
    hub.cluster("busy")
    definitions = [hub.task_definition("svc", {"app": f"{HOST}/app:{n}"}) for n in range(1, 4)]
    for number in range(12):
        hub.service("busy", f"svc-{number}", definitions[number % 3])
    aws.throttle("ecs", "DescribeTaskDefinition", times=MAX_ATTEMPTS)  # the first one read: svc:1

    [collection] = collect(factory)

    assert collection.problems == (
        f"ECS task definition {definitions[0]}: DescribeTaskDefinition failed: ThrottlingException: "
        "injected ThrottlingException",
    )
    assert aws.served[("ecs", "DescribeTaskDefinition")] == MAX_ATTEMPTS + 2  # not again for svc-3, -6, -9
    assert {e.workload for e in stored_manifest(HUB_SOURCE).images if e.image == f"{HOST}/app:2"} >= {"Service/svc-1"}


def test_a_throttled_list_is_retried_and_the_manifest_stays_complete(
    aws: AwsFidelity, scenario: HubScenario, factory: ClientFactory, recorder: ApiCallRecorder
) -> None:
    aws.throttle("ecs", "ListServices", times=2)
    aws.throttle("lambda", "ListFunctions", times=1)

    [collection] = collect(factory)

    assert collection.problems == ()
    assert stored_manifest(HUB_SOURCE).complete is True
    assert [call.attempts for call in recorder.of("ListServices")] == [3]


@pytest.mark.parametrize(
    ("service", "operation", "code", "times", "named"),
    [
        ("ecs", "ListTasks", "AccessDeniedException", 1, "ECS cluster prod: ListTasks failed: AccessDeniedException"),
        ("lambda", "ListFunctions", "TooManyRequestsException", MAX_ATTEMPTS, "Lambda functions: ListFunctions failed"),
        ("scheduler", "GetSchedule", "InternalServerException", MAX_ATTEMPTS, "schedule reports/hourly: GetSchedule"),
        ("events", "ListTargetsByRule", "AccessDeniedException", 1, "rule default/nightly: ListTargetsByRule failed"),
    ],
)
def test_a_failed_read_writes_what_was_collected_as_incomplete_and_blocks_the_run(
    aws: AwsFidelity,
    scenario: HubScenario,
    factory: ClientFactory,
    service: str,
    operation: str,
    code: str,
    times: int,
    named: str,
) -> None:
    status = 429 if code == "TooManyRequestsException" else 500 if code == "InternalServerException" else 400
    aws.fail(service, operation, code, times=times, status=status)

    [collection] = collect(factory)

    manifest = stored_manifest(HUB_SOURCE)
    assert manifest.complete is False
    assert len(collection.problems) == 1
    assert named in collection.problems[0]
    assert ("prod", "Service/web", "ecs-service", "web", f"{HOST}/web:v2", None) in entries(manifest)  # still written
    plan = plan_hub()
    assert deleted(plan) == set()
    assert plan.blocked == (f"cluster {HUB_SOURCE}: in-use manifest is incomplete (complete: false)",)


def test_a_source_not_named_in_safety_clusters_does_not_block_but_still_protects(
    aws: AwsFidelity, scenario: HubScenario, factory: ClientFactory
) -> None:
    aws.fail("ecs", "ListTasks", "AccessDeniedException")
    collect(factory)

    plan = plan_hub(RULES.replace(f"clusters: [{HUB_SOURCE}]", "clusters: []"))

    assert plan.blocked == ()
    assert scenario.digest("worker:A") in deleted(plan)  # only the unread tasks named it
    assert scenario.digest("web:v2") not in deleted(plan)


def test_cross_account_collection_through_the_spoke_role_protects_the_hub_images(
    scenario: HubScenario, spoke: MotoWorkloads, factory: ClientFactory, recorder: ApiCallRecorder
) -> None:
    """The spoke runs the hub registry's images: its manifest, collected through the assumed role, protects
    them in the hub's plan (by tag, and by the digest Lambda resolved)."""
    spoke.cluster("payments")
    web = spoke.task_definition("payments", {"app": f"{HOST}/web:v1"})
    spoke.service("payments", "payments", web)
    spoke.image_function("fraud", f"{HOST}/worker@{scenario.digest('worker:C')}", scenario.digest("worker:C"))

    hub_collection, spoke_collection = collect(factory, SPOKE_ROLE)

    assert (hub_collection.name, spoke_collection.name) == (HUB_SOURCE, SPOKE_SOURCE)
    assert spoke_collection.problems == ()
    [assume] = recorder.of("AssumeRole")
    assert assume.params["RoleArn"] == SPOKE_ROLE
    manifest = stored_manifest(SPOKE_SOURCE)
    assert ("payments", "Service/payments", "ecs-service", "app", f"{HOST}/web:v1", None) in entries(manifest)
    assert not any(e[1].startswith("Service/web") for e in entries(manifest))  # the hub's ECS is not the spoke's
    plan = plan_hub()
    assert deleted(plan) == scenario.unused - {scenario.digest("web:v1"), scenario.digest("worker:C")}
    assert any(SPOKE_SOURCE in detail for detail in in_use_reasons(plan, scenario.digest("web:v1")))


def test_a_refused_assume_role_writes_an_empty_incomplete_manifest_for_the_spoke(
    aws: AwsFidelity, scenario: HubScenario, factory: ClientFactory
) -> None:
    aws.fail("sts", "AssumeRole", "AccessDenied", status=403)

    hub_collection, spoke_collection = collect(factory, SPOKE_ROLE)

    assert hub_collection.problems == ()
    assert spoke_collection.problems == (f"role {SPOKE_ROLE}: AssumeRole failed: AccessDenied: injected AccessDenied",)
    manifest = stored_manifest(SPOKE_SOURCE)
    assert (manifest.complete, manifest.images) == (False, ())
    plan = plan_hub(RULES.replace(f"clusters: [{HUB_SOURCE}]", f"clusters: [{HUB_SOURCE}, {SPOKE_SOURCE}]"))
    assert plan.blocked == (f"cluster {SPOKE_SOURCE}: in-use manifest is incomplete (complete: false)",)


def test_a_manifest_that_cannot_be_stored_is_reported_and_the_others_are_still_written(
    scenario: HubScenario, spoke: MotoWorkloads, factory: ClientFactory
) -> None:
    class FailsFirst:
        def __init__(self) -> None:
            self.inner = BucketManifestStore(bucket())
            self.calls = 0

        def store(self, name: str, body: bytes) -> str:
            self.calls += 1
            if self.calls == 1:
                raise StorageUnavailable("s3://inventory-bucket/in-use/x.json: PutObject failed: AccessDenied")
            return self.inner.store(name, body)

        def stored(self, name: str) -> tuple[str, bytes | None]:
            return self.inner.stored(name)

    store: Any = FailsFirst()
    hub_collection, spoke_collection = export_aws_inventory(AwsAccounts(factory, [SPOKE_ROLE]), [REGION], store)

    assert hub_collection.store_error is not None
    assert "AccessDenied" in hub_collection.store_error
    assert spoke_collection.location == f"s3://{BUCKET}/in-use/{SPOKE_SOURCE}.json"


SPOKE_TEMPLATE = template_path(SPOKE_READER_ROLE)


def test_the_spoke_role_allows_exactly_the_read_calls_the_collector_makes(
    scenario: HubScenario, factory: ClientFactory, recorder: ApiCallRecorder
) -> None:
    collect(factory)

    made = {f"{call.service}:{call.operation}" for call in recorder.calls if call.service != "sts"}
    template = yaml.safe_load(SPOKE_TEMPLATE.read_text(encoding="utf-8"))
    [policy] = template["Resources"]["ReaderRole"]["Properties"]["Policies"]
    allowed = {action for statement in policy["PolicyDocument"]["Statement"] for action in statement["Action"]}
    assert allowed == made
    assert all("*" not in action and action.split(":")[1].startswith(("List", "Get", "Describe")) for action in allowed)
