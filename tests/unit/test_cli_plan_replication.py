"""`ecr-retention plan` on a snapshot that carries `replication` (as `snapshot` records it): an image that only a
destination cluster runs is kept when its rule replicates deletions, and deleted when the snapshot has no
`replication` or the rule's deleteReplication is off. A `replication` this release cannot read is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main

NOW = "2026-11-30T06:00:00Z"
ACCOUNT = "123456789012"
OLD = "sha256:" + "1" * 64
RULES = """
version: 1
safety: {clusters: [prod, us-prod], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - delete: {tags: ["*"], older_than: 30d, keep_newest: 1}
"""


def rule(enabled: bool) -> dict[str, Any]:
    return {
        "destinations": [{"region": "us-east-1", "registryId": ACCOUNT}],
        "repositoryFilters": [{"filter": "app", "filterType": "PREFIX_MATCH"}],
        "deleteReplication": {"enabled": enabled},
    }


def workspace(tmp_path: Path, replication: dict[str, Any] | None) -> list[str]:
    (tmp_path / "retention.yaml").write_text(RULES)
    images = [
        {"imageDigest": OLD, "imageTags": ["1.0"], "imagePushedAt": "2026-08-01T00:00:00Z"},
        {"imageDigest": "sha256:" + "2" * 64, "imageTags": ["1.1"], "imagePushedAt": "2026-10-01T00:00:00Z"},
    ]
    snapshot: dict[str, Any] = {"registryId": ACCOUNT, "region": "eu-west-1"}
    if replication is not None:
        snapshot["replication"] = replication
    snapshot["repositories"] = [{"repositoryName": "app", "imageDetails": images}]
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    folder = tmp_path / "in-use"
    folder.mkdir()
    for cluster, region, tag in (("prod", "eu-west-1", "1.1"), ("us-prod", "us-east-1", "1.0")):
        entry = {
            "image": f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/app:{tag}",
            "namespace": "shop",
            "workload": "Deployment/app",
            "container": "app",
            "source": "template",
        }
        document = {"schemaVersion": 1, "cluster": cluster, "generatedAt": "2026-11-30T05:55:00Z", "complete": True}
        (folder / f"{cluster}.json").write_text(json.dumps({**document, "images": [entry]}))
    config, snapshot_path = str(tmp_path / "retention.yaml"), str(tmp_path / "snapshot.json")
    return ["plan", "--config", config, "--snapshot", snapshot_path, "--manifests", str(folder), "--now", NOW]


def old_release(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    [repository] = json.loads(capsys.readouterr().out)["repositories"]
    return {"repository": repository, "old": next(i for i in repository["images"] if i["imageDigest"] == OLD)}


def test_an_image_only_a_destination_cluster_runs_is_kept_when_its_rule_replicates_deletions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planned = old_release(capsys, workspace(tmp_path, {"rules": [rule(enabled=True)]}))
    assert planned["old"]["action"] == "keep"
    assert planned["old"]["reasons"][0] == {
        "kind": "in-use",
        "rule": None,
        "detail": "us-prod (us-east-1, replicated): shop/Deployment/app (template)",
    }
    assert planned["repository"]["deletionReplicatesTo"] == [
        {"registryId": ACCOUNT, "region": "us-east-1", "expectedClusters": ["us-prod"]}
    ]


@pytest.mark.parametrize("replication", [None, {"rules": [rule(enabled=False)]}], ids=["no-replication", "off"])
def test_the_same_image_is_deleted_without_replication_or_with_delete_replication_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], replication: dict[str, Any] | None
) -> None:
    planned = old_release(capsys, workspace(tmp_path, replication))
    assert planned["old"]["action"] == "delete"
    assert planned["repository"]["deletionReplicatesTo"] == []


def test_the_table_says_where_deletions_replicate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(workspace(tmp_path, {"rules": [rule(enabled=True)]})) == 0
    out = capsys.readouterr().out
    assert f"deletions replicate to us-east-1 ({ACCOUNT}) (expected clusters there: us-prod)" in out
    assert "us-prod (us-east-1, replicated): shop/Deployment/app (template)" in out


def test_a_replication_this_release_cannot_read_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = rule(enabled=True)
    bad["deleteReplication"] = {"enabled": "yes"}
    assert main(workspace(tmp_path, {"rules": [bad]})) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "replication.rules[0].deleteReplication.enabled" in err


def test_a_snapshot_rule_without_delete_replication_protects_as_replicating_and_the_plan_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stripped = {key: value for key, value in rule(enabled=False).items() if key != "deleteReplication"}
    assert main([*workspace(tmp_path, {"rules": [stripped]}), "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    [repository] = plan["repositories"]
    old = next(image for image in repository["images"] if image["imageDigest"] == OLD)
    assert old["action"] == "keep"  # us-prod runs it through the destination a deletion may reach
    assert repository["deletionReplicatesTo"] == [
        {"registryId": ACCOUNT, "region": "us-east-1", "expectedClusters": ["us-prod"]}
    ]
    assert plan["warnings"][0] == (
        "snapshot replication rules[0]: no deleteReplication field, read as replicating deletions (the safe side); "
        "an AWS CLI whose botocore predates ECR's replication of deletions drops it: take the snapshot with "
        "ecr-retention snapshot or a newer CLI"
    )


def test_a_snapshot_rule_that_states_delete_replication_gets_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*workspace(tmp_path, {"rules": [rule(enabled=False)]}), "--format", "json"]) == 0
    assert not any("deleteReplication" in warning for warning in json.loads(capsys.readouterr().out)["warnings"])


@pytest.mark.parametrize(
    ("replication", "where"),
    [
        (
            {"rules": [{**rule(enabled=True), "deleteReplications": {"enabled": False}}]},
            "replication.rules[0].deleteReplications: unknown key; did you mean deleteReplication? allowed keys: "
            "deleteReplication, destinations, repositoryFilters",
        ),
        ({"rules": [], "registryId": ACCOUNT}, "replication.registryId: unknown key; allowed keys: rules"),
        (
            {"rules": [{**rule(enabled=True), "deleteReplication": {"enabled": True, "scope": "all"}}]},
            "replication.rules[0].deleteReplication.scope: unknown key; allowed keys: enabled",
        ),
        (
            {
                "rules": [
                    {**rule(enabled=True), "destinations": [{"region": "us-east-1", "registryId": "١٢٣٤٥٦٧٨٩٠١٢"}]}
                ]
            },
            "replication.rules[0].destinations[0].registryId: String should match pattern '^[0-9]{12}$'",
        ),
    ],
    ids=["misspelt-delete-replication", "unknown-top-key", "unknown-nested-key", "account-in-arabic-digits"],
)
def test_a_snapshot_replication_with_a_key_or_value_this_release_does_not_read_is_refused_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], replication: dict[str, Any], where: str
) -> None:
    assert main(workspace(tmp_path, replication)) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == f"ecr-retention plan: error: {tmp_path}/snapshot.json: {where}"
