"""`ecr-retention restore` on the realistic registry (faithful moto): undoing a real run's archive by its run id,
restoring by tag and by digest, a second restore that does nothing, --wait until ACTIVE (the emulator finishes a
restore after its activation delay) or until the timeout, a dry run that changes nothing, an image deleted between
the read and the restore, and bad input as one line and exit 2."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.commands import restore as restore_command
from ecr_retention_dev.emulator.seeding import MotoEcr
from support.pipeline_harness import NOW, CliResult, Pipeline, run_cli, write_rules
from support.realistic_registry import BUCKET

RUN_ID = "20261201T030000Z-schedule-1a2b3c4d"
DIGEST = "sha256:" + "ab" * 32


def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def results(result: CliResult) -> dict[str, str]:
    """Short digest -> RESULT column of the table."""
    rows = [re.split(r"\s{2,}", line) for line in result.stdout.splitlines()[1:-1]]
    return {row[1]: row[4] for row in rows}


def short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


def statuses(pipeline: Pipeline, repository: str, digests: list[str]) -> dict[str, str]:
    state = pipeline.state()[repository]
    return {digest: state[digest].get("imageStatus", "ACTIVE") for digest in digests}


def archiving_run(pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    rules = str(write_rules(tmp_path, dry_run=False))
    ran = run_cli(pipeline.recorder, capsys, "run", "--config", rules, "--bucket", BUCKET, "--format", "json")
    assert ran.code == 0, ran.stderr
    report: dict[str, Any] = json.loads(ran.stdout)
    return report


def deleted_by(report: dict[str, Any]) -> int:
    return sum(len(repo["deleted"]) for repo in report["repositories"])


def archived_by(report: dict[str, Any]) -> dict[str, list[str]]:
    return {
        repo["repositoryName"]: [entry["imageDigest"] for entry in repo["archived"]]
        for repo in report["repositories"]
        if repo["archived"]
    }


def test_restore_by_run_undoes_the_runs_archive_and_a_second_restore_does_nothing(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = archiving_run(pipeline, tmp_path, capsys)
    archived = archived_by(report)
    assert archived, "the realistic rules archive the pull-request builds"
    [(repository, digests)] = archived.items()
    assert set(statuses(pipeline, repository, digests).values()) == {"ARCHIVED"}
    run_id = report["runId"]
    pipeline.recorder.clear()

    dry = run_cli(pipeline.recorder, capsys, "restore", "--run", run_id, "--bucket", BUCKET, "--dry-run")

    assert dry.code == 0, dry.stderr
    assert set(results(dry).values()) == {"would-restore"}
    assert pipeline.recorder.mutating() == []
    assert set(statuses(pipeline, repository, digests).values()) == {"ARCHIVED"}

    # ECR takes up to 20 minutes; the emulator a second, polled every 50 ms
    pipeline.fidelity.activation_delay = timedelta(seconds=1)
    monkeypatch.setattr(restore_command, "POLL_SECONDS", 0.05)
    restored = run_cli(pipeline.recorder, capsys, "restore", "--run", run_id, "--bucket", BUCKET, "--wait")
    with capsys.disabled():  # the session, with -s
        print(f"\n$ ecr-retention restore --run {run_id} --bucket {BUCKET} --wait\n{restored.stderr}{restored.stdout}")

    assert restored.code == 0, restored.stderr
    assert results(restored) == {short(digest): "restored" for digest in digests}
    assert restored.stdout.splitlines()[-1].startswith(f"total: restored {len(digests)} (live); restoring ")
    assert set(statuses(pipeline, repository, digests).values()) == {"ACTIVE"}
    assert len(pipeline.recorder.of("UpdateImageStorageClass")) == len(digests)
    assert f"waiting: 0 of {len(digests)} restored" in restored.stderr

    pipeline.recorder.clear()
    again = run_cli(pipeline.recorder, capsys, "restore", "--run", run_id, "--bucket", BUCKET)

    assert again.code == 0
    assert set(results(again).values()) == {"already-active"}
    assert pipeline.recorder.mutating() == []


def test_restore_by_run_says_how_many_of_the_runs_deletions_it_cannot_bring_back(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = archiving_run(pipeline, tmp_path, capsys)
    deleted, archived = deleted_by(report), sum(map(len, archived_by(report).values()))
    assert deleted > 1
    assert archived > 1
    run_id = report["runId"]

    dry = run_cli(pipeline.recorder, capsys, "restore", "--run", run_id, "--bucket", BUCKET, "--dry-run")
    live = run_cli(pipeline.recorder, capsys, "restore", "--run", run_id, "--bucket", BUCKET)

    assert dry.code == live.code == 0
    said = f"ecr-retention restore: run {run_id} deleted {deleted} images; deletions cannot be undone, only its "
    assert one_line(dry.stderr) == f"{said}{archived} archived images would be restored"
    assert one_line(live.stderr) == f"{said}{archived} archived images are restored"
    assert results(live) == {short(d): "restoring" for digests in archived_by(report).values() for d in digests}


def test_restore_by_tag_and_by_digest(pipeline: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    archived = pipeline.seeded.digest("app pr-100")  # archived by the seed, 40 days ago
    active = pipeline.seeded.digest("app v1.0.11")

    by_tag = run_cli(pipeline.recorder, capsys, "restore", "--repository", "app", "--tag", "pr-100", "--tag", "v1.0.11")

    assert by_tag.code == 0, by_tag.stderr
    assert results(by_tag) == {short(archived): "restoring", short(active): "already-active"}
    assert statuses(pipeline, "app", [archived]) == {archived: "ACTIVATING"}

    by_digest = run_cli(pipeline.recorder, capsys, "restore", "--repository", "app", "--digest", archived)

    assert by_digest.code == 0
    assert results(by_digest) == {short(archived): "being-restored"}
    assert pipeline.recorder.of("UpdateImageStorageClass")[-1].params["imageId"] == {"imageDigest": archived}
    assert len(pipeline.recorder.of("UpdateImageStorageClass")) == 1  # the second restore asked for nothing


def test_restore_of_an_archived_index_with_wait_restores_its_archived_children_once_the_index_is_active(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repository = "platform/runtime"
    index, current = pipeline.seeded.indexes["runtime 2.1.0"], pipeline.seeded.indexes["runtime 3.0.0"]
    shared = {child.digest for child in current.children}  # 3.0.0 still lists it: ECR would not archive it
    archived = [index.digest, *(child.digest for child in index.children if child.digest not in shared)]
    assert len(archived) >= 3, "the index, its arm64 build and its attestation"
    seeding = MotoEcr(pipeline.ecr)
    for digest in archived:
        seeding.archive(repository, digest, NOW - timedelta(days=10))
    pipeline.fidelity.activation_delay = timedelta(seconds=1)
    monkeypatch.setattr(restore_command, "POLL_SECONDS", 0.05)

    result = run_cli(
        pipeline.recorder, capsys, "restore", "--repository", repository, "--tag", "2.1.0", "--wait", "--timeout", "1m"
    )

    assert result.code == 0, result.stdout + result.stderr
    assert results(result) == {
        **{short(digest): "restored" for digest in archived},
        **{short(child.digest): "already-active" for child in index.children if child.digest in shared},
    }
    assert set(statuses(pipeline, repository, archived).values()) == {"ACTIVE"}
    assert len(pipeline.recorder.of("UpdateImageStorageClass")) == len(archived)
    # The index's manifest was asked for once, when it could be served (ECR serves none of an archived image).
    assert len(pipeline.recorder.of("BatchGetImage")) == 1


def test_restore_of_an_archived_index_without_wait_exits_1_naming_its_children_until_they_are_active(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    repository = "platform/runtime"
    index, current = pipeline.seeded.indexes["runtime 2.1.0"], pipeline.seeded.indexes["runtime 3.0.0"]
    shared = {child.digest for child in current.children}  # 3.0.0 still lists it: ECR would not archive it
    children = [child.digest for child in index.children if child.digest not in shared]
    seeding = MotoEcr(pipeline.ecr)
    for digest in (index.digest, *children):
        seeding.archive(repository, digest, NOW - timedelta(days=10))
    pipeline.fidelity.activation_delay = timedelta(milliseconds=200)
    command = ("restore", "--repository", repository, "--tag", "2.1.0")

    first = run_cli(pipeline.recorder, capsys, *command)

    assert first.code == 1, first.stdout + first.stderr
    assert results(first) == {short(index.digest): "restoring"}
    assert "its archived children are not known yet" in first.stderr
    time.sleep(0.3)  # the index is ACTIVE: ECR serves its manifest, which names the children

    second = run_cli(pipeline.recorder, capsys, *command)

    assert second.code == 1
    assert {short(d): second.stdout.count(short(d)) for d in children} == {short(d): 1 for d in children}
    [said] = [line for line in second.stderr.splitlines() if "cannot be pulled until its children are ACTIVE" in line]
    assert f"index {short(index.digest)} cannot be pulled until its children are ACTIVE, and {len(children)} of" in said
    assert all(f"{short(digest)} " in said for digest in children)
    assert "linux/arm64" in said
    time.sleep(0.3)

    third = run_cli(pipeline.recorder, capsys, *command)

    assert third.code == 0, third.stderr
    assert set(results(third).values()) == {"already-active"}
    assert "cannot be pulled" not in third.stderr


def test_an_unknown_tag_and_an_image_deleted_mid_way_exit_1(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    archived = pipeline.seeded.digest("app pr-100")
    pipeline.fidelity.before(
        "UpdateImageStorageClass",
        lambda: pipeline.ecr.batch_delete_image(repositoryName="app", imageIds=[{"imageDigest": archived}]),
    )

    result = run_cli(pipeline.recorder, capsys, "restore", "--repository", "app", "--tag", "pr-100", "--tag", "nope")

    assert result.code == 1
    lines = result.stdout.splitlines()
    assert any(
        short(archived) in line and "failed" in line and "gone: deleted since it was read" in line for line in lines
    )
    assert any("nope" in line and "tag nope names no image" in line for line in lines)
    assert lines[-1] == "total: failed 2 (live)"


def test_wait_times_out_with_exit_1_and_progress_on_stderr(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        pipeline.recorder, capsys, "restore", "--repository", "app", "--tag", "pr-100", "--wait", "--timeout", "1s"
    )

    assert result.code == 1
    assert "timed-out" in result.stdout
    assert "still ACTIVATING after 1s (the restore goes on)" in result.stdout
    assert result.stderr.startswith("ecr-retention restore: waiting: 0 of 1 restored")


def test_an_unknown_run_is_bad_input(pipeline: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(pipeline.recorder, capsys, "restore", "--run", RUN_ID, "--bucket", BUCKET)

    assert result.code == 2
    assert one_line(result.stderr) == (
        f"ecr-retention restore: error: unknown run {RUN_ID}: no report at s3://{BUCKET}/reports/2026/12/01/{RUN_ID}.json"
    )
    assert pipeline.recorder.mutating() == []


BAD_INPUT: dict[str, tuple[list[str], str]] = {
    "nothing to restore": ([], "give --run RUN_ID (with --bucket) or --repository NAME with --digest or --tag"),
    "--run with --repository": (
        ["--run", RUN_ID, "--bucket", BUCKET, "--repository", "app"],
        "--run and --repository exclude each other: restore a run's images or a repository's",
    ),
    "--run without --bucket": (
        ["--run", RUN_ID],
        "--run needs --bucket NAME: the run's report is in the inventory bucket",
    ),
    "--run malformed": (["--run", "yesterday", "--bucket", BUCKET], "--run: 'yesterday' is not a run id"),
    "--run with --tag": (
        ["--run", RUN_ID, "--bucket", BUCKET, "--tag", "v1"],
        "--digest and --tag go with --repository",
    ),
    "--repository alone": (["--repository", "app"], "--repository needs --digest D or --tag T (repeatable)"),
    "--digest malformed": (
        ["--repository", "app", "--digest", "sha256:abc"],
        "--digest: 'sha256:abc' is not an image digest (sha256: and 64 lowercase hex digits)",
    ),
    "--tag malformed": (["--repository", "app", "--tag", "v1:x"], "--tag: 'v1:x' is not an image tag"),
    "--repository malformed": (
        ["--repository", "App", "--tag", "v1"],
        "--repository: 'App' is not an ECR repository name",
    ),
    "--bucket with --repository": (
        ["--repository", "app", "--digest", DIGEST, "--bucket", BUCKET],
        "--bucket goes with --run, not with --repository",
    ),
    "--timeout without --wait": (
        ["--repository", "app", "--tag", "pr-100", "--timeout", "45m"],
        "--timeout goes with --wait: without --wait the restores start and nothing waits for them",
    ),
    "--timeout malformed": (
        ["--repository", "app", "--tag", "v1", "--wait", "--timeout", "soon"],
        "--timeout: invalid duration 'soon'",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_arguments_are_one_line_and_exit_2_before_any_aws_call(
    case: str, pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments, message = BAD_INPUT[case]

    result = run_cli(pipeline.recorder, capsys, "restore", *arguments)

    assert result.code == 2
    assert one_line(result.stderr).startswith(f"ecr-retention restore: error: {message}")
    assert pipeline.recorder.calls == []
