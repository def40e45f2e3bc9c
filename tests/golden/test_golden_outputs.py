"""Golden outputs, recorded from the code before the refactor of issue 16: plans, reports and SNS messages stay
byte-identical on the same inputs.

What is compared (the recorded files are in tests/golden/data/):

* `ecr-retention plan` on the committed examples (retention.yaml, examples/snapshot.json, examples/in-use) with
  a fixed --now: the table (plan-examples.table.txt, whole), the JSON (plan-examples.json.summary.json: the sha256
  of the exact bytes plus, per repository, its fields and a sha256 of its images; plan-examples.nginx.json: one
  repository's part of the JSON in full, to read) and both exit codes (plan-examples.exit-codes.txt).
* Whole runs through the services with the in-memory fakes and a fixed clock (run-<scenario>.report.json: the
  report's bytes as stored in the bucket; run-<scenario>.sns.txt: every SNS message's subject, attributes and
  body; run-<scenario>.registry.txt: the images left in the registry, not the calls that removed the others): a CLI run that deletes, a forced dry run, the
  workflow's three steps with one worker that crashed, a push run, a blocked run and a run that dies before its
  report. Normalized: only the 8 random hex digits of each run id (`<uuid>`); everything else is as produced.
  The sheet (run-<scenario>.report.csv) as stored beside the report; of the page, only that it is there.

To re-record after a deliberate change of behaviour (and review `git diff tests/golden/data`):

    UPDATE_GOLDEN=1 PYTHONPATH=lambdas:. .venv/bin/python -m pytest -q tests/golden -p no:cacheprovider
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier
from support.golden import GOLDEN_DATA, check_golden, digest_summary, normalize_run_ids

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLES_NOW = "2026-11-30T06:00:00Z"
HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"


# --- ecr-retention plan on the examples ---------------------------------------------------------------


def plan_examples(output: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(
        [
            "plan",
            "--config",
            str(ROOT / "retention.yaml"),
            "--snapshot",
            str(EXAMPLES / "snapshot.json"),
            "--manifests",
            str(EXAMPLES / "in-use"),
            "--now",
            EXAMPLES_NOW,
            "--format",
            output,
        ]
    )
    captured = capsys.readouterr()
    assert captured.err == "", captured.err
    return code, captured.out


def test_plan_table_of_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, table = plan_examples("table", capsys)
    check_golden(GOLDEN_DATA / "plan-examples.table.txt", table)
    json_code, _ = plan_examples("json", capsys)
    check_golden(GOLDEN_DATA / "plan-examples.exit-codes.txt", f"table {code}\njson {json_code}\n")


def test_plan_json_of_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    _, document = plan_examples("json", capsys)
    check_golden(GOLDEN_DATA / "plan-examples.json.summary.json", digest_summary(document))
    [nginx] = [r for r in json.loads(document)["repositories"] if r["repositoryName"] == "docker.io/library/nginx"]
    check_golden(GOLDEN_DATA / "plan-examples.nginx.json", json.dumps(nginx, indent=2) + "\n")


# --- whole runs through the services, with the in-memory fakes ---------------------------------------

RULES = """
version: 1
dry_run: {dry_run}
safety: {{min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod, us-prod]}}
policies:
  - repositories: ["app", "team-*/*"]
    rules:
      - keep: {{tags: [latest]}}
        description: the mutable tag stays
      - delete: {{tags: ["v*"], older_than: 30d, keep_newest: 1}}
      - delete: {{untagged: true, older_than: 3d}}
      - delete: {{tags: ["pr-*"], older_than: 14d, archive: true}}
  - repositories: ["multi"]
    rules:
      - delete: {{tags: ["*"], older_than: 10d, keep_newest: 1}}
      - delete: {{untagged: true, older_than: 1d}}
"""

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


def rules(*, dry_run: bool) -> RetentionConfig:
    return parse_config(RULES.format(dry_run=str(dry_run).lower()))


def manifest(cluster: str, host: str, *references: tuple[str, str]) -> dict[str, object]:
    return {
        "schemaVersion": 1,
        "cluster": cluster,
        "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
        "complete": True,
        "images": [
            {"image": f"{host}/{ref}", "namespace": "shop", "workload": workload, "container": "c", "source": "pod"}
            for ref, workload in references
        ],
    }


def seeded() -> tuple[FakeRegistry, MemoryBucket]:
    """Three managed repositories and one no policy matches: version tags, untagged builds, pull-request builds
    for the archive, a multi-arch index with its children and an SBOM, an image in use in prod, one in use in
    us-east-1 through app's delete-replication, and a delete that ECR refuses."""
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    registry.replication = DELETE_REPLICATION
    for repository in ("app", "team-a/api", "unmanaged"):
        for n in range(1, 7):
            registry.add_image(
                repository, tags=[f"v{n}"], pushed_at=NOW - timedelta(days=100 - n), size=n * 1000, seed=f"{n}"
            )
        registry.add_image(repository, pushed_at=NOW - timedelta(days=5), size=77, seed="untagged-old")
        registry.add_image(repository, pushed_at=NOW - timedelta(hours=5), size=78, seed="untagged-young")
        registry.add_image(repository, tags=["pr-9"], pushed_at=NOW - timedelta(days=20), size=99, seed="pr")
        registry.add_image(repository, tags=["latest"], pushed_at=NOW - timedelta(days=300), size=5, seed="latest")
    refused = registry.add_image("team-a/api", tags=["v0"], pushed_at=NOW - timedelta(days=400), size=3, seed="0")
    registry.delete_failures[refused] = "KmsError"
    children = [
        registry.add_image("multi", pushed_at=NOW - timedelta(days=age), size=500 + age, seed=f"child-{age}")
        for age in (40, 41)
    ]
    old_index = registry.add_index("multi", children, tags=["2025.1"], pushed_at=NOW - timedelta(days=40))
    registry.add_referrer("multi", old_index, pushed_at=NOW - timedelta(days=39), seed="sbom-old")
    new_children = [
        registry.add_image("multi", pushed_at=NOW - timedelta(days=age), size=600 + age, seed=f"child-{age}")
        for age in (2, 3)
    ]
    registry.add_index("multi", new_children, tags=["2026.1"], pushed_at=NOW - timedelta(days=2))
    registry.add_image("multi", pushed_at=NOW - timedelta(days=12), size=12, seed="orphan")

    bucket = MemoryBucket(name="inventory")
    bucket.write_json("in-use/prod.json", manifest("prod", HOST, ("app:v2", "Deployment/app")))
    us_host = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
    bucket.write_json("in-use/us-prod.json", manifest("us-prod", us_host, ("app:v1", "Deployment/app")))
    return registry, bucket


