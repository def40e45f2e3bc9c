"""The AWS inventory, pure parts and the service with in-memory readers: names, revisions, manifest entries, what a
failed read does, and how the manifests of AWS accounts take part in a plan (hub and spoke)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.aws import (
    ContainerImage,
    EcsService,
    EcsTask,
    FunctionAlias,
    FunctionCode,
    ImageUse,
    ScheduledTask,
    TaskDefinition,
    build_aws_manifest,
    digest_of_resolved_uri,
    inventory_name,
    newest_revisions,
    resolved_digest,
    task_workload,
)
from ecr_retention.domain.inventory.manifest import read_inventory
from ecr_retention.handlers.wiring.collector import CollectorSettings
from ecr_retention.ports import AccountReaders, ReadFailed
from ecr_retention.services.aws_inventory import (
    BucketManifestStore,
    collect_aws_inventory,
    export_aws_inventory,
)
from support.builders import (
    ACCOUNT,
    HOST,
    NOW,
    REGION,
    action_of,
    config,
    digest,
    image,
    in_use,
    kinds_of,
    plan,
    repository,
    snapshot,
)
from support.fakes import MemoryBucket

SPOKE = "210987654321"
SOURCE = f"aws-{ACCOUNT}-{REGION}"
SPOKE_SOURCE = f"aws-{SPOKE}-{REGION}"
ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}"


def td(family: str, revision: int) -> str:
    return f"{ARN}:task-definition/{family}:{revision}"


# ---------------------------------------------------------------------------------------------------------------
# Names and pure helpers


def test_the_source_name_is_a_cluster_name_that_safety_clusters_accepts() -> None:
    cfg = config([{"delete": {"untagged": True}}], clusters=[inventory_name(ACCOUNT, REGION), "prod"])

    assert tuple(map(str, cfg.safety.clusters)) == (SOURCE, "prod")
    assert build_aws_manifest(SOURCE, NOW, (), complete=True).cluster == SOURCE


def test_newest_revisions_keeps_n_per_family_and_never_mixes_families_that_share_a_prefix() -> None:
    arns = [td("web", n) for n in (1, 2, 10, 3)] + [td("web-worker", n) for n in (1, 2)] + ["not-an-arn"]

    assert set(newest_revisions(arns, 2)) == {td("web", 10), td("web", 3), td("web-worker", 1), td("web-worker", 2)}
    assert newest_revisions(arns, 0) == []


@pytest.mark.parametrize(
    ("group", "workload"),
    [
        ("service:web", "Service/web"),
        ("family:nightly", "Task/family:nightly"),
        ("adhoc", "Task/adhoc"),
        ("", "Task/-"),
    ],
)
def test_a_task_belongs_to_its_service_or_its_group(group: str, workload: str) -> None:
    assert task_workload(group) == workload


def test_digests_are_taken_only_from_what_aws_resolved() -> None:
    sha = "sha256:" + "ab" * 32
    assert digest_of_resolved_uri(f"{HOST}/api@{sha}") == sha
    assert digest_of_resolved_uri(f"{HOST}/api:stable") is None
    assert digest_of_resolved_uri(None) is None
    assert resolved_digest(sha) == sha
    assert resolved_digest("sha256:short") is None
    assert resolved_digest(None) is None


def test_the_manifest_has_one_entry_per_distinct_use_sorted_whatever_the_order_read() -> None:
    uses = [
        ImageUse("prod", "Service/web", "ecs-service", (ContainerImage("web", f"{HOST}/web:2"),)),
        ImageUse("lambda", "Function/api:1", "lambda", (ContainerImage("function", f"{HOST}/api:1", digest("a")),)),
        ImageUse(
            "prod", "Service/web", "ecs-service", (ContainerImage("web", f"{HOST}/web:2"), ContainerImage("x", ""))
        ),
    ]

    first = build_aws_manifest(SOURCE, NOW, uses, complete=True)
    second = build_aws_manifest(SOURCE, NOW, list(reversed(uses)), complete=True)

    assert first == second
    assert [(e.namespace, e.workload) for e in first.images] == [("lambda", "Function/api:1"), ("prod", "Service/web")]


# ---------------------------------------------------------------------------------------------------------------
# The service with in-memory readers


@dataclass
class FakeEcs:
    clusters: list[str] = field(default_factory=lambda: [f"{ARN}:cluster/prod"])
    definitions: dict[str, TaskDefinition] = field(default_factory=dict)
    service_list: list[EcsService] = field(default_factory=list)
    task_list: list[EcsTask] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)
    described: list[str] = field(default_factory=list)

    def _check(self, what: str) -> None:
        if what in self.failing:
            raise ReadFailed(f"{what}: ThrottlingException")

    def cluster_arns(self) -> list[str]:
        self._check("clusters")
        return self.clusters

    def services(self, cluster_arn: str) -> list[EcsService]:
        self._check("services")
        return self.service_list

    def tasks(self, cluster_arn: str) -> list[EcsTask]:
        self._check("tasks")
        return self.task_list

    def active_task_definition_arns(self) -> list[str]:
        self._check("revisions")
        return list(self.definitions)

    def task_definition(self, arn: str) -> TaskDefinition:
        self._check(arn)
        self.described.append(arn)
        return self.definitions[arn]


@dataclass
class FakeScheduled:
    tasks: list[ScheduledTask] = field(default_factory=list)

    def event_buses(self) -> list[str]:
        return ["default"]

    def rules(self, bus: str) -> list[str]:
        return ["nightly"]

    def rule_tasks(self, bus: str, rule: str) -> list[ScheduledTask]:
        return self.tasks

    def schedules(self) -> list[tuple[str, str]]:
        raise ReadFailed("EventBridge Scheduler schedules: ListSchedules failed: AccessDeniedException")

    def schedule_task(self, group: str, name: str) -> ScheduledTask | None:
        raise AssertionError("not reached")


@dataclass
class FakeFunctions:
    codes: dict[tuple[str, str], FunctionCode] = field(default_factory=dict)
    alias_list: list[FunctionAlias] = field(default_factory=list)

    def image_functions(self) -> dict[str, list[str]]:
        return {"api": sorted({qualifier for _, qualifier in self.codes})}

    def aliases(self, function: str) -> list[FunctionAlias]:
        return self.alias_list

    def code(self, function: str, qualifier: str) -> FunctionCode | None:
        return self.codes.get((function, qualifier))


def definition(family: str, revision: int, image_ref: str) -> TaskDefinition:
    return TaskDefinition(td(family, revision), family, revision, (ContainerImage("app", image_ref),))


def readers(ecs: FakeEcs, account: str = ACCOUNT) -> AccountReaders:
    return AccountReaders(
        account=account,
        region=REGION,
        ecs=ecs,
        scheduled=FakeScheduled([ScheduledTask(f"{ARN}:cluster/prod", "Rule/nightly", td("job", 1))]),
        functions=FakeFunctions(
            codes={("api", "1"): FunctionCode(f"{HOST}/api:stable", digest("api-1"))},
            alias_list=[FunctionAlias("live", ("1",))],
        ),
    )


def fake_ecs() -> FakeEcs:
    definitions = {d.arn: d for d in (definition("web", 1, f"{HOST}/web:1"), definition("web", 2, f"{HOST}/web:2"))}
    definitions[td("job", 1)] = definition("job", 1, f"{HOST}/job:1")
    return FakeEcs(
        definitions=definitions,
        service_list=[EcsService(f"{ARN}:cluster/prod", "web", (td("web", 2), td("web", 1)))],
        task_list=[
            EcsTask(
                f"{ARN}:cluster/prod",
                "service:web",
                td("web", 2),
                (ContainerImage("app", f"{HOST}/web:2", digest("w2")),),
            )
        ],
    )


def test_a_failed_read_is_named_and_everything_else_is_still_collected() -> None:
    ecs = fake_ecs()
    ecs.failing = {"tasks"}

    collection = collect_aws_inventory(readers(ecs), generated_at=NOW, revisions=5)

    assert collection.manifest.complete is False
    assert collection.problems == (
        "tasks: ThrottlingException",
        "EventBridge Scheduler schedules: ListSchedules failed: AccessDeniedException",
    )
    workloads = {(e.workload, e.image) for e in collection.manifest.images}
    assert ("Service/web", f"{HOST}/web:1") in workloads
    assert ("Rule/nightly", f"{HOST}/job:1") in workloads
    assert ("Function/api:live", f"{HOST}/api:stable") in workloads
    assert not any(e.workload == "Service/web" and e.source == "ecs-task" for e in collection.manifest.images)


def test_an_account_that_cannot_be_entered_gets_an_empty_incomplete_manifest() -> None:
    class Access:
        def accounts(self) -> list[str]:
            return [ACCOUNT, SPOKE]

        def readers(self, account: str, region: str) -> AccountReaders:
            if account == SPOKE:
                raise ReadFailed(f"role arn:aws:iam::{SPOKE}:role/reader: AssumeRole failed: AccessDenied")
            return readers(fake_ecs())

    bucket = MemoryBucket()
    collections = export_aws_inventory(Access(), [REGION], BucketManifestStore(bucket), clock=lambda: NOW)

    assert [c.name for c in collections] == [SOURCE, SPOKE_SOURCE]
    spoke = json.loads(bucket.objects[f"in-use/{SPOKE_SOURCE}.json"])
    assert (spoke["complete"], spoke["images"], spoke["generatedAt"]) == (False, [], "2026-11-30T06:00:00Z")
    assert collections[1].problems == (f"role arn:aws:iam::{SPOKE}:role/reader: AssumeRole failed: AccessDenied",)


# ---------------------------------------------------------------------------------------------------------------
# In the plan: fail closed for an expected source, and hub images protected from any account


def test_an_expected_aws_source_that_is_incomplete_or_stale_blocks_every_deletion() -> None:
    cfg = config([{"delete": {"untagged": True}}], clusters=[SOURCE])
    snap = snapshot(repository("app", image("old")))

    incomplete = plan(cfg, snap, in_use(SOURCE, complete=False))
    stale = plan(cfg, snap, in_use(SOURCE, age=timedelta(hours=7)))
    fresh = plan(cfg, snap, in_use(SOURCE))

    assert incomplete.blocked == (f"cluster {SOURCE}: in-use manifest is incomplete (complete: false)",)
    assert stale.blocked == (f"cluster {SOURCE}: in-use manifest is 7h old, older than inventory_max_age 6h",)
    assert (fresh.blocked, action_of(fresh, "app", "old")) == ((), "delete")


def test_a_missing_aws_source_blocks_when_expected() -> None:
    cfg = config([{"delete": {"untagged": True}}], clusters=[SOURCE])

    result = plan(cfg, snapshot(repository("app", image("old"))))

    assert result.blocked == (f"cluster {SOURCE}: no in-use manifest",)


def test_a_spoke_account_reference_to_the_hub_registry_protects_the_hub_image() -> None:
    """The spoke's manifest names the hub's registry (ECR references carry the account): its tag protects the
    hub image, and the same repository and tag in the spoke's own registry protects nothing in the hub."""
    cfg = config([{"delete": {"tags": ["v*"]}}], clusters=[SOURCE, SPOKE_SOURCE])
    snap = snapshot(repository("app", image("hub-v1", "v1"), image("hub-v2", "v2"), image("hub-v3", "v3")))
    spoke_registry = f"{SPOKE}.dkr.ecr.{REGION}.amazonaws.com"

    result = plan(
        cfg,
        snap,
        in_use(SOURCE),
        in_use(
            SPOKE_SOURCE,
            (f"{HOST}/app:v1", None),
            (f"{spoke_registry}/app:v2", None),
            (f"{HOST}/other@{digest('hub-v3')}", None),
        ),
    )

    assert result.blocked == ()
    assert (action_of(result, "app", "hub-v1"), kinds_of(result, "app", "hub-v1")[0]) == ("keep", "in-use")
    assert action_of(result, "app", "hub-v2") == "delete"
    assert action_of(result, "app", "hub-v3") == "keep"  # a digest protects in every repository


