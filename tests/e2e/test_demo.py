"""`ecr-retention demo`, end to end: moto in server mode in this process, the real Lambda handlers, and the demo's
own verification. One run is shared by the assertions on its output (it takes seconds)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from ecr_retention.cli import main

pytestmark = pytest.mark.slow
RUN_OPTIONS = ("--bucket", "ecr-retention-demo", "--region", "us-east-1", "--format", "json")
AWS_SOURCE = "aws-123456789012-eu-west-1"  # the collector's manifest of the demo's account and region


@dataclass(frozen=True)
class DemoRun:
    code: int
    output: str
    out: Path
    environment_before: dict[str, str]
    environment_after: dict[str, str]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    home = tmp_path_factory.mktemp("home")
    # A user's AWS configuration that would send every request to an address the tests may not reach: the demo
    # must read none of it.
    config = home / "config"
    config.write_text("[profile work]\nregion = us-gov-west-1\nendpoint_url = http://192.0.2.1:1\n")
    out = tmp_path_factory.mktemp("demo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_CONFIG_FILE", str(config))
        patch.setenv("AWS_PROFILE", "work")
        patch.setenv("AWS_ENDPOINT_URL_S3", "http://192.0.2.1:1")
        before = dict(os.environ)
        printed = io.StringIO()
        with redirect_stdout(printed):
            code = main(["demo", "--out", str(out)])
        yield DemoRun(code, printed.getvalue(), out, before, dict(os.environ))


def test_demo_exits_0_and_says_verified_after_checking(demo: DemoRun) -> None:
    assert demo.code == 0, demo.output
    checks = re.findall(r"^   (ok  |FAIL) (.+?):", demo.output, flags=re.MULTILINE)
    assert [name for _, name in checks] == [
        "something removed",
        "the report is exact",
        "the dry run announced it",
        "in use",
        "ECS and Lambda",
        "replicated",
        "restored",
        "protected",
        "young",
        "referenced",
        "untouched",
        # the second Region the deployment prunes
        "in use in us-east-1",
        "us-east-1's report is exact",
        "the dry run announced us-east-1's",
        # step 5: a native lifecycle policy takes the image dev runs
        "alerted",
        "in-use-missing",
        "nothing else changed",
    ]
    assert all(mark == "ok  " for mark, _ in checks)
    assert (
        "\nverified: no in-use, protected, young or referenced image was deleted or archived, and the in-use image "
        "found archived runs again\n" in demo.output
    )


def test_demo_prints_the_sns_message_a_subscriber_received(demo: DemoRun) -> None:
    assert re.search(
        r"^   Subject: ecr-retention run ok: deleted \d+ images \(.+\) in 8 repositories$", demo.output, re.M
    )
    assert "   MessageAttributes: dry_run=false, outcome=ok\n" in demo.output
    assert "\nDeletion run: the lists show what was deleted.\nOutcome: ok\n" in demo.output
    assert re.search(r"^Full report: s3://ecr-retention-demo/reports/\d{4}/\d\d/\d\d/.+\.json$", demo.output, re.M)
    assert re.search(r"^   SNS subject: ecr-retention dry run ok: would delete \d+ images", demo.output, re.M)


def test_demo_runs_the_handlers_in_the_state_machines_order(demo: DemoRun) -> None:
    steps = re.findall(r"^   (collector|tagger|targets|evaluate|report) ", demo.output, flags=re.MULTILINE)
    one_run = ["collector", "tagger", "targets", *["evaluate"] * 8, "report"]
    assert steps == one_run + one_run
    collected = re.findall(r"^   collector (\{.*\})$", demo.output, flags=re.MULTILINE)
    assert [json.loads(result) for result in collected] == [
        {
            "manifests": [
                {
                    "name": AWS_SOURCE,
                    "complete": True,
                    "images": 6,  # the service, its tasks, its task definition; $LATEST, version 1, alias live
                    "location": f"s3://ecr-retention-demo/in-use/{AWS_SOURCE}.json",
                    "problems": 0,
                },
                {
                    # dev, agentless: read through its API (demo.agentless), nothing installed. Each Deployment's
                    # container as its template, its ReplicaSet and its pod; the CronJob's.
                    "name": "dev",
                    "complete": True,
                    "images": 10,
                    "location": "s3://ecr-retention-demo/in-use/dev.json",
                    "problems": 0,
                },
                {
                    # Amazon Inspector's reading (inspectorInUse): the emulator covers the ECS service's image.
                    "name": "inspector-123456789012-eu-west-1",
                    "complete": True,
                    "images": 1,
                    "location": "s3://ecr-retention-demo/in-use/inspector-123456789012-eu-west-1.json",
                    "problems": 0,
                },
            ],
            "incomplete": 0,
        }
    ] * 2
    assert '"wouldTag": 2' in demo.output  # the dry run tags nothing
    assert '"tagged": 2' in demo.output


def test_demo_prints_an_abridged_plan_and_writes_the_whole_of_it(demo: DemoRun) -> None:
    table = demo.output.split("   The plan, ", 1)[1].split("\n   Protected by ECS and Lambda", 1)[0]
    rows = [line for line in table.splitlines() if re.match(r"^   \S+\s+[0-9a-f]{12}  ", line)]
    assert 6 <= len(rows) <= 6 * 4
    assert any(" in-use: dev: tcn-personal-1/Deployment/nginx (pod)" in row for row in rows)
    full = (demo.out / "plan.txt").read_text()
    assert len([line for line in full.splitlines() if re.match(r"^\S+\s+[0-9a-f]{12}  ", line)]) > 250
    plan = json.loads((demo.out / "plan.json").read_text())
    assert plan["blocked"] == []
    reports = sorted(path.name for path in (demo.out / "reports").iterdir())
    assert [name.split("-2")[0] for name in reports] == ["after-policy"] * 3 + ["dry-run"] * 3 + ["live"] * 3
    assert {Path(name).suffix for name in reports} == {".json", ".html", ".csv"}
    # the pages it names are the report step's, read back from the emulator's bucket
    pages = re.findall(
        r"^Report page \((dry run|real run|after the native policy)\): (\S+)$", demo.output, flags=re.MULTILINE
    )
    assert [label for label, _ in pages] == ["dry run", "real run", "after the native policy"]
    for _, path in pages:
        assert Path(path).parent == demo.out / "reports"
        assert Path(path).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_demo_shows_the_images_ecs_and_lambda_use_kept_and_what_the_rules_alone_would_do(demo: DemoRun) -> None:
    section = demo.output.split("\n   Protected by ECS and Lambda: ", 1)[1].split("\n   Replicated deletions: ", 1)[0]
    rows = re.findall(
        r"^   (\S+)\s+([0-9a-f]{12})  (\S+)\s+\S+\s+\S+ \S+\s+(keep|delete)\s+(.+)$", section, re.MULTILINE
    )
    kept, without = rows[:2], rows[2:]
    assert [(repository, tag, action) for repository, _, tag, action, _ in kept] == [
        ("app", "1.12.313", "keep"),
        ("backend", "v2.2.8", "keep"),
    ]
    assert kept[0][4].startswith(f"in-use: {AWS_SOURCE}: backoffice/Service/app-admin (ecs-service), ")
    assert kept[1][4].startswith(f"in-use: {AWS_SOURCE}: lambda/Function/backend-reports:$LATEST (lambda), ")
    assert (
        "\n     app 1.12.313 in use by backoffice/Service/app-admin (ecs-service), backoffice/Service/app-admin "
        "(ecs-task), ecs/TaskDefinition/app-admin:1 (ecs-task) and 1 more\n" in section
    )
    assert (
        "\n     backend v2.2.8 in use by lambda/Function/backend-reports:$LATEST (lambda), "
        "lambda/Function/backend-reports:1 (lambda), lambda/Function/backend-reports:live (lambda)\n" in section
    )
    # Without the collector's manifest, the same images (same digests) are deleted by a delete rule.
    assert [(repository, digest, action) for repository, digest, _, action, _ in without] == [
        (repository, digest, "delete") for repository, digest, *_ in kept
    ]
    assert all(reason.startswith("delete-rule [") for *_, reason in without)
    assert (
        "   ok   ECS and Lambda: 2 images an ECS service and a Lambda function use: all still there; without the "
        "collector's manifest the plan removes 2 of them\n" in demo.output
    )


def test_the_rules_expect_the_collectors_manifest_and_the_run_kept_what_it_names(demo: DemoRun) -> None:
    for rules in ("retention.yaml", "retention-live.yaml"):
        assert f"  clusters: [prod, dev, us-prod, {AWS_SOURCE}]\n" in (demo.out / rules).read_text()
    assert f"\n   the rules expect prod, dev, us-prod and {AWS_SOURCE}, the collector's manifest of this" in demo.output
    manifest = json.loads((demo.out / "in-use" / f"{AWS_SOURCE}.json").read_text())
    assert manifest["complete"] is True
    assert {entry["source"] for entry in manifest["images"]} == {"ecs-service", "ecs-task", "lambda"}
    digests = {entry["digest"] for entry in manifest["images"] if "digest" in entry}
    assert len(digests) == 2  # the one ECS resolved for the service's tasks, the one Lambda resolved
    live = json.loads(next((demo.out / "reports").glob("live-*.json")).read_text())
    removed = {
        entry["imageDigest"]
        for repository in live["repositories"]
        for kind in ("deleted", "archived")
        for entry in repository[kind]
    }
    assert removed
    assert not digests & removed


def test_a_release_a_delete_replicating_destination_runs_is_kept_named_and_verified(demo: DemoRun) -> None:
    """app replicates its deletions to us-east-1, where us-prod runs an old release the rules alone would delete."""
    assert "\n   app replicates to us-east-1 with deleteReplication: a deletion in app here deletes there too\n" in (
        demo.output
    )
    section = demo.output.split("   Replicated deletions: ", 1)[1].split("\n3. ", 1)[0]
    assert section.startswith(
        "app's deletions also delete in us-east-1 (123456789012) (expected clusters there: prod, us-prod)"
    )
    assert "keep    in-use: us-prod (us-east-1, replicated): shop/Deployment/app (pod)" in section
    assert "(the rules alone would delete it: version tags older than 30 days beyond the newest 20)" in section
    assert (
        "\n  eu-west-1:app: us-east-1 (123456789012) (expected clusters there: prod, us-prod)\n" in demo.output
    )  # the summary
    assert (
        "\n   ok   replicated: 1 image us-prod runs in us-east-1, where app's deletions replicate: all still there\n"
        in (demo.output)
    )
    snapshot = json.loads((demo.out / "snapshot.json").read_text())
    assert snapshot["replication"]["rules"][0]["deleteReplication"] == {"enabled": True}
    live = json.loads(next((demo.out / "reports").glob("live-*.json")).read_text())
    [app] = [
        repository
        for repository in live["repositories"]
        if (repository["repositoryName"], repository["region"]) == ("app", "eu-west-1")
    ]
    # prod reports from us-east-1 too: it pulls edge/cdn from there, across Regions.
    assert app["deletionReplicatesTo"] == [
        {"registryId": "123456789012", "region": "us-east-1", "expectedClusters": ["prod", "us-prod"]}
    ]


def test_an_in_use_image_a_native_pull_time_rule_archived_is_restored_by_the_sweep_and_verified(demo: DemoRun) -> None:
    """nginx 1.14.2 runs in dev since it was pulled months ago; a native sinceImagePulled rule archived it."""
    assert (
        "\n   docker.io/library/nginx 1.14.2 is ARCHIVED: a native sinceImagePulled rule archived it 2d ago, while "
        "dev's Deployment/nginx still runs it\n" in demo.output
    )
    section = demo.output.split("\n   In use, found archived: ", 1)[1].split("\n3. ", 1)[0]
    assert re.search(
        r"^   docker\.io/library/nginx\s+[0-9a-f]{12}  1\.14\.2 .* restore  in-use: dev: tcn-personal-1/Deployment/nginx",
        section,
        re.MULTILINE,
    )
    assert re.search(
        r"^   restore  docker\.io/library/nginx 1\.14\.2: ACTIVE [\d.]+ s after the sweep", demo.output, re.M
    )
    assert "restored; used by dev: tcn-personal-1/Deployment/nginx (pod)" in demo.output  # the SNS summary
    assert (
        "   ok   restored: 1 in-use image archived by a native pull-time rule: restored, ACTIVE again\n" in demo.output
    )
    metrics = re.findall(r"^   metrics  EcrRetention: .*$", demo.output, re.MULTILINE)
    assert len(metrics) == 2
    assert "InUseImagesArchived 1, ImagesRestored 0" in metrics[0]  # the dry run restores nothing
    assert "InUseImagesArchived 1, ImagesRestored 1" in metrics[1]
    live = json.loads(next((demo.out / "reports").glob("live-*.json")).read_text())
    restored = [entry for repository in live["repositories"] for entry in repository["restored"]]
    assert [entry["imageTags"] for entry in restored] == [["1.14.2"]]


def test_a_native_policy_deletes_the_image_dev_runs_and_the_sentinel_and_the_sweep_tell(demo: DemoRun) -> None:
    """Step 5: the `dev` incident's policy (keep the 3 newest `*.*` images), executed by the emulator; its
    PolicyExecutionEvents through the stack's rules to the sentinel; its alert on the report topic; the next sweep's
    in-use-missing lines (SNS summary and report)."""
    step = demo.output.split("\n5. ", 1)[1].split("\nFiles: ", 1)[0]
    assert re.search(r"^   ECR applies it .*: 36 images expired by rule 1, 6 of them in use:$", step, re.M)
    assert "\n     app 1.12.359-dev (dev's Deployment/app)\n" in step
    assert re.search(r"^   ECR sends 4 PolicyExecutionEvents ", step, re.M)
    assert "   EventBridge: the sentinel's rule (LIFECYCLE_ACTION_PATTERN) delivered 4 to the function\n" in step
    alert = step.split("\n   The alert for app:dev, in full:\n", 1)[1].split("\n   The next sweep", 1)[0]
    assert alert.startswith(
        "Subject: ecr-retention sentinel: app:dev deleted in eu-west-1 while dev/Deployment/app runs it\n"
    )
    assert re.search(
        r"^app@sha256:[0-9a-f]{12} \(tags 1\.12\.359-dev, dev\): deleted \d{4}-\d\d-\d\d \d\d:\d\d UTC by lifecycle "
        r"rule 1 of app's policy\.$",
        alert,
        re.M,
    )
    assert "\n- app:dev no longer exists: the next pull fails.\n  Runs in: dev: dev/Deployment/app (pod), " in alert
    # Seven: the six images, and the digest Amazon Inspector still counts in use by the ECS service's tasks.
    missing = step.split("\nIn-use images MISSING from the registry (7): the next pull fails\n", 1)[1]
    assert re.search(
        r"^  the next pull of dev: dev/Deployment/app \(pod\), .* fails: app:dev no longer exists in eu-west-1 \(deleted \S+ \S+ UTC "
        r"by lifecycle rule 1 of app's policy\)$",
        missing,
        re.M,
    )
    assert (
        "\nverified: the sentinel named what runs app:dev, the image and the rule; the sweep reports it missing, when "
        "and by what; nothing else changed\n" in step
    )
    after = json.loads(next((demo.out / "reports").glob("after-policy-*.json")).read_text())
    assert after["dryRun"] is True
    [dev] = [found for found in after["inUseMissing"] if found["image"] == "app:dev"]
    assert (dev["missing"], dev["removed"]["cause"], dev["removed"]["rulePriority"]) == ("tag", "lifecycle", 1)


def test_the_plan_can_be_replayed_offline_as_printed(demo: DemoRun, capsys: pytest.CaptureFixture[str]) -> None:
    command = re.search(r"^Replay the plan offline: ecr-retention (plan .+)$", demo.output, re.MULTILINE)
    assert command is not None

    code = main(command.group(1).split())

    assert code == 0
    assert "total: delete " in capsys.readouterr().out


def test_demo_leaves_the_callers_environment_as_it_found_it(demo: DemoRun) -> None:
    assert demo.environment_after == demo.environment_before


def test_keep_running_serves_the_emulator_until_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)  # this test's own clients use exactly what the demo prints
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    process = subprocess.Popen(
        [sys.executable, "-m", "ecr_retention", "demo", "--keep-running", "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        exported = ""
        for line in process.stdout:
            if line.startswith("  export "):
                exported = line.removeprefix("  export ").strip()
                break
        environment = dict(pair.split("=", 1) for pair in exported.split())
        assert environment["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")

        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        ecr = boto3.session.Session().client("ecr")
        assert ecr.describe_images(repositoryName="app")["imageDetails"]
        run = subprocess.run(
            [sys.executable, "-m", "ecr_retention", "run", "--config", str(tmp_path / "retention.yaml"), *RUN_OPTIONS],
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["dryRun"] is True
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
    assert code == 0, process.stderr.read() if process.stderr else ""


def test_one_run_prunes_both_regions_and_keeps_what_either_runs(demo: DemoRun) -> None:
    """us-east-1 is the deployment's second Region: its own rules delete its hotfixes and edge releases, its replicas of
    app are eu-west-1's to decide, and prod (a cluster of eu-west-1) pulls an edge release across Regions."""
    live = demo.output.split("\n3. Second deployment", 1)[1].split("\n4. Verification", 1)[0]
    assert re.search(r"^   eu-west-1: 6 repositories, 153 deleted, 24 archived, 121 kept$", live, re.M)
    assert re.search(r"^   us-east-1: 2 repositories, 11 deleted, 0 archived, \d+ kept$", live, re.M)
    assert re.search(
        r'^   evaluate us-east-1 edge/cdn: \{"repository": "edge/cdn", "outcome": "ok", "deleted": 8', live, re.M
    )
    assert "   prod runs edge/cdn:v3.2 from us-east-1\n" in demo.output
    assert re.search(
        r"^   ok   in use in us-east-1: 3 images the clusters of both Regions run from us-east-1", demo.output, re.M
    )
    assert re.search(
        r"^   ok   us-east-1's report is exact: 11 removed by us-east-1's rules, 65 by the replication",
        demo.output,
        re.M,
    )
    [copied] = re.findall(r"^     copied to (\S+live-\S+\.json)$", live, re.M)
    report = json.loads(Path(copied).read_text())
    replicas = [r for r in report["repositories"] if (r["region"], r["repositoryName"]) == ("us-east-1", "app")]
    kinds = {entry["kind"] for entry in replicas[0]["keptImages"]}
    assert "replica" in kinds
