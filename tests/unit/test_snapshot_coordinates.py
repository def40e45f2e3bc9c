"""A snapshot's coordinates are checked as `--region` is (issue 44 item 4): a `region` or `registryId` that names no
registry is bad input, one line and exit 2, before anything is planned. Before, `region: "EU-WEST-1"`, `""` or
`registryId: "12"` planned the in-use images by tag as `delete`, silently left scoped policies out and exited 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.cli import main

NOW = "2026-11-30T06:00:00Z"
ACCOUNT = "123456789012"
RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - delete: {tags: ["*"], older_than: 30d}
"""


def registry(**coordinates: object) -> dict[str, object]:
    details = [{"imageDigest": "sha256:" + "1" * 64, "imageTags": ["v1"], "imagePushedAt": "2026-01-01T00:00:00Z"}]
    return {**coordinates, "repositories": [{"repositoryName": "app", "imageDetails": details}]}


def plan(tmp_path: Path, snapshot: object, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    (tmp_path / "retention.yaml").write_text(RULES)
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    code = main(
        [
            "plan",
            "--config",
            str(tmp_path / "retention.yaml"),
            "--snapshot",
            str(tmp_path / "snapshot.json"),
            "--now",
            NOW,
        ]
    )
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("snapshot", "line"),
    [
        (
            registry(registryId=ACCOUNT, region="EU-WEST-1"),
            "region: 'EU-WEST-1' is not an AWS Region (such as us-east-1)",
        ),
        (registry(registryId=ACCOUNT, region=""), "region: '' is not an AWS Region (such as us-east-1)"),
        (
            registry(registryId="12", region="eu-west-1"),
            "registryId: '12' is not an AWS account id (12 digits, such as 123456789012)",
        ),
        (
            registry(registryId=ACCOUNT, region="us-east-3"),
            "region: 'us-east-3' is not an AWS Region: botocore",
        ),
        (
            {"registries": [registry(registryId=ACCOUNT, region="eu-west-1"), registry(region="EU-WEST-2")]},
            "registries[1].region: 'EU-WEST-2' is not an AWS Region (such as us-east-1)",
        ),
        (
            {"registries": [registry(registryId=ACCOUNT, region="eu-west-1"), registry(region="us-east-3")]},
            "registries[1].region: 'us-east-3' is not an AWS Region: botocore",
        ),
    ],
    ids=["capitals", "empty", "short-account", "unknown-region", "several-capitals", "several-unknown"],
)
def test_a_snapshot_whose_coordinates_name_no_registry_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], snapshot: object, line: str
) -> None:
    code, out, err = plan(tmp_path, snapshot, capsys)

    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert f"snapshot.json: {line}" in err


def test_a_snapshot_with_good_or_absent_coordinates_still_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for snapshot in (registry(registryId=ACCOUNT, region="eu-west-1"), registry()):
        code, out, err = plan(tmp_path, snapshot, capsys)
        assert code == 1  # planned, and blocked: no in-use manifest was given
        assert "app" in out
        assert "is not an AWS" not in err
