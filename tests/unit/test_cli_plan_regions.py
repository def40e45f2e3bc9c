"""`plan` and `diff` on a snapshot of several registries (`snapshot --region A --region B`): each registry planned
with its own coordinates, one document whose repositories name their Region; a one-registry file unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.cli import main

NOW = "2026-11-30T06:00:00Z"
ACCOUNT = "123456789012"
OLD = "2026-01-01T00:00:00Z"
RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - delete: {tags: ["*"], older_than: 30d}
"""
SCOPED = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1}
policies:
  - repositories: [app]
    regions: [us-east-1]
    rules:
      - delete: {tags: ["*"], older_than: 30d}
"""


def digest(character: str) -> str:
    return "sha256:" + character * 64


def registry(region: str, *images: tuple[str, str]) -> dict[str, object]:
    details = [{"imageDigest": d, "imageTags": [tag], "imagePushedAt": OLD} for d, tag in images]
    return {
        "registryId": ACCOUNT,
        "region": region,
        "repositories": [{"repositoryName": "app", "imageDetails": details}],
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    # The same digest in both Regions (replicated without its deletions); prod runs us-east-1's app:v1 (a tag
    # reference: a resolved digest would protect the digest wherever it is).
    (tmp_path / "retention.yaml").write_text(RULES)
    (tmp_path / "scoped.yaml").write_text(SCOPED)
    both = {
        "registries": [
            registry("eu-west-1", (digest("1"), "v1"), (digest("2"), "v2")),
            registry("us-east-1", (digest("1"), "v1"), (digest("3"), "v3")),
        ]
    }
    (tmp_path / "both.json").write_text(json.dumps(both))
    (tmp_path / "in-use").mkdir()
    manifest = {
        "schemaVersion": 1,
        "cluster": "prod",
        "generatedAt": "2026-11-30T05:55:00Z",
        "complete": True,
        "images": [
            {
                "image": f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/app:v1",
                "namespace": "prod",
                "workload": "Deployment/app",
                "container": "app",
                "source": "pod",
            }
        ],
    }
    (tmp_path / "in-use" / "prod.json").write_text(json.dumps(manifest))
    return tmp_path


def plan(
    workspace: Path, capsys: pytest.CaptureFixture[str], *extra: str, rules: str = "retention.yaml"
) -> tuple[int, str, str]:
    capsys.readouterr()
    args = ["plan", "--config", str(workspace / rules), "--snapshot", str(workspace / "both.json")]
    code = main([*args, "--manifests", str(workspace / "in-use"), "--now", NOW, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def actions(document: dict[str, object]) -> dict[tuple[str, str], str]:
    return {
        (repository["region"], image["imageTags"][0]): image["action"]
        for repository in document["repositories"]  # type: ignore[attr-defined]
        for image in repository["images"]
    }


def test_a_reference_to_the_us_east_1_host_protects_in_that_registry_only(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = plan(workspace, capsys, "--format", "json")

    document = json.loads(out)
    assert (code, err, document["blocked"], [r["skipped"] for r in document["repositories"]]) == (0, "", [], [None] * 2)
    assert actions(document) == {
        ("eu-west-1", "v1"): "delete",  # the same digest, but prod pulls it from us-east-1
        ("eu-west-1", "v2"): "delete",
        ("us-east-1", "v1"): "keep",
        ("us-east-1", "v3"): "delete",
    }
    assert [list(repository)[:2] for repository in document["repositories"]] == [["repositoryName", "region"]] * 2
    assert (document["registryId"], document["region"], document["blocked"]) == (ACCOUNT, None, [])
    assert document["warnings"] == []  # prod references a registry of the snapshot: no foreign-registry warning


def test_a_policy_scoped_to_us_east_1_plans_nothing_in_eu_west_1(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = plan(workspace, capsys, "--format", "json", rules="scoped.yaml")

    assert code == 0
    planned = {repository["region"]: repository["policy"] for repository in json.loads(out)["repositories"]}
    assert planned == {"eu-west-1": None, "us-east-1": "policies[0]"}
    assert actions(json.loads(out))[("eu-west-1", "v2")] == "keep"


def test_the_table_groups_the_registries_by_region(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = plan(workspace, capsys)

    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith("== Region")]
    assert headers == [f"== Region eu-west-1 (registry {ACCOUNT}) ==", f"== Region us-east-1 (registry {ACCOUNT}) =="]


def test_region_plans_one_registry_of_the_file_as_a_snapshot_of_it_alone(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alone = workspace / "alone.json"
    alone.write_text(json.dumps(json.loads((workspace / "both.json").read_text())["registries"][1]))

    chosen = plan(workspace, capsys, "--format", "json", "--region", "us-east-1")
    (workspace / "both.json").write_bytes(alone.read_bytes())
    single = plan(workspace, capsys, "--format", "json")

    assert chosen == single
    assert "region" not in json.loads(single[1])["repositories"][0]


@pytest.mark.parametrize(
    ("registries", "line"),
    [
        (
            [registry("eu-west-1"), registry("eu-west-1")],
            "region eu-west-1 appears twice: one registry per Region",
        ),
        ([{"repositories": []}, registry("eu-west-1")], "each registry of a snapshot of several names its region"),
    ],
)
def test_a_snapshot_of_several_registries_names_each_region_once(
    workspace: Path, capsys: pytest.CaptureFixture[str], registries: list[object], line: str
) -> None:
    (workspace / "both.json").write_text(json.dumps({"registries": registries}))

    code, out, err = plan(workspace, capsys)

    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert line in err


def test_a_region_the_file_lacks_is_one_line(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = plan(workspace, capsys, "--region", "ap-southeast-2")

    assert code == 2
    assert err.endswith("holds no registry of ap-southeast-2 (it holds eu-west-1, us-east-1)\n")


def test_html_of_several_registries_is_refused_in_one_line(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = plan(workspace, capsys, "--format", "html", "--out", str(workspace / "plan.html"))

    assert code == 2
    assert "a snapshot of several registries is planned as table or json" in err
    assert not (workspace / "plan.html").exists()


def test_diff_of_several_registries_plans_the_region_named(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["diff", "--base", str(workspace / "retention.yaml"), "--config", str(workspace / "scoped.yaml")]
    args = [*base, "--snapshot", str(workspace / "both.json"), "--manifests", str(workspace / "in-use"), "--now", NOW]

    refused = main(args)
    _, err = capsys.readouterr()
    east = main([*args, "--region", "us-east-1", "--format", "json"])
    east_out = json.loads(capsys.readouterr().out)
    west = main([*args, "--region", "eu-west-1", "--format", "json"])
    west_out = json.loads(capsys.readouterr().out)

    assert refused == 2
    assert err.endswith("holds the registries of several Regions (eu-west-1, us-east-1): name one with --region\n")
    assert (east, west) == (0, 0)
    assert json.dumps(east_out).count("imageDigest") == 0  # scoping to us-east-1 changes nothing there
    changed = {change["imageDigest"] for repository in west_out["repositories"] for change in repository["changes"]}
    assert changed == {digest("1"), digest("2")}  # eu-west-1 no longer managed: its deletions stop


def test_a_policy_with_regions_never_applies_to_a_snapshot_of_unknown_region_and_says_so_once(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = registry("eu-west-1", (digest("2"), "v2"))
    del unknown["region"]
    (workspace / "both.json").write_text(json.dumps(unknown))

    code, out, err = plan(workspace, capsys, "--format", "json", rules="scoped.yaml")

    assert code == 0
    assert json.loads(out)["repositories"][0]["policy"] is None
    assert err == (
        "plan: warning: the snapshot names no Region, so policies[0] (scoped with regions) never applies to it; a "
        "snapshot written by `ecr-retention snapshot` names its Region\n"
    )
