"""`ecr-retention lifecycle-diff` (issue 28): a native lifecycle policy change reviewed like a rules change. The
example is the seed's incident (002): the "fixed" policy protects dev, the incident's expires the image dev runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.cli import main

LIFECYCLE = Path(__file__).resolve().parents[2] / "examples" / "lifecycle"
NOW = "2026-11-30T06:00:00Z"


def lifecycle_diff(base: str, new: str, *more: str) -> list[str]:
    images = str(LIFECYCLE / "describe-images.json")
    return [
        "lifecycle-diff",
        "--base",
        str(LIFECYCLE / base),
        "--policy",
        str(LIFECYCLE / new),
        "--images",
        images,
        "--now",
        NOW,
        *more,
    ]


def test_a_change_that_expires_a_running_image_names_it_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(lifecycle_diff("policy-fixed.json", "policy-incident.json", "--manifests", str(LIFECYCLE / "in-use")))
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[0] == "this policy change expires 1 more image; 1 of them run: dev/dev/Deployment/app"
    assert "dev,1.12.350-dev" in out


def test_the_fix_spares_it_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(lifecycle_diff("policy-incident.json", "policy-fixed.json", "--format", "json"))
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    [change] = document["changes"]
    assert change["before"] == {"action": "EXPIRE", "rulePriority": 1}
    assert change["after"] == {"action": None, "rulePriority": None}
    assert change["imageTags"] == ["dev", "1.12.350-dev"]


def test_the_same_policy_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(lifecycle_diff("policy-fixed.json", "policy-fixed.json")) == 0
    assert capsys.readouterr().out.startswith("this policy change changes no image's fate;")


def test_an_archive_policy_archives_more(capsys: pytest.CaptureFixture[str]) -> None:
    main(lifecycle_diff("policy-fixed.json", "policy-archive.json"))
    assert "archives" in capsys.readouterr().out.splitlines()[0]


def test_bucket_needs_a_repository(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["lifecycle-diff", "--base", "a.json", "--policy", "b.json", "--bucket", "my-bucket"]
    args[2], args[4] = str(LIFECYCLE / "policy-fixed.json"), str(LIFECYCLE / "policy-fixed.json")
    assert main(args) == 2
    assert "--repository: required with --bucket" in capsys.readouterr().err


def test_markdown_is_the_pull_request_comment_and_fails_as_the_table_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        lifecycle_diff(
            "policy-fixed.json",
            "policy-incident.json",
            "--manifests",
            str(LIFECYCLE / "in-use"),
            "--format",
            "markdown",
        )
    )
    assert code == 1
    assert capsys.readouterr().out == (
        "### Lifecycle policy review for app\n\n"
        "**this policy change expires 1 more image; 1 of them run: dev/dev/Deployment/app**\n\n"
        "- :x: **fails**: the change expires or archives 1 image a workload runs\n\n"
        "| image | age | size | before | after | runs in |\n"
        "|---|---:|---:|---|---|---|\n"
        "| dev,1.12.350-dev `55a34b79a020` | 26d | 46.5 MiB | - | EXPIRE (rule 1) | dev/dev/Deployment/app |\n"
    )


def hostile_images(tmp_path: Path, count: int) -> str:
    """Images whose tags try Markdown, HTML and a mention; and one image index whose manifest the file lacks."""
    details = [
        {
            "imageDigest": f"sha256:{n:064x}",
            "imageTags": [f"v{n}_*x*|<b>@{'y' * 30}"],
            "imagePushedAt": f"2026-0{1 + n % 9}-01T00:00:00Z",
            "imageSizeInBytes": 1000,
        }
        for n in range(count)
    ]
    details[0]["imageManifestMediaType"] = "application/vnd.oci.image.index.v1+json"
    (tmp_path / "images.json").write_text(json.dumps({"imageDetails": details, "repositoryName": "app"}))
    return str(tmp_path / "images.json")


def test_markdown_is_bounded_inert_and_says_what_it_cannot_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep-all.json").write_text(
        json.dumps(
            {
                "rules": [
                    {
                        "rulePriority": 1,
                        "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 9999},
                        "action": {"type": "expire"},
                    }
                ]
            }
        )
    )
    (tmp_path / "keep-1.json").write_text(
        json.dumps(
            {
                "rules": [
                    {
                        "rulePriority": 1,
                        "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1},
                        "action": {"type": "expire"},
                    }
                ]
            }
        )
    )
    arguments = ["lifecycle-diff", "--base", str(tmp_path / "keep-all.json"), "--policy", str(tmp_path / "keep-1.json")]
    arguments += ["--images", hostile_images(tmp_path, 3000), "--now", NOW, "--format", "markdown"]
    # No manifest: whether the 2,999 images it expires run is unknown, and the gate fails (issue 43).
    assert main([*arguments, "--images-per-repository", "2000"]) == 1
    text = capsys.readouterr().out
    assert "whether a workload runs any of them is unknown: no in-use manifest was read" in text
    assert len(text) <= 60_000
    assert "more changed images: see the job log" in text
    assert "<b>" not in text
    assert "@&#8203;yyy" in text
    assert "\\|&lt;b&gt;" in text
    assert "1 image indexes have no manifest in the images file" in text
    assert main([*arguments, "--format", "table"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("warning: 1 image indexes have no manifest")
