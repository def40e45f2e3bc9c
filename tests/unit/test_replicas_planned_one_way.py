"""Replicas planned one way (issue 44 item 3): offline `plan` and `diff` of a snapshot of several Regions leave a
replica to the source whose deletions replicate it, as the run does (domain/planning/replicas.py, for both doors);
replication both ways between pruned Regions is decided by the Region that sorts first, and said once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.services.run import run_pipeline
from support.builders import ACCOUNT, NOW, replication_rule
from support.fakes import FakeRegistry, MemoryBucket
from tests.unit.services.test_several_regions import EXPECTED, HOME, OTHER, RULES, adapters_of, deleted, two_regions

TWO_WAY_EXPECTED = {(HOME, "app"): {"v1", "v3"}, (OTHER, "app"): set(), (OTHER, "edge"): {"v1", "v2"}}


def two_way() -> tuple[FakeRegistry, FakeRegistry, MemoryBucket]:
    """two_regions, with us-east-1's app replicating back to eu-west-1 with its deletions, and no v0 of its own."""
    home, other, bucket, digests = two_regions()
    other.replication = ReplicationConfiguration.model_validate(
        {"rules": [replication_rule((HOME, ACCOUNT), prefixes=("app",))]}
    )
    other.repositories["app"].pop(digests["app:v0"])
    return home, other, bucket


def snapshot_file(tmp_path: Path, bucket: MemoryBucket, *registries: FakeRegistry) -> list[str]:
    """The registries as `snapshot --region A --region B` writes them, and the bucket's manifests as a directory: the
    arguments of an offline review of what the run is given."""
    document = {
        "registries": [
            {
                "registryId": registry.registry_id,
                "region": registry.region,
                "replication": registry.replication.model_dump(mode="json", by_alias=True, exclude_none=True),
                "repositories": [
                    {
                        "repositoryName": name,
                        "imageDetails": [
                            image.model_dump(mode="json", by_alias=True, exclude_none=True)
                            for image in registry.describe_images(name)
                        ],
                    }
                    for name in sorted(registry.repositories)
                ],
            }
            for registry in registries
        ]
    }
    (tmp_path / "both.json").write_text(json.dumps(document))
    (tmp_path / "in-use").mkdir()
    (tmp_path / "in-use" / "prod.json").write_bytes(bucket.objects["in-use/prod.json"])
    (tmp_path / "retention.yaml").write_text(RULES)
    return [
        "--snapshot",
        str(tmp_path / "both.json"),
        "--manifests",
        str(tmp_path / "in-use"),
        "--now",
        NOW.isoformat(),
    ]


def planned(tmp_path: Path, capsys: pytest.CaptureFixture[str], inputs: list[str]) -> dict[str, Any]:
    main(["plan", "--config", str(tmp_path / "retention.yaml"), *inputs, "--format", "json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def deletions(document: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    return {
        (repository["region"], repository["repositoryName"]): {
            tag for image in repository["images"] if image["action"] == "delete" for tag in image["imageTags"]
        }
        for repository in document["repositories"]
        if any(image["action"] == "delete" for image in repository["images"])
    }


def test_an_offline_plan_of_two_regions_leaves_the_replicas_to_the_source_as_the_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given eu-west-1's app replicating to us-east-1 with its deletions, and prod running eu-west-1's app:v2
    home, other, bucket, _ = two_regions()
    inputs = snapshot_file(tmp_path, bucket, home, other)

    # When the same registries are planned offline, and then run
    document = planned(tmp_path, capsys, inputs)
    run = run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    # Then the plan deletes what the run deletes: the replicas of app in us-east-1 are eu-west-1's to decide (its
    # v2, in use there, is no deletion of us-east-1's), and nothing is counted twice
    assert deletions(document) == EXPECTED == deleted(run)
    us_app = next(r for r in document["repositories"] if (r["region"], r["repositoryName"]) == (OTHER, "app"))
    replicas = [image for image in us_app["images"] if any(r["kind"] == "replica" for r in image["reasons"])]
    assert sorted(tag for image in replicas for tag in image["imageTags"]) == ["v1", "v2", "v3", "v4"]
    assert all(image["action"] == "keep" for image in replicas)


def test_a_diff_of_the_destination_shows_no_change_to_the_replicas_its_rules_do_not_decide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, other, bucket, _ = two_regions()
    inputs = snapshot_file(tmp_path, bucket, home, other)
    (tmp_path / "keep-none.yaml").write_text(RULES.replace("keep_newest: 1", "keep_newest: 0"))

    main(
        [
            "diff",
            "--base",
            str(tmp_path / "retention.yaml"),
            "--config",
            str(tmp_path / "keep-none.yaml"),
            *inputs,
            "--region",
            OTHER,
            "--format",
            "json",
        ]
    )
    document = json.loads(capsys.readouterr().out)

    # us-east-1's own edge:v4 would go; app:v4 is a replica of eu-west-1's, which eu-west-1's rules decide
    changed = {repository["repositoryName"] for repository in document["repositories"]}
    assert changed == {"edge"}


def test_two_way_replication_is_decided_by_the_region_that_sorts_first_in_the_run(tmp_path: Path) -> None:
    # Given app replicating eu-west-1 -> us-east-1 and back, both with deleteReplication
    home, other, bucket = two_way()

    report = run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    # Then app is pruned, by eu-west-1's rules (us-east-1 leaves its replicas to them), and the run says so once
    assert deleted(report) == TWO_WAY_EXPECTED
    assert cycle_warnings(report) == [
        "eu-west-1: app replicates its deletions both ways between the pruned Regions eu-west-1, us-east-1: "
        "eu-west-1's rules decide it (the Region that sorts first), and us-east-1 leaves to them the replicas"
    ]


def test_two_way_replication_is_decided_by_the_same_region_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, other, bucket = two_way()
    inputs = snapshot_file(tmp_path, bucket, other, home)  # the file's order does not choose

    document = planned(tmp_path, capsys, inputs)

    assert deletions(document) == {where: tags for where, tags in TWO_WAY_EXPECTED.items() if tags}
    assert sum("both ways" in warning for warning in document["warnings"]) == 1


def cycle_warnings(report: RunReport) -> list[str]:
    return [warning for warning in report.warnings if "both ways" in warning]
