"""`ecr-retention plan --holds DIR` (and `diff`) read the holds offline from a folder laid out as the bucket's holds/,
so that an offline plan decides as the pipeline's run does (docs/holds.md); a hold object that names no image blocks
the plan (exit 1), and `--holds` with `--bucket` is one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.cli import main

NOW = "2026-11-30T06:00:00Z"
OLD = "sha256:" + "1" * 64
RULES = """
version: 1
safety: {clusters: [], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - delete: {tags: ["*"], older_than: 30d}
"""
HOLD = {
    "schemaVersion": 1,
    "registryId": "123456789012",
    "region": "eu-west-1",
    "repository": "app",
    "digest": OLD,
    "tag": "v1",
    "owner": "alice@example.com",
    "reason": "audit INC-42",
    "createdAt": "2026-11-29T06:00:00Z",
    "until": "2026-12-15T00:00:00Z",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "retention.yaml").write_text(RULES)
    image = {
        "imageDigest": OLD,
        "imageTags": ["v1"],
        "imagePushedAt": "2026-01-01T00:00:00Z",
        "registryId": HOLD["registryId"],
    }
    snapshot = {"region": "eu-west-1", "repositories": [{"repositoryName": "app", "imageDetails": [image]}]}
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    (tmp_path / "holds" / "eu-west-1" / "app").mkdir(parents=True)
    return tmp_path


def plan(workspace: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, dict, str]:
    code = main(
        [
            "plan",
            "--config",
            str(workspace / "retention.yaml"),
            "--snapshot",
            str(workspace / "snapshot.json"),
            "--now",
            NOW,
            "--format",
            "json",
            *more,
        ]
    )
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


def test_plan_keeps_an_image_a_hold_in_the_folder_holds(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "holds" / "eu-west-1" / "app" / f"{OLD}.json").write_text(json.dumps(HOLD))

    code, held, _ = plan(workspace, capsys, "--holds", str(workspace / "holds"))
    _, bare, _ = plan(workspace, capsys)

    [image] = held["repositories"][0]["images"]
    assert code == 0
    assert image["action"] == "keep"
    assert image["reasons"][0] == {
        "kind": "hold",
        "rule": None,
        "detail": "held by alice@example.com until 2026-12-15T00:00:00Z (in 14d): audit INC-42",
    }
    assert bare["repositories"][0]["images"][0]["action"] == "delete"


def test_a_hold_file_that_names_no_image_blocks_the_plan(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "holds" / "notes.json").write_text("{")

    code, result, _ = plan(workspace, capsys, "--holds", str(workspace / "holds"))

    assert code == 1
    assert result["blocked"][0].startswith(f"{workspace / 'holds' / 'notes.json'}: unreadable hold: ")


def test_holds_with_a_bucket_is_one_line(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--config", str(workspace / "retention.yaml"), "--bucket", "b", "--holds", "x"])

    err = capsys.readouterr().err
    assert code == 2
    assert (
        err == "ecr-retention plan: error: --holds goes with --snapshot: with --bucket, the bucket's holds are read\n"
    )


def test_holds_that_is_not_a_directory_is_one_line(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = plan(workspace, capsys, "--holds", str(workspace / "nothing"))

    assert code == 2
    assert err == f"ecr-retention plan: error: {workspace / 'nothing'}: not a directory of holds\n"
