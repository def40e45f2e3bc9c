"""`ecr-retention plan --manifests DIR` reads the in-use memory beside the manifests (`_in-use-memory.json`, which
`snapshot --bucket --manifests` records), so that an offline plan decides as the pipeline's run does; an unreadable
memory blocks the plan as it blocks the run (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.cli import main
from ecr_retention.layout import MEMORY_FILE

NOW = "2026-11-30T06:00:00Z"
HOST = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
OLD = "sha256:" + "1" * 64
RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - delete: {tags: ["*"], older_than: 30d}
"""
MEMORY = {
    "schemaVersion": 1,
    "updatedAt": "2026-11-29T06:00:00Z",
    "clusters": {"dev": {"last": {"generatedAt": "2026-11-29T05:55:00Z", "references": 1}}},
    "images": [
        {
            "cluster": "dev",
            "image": f"{HOST}/app:v1",
            "digest": OLD,
            "namespace": "dev",
            "workload": "Deployment/app",
            "container": "app",
            "source": "pod",
            "lastSeenAt": "2026-11-29T05:55:00Z",
        }
    ],
}


@pytest.fixture
def workspace(tmp_path: Path) -> list[str]:
    (tmp_path / "retention.yaml").write_text(RULES)
    image = {
        "imageDigest": OLD,
        "imageTags": ["v1"],
        "imagePushedAt": "2026-01-01T00:00:00Z",
        "registryId": "123456789012",
    }
    (tmp_path / "snapshot.json").write_text(
        json.dumps({"region": "eu-west-1", "repositories": [{"repositoryName": "app", "imageDetails": [image]}]})
    )
    manifests = tmp_path / "in-use"
    manifests.mkdir()
    prod = {
        "schemaVersion": 1,
        "cluster": "prod",
        "generatedAt": "2026-11-30T05:55:00Z",
        "complete": True,
        "images": [],
    }
    (manifests / "prod.json").write_text(json.dumps(prod))
    return [
        "plan",
        "--config",
        str(tmp_path / "retention.yaml"),
        "--snapshot",
        str(tmp_path / "snapshot.json"),
        "--manifests",
        str(manifests),
        "--now",
        NOW,
        "--format",
        "json",
    ]


def planned(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_without_a_memory_the_image_dev_ran_yesterday_is_deleted(
    workspace: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(workspace) == 0
    assert planned(capsys)["repositories"][0]["images"][0]["action"] == "delete"  # type: ignore[index]


def test_the_memory_beside_the_manifests_keeps_what_dev_ran(
    workspace: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (Path(workspace[6]) / MEMORY_FILE).write_text(json.dumps(MEMORY))

    assert main(workspace) == 0

    result = planned(capsys)
    (decision,) = result["repositories"][0]["images"]  # type: ignore[index]
    assert decision["action"] == "keep"
    assert decision["reasons"][0] == {
        "kind": "in-use",
        "rule": "remembered",
        "detail": "dev: dev/Deployment/app (pod), last seen 1d ago, protected until 2026-12-06T05:55:00Z",
    }
    assert result["warnings"] == [
        "cluster dev: no in-use manifest now, it reported 1 image at 2026-11-29T05:55:00Z; the references it dropped "
        "stay protected through the in-use memory until 2026-12-06T05:55:00Z (safety.in_use_grace 1w)"
    ]


def test_an_unreadable_memory_blocks_the_plan(workspace: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(workspace[6]) / MEMORY_FILE
    path.write_text('{"schemaVersion": 1, "updatedAt": "2026-11-29T06:00:00Z", "images": [{"image": 1}]}')

    assert main(workspace) == 1

    result = planned(capsys)
    assert result["blocked"][0].startswith(f"{path}: unreadable in-use memory: images[0]")  # type: ignore[index]
    assert result["repositories"][0]["images"][0]["action"] == "keep"  # type: ignore[index]