def registry_state(registry: FakeRegistry) -> str:
    lines = []
    for name in sorted(registry.repositories):
        for stored in sorted(registry.repositories[name].values(), key=lambda s: s.detail.image_digest):
            tags = ",".join(stored.detail.image_tags) or "<untagged>"
            lines.append(f"{name} {stored.detail.image_digest[7:19]} {tags}")
    return "\n".join(lines) + "\n"


def sns_text(notifier: RecordingNotifier) -> str:
    parts = []
    for subject, body, attributes in notifier.messages:
        shown = ", ".join(f"{key}={value}" for key, value in sorted(attributes.items()))
        parts.append(f"Subject: {subject}\nMessageAttributes: {shown}\n\n{body}")
    return normalize_run_ids("\n----\n".join(parts))


def record(scenario: str, registry: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> None:
    reports = sorted(key for key in bucket.objects if key.startswith("reports/"))
    if reports:
        key, sheet, page = (next(k for k in reports if k.endswith(suffix)) for suffix in (".json", ".csv", ".html"))
        assert {key, sheet, page} == set(reports)
        assert key.removesuffix(".json") == sheet.removesuffix(".csv") == page.removesuffix(".html")
        text = bucket.objects[key].decode()
        check_golden(GOLDEN_DATA / f"run-{scenario}.report.json", normalize_run_ids(f"{key}\n{text}\n"))
        # The sheet as stored (the page belongs to report_page's own tests; here only that it is there).
        check_golden(GOLDEN_DATA / f"run-{scenario}.report.csv", normalize_run_ids(bucket.objects[sheet].decode()))
        assert bucket.objects[page].decode().startswith("<!DOCTYPE html>")
    check_golden(GOLDEN_DATA / f"run-{scenario}.sns.txt", sns_text(notifier))
    check_golden(GOLDEN_DATA / f"run-{scenario}.registry.txt", registry_state(registry))


def cli_run(registry: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> None:
    run_pipeline(rules(dry_run=False), Adapters(registry, bucket, notifier, clock=lambda: NOW, renderers=RENDERERS))


def forced_dry_run(registry: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> None:
    adapters = Adapters(registry, bucket, notifier, clock=lambda: NOW, renderers=RENDERERS)
    run_pipeline(rules(dry_run=False), adapters, force_dry_run=True)


def workflow_with_a_crashed_worker(registry: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> None:
    """The state machine's three steps; the worker of team-a/api crashed before it stored its report."""
    config = rules(dry_run=False)
    clock = iter(NOW + timedelta(seconds=s) for s in range(1000))
    adapters = Adapters(registry, bucket, notifier, clock=lambda: next(clock), renderers=RENDERERS)
    start = start_run(config, adapters, trigger="schedule")
    for item in json.loads(bucket.objects[start.targets_key]):
        if item["repository"] != "team-a/api":
            run_work_item(config, adapters, run_id=item["runId"], repository=item["repository"], dry_run=item["dryRun"])
    finish_run(adapters, start, config)


def push_run(registry: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> None:
    config = rules(dry_run=True)
    adapters = Adapters(registry, bucket, notifier, clock=lambda: NOW, renderers=RENDERERS)
    start = start_run(config, adapters, trigger="push", repositories=["multi", "unmanaged", "multi"])
    for item in json.loads(bucket.objects[start.targets_key]):
        run_work_item(config, adapters, run_id=item["runId"], repository=item["repository"], dry_run=item["dryRun"])
    finish_run(adapters, start, config)


def blocked_run(registry: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> None:
    del bucket.objects["in-use/us-prod.json"]
    cli_run(registry, bucket, notifier)


class BrokenRegistry(FakeRegistry):
    def repository_names(self) -> list[str]:
        raise RuntimeError("AccessDenied: ecr:DescribeRepositories")


def run_that_dies(registry: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> None:
    broken = BrokenRegistry(registry_id=ACCOUNT, region=REGION, repositories=registry.repositories)
    with pytest.raises(RuntimeError, match="AccessDenied"):
        run_pipeline(rules(dry_run=False), Adapters(broken, bucket, notifier, clock=lambda: NOW, renderers=RENDERERS))


SCENARIOS: dict[str, Callable[[FakeRegistry, MemoryBucket, RecordingNotifier], None]] = {
    "cli": cli_run,
    "forced-dry-run": forced_dry_run,
    "workflow-crashed-worker": workflow_with_a_crashed_worker,
    "push": push_run,
    "blocked": blocked_run,
    "dies-before-report": run_that_dies,
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_whole_run_reports_and_publishes_as_recorded(scenario: str) -> None:
    registry, bucket = seeded()
    notifier = RecordingNotifier()
    SCENARIOS[scenario](registry, bucket, notifier)
    record(scenario, registry, bucket, notifier)
