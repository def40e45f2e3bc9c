"""A whole run in one process (the CLI door) and through the workflow's three steps (the Lambda door):
both reach the same registry state and the same report."""

from __future__ import annotations

import gc
import json
from datetime import timedelta

import pytest

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.registry.replication import RegistryReplication, ReplicationConfiguration, RunReplication
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.ports import StorageUnavailable
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.run_records import RunRecord
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from support.builders import ACCOUNT, NOW, REGION
from support.collector_watch import watched
from support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
RULES = """
version: 1
dry_run: {dry_run}
safety: {{min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod]}}
policies:
  - repositories: ["app", "team-*/*"]
    rules:
      - keep: {{tags: [latest]}}
      - delete: {{tags: ["v*"], older_than: 30d, keep_newest: 1}}
"""


def seeded() -> tuple[FakeRegistry, MemoryBucket]:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    for repository in ("app", "team-a/api", "unmanaged"):
        for n in range(1, 6):
            registry.add_image(
                repository, tags=[f"v{n}"], pushed_at=NOW - timedelta(days=100 - n), size=n * 1000, seed=f"{n}"
            )
    bucket = MemoryBucket(name="inventory")
    bucket.write_json(
        "in-use/prod.json",
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
            "complete": True,
            "images": [
                {
                    "image": f"{HOST}/app:v2",
                    "namespace": "prod",
                    "workload": "Deployment/app",
                    "container": "app",
                    "source": "pod",
                }
            ],
        },
    )
    return registry, bucket


def rules(dry_run: bool):  # type: ignore[no-untyped-def]
    return parse_config(RULES.format(dry_run=str(dry_run).lower()))


def run_workflow(config: RetentionConfig, adapters: Adapters) -> tuple[RunRecord, RunReport]:
    """The workflow's three steps, as the state machine runs them: targets, evaluate each item, report."""
    start = start_run(config, adapters, trigger="schedule")
    items = json.loads(adapters.bucket.read(start.targets_key, max_bytes=1 << 20) or b"[]")
    for item in items:
        run_work_item(config, adapters, run_id=item["runId"], repository=item["repository"], dry_run=item["dryRun"])
    return start, finish_run(adapters, start, config)


def test_cli_run_deletes_reports_and_publishes() -> None:
    registry, bucket = seeded()
    notifier = RecordingNotifier()
    adapters = Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS)

    report = run_pipeline(rules(dry_run=False), adapters)

    assert report.outcome == "ok"
    assert [r.repository_name for r in report.repositories] == ["app", "team-a/api"]
    assert report.totals.deleted == 3 + 4  # app keeps v5 (newest) and v2 (in use); team-a/api keeps v5
    assert len(registry.digests("unmanaged")) == 5
    assert report.report_url == f"s3://inventory/reports/2026/11/30/{report.run_id}.json"
    stored = json.loads(bucket.objects[f"reports/2026/11/30/{report.run_id}.json"])
    assert RunReport.model_validate(stored) == report
    [(subject, body, attributes)] = notifier.messages
    assert len(subject) < 100
    assert attributes == {"dry_run": "false", "outcome": "ok"}
    assert report.run_id in body
    assert "reports/2026/11/30" in body
    assert "app: ok" in body


def test_a_cli_run_evaluates_and_reports_with_the_cyclic_collector_off_as_its_lambda_steps_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ecr_retention.services.evaluate import evaluate_repository
    from ecr_retention.services.memory import update_memory
    from ecr_retention.services.report import report_run

    registry, bucket = seeded()
    adapters = Adapters(
        registry=registry, bucket=bucket, notifier=RecordingNotifier(), clock=lambda: NOW, renderers=RENDERERS
    )
    seen: list[tuple[str, bool]] = []

    monkeypatch.setattr(
        "ecr_retention.services.run.evaluate_repository", watched(seen, "evaluate", evaluate_repository)
    )
    monkeypatch.setattr("ecr_retention.services.report_step.report_run", watched(seen, "report", report_run))
    monkeypatch.setattr("ecr_retention.services.report_step.update_memory", watched(seen, "memory", update_memory))
    gc.enable()

    run_pipeline(rules(dry_run=True), adapters)

    assert seen == [("evaluate", False), ("evaluate", False), ("memory", True), ("report", False)]
    assert gc.isenabled()


