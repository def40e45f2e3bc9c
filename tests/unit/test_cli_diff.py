"""`ecr-retention diff`: formats, `--fail-on` exit codes, and one line, exit 2, for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.cli import main

NOW = "2026-11-30T06:00:00Z"
BASE = """
version: 1
safety: {clusters: [], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - keep: {tags: [latest]}
      - delete: {tags: ["v*"], older_than: 30d}
"""
WIDER = BASE.replace('tags: ["v*"]', 'tags: ["*"]')


def image(number: int, tag: str) -> dict[str, object]:
    return {
        "imageDigest": f"sha256:{number:064d}",
        "imageTags": [tag],
        "imagePushedAt": "2026-01-01T00:00:00Z",
        "imageSizeInBytes": 1024**3,
    }


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "new.yaml").write_text(WIDER)
    snapshot = {
        "repositories": [
            {"repositoryName": "app", "imageDetails": [image(1, "v1"), image(2, "rc-2"), image(3, "latest")]}
        ]
    }
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    return {name: str(tmp_path / name) for name in ("base.yaml", "new.yaml", "snapshot.json")}


def diff(files: dict[str, str], *more: str) -> list[str]:
    return [
        "diff",
        "--base",
        files["base.yaml"],
        "--config",
        files["new.yaml"],
        "--snapshot",
        files["snapshot.json"],
        "--now",
        NOW,
        *more,
    ]


def test_table_names_the_change(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(diff(files)) == 0
    out = capsys.readouterr().out
    assert (
        out.splitlines()[0]
        == "this change deletes 1 more image (1.0 GiB) in 1 repository; no in-use image changes fate"
    )
    assert "keep -> delete" in out
    assert "rc-2" in out
    assert "v1" not in out.split("\n\n")[1].split()[2:3]


def test_json_lists_before_and_after(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(diff(files, "--format", "json")) == 0
    document = json.loads(capsys.readouterr().out)
    (change,) = document["repositories"][0]["changes"]
    assert change["imageDigest"] == f"sha256:{2:064d}"
    assert change["repositoryName"] == "app"
    assert (change["before"]["action"], change["after"]["action"]) == ("keep", "delete")
    assert change["after"]["reasons"][0]["kind"] == "delete-rule"
    assert document["totals"]["deleted"] == {"images": 1, "bytes": 1024**3}
    assert document["failed"] == []


@pytest.mark.parametrize(
    ("conditions", "code"),
    [
        (["--fail-on", "deletions-increase"], 1),
        (["--fail-on", "deletions-over", "1"], 0),
        (["--fail-on", "deletions-over", "0"], 1),
        (["--fail-on", "bytes-over", "1GiB"], 0),
        (["--fail-on", "bytes-over", "1GB"], 1),
        (["--fail-on", "deletions-over", "5", "--fail-on", "bytes-over", "500MiB"], 1),
    ],
)
def test_fail_on_sets_the_exit_code(
    files: dict[str, str], conditions: list[str], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(diff(files, *conditions)) == code
    out = capsys.readouterr().out
    assert ("FAIL: " in out) == (code == 1)


def test_the_reverse_change_passes_deletions_increase(files: dict[str, str]) -> None:
    swapped = diff(files, "--fail-on", "deletions-increase")
    swapped[2], swapped[4] = swapped[4], swapped[2]
    assert main(swapped) == 0


def test_markdown_has_the_summary_table(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(diff(files, "--format", "markdown")) == 0
    out = capsys.readouterr().out
    assert "| app | policies\\[0\\] | 1 | 1.0 GiB | 0 | 0 |" in out
    assert "<details><summary>app: 1 more removed (1.0 GiB)</summary>" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {
                "new.yaml": "version: 1\npolicies: [{repositories: [app], rules: [{delete: {tags: [x], untagged: true}}]}]\n"
            },
            "new.yaml",
        ),
        ({"base.yaml": "version: 2\n"}, "base.yaml"),
        ({"snapshot.json": "{"}, "snapshot.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    files: dict[str, str], change: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in change.items():
        Path(files[name]).write_text(text)
    assert main(diff(files)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert message in err


def test_a_condition_that_cannot_be_read_is_exit_2(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(diff(files, "--fail-on", "bytes-over", "lots")) == 2
    assert "--fail-on: bytes-over: 'lots' is not a size" in capsys.readouterr().err


def test_manifests_with_bucket_is_refused(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "diff",
        "--base",
        files["base.yaml"],
        "--config",
        files["new.yaml"],
        "--bucket",
        "my-bucket",
        "--manifests",
        "x",
    ]
    assert main(args) == 2
    assert "--manifests goes with --snapshot" in capsys.readouterr().err