def test_a_collected_manifest_reads_back_through_the_strict_reader() -> None:
    collection = collect_aws_inventory(readers(fake_ecs()), generated_at=NOW)
    bucket = MemoryBucket()
    BucketManifestStore(bucket).store(
        collection.name, collection.manifest.model_dump_json(by_alias=True, exclude_none=True).encode()
    )

    inventory = read_inventory(bucket.objects.items())

    assert inventory.problems == {}
    assert [m.cluster for m in inventory.manifests] == [SOURCE]


# ---------------------------------------------------------------------------------------------------------------
# The collector function's settings


def spoke_roles_file(directory: Path, text: str) -> Path:
    path = directory / "spoke-roles.json"
    path.write_text(text)
    return path


def test_collector_settings_read_json_arrays_and_default_to_the_function_region(tmp_path: Path) -> None:
    roles = spoke_roles_file(tmp_path, json.dumps({"spokeRoleArns": [f"arn:aws:iam::{SPOKE}:role/with,comma"]}))
    settings = CollectorSettings.from_environ(
        {
            "BUCKET_NAME": "inventory",
            "AWS_REGION": "eu-west-1",
            "SPOKE_ROLES_FILE": str(roles),
            "TASK_DEFINITION_REVISIONS": "3",
        }
    )

    assert settings.collect_regions == ("eu-west-1",)
    assert settings.role_arns == (f"arn:aws:iam::{SPOKE}:role/with,comma",)
    assert settings.revisions == 3


