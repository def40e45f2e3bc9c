"""`ecr-retention validate`: one line that says what the file will do, including which clusters block a run, which
only protect, and how long the in-use memory keeps what they ran protected."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecr_retention.cli import main

RULES = """
version: 1
safety: {{{safety}}}
policies:
  - repositories: [app]
    rules:
      - delete: {{untagged: true}}
"""


def validated(tmp_path: Path, capsys: pytest.CaptureFixture[str], safety: str) -> str:
    path = tmp_path / "retention.yaml"
    path.write_text(RULES.format(safety=safety))
    assert main(["validate", str(path)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    prefix = f"{path}: valid: 1 policies, 1 rules, dry run (report only); "
    assert line.startswith(prefix)
    return line.removeprefix(prefix)


def test_validate_names_the_expected_and_the_optional_clusters_and_the_in_use_grace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = validated(
        tmp_path, capsys, "clusters: [prod, dev], optional_clusters: [staging, aws-123456789012-eu-west-1]"
    )
    assert said == (
        "expected clusters: prod, dev (block when missing, stale or incomplete); "
        "optional clusters: staging, aws-123456789012-eu-west-1 (read and protect, never block); in_use_grace 7d"
    )


def test_validate_says_when_the_in_use_memory_is_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = validated(tmp_path, capsys, "clusters: [prod], in_use_grace: 0s")
    assert said.endswith("; optional clusters: none; in_use_grace 0s (the in-use memory is off)")


def test_validate_writes_the_in_use_grace_in_days(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert validated(tmp_path, capsys, "clusters: [prod], in_use_grace: 2w").endswith("; in_use_grace 14d")
    assert validated(tmp_path, capsys, "clusters: [prod], in_use_grace: 36h").endswith("; in_use_grace 36h")


def test_validate_without_expected_clusters_says_nothing_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validated(tmp_path, capsys, "clusters: []").startswith("expected clusters: none (no in-use protection);")
    said = validated(tmp_path, capsys, "clusters: [], optional_clusters: [dev]")
    assert said.startswith("expected clusters: none (no cluster blocks a run); optional clusters: dev (read and")


def test_validate_refuses_a_boolean_fraction_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "retention.yaml"
    path.write_text(RULES.format(safety="clusters: [prod], max_delete_fraction: true"))
    assert main(["validate", str(path)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert (
        line == f"ecr-retention validate: error: {path}: safety.max_delete_fraction: should be a number, not a boolean"
    )


def test_validate_refuses_dry_run_no_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """YAML 1.1 reads `no` as false, which made `dry_run: no` a live run; here it is a string, and refused."""
    path = tmp_path / "retention.yaml"
    path.write_text(RULES.format(safety="clusters: [prod]").replace("version: 1", "version: 1\ndry_run: no"))
    assert main(["validate", str(path)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"ecr-retention validate: error: {path}: dry_run: should be a boolean, not a string ('no': write true or false)"
    )