def test_forced_dry_run_deletes_nothing_and_says_so() -> None:
    registry, bucket = seeded()
    notifier = RecordingNotifier()
    adapters = Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS)

    report = run_pipeline(rules(dry_run=False), adapters, force_dry_run=True)

    assert report.dry_run
    assert registry.mutating_calls == []
    assert report.totals.deleted == 7
    subject, body, attributes = notifier.messages[0]
    assert "dry run" in subject
    assert "would delete 7" in subject
    assert "DRY RUN" in body
    assert attributes["dry_run"] == "true"


def test_workflow_steps_reach_the_same_result_as_the_cli_run() -> None:
    cli_registry, cli_bucket = seeded()
    cli = run_pipeline(
        rules(False), Adapters(registry=cli_registry, bucket=cli_bucket, clock=lambda: NOW, renderers=RENDERERS)
    )
    registry, bucket = seeded()
    adapters = Adapters(registry=registry, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)

    start, report = run_workflow(rules(False), adapters)

    assert [item["repository"] for item in json.loads(bucket.objects[start.targets_key])] == ["app", "team-a/api"]
    assert {name: registry.digests(name) for name in registry.repositories} == {
        name: cli_registry.digests(name) for name in cli_registry.repositories
    }
    assert report.totals == cli.totals
    assert report.trigger == "schedule"


def test_a_target_whose_evaluation_stored_no_report_is_reported_failed() -> None:
    registry, bucket = seeded()
    adapters = Adapters(registry=registry, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)
    start = start_run(rules(False), adapters, trigger="schedule")
    # The evaluation of team-a/api crashed (a timeout): only app's worker stored its report.
    run_work_item(rules(False), adapters, run_id=start.run_id, repository="app", dry_run=False)

    report = finish_run(adapters, start, rules(False))

    assert report.outcome == "partial"
    assert [(r.repository_name, r.outcome) for r in report.repositories] == [("app", "ok"), ("team-a/api", "failed")]
    assert "stored no report" in (report.repositories[1].error or "")
    assert report.totals.repositories == 2


def test_push_run_evaluates_only_the_pushed_repositories_that_a_policy_matches() -> None:
    registry, bucket = seeded()
    adapters = Adapters(registry=registry, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)

    start = start_run(rules(False), adapters, trigger="push", repositories=["team-a/api", "unmanaged", "team-a/api"])

    assert [i["repository"] for i in json.loads(bucket.objects[start.targets_key])] == ["team-a/api"]
    assert start.count == 1


class FailingBucket(MemoryBucket):
    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        if key.startswith("reports/"):
            raise StorageUnavailable("AccessDenied")
        super().write(key, body, content_type=content_type)


def test_a_report_that_cannot_be_written_still_publishes_a_failure() -> None:
    registry, good = seeded()
    bucket = FailingBucket(name="inventory", objects=good.objects)
    notifier = RecordingNotifier()

    with pytest.raises(StorageUnavailable, match="AccessDenied"):
        run_pipeline(
            rules(True),
            Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS),
        )

    [(subject, body, attributes)] = notifier.messages
    assert "FAILED" in subject
    assert "could not be written" in body
    assert attributes["outcome"] == "failed"


def test_blocked_run_is_reported_blocked_and_deletes_nothing() -> None:
    registry, bucket = seeded()
    del bucket.objects["in-use/prod.json"]
    notifier = RecordingNotifier()

    report = run_pipeline(
        rules(False),
        Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS),
    )

    assert report.outcome == "blocked"
    assert registry.mutating_calls == []
    assert "BLOCKED" in notifier.messages[0][0]
    assert any("prod" in reason for reason in report.blocked)


class BrokenRegistry(FakeRegistry):
    def repository_names(self) -> list[str]:
        raise RuntimeError("AccessDenied: ecr:DescribeRepositories")


def test_a_run_that_dies_before_its_report_still_publishes_a_failure() -> None:
    _, bucket = seeded()
    notifier = RecordingNotifier()

    with pytest.raises(RuntimeError, match="AccessDenied"):
        run_pipeline(
            rules(False), Adapters(registry=BrokenRegistry(), bucket=bucket, notifier=notifier, renderers=RENDERERS)
        )

    [(subject, body, attributes)] = notifier.messages
    assert "FAILED" in subject
    assert "AccessDenied" in body
    assert attributes["outcome"] == "failed"


# --- replicated deletions ----------------------------------------------------------------------------

