"""`ecr-retention hold add | list | remove` on the realistic registry (faithful moto), and `run` reading the holds
from the bucket (SPEC "Holds", docs/holds.md): a hold keeps an image the rules delete through a real run, with owner,
reason and end in the report; a lifted hold lets it go; bad holds are one line and exit 2, with nothing written."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.holds.stored import Hold, hold_json
from ecr_retention_dev.scenario import REGION
from support.pipeline_harness import NOW, CliResult, Pipeline, run_cli, write_rules
from support.realistic_registry import ACCOUNT, BUCKET


def one_line(result: CliResult) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def a_deleted_image(pipeline: Pipeline, config: RetentionConfig) -> tuple[str, str, tuple[str, ...]]:
    """(repository, digest, tags) of an image the rules delete, with no children or referrers of its own."""
    plan = pipeline.plan(config)
    for repository in plan.repositories:
        for decision in repository.images:
            if (
                decision.action == "delete"
                and decision.image_tags
                and all(r.kind == "delete-rule" for r in decision.reasons)
            ):
                return repository.repository_name, decision.image_digest, decision.image_tags
    raise AssertionError("the realistic registry has no image the rules delete")


def run_report(pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    rules = str(write_rules(tmp_path, dry_run=False))
    ran = run_cli(pipeline.recorder, capsys, "run", "--config", rules, "--bucket", BUCKET, "--format", "json")
    assert ran.code in (0, 1), ran.stderr
    report: dict[str, Any] = json.loads(ran.stdout)
    return report


def entry_of(report: dict[str, Any], repository: str, digest: str) -> tuple[str, dict[str, Any]]:
    for repo in report["repositories"]:
        if repo["repositoryName"] != repository:
            continue
        for field in ("keptImages", "deleted", "archived"):
            for entry in repo[field]:
                if entry["imageDigest"] == digest:
                    return field, entry
    raise AssertionError(f"{repository}@{digest} is not in the report")


def hold(pipeline: Pipeline, capsys: pytest.CaptureFixture[str], *argv: str) -> CliResult:
    return run_cli(pipeline.recorder, capsys, "hold", *argv, "--bucket", BUCKET)


def test_a_hold_keeps_an_image_the_rules_delete_through_a_real_run(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))

    placed = hold(
        pipeline,
        capsys,
        "add",
        f"{repository}@{digest}",
        "--until",
        "30d",
        "--reason",
        "audit INC-42",
        "--owner",
        "alice@example.com",
    )
    report = run_report(pipeline, tmp_path, capsys)

    assert placed.code == 0, placed.stderr
    assert placed.stderr.startswith(f"held {repository}@{digest} in eu-west-1 for alice@example.com until ")
    assert digest in pipeline.state()[repository]
    field, entry = entry_of(report, repository, digest)
    assert field == "keptImages"
    assert entry["kind"] == "hold"
    assert entry["detail"].startswith("held by alice@example.com until ")
    assert entry["detail"].endswith(": audit INC-42")


def test_a_lifted_hold_lets_the_run_delete_the_image(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))
    hold(pipeline, capsys, "add", f"{repository}@{digest}", "--until", "2d", "--reason", "incident")

    removed = hold(pipeline, capsys, "remove", f"{repository}@{digest}")
    report = run_report(pipeline, tmp_path, capsys)

    assert removed.code == 0, removed.stderr
    assert entry_of(report, repository, digest)[0] == "deleted"
    assert digest not in pipeline.state()[repository]


def test_a_hold_by_tag_records_the_digest_and_the_callers_identity(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, tags = a_deleted_image(pipeline, pipeline.config(dry_run=False))

    placed = hold(pipeline, capsys, "add", f"{repository}:{tags[0]}", "--until", "7d", "--reason", "customer pin")
    listed = hold(pipeline, capsys, "list", "--format", "json")

    assert placed.code == 0, placed.stderr
    [stored] = json.loads(listed.stdout)["holds"]
    assert (stored["repository"], stored["digest"], stored["tag"]) == (repository, digest, tags[0])
    assert stored["owner"].startswith("arn:aws:")
    assert stored["ended"] is False
    assert pipeline.keys("holds/") == [f"holds/eu-west-1/{repository}/{digest}.json"]


@pytest.mark.parametrize(
    ("until", "message"),
    [
        ("2020-01-01", "--until: 2020-01-01T00:00:00Z is not in the future"),
        ("91d", "is more than safety.max_hold 90d away"),
        ("soon", "--until: "),
    ],
)
def test_a_hold_ending_in_the_past_or_past_max_hold_is_refused_in_one_line(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str], until: str, message: str
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))

    refused = hold(pipeline, capsys, "add", f"{repository}@{digest}", "--until", until, "--reason", "x")

    assert refused.code == 2
    assert message in one_line(refused)
    assert pipeline.keys("holds/") == []


def test_a_hold_on_no_such_image_or_a_second_hold_is_refused_in_one_line(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))

    missing = hold(pipeline, capsys, "add", f"{repository}:no-such-tag", "--until", "1d", "--reason", "x")
    no_repository = hold(pipeline, capsys, "add", "nothing-here:v1", "--until", "1d", "--reason", "x")
    first = hold(pipeline, capsys, "add", f"{repository}@{digest}", "--until", "1d", "--reason", "x")
    second = hold(pipeline, capsys, "add", f"{repository}@{digest}", "--until", "2d", "--reason", "y")
    malformed = hold(pipeline, capsys, "add", "App:v1", "--until", "1d", "--reason", "x")

    assert (missing.code, no_repository.code, first.code, second.code, malformed.code) == (2, 2, 0, 2, 2)
    assert one_line(missing) == (f"ecr-retention hold: error: {repository}:no-such-tag: no such image in eu-west-1")
    assert (
        one_line(no_repository) == "ecr-retention hold: error: nothing-here:v1: no repository nothing-here in eu-west-1"
    )
    assert "is held already" in one_line(second)
    assert "'App:v1' is not REPOSITORY[:TAG|@sha256:<64 hex>]" in one_line(malformed)
    assert len(pipeline.keys("holds/")) == 1


def test_removing_a_hold_that_is_not_there_is_one_line(pipeline: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    removed = hold(pipeline, capsys, "remove", "app@sha256:" + "ab" * 32)

    assert removed.code == 2
    assert one_line(removed).endswith(".json)")
    assert "has no hold" in one_line(removed)


def test_a_run_with_an_unreadable_hold_deletes_nothing(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline.s3.put_object(Bucket=BUCKET, Key="holds/notes.json", Body=b"{not json")
    before = pipeline.state()

    report = run_report(pipeline, tmp_path, capsys)

    assert pipeline.state() == before
    assert any("holds/notes.json: unreadable hold" in line for line in report["blocked"])


def test_an_ended_hold_lets_the_run_delete_the_image_and_is_listed_once(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))
    ended = Hold(
        schema_version=1,
        registry_id=ACCOUNT,
        region=REGION,
        repository=repository,
        digest=digest,
        owner="alice@example.com",
        reason="incident INC-7",
        created_at=NOW - timedelta(days=10),
        until=NOW - timedelta(days=1),
    )
    pipeline.s3.put_object(Bucket=BUCKET, Key=ended.image.key, Body=hold_json(ended))

    report = run_report(pipeline, tmp_path, capsys)
    listed = hold(pipeline, capsys, "list")

    assert entry_of(report, repository, digest)[0] == "deleted"
    assert digest not in pipeline.state()[repository]
    warning = f"hold on {repository}@{digest} in {REGION} by alice@example.com ended at "
    assert len([line for line in report["warnings"] if line.startswith(warning)]) == 1
    told = [line for repo in report["repositories"] for line in repo["warnings"] if line.startswith(warning)]
    assert len(told) == 1  # in the report of the repository it holds in, and no other
    assert "ended" in listed.stdout.splitlines()[1]


def test_a_hold_ending_within_seven_days_is_named_in_the_summary_and_the_page(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))
    hold(pipeline, capsys, "add", f"{repository}@{digest}", "--until", "3d", "--reason", "audit", "--owner", "bob")
    rules = str(write_rules(tmp_path, dry_run=True))
    page = tmp_path / "run.html"

    ran = run_cli(pipeline.recorder, capsys, "run", "--config", rules, "--bucket", BUCKET)
    paged = run_cli(
        pipeline.recorder, capsys, "run", "--config", rules, "--bucket", BUCKET, "--format", "html", "--out", str(page)
    )

    lines = ran.stdout.splitlines()
    heading = lines.index("Holds ending within 7 days (1):")
    assert lines[heading + 1].startswith(f"  - {repository}@{digest} in {REGION}, held by bob until ")
    assert lines[heading + 1].endswith(": audit")
    assert paged.code == 0, paged.stderr
    text = page.read_text()
    assert "held by bob until " in text
    assert "Holds ending within 7 days" in text


def test_a_repository_alone_holds_its_latest_as_docker_reads_it(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = pipeline.seeded.digest("app v1.0.11")

    placed = hold(pipeline, capsys, "add", "app", "--until", "1d", "--reason", "release freeze")

    assert placed.code == 0, placed.stderr
    assert placed.stderr.startswith(f"held app:latest ({latest}) in eu-west-1 for ")
    assert pipeline.keys("holds/") == [f"holds/eu-west-1/app/{latest}.json"]
