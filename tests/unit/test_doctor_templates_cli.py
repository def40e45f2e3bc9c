"""`ecr-retention doctor --templates FILE` on `describe-repository-creation-templates` output: output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lifecycle"
INCIDENT = (EXAMPLES / "policy-incident.json").read_text()
FIXED = (EXAMPLES / "policy-fixed.json").read_text()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def templates_file(tmp_path: Path, *templates: dict[str, Any]) -> str:
    path = tmp_path / "templates.json"
    path.write_text(json.dumps({"registryId": "123456789012", "repositoryCreationTemplates": list(templates)}))
    return str(path)


def test_doctor_templates_json_names_each_template_and_exits_0_on_warnings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = templates_file(
        tmp_path,
        {
            "prefix": "ROOT",
            "appliedFor": ["CREATE_ON_PUSH"],
            "lifecyclePolicy": INCIDENT,
            "imageTagMutability": "MUTABLE",
        },
        {"prefix": "team-a/", "appliedFor": ["REPLICATION"], "lifecyclePolicy": FIXED},
        {"prefix": "docker.io/", "appliedFor": ["PULL_THROUGH_CACHE"], "createdAt": 1764460800.0},
    )

    code, out, err = run(capsys, "doctor", "--templates", path, "--format", "json")

    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["registryId"] == "123456789012"
    assert [(t["prefix"], t["hasLifecyclePolicy"], len(t["findings"])) for t in data["templates"]] == [
        ("ROOT", True, 1),
        ("docker.io/", False, 0),
        ("team-a/", True, 0),
    ]
    [finding] = data["templates"][0]["findings"]
    assert (finding["code"], finding["severity"], finding["prefix"], finding["appliedFor"]) == (
        "mutable-tag-unprotected",
        "warning",
        "ROOT",
        ["CREATE_ON_PUSH"],
    )
    assert data["summary"] == {"errors": 0, "warnings": 1, "infos": 0}


def test_doctor_templates_table_is_for_people(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = templates_file(
        tmp_path,
        {"prefix": "ROOT", "appliedFor": ["CREATE_ON_PUSH", "REPLICATION"], "lifecyclePolicy": INCIDENT},
        {"prefix": "plain/", "appliedFor": ["CREATE_ON_PUSH"]},
    )

    code, out, _ = run(capsys, "doctor", "--templates", path)

    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "lifecycle doctor for 2 repository creation templates of registry 123456789012: 0 errors, 1 warnings, 0 notes"
    )
    assert "template ROOT [CREATE_ON_PUSH, REPLICATION]: 1 finding" in lines
    assert "template plain/ [CREATE_ON_PUSH]: no lifecycle policy" in lines
    assert any(
        line.startswith("  WARNING  mutable-tag-unprotected: template ROOT (every new repository") for line in lines
    )


def test_doctor_templates_with_an_unparsable_policy_is_one_line_naming_file_and_prefix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = INCIDENT.replace('"countNumber": 3', '"countNumber": 0')
    assert bad != INCIDENT
    path = templates_file(tmp_path, {"prefix": "team-a/", "appliedFor": ["CREATE_ON_PUSH"], "lifecyclePolicy": bad})

    code, out, err = run(capsys, "doctor", "--templates", path)

    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"ecr-retention doctor: error: {path}: template team-a/: lifecyclePolicy: rule 1 (rules[0])")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "invalid JSON"),
        ('{"imageDetails": []}', "expected `aws ecr describe-repository-creation-templates` output"),
        ('{"repositoryCreationTemplates": [{"appliedFor": ["CREATE_ON_PUSH"]}]}', "prefix: required but missing"),
    ],
)
def test_doctor_templates_bad_file_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "templates.json"
    path.write_text(content)

    code, out, err = run(capsys, "doctor", "--templates", str(path))

    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert expected in err


def test_doctor_templates_cannot_be_combined_with_a_repository_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = templates_file(tmp_path)
    code, _, err = run(capsys, "doctor", "--templates", path, "--policy", "p.json", "--images", "i.json")
    assert code == 2
    assert err == (
        "ecr-retention doctor: error: --templates checks repository creation templates on their own (they have no "
        "images); it cannot be combined with --policy, --images\n"
    )


def test_doctor_without_templates_still_needs_policy_and_images(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "doctor", "--policy", "p.json")
    assert code == 2
    assert err == "ecr-retention doctor: error: the following arguments are required: --images (or --templates FILE)\n"
