"""Holds on the demo's emulator (SPEC "Holds", docs/holds.md), through the deployed functions the demo invokes: a hold
placed with `ecr-retention hold add` on an image the rules delete keeps it through a real sweep, and the report, the
page and the SNS summary name its owner, reason and end; the same hold, ended, lets the next real sweep delete it and
is listed once; a held image that a native lifecycle policy expires gives the sentinel's alert naming the hold; a bad
hold is refused in one line, and nothing is written."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stderr
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.holds.stored import hold_json, parse_hold
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention_dev.demo.agentless import serving_agentless_cluster
from ecr_retention_dev.demo.native_policy import TEAMMATE_POLICY, received_alerts
from ecr_retention_dev.demo.pipeline import deployed
from ecr_retention_dev.demo.registry import BUCKET, DemoRegistry
from ecr_retention_dev.demo.runner import LIVE_RULES, Demo
from ecr_retention_dev.demo.server import running_emulator
from ecr_retention_dev.emulator.eventbridge import EventRoutes
from ecr_retention_dev.emulator.lifecycle import execute_lifecycle_policy
from ecr_retention_dev.scenario import REGION

pytestmark = pytest.mark.slow

OWNER, REASON = "alice@example.com", "audit INC-42: keep the build the auditors pulled"


@dataclass
class World:
    demo: Demo
    registry: DemoRegistry


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with running_emulator(REGION) as emulator, serving_agentless_cluster(emulator.endpoint) as agentless:
        demo = Demo(emulator, tmp_path, lambda _line: None, agentless)
        registry = demo.seed()
        demo.dry_run(registry)  # the first sweep: the in-use memory, the collector's manifest, the kept snapshots
        yield World(demo, registry)


def hold_cli(*argv: str) -> tuple[int, str]:
    errors = io.StringIO()
    with redirect_stderr(errors):
        code = main(["hold", *argv, "--bucket", BUCKET])
    return code, errors.getvalue()


def deleted_by_rules(plan: Plan, repository: str) -> str:
    """An image of the repository that the rules delete and nothing else keeps."""
    [planned] = [repo for repo in plan.repositories if repo.repository_name == repository]
    return next(
        decision.image_digest
        for decision in planned.images
        if decision.action == "delete" and all(reason.kind == "delete-rule" for reason in decision.reasons)
    )


def live_sweep(world: World, name: str) -> tuple[RunReport, str]:
    """A real sweep through the deployed functions: its stored report, and the SNS summary it published."""
    with deployed(world.demo.deployment(LIVE_RULES)) as functions:
        functions.collector()
        sweep = functions.sweep(world.demo.read_object)
    report = world.demo.stored_report(sweep, name, name)
    return report, str(world.demo.received_message()["Message"])


def entry(report: RunReport, repository: str, digest: str) -> tuple[str, str, str]:
    """(where the report lists the image, its main reason's kind, its detail)."""
    for repo in report.repositories:
        if repo.repository_name != repository or repo.region not in (None, REGION):
            continue
        for field in ("kept_images", "deleted", "archived"):
            for image in getattr(repo, field):
                if image.image_digest == digest:
                    return field, image.kind, image.detail
    raise AssertionError(f"{repository}@{digest} is not in the report")


def test_a_hold_keeps_an_image_through_a_real_run_and_ended_lets_it_go(world: World) -> None:
    plan, _ = world.demo.plan(world.registry)
    repository = "app"
    digest = deleted_by_rules(plan, repository)

    placed, said = hold_cli("add", f"{repository}@{digest}", "--until", "5d", "--reason", REASON, "--owner", OWNER)
    kept, summary = live_sweep(world, "held")

    assert placed == 0, said
    assert entry(kept, repository, digest)[:2] == ("kept_images", "hold")
    assert entry(kept, repository, digest)[2].startswith(f"held by {OWNER} until ")
    assert entry(kept, repository, digest)[2].endswith(f": {REASON}")
    still = world.demo.ecr.describe_images(repositoryName=repository, imageIds=[{"imageDigest": digest}])
    assert [image["imageDigest"] for image in still["imageDetails"]] == [digest]
    page = world.demo.pages["held"].read_text()
    assert f"held by {OWNER} until " in page
    assert REASON in page
    assert "Holds ending within 7 days" in page
    assert "Holds ending within 7 days (1):" in summary
    assert f"held by {OWNER} until " in summary
    sheet = world.demo.pages["held"].with_suffix(".csv").read_text()
    assert "hold" in sheet
    assert OWNER in sheet

    # The same hold, ended (as it would be 5 days on): the next real sweep deletes the image, and says so once.
    key = f"holds/{REGION}/{repository}/{digest}.json"
    stored = parse_hold(key, world.demo.read_object(BUCKET, key))
    ended = stored.model_copy(
        update={"created_at": stored.created_at - timedelta(days=6), "until": datetime.now(UTC) - timedelta(minutes=1)}
    )
    world.demo.s3.put_object(Bucket=BUCKET, Key=key, Body=hold_json(ended))
    released, _ = live_sweep(world, "ended")

    assert entry(released, repository, digest)[0] == "deleted"
    ended_line = f"{REGION}: hold on {repository}@{digest} in {REGION} by {OWNER} ended at "
    assert len([line for line in released.warnings if line.startswith(ended_line)]) == 1


def test_a_held_image_a_native_policy_expires_gives_the_sentinels_alert_naming_the_hold(world: World) -> None:
    demo = world.demo
    dev_digest = demo.ecr.describe_images(repositoryName="app", imageIds=[{"imageTag": "dev"}])["imageDetails"][0][
        "imageDigest"
    ]
    placed, said = hold_cli("add", "app:dev", "--until", "30d", "--reason", "incident INC-9", "--owner", "bob")
    assert placed == 0, said

    routes = EventRoutes(demo.emulator.client("events"), demo.sqs).create()
    demo.ecr.put_lifecycle_policy(repositoryName="app", lifecyclePolicyText=TEAMMATE_POLICY)
    execution = execute_lifecycle_policy(demo.ecr, "app", registry_id=demo.account, region=REGION)
    routes.emit(execution.events)
    with deployed(demo.deployment(LIVE_RULES)) as functions:
        watched = [functions.sentinel(event) for event in routes.delivered()]
    alerts = received_alerts(demo)

    assert dev_digest in execution.expired
    assert any(invocation.result.get("held") == [f"holds/{REGION}/app/{dev_digest}.json"] for invocation in watched)
    [alert] = [alert for alert in alerts if alert.names("Held images were just removed or archived")]
    assert "held by bob until " in alert.message
    assert "incident INC-9" in alert.message
    assert "lifecycle rule 1 of app's policy" in alert.message


def test_bad_holds_are_refused_in_one_line_and_write_nothing(world: World) -> None:
    cases = {
        ("app:no-such-tag", "1d"): "ecr-retention hold: error: app:no-such-tag: no such image in eu-west-1",
        ("app:dev", "2020-01-01"): "ecr-retention hold: error: --until: 2020-01-01T00:00:00Z is not in the future",
        ("app:dev", "91d"): "is more than safety.max_hold 90d away",
    }
    for (image, until), message in cases.items():
        code, said = hold_cli("add", image, "--until", until, "--reason", "x")
        assert code == 2
        assert len(said.splitlines()) == 1, said
        assert message in said
    listed = world.demo.s3.list_objects_v2(Bucket=BUCKET, Prefix="holds/")
    assert listed.get("KeyCount", 0) == 0
    # a malformed hold object in the bucket keeps what its key names, and says so in one line of the report
    digest = world.demo.ecr.describe_images(repositoryName="app", imageIds=[{"imageTag": "dev"}])["imageDetails"][0][
        "imageDigest"
    ]
    world.demo.s3.put_object(Bucket=BUCKET, Key=f"holds/{REGION}/app/{digest}.json", Body=b'{"owner": "x"}')
    report, _ = live_sweep(world, "malformed")
    assert not report.blocked
    malformed = f"{REGION}: s3://{BUCKET}/holds/{REGION}/app/{digest}.json: malformed hold: "
    assert [line for line in report.warnings if line.startswith(malformed)] != []
