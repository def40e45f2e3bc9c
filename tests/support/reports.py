"""Run reports to render: a CI registry of any size planned as a dry run, the same blocked by a stale manifest,
and a real run (deletions, archives, a failure) through the services on the in-memory fakes.

Shared by tests/browser and benchmarks/report_page.py."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.inventory.evidence import manifest_evidence
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.reporting.run_report import RunReport, report_of_plan
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.run import run_pipeline
from support.builders import (
    ACCOUNT,
    HOST,
    NOW,
    REGION,
    config,
    image,
    in_use,
    manifest_bytes,
    plan,
    repository,
    snapshot,
)
from support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

REPOSITORIES = ("app", "backend", "frontend", "team-a/worker")
RULES: list[dict[str, Any]] = [
    {"keep": {"tags": ["latest", "dev"]}},
    {"delete": {"tags": ["pr-*"], "not_pulled_within": "14d", "archive": True}},
    {"delete": {"tags": ["*.*"], "older_than": "30d", "keep_newest": 10}},
    {"delete": {"untagged": True, "older_than": "1d"}},
]
RUN_ID = "20261130T060000Z-cli-0b5e55ed"


def tags_of(n: int) -> tuple[str, ...]:
    """What CI pushes: mostly releases, every fifth a pull-request build, every ninth untagged."""
    if n % 9 == 0:
        return ()
    if n % 5 == 0:
        return (f"pr-{n}",)
    return (f"1.{n // 100}.{n % 100}",)


def ci_images(count: int, repositories: tuple[str, ...] = REPOSITORIES) -> dict[str, list[dict[str, Any]]]:
    """`count` images over the repositories, pushed from 400 days to an hour ago, each with its own size."""
    rng = random.Random(count)
    images: dict[str, list[dict[str, Any]]] = {name: [] for name in repositories}
    for n in range(count):
        name = repositories[n % len(repositories)]
        age = timedelta(hours=1) + timedelta(days=400) * (n / max(count, 1))
        tags = tags_of(n) if n >= len(repositories) else ("latest",)
        images[name].append(image(f"{name}/{n}", *tags, age=age, size=rng.randint(5, 900) * 1024 * 1024))
    return images


def ci_snapshot(count: int, *tagged: tuple[str, str]) -> Snapshot:
    """`count` CI images; `tagged` adds images (repository, tag) pushed 60 days ago."""
    images = ci_images(count)
    for n, (name, tag) in enumerate(tagged):
        images.setdefault(name, []).append(image(f"tagged/{n}", tag, age=timedelta(days=60)))
    return snapshot(*(repository(name, *entries) for name, entries in images.items()))


def ci_config(**safety: Any) -> RetentionConfig:
    return config(RULES, repositories=("*",), min_age="1d", **safety)


def dry_run_report(count: int, *tagged: tuple[str, str]) -> RunReport:
    """A dry run over `count` CI images and the `tagged` ones (see ci_snapshot), without in-use manifests."""
    return report_of_plan(plan(ci_config(), ci_snapshot(count, *tagged)), run_id=RUN_ID, manifests=())


def blocked_report(count: int = 40) -> RunReport:
    """The same dry run, with the expected cluster's manifest 7 hours old: nothing is deleted."""
    stale = in_use("prod", (f"{HOST}/app:latest", None), age=timedelta(hours=7))
    rules = ci_config(clusters=["prod"])
    evidence = manifest_evidence(rules.safety, Inventory(manifests=(stale,)), NOW)
    return report_of_plan(plan(rules, ci_snapshot(count), stale), run_id=RUN_ID, manifests=evidence)


REAL_RUN_RULES = """
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod]}
policies:
  - repositories: ["*"]
    rules:
      - keep: {tags: [latest]}
      - delete: {tags: ["pr-*"], older_than: 14d, archive: true}
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 2}
"""


def real_run_report() -> RunReport:
    """A real run (dry_run: false) through the services on the fakes: deletions, archives, one failed deletion
    (KmsError), an image the prod cluster runs, found archived and restored, an image too young to delete."""
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    digests: dict[tuple[str, str], str] = {}
    for name in ("app", "team-a/api"):
        for n in range(1, 9):
            age, size = timedelta(days=100 - n), n * 10 * 1024**2
            digests[name, f"v{n}"] = registry.add_image(
                name, tags=[f"v{n}"], pushed_at=NOW - age, size=size, seed=f"v{n}"
            )
        for n in range(1, 4):
            registry.add_image(name, tags=[f"pr-{n}"], pushed_at=NOW - timedelta(days=40 - n), size=n * 1024**2)
        registry.add_image(name, tags=["latest"], pushed_at=NOW - timedelta(days=1))
        registry.add_image(name, tags=["v99"], pushed_at=NOW - timedelta(hours=2))
    registry.delete_failures[digests["team-a/api", "v3"]] = "KmsError"
    registry.archive("app", digests["app", "v1"], NOW - timedelta(days=10))  # prod runs it: the run restores it
    bucket = MemoryBucket(name="inventory")
    bucket.write("in-use/prod.json", manifest_bytes(in_use("prod", (f"{HOST}/app:v1", None))))
    adapters = Adapters(
        registry=registry, bucket=bucket, notifier=RecordingNotifier(), clock=lambda: NOW, renderers=RENDERERS
    )
    return run_pipeline(parse_config(REAL_RUN_RULES), adapters)


QUARANTINE_TOTALS = ("enteredQuarantine", "leftQuarantine", "inQuarantine")


def page_totals(document: dict[str, Any]) -> dict[str, int]:
    """The JSON report's totals as the page shows them: the quarantine's only when it acted."""
    totals: dict[str, int] = document["totals"]
    quarantined = any(totals[name] for name in QUARANTINE_TOTALS)
    return {name: value for name, value in totals.items() if quarantined or name not in QUARANTINE_TOTALS}