US_HOST = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
DELETE_REPLICATION = ReplicationConfiguration.model_validate(
    {
        "rules": [
            {
                "destinations": [{"region": "us-east-1", "registryId": ACCOUNT}],
                "repositoryFilters": [{"filter": "app", "filterType": "PREFIX_MATCH"}],
                "deleteReplication": {"enabled": True},
            }
        ]
    }
)


def replicated() -> tuple[FakeRegistry, MemoryBucket]:
    """app replicates its deletions to us-east-1, where cluster us-prod runs app:v1."""
    registry, bucket = seeded()
    registry.replication = DELETE_REPLICATION
    bucket.write_json(
        "in-use/us-prod.json",
        {
            "schemaVersion": 1,
            "cluster": "us-prod",
            "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
            "complete": True,
            "images": [
                {
                    "image": f"{US_HOST}/app:v1",
                    "namespace": "shop",
                    "workload": "Deployment/app",
                    "container": "app",
                    "source": "pod",
                }
            ],
        },
    )
    return registry, bucket


def test_both_doors_keep_what_a_delete_replicating_destination_runs_and_read_the_configuration_once() -> None:
    cli_registry, cli_bucket = replicated()
    cli = run_pipeline(
        rules(False), Adapters(registry=cli_registry, bucket=cli_bucket, clock=lambda: NOW, renderers=RENDERERS)
    )
    registry, bucket = replicated()
    start, report = run_workflow(
        rules(False), Adapters(registry=registry, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)
    )

    for run, reg in ((cli, cli_registry), (report, registry)):
        assert reg.count("replication_configuration") == 1
        app = next(r for r in run.repositories if r.repository_name == "app")
        assert any("v1" in reg.repositories["app"][d].detail.image_tags for d in reg.digests("app"))
        assert [str(replica) for replica in app.deletion_replicates_to] == [f"us-east-1 ({ACCOUNT})"]
        assert app.protected_in_use == 2  # v2 in prod, v1 in us-prod through replication
        assert not next(r for r in run.repositories if r.repository_name == "team-a/api").deletion_replicates_to
    assert report.totals == cli.totals
    assert RunReplication.model_validate_json(
        bucket.objects[start.targets_key.replace("targets.json", "replication.json")]
    ) == RunReplication(registries={REGION: RegistryReplication(replication_configuration=DELETE_REPLICATION)})


def test_the_summary_names_where_deletions_replicate_and_warns_when_no_expected_cluster_reports_there() -> None:
    registry, bucket = replicated()
    notifier = RecordingNotifier()
    run_pipeline(
        rules(True),
        Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS),
    )
    [(_, body, _)] = notifier.messages
    assert f"  app: us-east-1 ({ACCOUNT}) (NO EXPECTED CLUSTER THERE)" in body
    assert f"app: deletions replicate to us-east-1 ({ACCOUNT}), where no expected cluster reports" in body


@pytest.mark.parametrize("door", ["cli", "workflow"])
def test_a_replication_configuration_that_cannot_be_read_blocks_the_run_and_names_the_call(door: str) -> None:
    registry, bucket = replicated()
    registry.replication_problem = "DescribeRegistry failed: AccessDeniedException: not authorized"
    notifier = RecordingNotifier()
    adapters = Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS)
    if door == "cli":
        report = run_pipeline(rules(False), adapters)
    else:
        _, report = run_workflow(rules(False), adapters)

    assert report.outcome == "blocked"
    assert registry.mutating_calls == []
    [reason] = report.blocked
    assert "DescribeRegistry failed: AccessDeniedException" in reason
    assert 'needs ecr:DescribeRegistry, an action without resource-level permissions (Resource "*")' in reason
    assert "BLOCKED" in notifier.messages[0][0]


@pytest.mark.parametrize("stored", [None, b"{not json", b'{"replicationConfiguration": {"rules": [{}]}}'])
def test_an_evaluation_without_a_readable_replication_file_of_its_run_deletes_nothing(stored: bytes | None) -> None:
    registry, bucket = seeded()
    adapters = Adapters(registry=registry, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)
    start = start_run(rules(False), adapters, trigger="schedule")
    key = start.targets_key.replace("targets.json", "replication.json")
    if stored is None:
        del bucket.objects[key]
    else:
        bucket.objects[key] = stored

    report = run_work_item(rules(False), adapters, run_id=start.run_id, repository="app", dry_run=False)

    assert report.outcome == "blocked"
    assert registry.mutating_calls == []
    assert f"s3://inventory/{key}" in report.blocked[0]
