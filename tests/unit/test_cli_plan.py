"""`ecr-retention plan` and `validate`: both formats, exit codes 0/1/2, one line per bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ecr_retention.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NOW = "2026-11-30T06:00:00Z"
RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - keep: {tags: [latest]}
      - delete: {tags: ["*"], older_than: 30d}
"""


def snapshot_file(tmp_path: Path, images: list[dict[str, object]]) -> Path:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"repositories": [{"repositoryName": "app", "imageDetails": images}]}))
    return path


def manifests_dir(tmp_path: Path, generated: str = "2026-11-30T05:55:00Z", **extra: object) -> Path:
    folder = tmp_path / "in-use"
    folder.mkdir(exist_ok=True)
    manifest = {"schemaVersion": 1, "cluster": "prod", "generatedAt": generated, "complete": True, "images": []}
    (folder / "prod.json").write_text(json.dumps({**manifest, **extra}))
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "retention.yaml").write_text(RULES)
    old = {"imageDigest": "sha256:" + "1" * 64, "imageTags": ["v1"], "imagePushedAt": "2026-01-01T00:00:00Z"}
    latest = {"imageDigest": "sha256:" + "2" * 64, "imageTags": ["latest"], "imagePushedAt": 1767225600}
    return {
        "config": tmp_path / "retention.yaml",
        "snapshot": snapshot_file(tmp_path, [old, latest]),
        "manifests": manifests_dir(tmp_path),
    }


def run_plan(workspace: dict[str, Path], *extra: str) -> int:
    args = ["plan", "--config", str(workspace["config"]), "--snapshot", str(workspace["snapshot"])]
    return main([*args, "--manifests", str(workspace["manifests"]), "--now", NOW, *extra])


def test_plan_json_lists_every_image_with_its_reasons(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_plan(workspace, "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    images = {i["imageTags"][0]: i for i in data["repositories"][0]["images"]}
    assert images["v1"]["action"] == "delete"
    assert images["v1"]["reasons"][0]["kind"] == "delete-rule"
    assert images["latest"]["action"] == "keep"
    assert data["blocked"] == []
    assert data["repositories"][0]["summary"]["deleted"] == 1


def test_plan_table_is_the_default(workspace: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_plan(workspace) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["REPOSITORY", "DIGEST", "TAGS", "AGE", "SIZE", "ACTION", "REASON"]
    assert "app (policies[0]): 2 images, kept 1, delete 1, archive 0" in out


def test_blocked_plan_exits_1_and_says_why(
    workspace: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests_dir(tmp_path, generated="2026-11-29T00:00:00Z")
    assert run_plan(workspace, "--format", "json") == 1
    data = json.loads(capsys.readouterr().out)
    assert "older than inventory_max_age" in data["blocked"][0]
    assert {i["action"] for i in data["repositories"][0]["images"]} == {"keep"}


def test_example_plan_runs_and_exits_1_for_its_skipped_repository(capsys: pytest.CaptureFixture[str]) -> None:
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
            NOW,
            "--format",
            "json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["blocked"] == []
    skipped = [r["repositoryName"] for r in data["repositories"] if r["skipped"]]
    assert skipped == ["team-payments/worker"]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("prod.json", b'{"schemaVersion": 2}', "schemaVersion: unsupported schemaVersion 2"),
        ("prod.json", b"\xff\xfe", "not UTF-8 text"),
        ("lab.json", b'{"cluster": "lab"}', "schemaVersion: required but missing"),
    ],
)
def test_unreadable_manifest_blocks_the_plan_and_names_the_file(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str], name: str, content: bytes, expected: str
) -> None:
    """Issue 7.5: not exit 2, whichever cluster it is: its images may run, so nothing is deleted."""
    (workspace["manifests"] / name).write_bytes(content)
    assert run_plan(workspace, "--format", "json") == 1
    data = json.loads(capsys.readouterr().out)
    assert len(data["blocked"]) == 1
    assert data["blocked"][0].startswith(f"{workspace['manifests'] / name}: unreadable in-use manifest: {expected}")
    assert {i["action"] for i in data["repositories"][0]["images"]} == {"keep"}


def bad_input(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda w: w["config"].write_text("version: 1\nsafety: {clusters: [prod]\n"), "invalid YAML (line"),
        (lambda w: w["config"].write_text(RULES.replace("older_than", "older_then")), "older_then: unknown key"),
        (lambda w: w["config"].write_text(RULES.replace("30d", "30 days")), "older_than: invalid duration"),
        (lambda w: w["config"].write_text(RULES.replace("older_than: 30d", "keep_newest: -2")), "keep_newest"),
        (lambda w: w["snapshot"].write_text('{"repos": []}'), "a snapshot is a JSON object with a repositories list"),
        (
            lambda w: w["snapshot"].write_text('{"repositories": [{"imageDetails": []}]}'),
            "repositories[0].repositoryName",
        ),
        (lambda w: w["snapshot"].write_text("{not json"), "invalid JSON (line 1"),
        (lambda w: w["snapshot"].write_text("[" * 100_000), "nested too deeply"),
        (lambda w: w["config"].unlink(), "retention.yaml: no such file"),
    ],
)
def test_bad_input_gets_one_line_naming_file_and_field_and_exit_2(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str], mutate: object, expected: str
) -> None:
    mutate(workspace)  # type: ignore[operator]
    args = ["plan", "--config", str(workspace["config"]), "--snapshot", str(workspace["snapshot"])]
    line = bad_input(capsys, [*args, "--manifests", str(workspace["manifests"]), "--now", NOW])
    assert line.startswith("ecr-retention plan: error: ")
    assert expected in line


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--now", "yesterday"], "--now: invalid timestamp 'yesterday'"),
        (["--now", "2026-11-30T06:00:00"], "--now: timestamp '2026-11-30T06:00:00' has no UTC offset"),
        (["--now", "0001-01-01T00:00:00+01:00"], "is out of range"),
    ],
)
def test_bad_now_gets_one_line_and_exit_2(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    args = ["plan", "--config", str(workspace["config"]), "--snapshot", str(workspace["snapshot"])]
    assert expected in bad_input(capsys, [*args, *extra])


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--format", "yaml"], "argument --format: invalid choice: 'yaml'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        ([], "one of the arguments --snapshot --bucket is required"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    args = ["plan", "--config", str(workspace["config"])]
    if extra:
        args += ["--snapshot", str(workspace["snapshot"])]
    with pytest.raises(SystemExit) as caught:
        main([*args, *extra])
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(("ecr-retention plan: error: ", "ecr-retention: error: "))
    assert expected in err[0]


def test_validate_accepts_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(ROOT / "retention.yaml")]) == 0
    assert "valid: 6 policies" in capsys.readouterr().out


def test_validate_rejects_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(RULES.replace("[latest]}", "[latest]}\n        bogus: 1"))
    line = bad_input(capsys, ["validate", str(path)])
    assert line.startswith(f"ecr-retention validate: error: {path}: policies[0].rules[0].bogus: unknown key")


def test_module_and_console_script_both_run() -> None:
    for command in (
        [sys.executable, "-m", "ecr_retention", "--version"],
        [str(Path(sys.executable).parent / "ecr-retention"), "--version"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("ecr-retention ")