def test_collector_settings_without_a_spoke_roles_file_read_no_spoke_and_take_no_list_from_the_environment() -> None:
    # The list lives only in the asset's file: the old SPOKE_ROLE_ARNS variable is no way around it.
    settings = CollectorSettings.from_environ(
        {
            "BUCKET_NAME": "inventory",
            "AWS_REGION": "eu-west-1",
            "SPOKE_ROLE_ARNS": json.dumps([f"arn:aws:iam::{SPOKE}:role/reader"]),
        }
    )
    assert (settings.spoke_roles_file, settings.role_arns) == (None, ())


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("COLLECT_REGIONS", "eu-west-1", "COLLECT_REGIONS"),
        ("COLLECT_REGIONS", '["Ireland"]', "COLLECT_REGIONS"),
        ("TASK_DEFINITION_REVISIONS", "-1", "TASK_DEFINITION_REVISIONS"),
    ],
)
def test_collector_settings_refuse_bad_values_with_one_line(name: str, value: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as raised:
        CollectorSettings.from_environ({"BUCKET_NAME": "inventory", "AWS_REGION": "eu-west-1", name: value})
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            json.dumps({"spokeRoleArns": [f"arn:aws:iam::{SPOKE}:role/a", f"arn:aws:iam::{SPOKE}:role/b"]}),
            "one role per account",
        ),
        (json.dumps({"spokeRoleArns": ["arn:aws:iam::2109876543:role/short-account"]}), "spokeRoleArns"),
        (json.dumps({"spokeRoleArns": f"arn:aws:iam::{SPOKE}:role/a"}), "spokeRoleArns"),
        (json.dumps({"spokeRoleArn": [f"arn:aws:iam::{SPOKE}:role/a"]}), "spokeRoleArn"),
        (json.dumps([f"arn:aws:iam::{SPOKE}:role/a"]), "spoke-roles.json"),
        ('{"spokeRoleArns": [', "spoke-roles.json"),
    ],
)
def test_collector_settings_refuse_a_bad_spoke_roles_file_with_one_line_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    roles = spoke_roles_file(tmp_path, text)
    with pytest.raises(InputError, match=message) as raised:
        CollectorSettings.from_environ(
            {"BUCKET_NAME": "inventory", "AWS_REGION": "eu-west-1", "SPOKE_ROLES_FILE": str(roles)}
        )
    assert str(raised.value).startswith(f"{roles}: ")
    assert "\n" not in str(raised.value)


def test_collector_settings_refuse_a_missing_spoke_roles_file_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "spoke-roles.json"
    with pytest.raises(InputError) as raised:
        CollectorSettings.from_environ(
            {"BUCKET_NAME": "inventory", "AWS_REGION": "eu-west-1", "SPOKE_ROLES_FILE": str(missing)}
        )
    assert str(raised.value) == f"{missing}: no such file"
