"""Text from snapshots, manifests and file names cannot rewrite human output: controls and bidirectional
overrides are escaped in tables, doctor output, validate's summary and error lines. JSON stays exact."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.tables import printable

NOW = "2026-11-30T06:00:00Z"
EVIL_TAGS = ["evil\nrow", "\u202egnp.exe"]
ESCAPED_TAGS = ("evil\\nrow", "\\u202egnp.exe")
EVIL_DIGEST = "sha256:" + "e" * 64
# What must never reach a terminal raw: C0, DEL, C1, line separators and the bidirectional controls.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - delete: {tags: ["*"], older_than: 30d}
"""


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("evil\nrow", "evil\\nrow"),
        ("a\r\tb", "a\\r\\tb"),
        ("\u202egnp.exe", "\\u202egnp.exe"),
        ("\x1b[31mred", "\\u001b[31mred"),
        ("\x00\x7f\x85\x9f", "\\u0000\\u007f\\u0085\\u009f"),
        (
            "\u061c\u200e\u200f\u2028\u2029\u202a\u2066\u2069",
            "\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a\\u2066\\u2069",
        ),
        ("1.12.345 café 版数 C:\\dir", "1.12.345 café 版数 C:\\dir"),  # printable text, backslashes included
    ],
)
def test_printable_escapes_controls_and_bidi_and_nothing_else(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(shown) == shown  # escaping twice changes nothing


def test_escapes_inside_a_json_string_mean_the_same_characters() -> None:
    document = json.dumps({"tag": "\u202egnp.exe\x85"}, ensure_ascii=False)
    assert json.loads(printable(document)) == {"tag": "\u202egnp.exe\x85"}


def image(digest: str, tags: list[str], pushed: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"registryId": "123456789012", "imageDigest": digest, "imageTags": tags, "imagePushedAt": pushed}


def assert_safe(output: str) -> list[str]:
    lines = output.splitlines()  # also splits on the separators a terminal or editor would break at
    assert not UNSAFE.search(output.replace("\n", "")), output
    return lines


@pytest.fixture
def plan_inputs(tmp_path: Path) -> list[str]:
    (tmp_path / "retention.yaml").write_text(RULES)
    snapshot = {
        "repositories": [
            {"repositoryName": "app", "imageDetails": [image(EVIL_DIGEST, EVIL_TAGS), image("sha256:" + "1" * 64, [])]},
            {"repositoryName": "other\nrepo\u202e", "imageDetails": []},
        ]
    }
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    return ["plan", "--config", str(tmp_path / "retention.yaml"), "--snapshot", str(tmp_path / "snapshot.json")]


def test_plan_table_keeps_an_evil_tag_on_its_row_escaped(
    plan_inputs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    main([*plan_inputs, "--now", NOW])

    lines = assert_safe(capsys.readouterr().out)
    rows = [line for line in lines if line.startswith("app  ")]
    assert len(rows) == 2  # one row per image: the newline did not split the evil one
    evil = next(line for line in rows if "eeeeeeeeeeee" in line)
    assert all(tag in evil for tag in ESCAPED_TAGS)
    assert "other\\nrepo\\u202e: 0 images, untouched (no policy matches)" in lines


def test_plan_json_keeps_the_tags_exact(plan_inputs: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    main([*plan_inputs, "--now", NOW, "--format", "json"])

    data = json.loads(capsys.readouterr().out)
    tags = {i["imageDigest"]: i["imageTags"] for r in data["repositories"] for i in r["images"]}
    assert tags[EVIL_DIGEST] == EVIL_TAGS
    assert data["repositories"][1]["repositoryName"] == "other\nrepo\u202e"


@pytest.fixture
def lifecycle_inputs(tmp_path: Path) -> list[str]:
    policy = {
        "rules": [
            {
                "rulePriority": 1,
                "selection": {
                    "tagStatus": "any",
                    "countType": "sinceImagePushed",
                    "countUnit": "days",
                    "countNumber": 1,
                },
                "action": {"type": "expire"},
            }
        ]
    }
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    images = {"imageDetails": [{**image(EVIL_DIGEST, EVIL_TAGS), "repositoryName": "app"}]}
    (tmp_path / "images.json").write_text(json.dumps(images))
    (tmp_path / "in-use").mkdir()
    manifest = {
        "schemaVersion": 1,
        "cluster": "prod",
        "generatedAt": NOW,
        "complete": True,
        "images": [
            {
                "image": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:v1",
                "digest": EVIL_DIGEST,
                "namespace": "team\u202eevil",
                "workload": "Deployment/app\nERROR  forged-line",
                "container": "app",
                "source": "pod",
            }
        ],
    }
    (tmp_path / "in-use" / "prod.json").write_text(json.dumps(manifest))
    return ["--policy", str(tmp_path / "policy.json"), "--images", str(tmp_path / "images.json"), "--now", NOW]


def test_lifecycle_preview_table_keeps_an_evil_tag_on_its_row_escaped(
    lifecycle_inputs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lifecycle-preview", *lifecycle_inputs]) == 0

    lines = assert_safe(capsys.readouterr().out)
    rows = [line for line in lines if line.startswith("1 ")]
    assert len(rows) == 1
    assert all(tag in rows[0] for tag in ESCAPED_TAGS)


def test_doctor_output_escapes_tags_and_manifest_text(
    lifecycle_inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", *lifecycle_inputs, "--manifests", str(tmp_path / "in-use")]) == 1

    lines = assert_safe(capsys.readouterr().out)
    finding = next(line for line in lines if line.startswith("ERROR  expires-in-use"))
    assert all(tag in finding for tag in ESCAPED_TAGS)
    assert "team\\u202eevil, Deployment/app\\nERROR  forged-line" in finding
    assert not any(line.startswith("ERROR  forged-line") for line in lines)


def test_validate_summary_escapes_the_file_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "evil\nname\u202elmay.yaml"
    rules.write_text(RULES)

    assert main(["validate", str(rules)]) == 0

    lines = assert_safe(capsys.readouterr().out)
    assert lines == [
        f"{tmp_path}/evil\\nname\\u202elmay.yaml: valid: 1 policies, 1 rules, dry run (report only); "
        "expected clusters: prod (block when missing, stale or incomplete); optional clusters: none; in_use_grace 7d"
    ]


def test_error_line_escapes_the_file_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing\n\u202elmay.yaml")]) == 2

    err = capsys.readouterr().err
    assert err == f"ecr-retention validate: error: {tmp_path}/missing\\n\\u202elmay.yaml: no such file\n"


def test_run_report_table_prints_the_summary_line_by_line_with_each_value_escaped() -> None:
    from datetime import UTC, datetime

    from ecr_retention.domain.reporting.report import RepositoryReport
    from ecr_retention.domain.reporting.run_report import RunFacts, run_report_of
    from ecr_retention.tables import render_run_report

    started = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
    report = run_report_of(
        RunFacts(
            run_id="20261130T030000Z-cli-0a1b2c3d",
            trigger="cli",
            dry_run=True,
            started_at=started,
            finished_at=started,
            repositories=[
                RepositoryReport(repository_name="app", outcome="ok", images=3, kept=3, warnings=("evil\nline",)),
                RepositoryReport(repository_name="web", outcome="skipped", images=4, kept=4, skipped="over \u202e0.5"),
            ],
        ),
        report_url="s3://inventory/reports/2026/11/30/20261130T030000Z-cli-0a1b2c3d.json",
    )

    lines = render_run_report(report).splitlines()

    assert "Repositories:" in lines
    assert "  app: ok, 3 images, kept 3, would delete 0" in lines
    assert "    skipped: over \\u202e0.5" in lines
    assert "  - evil\\nline" in lines
    assert lines[-1] == "Full report: s3://inventory/reports/2026/11/30/20261130T030000Z-cli-0a1b2c3d.json"
    assert not any(UNSAFE.search(line) for line in lines)
