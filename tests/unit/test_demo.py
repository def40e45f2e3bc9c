"""The demo's parts that need no emulator: nothing of it runs at import, a missing moto is one line, and the
verification fails when the registry shows what must not happen."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Action, Decision, Plan, RepositoryPlan
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.domain.reporting.run_report import RunFacts, RunReport, run_report_of
from ecr_retention_dev.demo.registry import AwsWorkload, DemoRegistry, SeededImage
from ecr_retention_dev.demo.verify import RegistryState, plan_without_source, planned_actions, verify
from ecr_retention_dev.emulator.seeding import MotoEcr
from support import builders

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)

IMPORT_PROBE = """
import json, os, sys, threading
before = (dict(os.environ), threading.active_count())
from ecr_retention.cli import build_parser
build_parser().parse_args(["demo", "--keep-running"])
import ecr_retention_dev.demo, ecr_retention.commands.demo
moto_after_cli = "moto" in sys.modules
import ecr_retention_dev.demo.runner  # imports moto, the handlers' modules, boto3
after = (dict(os.environ), threading.active_count())
print(json.dumps({"moto_after_cli": moto_after_cli, "environment": before[0] == after[0],
                  "threads": [before[1], after[1]]}))
"""


def test_importing_the_demo_starts_nothing_and_the_cli_does_not_load_moto() -> None:
    probe = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True)

    result = json.loads(probe.stdout)
    assert result == {"moto_after_cli": False, "environment": True, "threads": [1, 1]}


def test_without_moto_the_demo_says_in_one_line_to_run_make_demo() -> None:
    script = "import sys; sys.modules['moto'] = None; from ecr_retention.cli import main; sys.exit(main(['demo']))"

    probe = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)

    assert probe.returncode == 1
    assert probe.stdout == ""
    assert probe.stderr.count("\n") == 1
    assert "ecr-retention demo: moto (a development dependency) is not installed; run `make demo`" in probe.stderr


def test_without_the_dev_distribution_the_demo_names_it_in_one_line() -> None:
    script = (
        "import sys; sys.modules['ecr_retention_dev'] = None; from ecr_retention.cli import main; "
        "sys.exit(main(['demo']))"
    )

    probe = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)

    assert probe.returncode == 2
    assert probe.stdout == ""
    assert probe.stderr.count("\n") == 1
    assert "ecr-retention demo: the demo is not installed; install ecr-retention-dev" in probe.stderr


# The verification, on a small registry: an index (tagged stable) with its child, a release a cluster runs, the
# latest and an old release, a young build, a pull-request build for the archive, an image no policy governs, and
# two old releases an ECS service and a Lambda function run (the rules alone would delete them), and an old release
# a cluster in the Region app replicates its deletions to runs.

INDEX, CHILD, RUNNING, OLD, YOUNG, PR, TRY, LATEST, SERVICE, FUNCTION, REPLICA, ARCHIVED_IN_USE = (
    "sha256:" + c * 64 for c in "abcdef012345"
)
API, APP, WORKER, SANDBOX = "platform/api", "app", "team-payments/worker", "sandbox/experiments"
Key = tuple[str, str]


def registry() -> DemoRegistry:
    ecr = MotoEcr(SimpleNamespace(meta=SimpleNamespace(region_name="eu-west-1")))
    seeded = DemoRegistry(ecr=ecr, now=NOW)
    seeded.repositories = [API, APP, WORKER, SANDBOX]
    for repository, digest, children in (
        (API, INDEX, (CHILD,)),
        (API, CHILD, ()),
        (APP, RUNNING, ()),
        (APP, OLD, ()),
        (APP, YOUNG, ()),
        (APP, LATEST, ()),
        (WORKER, PR, ()),
        (SANDBOX, TRY, ()),
        (APP, SERVICE, ()),
        (APP, FUNCTION, ()),
        (APP, REPLICA, ()),
        (APP, ARCHIVED_IN_USE, ()),
    ):
        seeded.images[(repository, digest)] = SeededImage(
            repository, digest, f"{repository} {digest[7:9]}", NOW, children
        )
    seeded.tags = {APP: {"1.0": RUNNING, "0.6": REPLICA}}
    seeded.uses("prod", f"{seeded.host}/app:1.0", "Deployment/app")
    seeded.uses("us-prod", f"{seeded.replica_host}/app:0.6", "Deployment/app")
    # a native pull-time rule archived what dev runs: the real sweep restores it
    seeded.uses("dev", f"{seeded.host}/app@{ARCHIVED_IN_USE}", "Deployment/app", digest=ARCHIVED_IN_USE)
    seeded.archived_in_use = [(APP, ARCHIVED_IN_USE)]
    seeded.aws_workloads = [
        AwsWorkload("ECS service", "backoffice/app-admin", APP, SERVICE, f"{seeded.host}/app:0.8", "1 task running"),
        AwsWorkload("Lambda function", "reports", APP, FUNCTION, f"{seeded.host}/app:0.7", "version 1, alias live"),
    ]
    return seeded


def detail(digest: str, *tags: str, age: timedelta = timedelta(days=90)) -> dict[str, Any]:
    return {"imageDigest": digest, "imageTags": list(tags), "imagePushedAt": NOW - age, "imageStatus": "ACTIVE"}


BEFORE = RegistryState(
    {
        (API, INDEX): detail(INDEX, "v1", "stable"),
        (API, CHILD): detail(CHILD),
        (APP, RUNNING): detail(RUNNING, "1.0"),
        (APP, OLD): detail(OLD, "0.9"),
        (APP, YOUNG): detail(YOUNG, age=timedelta(hours=2)),
        (APP, LATEST): detail(LATEST, "1.1", "latest"),
        (WORKER, PR): detail(PR, "pr-1"),
        (SANDBOX, TRY): detail(TRY, "try-0"),
        (APP, SERVICE): detail(SERVICE, "0.8"),
        (APP, FUNCTION): detail(FUNCTION, "0.7"),
        (APP, REPLICA): detail(REPLICA, "0.6"),
        (APP, ARCHIVED_IN_USE): {**detail(ARCHIVED_IN_USE, "0.5"), "imageStatus": "ARCHIVED"},
    },
    NOW,
)
CLEAN_DELETED, CLEAN_ARCHIVED = [(APP, OLD)], [(WORKER, PR)]


def plan_of(actions: dict[str, Action], *, blocked: tuple[str, ...] = ()) -> Plan:
    """A plan of app only: digest -> action (the plan without the collector's manifest, as the test needs it)."""
    decisions = tuple(
        Decision(
            image_digest=digest,
            image_tags=(),
            image_pushed_at=NOW,
            action=action,
            reasons=(Reason(kind="delete-rule" if action == "delete" else "keep-rule", detail=""),),
        )
        for digest, action in actions.items()
    )
    repositories = (RepositoryPlan(repository_name=APP, policy="policies[0]", images=decisions),)
    return Plan(generated_at=NOW, dry_run=True, blocked=blocked, repositories=repositories)


# Without the collector's manifest, the rules delete both images ECS and Lambda run (and the old release).
WITHOUT_COLLECTOR = plan_of({OLD: "delete", SERVICE: "delete", FUNCTION: "delete", LATEST: "keep"})


def report(deleted: list[Key], archived: list[Key], *, dry_run: bool = False, restored: bool = True) -> RunReport:
    def entry(digest: str) -> ImageEntry:
        return ImageEntry(image_digest=digest, image_tags=(), image_pushed_at=NOW, kind="delete-rule", detail="")

    restores = [(APP, ARCHIVED_IN_USE)] if restored else []

    return run_report_of(
        RunFacts(
            run_id="20261130T060000Z-schedule-1a2b3c4d",
            trigger="schedule",
            dry_run=dry_run,
            started_at=NOW,
            finished_at=NOW,
            repositories=[
                RepositoryReport(
                    repository_name=name,
                    outcome="ok",
                    deleted=tuple(entry(d) for n, d in deleted if n == name),
                    archived=tuple(entry(d) for n, d in archived if n == name),
                    restored=tuple(entry(d) for n, d in restores if n == name),
                )
                for name in sorted({name for name, _ in [*deleted, *archived, *restores]})
            ],
        )
    )


def after(deleted: list[Key], archived: list[Key], *, restored: bool = True) -> RegistryState:
    images = {key: value for key, value in BEFORE.images.items() if key not in deleted}
    for key in archived:
        images[key] = {**images[key], "imageStatus": "ARCHIVED"}
    if restored:
        images[(APP, ARCHIVED_IN_USE)] = {**images[(APP, ARCHIVED_IN_USE)], "imageStatus": "ACTIVE"}
    return RegistryState(images, NOW)


def failed_checks(
    deleted: list[Key],
    archived: list[Key] = CLEAN_ARCHIVED,
    announced: RunReport | None = None,
    without_collector: Plan = WITHOUT_COLLECTOR,
) -> list[str]:
    done = report(deleted, archived)
    result = verify(registry(), BEFORE, after(deleted, archived), announced or done, done, without_collector)
    failed = [check.name for check in result.checks if not check.ok]
    assert result.ok is not bool(failed)
    return failed


def test_a_clean_run_is_verified() -> None:
    done = report(CLEAN_DELETED, CLEAN_ARCHIVED)
    result = verify(registry(), BEFORE, after(CLEAN_DELETED, CLEAN_ARCHIVED), done, done, WITHOUT_COLLECTOR)

    assert result.ok
    assert (result.deleted, result.archived) == (set(CLEAN_DELETED), set(CLEAN_ARCHIVED))


@pytest.mark.parametrize(
    ("also_deleted", "failed"),
    [
        ((APP, RUNNING), "in use"),
        ((API, CHILD), "referenced"),
        ((APP, YOUNG), "young"),
        ((SANDBOX, TRY), "untouched"),
        ((APP, LATEST), "protected"),
        ((APP, SERVICE), "ECS and Lambda"),
        ((APP, FUNCTION), "ECS and Lambda"),
        ((APP, REPLICA), "replicated"),
    ],
)
def test_deleting_what_must_stay_fails_the_verification(also_deleted: Key, failed: str) -> None:
    assert failed_checks([*CLEAN_DELETED, also_deleted]) == [failed]


def test_archiving_an_in_use_image_fails_the_verification() -> None:
    assert failed_checks(CLEAN_DELETED, [*CLEAN_ARCHIVED, (APP, RUNNING)]) == ["in use"]


def test_archiving_an_image_ecs_runs_fails_the_verification() -> None:
    assert failed_checks(CLEAN_DELETED, [*CLEAN_ARCHIVED, (APP, SERVICE)]) == ["ECS and Lambda"]


@pytest.mark.parametrize(
    "without_collector",
    [
        plan_of({OLD: "delete", SERVICE: "keep", FUNCTION: "delete"}),  # the rules keep it anyway
        plan_of({OLD: "delete", FUNCTION: "delete"}),  # the plan does not know the image
        plan_of({OLD: "delete", SERVICE: "delete", FUNCTION: "delete"}, blocked=("cluster prod: stale",)),
    ],
)
def test_an_ecs_image_the_rules_alone_would_keep_proves_nothing_and_fails_the_verification(
    without_collector: Plan,
) -> None:
    assert failed_checks(CLEAN_DELETED, without_collector=without_collector) == ["ECS and Lambda"]


def test_a_blocked_plan_removes_nothing() -> None:
    blocked = plan_of({OLD: "delete"}, blocked=("cluster prod: stale",))
    assert planned_actions(blocked) == {(APP, OLD): "keep"}


def test_the_plan_without_the_collector_drops_its_manifest_and_its_name_from_safety_clusters() -> None:
    source = f"aws-{builders.ACCOUNT}-{builders.REGION}"
    snapshot = builders.snapshot(builders.repository("app", builders.image("admin", "1.12.313")))
    rules = builders.config(
        [{"delete": {"tags": ["*.*"], "older_than": "30d"}}], clusters=["prod", source], inventory_max_age="6h"
    )
    reference = f"{builders.HOST}/app:1.12.313"
    inventory = Inventory(manifests=(builders.in_use("prod"), builders.in_use(source, (reference, "admin"))))
    key = ("app", builders.digest("admin"))

    with_collector = plan_registry(rules, snapshot, inventory, builders.NOW)
    without_collector = plan_without_source(rules, snapshot, inventory, source, builders.NOW)

    assert planned_actions(with_collector)[key] == "keep"
    assert (without_collector.blocked, planned_actions(without_collector)[key]) == ((), "delete")
    assert tuple(map(str, rules.safety.clusters)) == ("prod", source)  # the rules themselves are left as they were


def test_an_in_use_image_found_archived_that_stays_archived_fails_the_verification() -> None:
    done = report(CLEAN_DELETED, CLEAN_ARCHIVED, restored=False)
    state = after(CLEAN_DELETED, CLEAN_ARCHIVED, restored=False)

    result = verify(registry(), BEFORE, state, done, done, WITHOUT_COLLECTOR)

    assert [check.name for check in result.checks if not check.ok] == ["in use", "restored"]
    [restored] = [check for check in result.checks if check.name == "restored"]
    assert "app 55: ARCHIVED before, ARCHIVED after" in restored.offenders


def test_a_restore_the_reports_do_not_list_fails_the_verification() -> None:
    done = report(CLEAN_DELETED, CLEAN_ARCHIVED)
    unannounced = report(CLEAN_DELETED, CLEAN_ARCHIVED, dry_run=True, restored=False)

    result = verify(registry(), BEFORE, after(CLEAN_DELETED, CLEAN_ARCHIVED), unannounced, done, WITHOUT_COLLECTOR)

    assert [check.name for check in result.checks if not check.ok] == ["restored"]


def test_a_report_that_does_not_match_the_registry_fails_the_verification() -> None:
    done = report([], CLEAN_ARCHIVED)  # the run deleted OLD but its report does not say so
    result = verify(registry(), BEFORE, after(CLEAN_DELETED, CLEAN_ARCHIVED), done, done, WITHOUT_COLLECTOR)

    assert [check.name for check in result.checks if not check.ok] == [
        "the report is exact",
        "the dry run announced it",
    ]
    assert not result.ok


def test_a_removal_the_dry_run_did_not_announce_fails_the_verification() -> None:
    announced = report([], CLEAN_ARCHIVED, dry_run=True)
    assert failed_checks(CLEAN_DELETED, announced=announced) == ["the dry run announced it"]


def test_a_run_that_removed_nothing_is_not_verified() -> None:
    assert failed_checks([], []) == ["something removed"]


@pytest.mark.parametrize("status", ["ACTIVE", "ARCHIVED"])
def test_states_read_the_storage_class(status: str) -> None:
    image = {**detail(OLD), "imageStatus": status}
    assert RegistryState({(APP, OLD): image}, NOW).active((APP, OLD)) is (status == "ACTIVE")
