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
