"""A run over the registries of two Regions (SPEC "Several Regions"), through the CLI door and the workflow's steps:
each repository planned with its own Region's rules and replication, protected by what runs from its registry's
host, a replica from a pruned source decided by the source's rules, and every run file, lease and report kept apart
by Region."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ecr_retention.domain.config import check_pruned_regions, parse_config
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.replication import ReplicationConfiguration, RunReplication
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.layout import regional_name, replication_key, repository_report_key, repository_snapshot_key
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from ecr_retention.workflow import WorkItem
from support.builders import ACCOUNT, NOW, replication_rule
from support.fakes import FakeRegistry, MemoryBucket, MemoryLeases

HOME, OTHER = "eu-west-1", "us-east-1"
HOME_HOST = f"{ACCOUNT}.dkr.ecr.{HOME}.amazonaws.com"
OTHER_HOST = f"{ACCOUNT}.dkr.ecr.{OTHER}.amazonaws.com"
RULES = """
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod]}
policies:
  - repositories: [edge]
    regions: [us-east-1]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
  - repositories: [app]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
"""


def manifest(seed: str) -> dict[str, object]:
    """One image's manifest: pushed to two registries, the same image (the same digest)."""
    return {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": {"seed": seed}}


def two_regions() -> tuple[FakeRegistry, FakeRegistry, MemoryBucket, dict[str, str]]:
    """eu-west-1's app (v1-v4) replicates to us-east-1 with its deletions; us-east-1 holds the replicas and a v0 of
    its own, and edge (v1-v4) in both Regions. prod runs eu-west-1's app:v2 and, across Regions, us-east-1's edge:v3."""
    home = FakeRegistry(registry_id=ACCOUNT, region=HOME)
    home.replication = ReplicationConfiguration.model_validate(
        {"rules": [replication_rule((OTHER, ACCOUNT), prefixes=("app",))]}
    )
    other = FakeRegistry(registry_id=ACCOUNT, region=OTHER)
    digests: dict[str, str] = {}
    for n in range(1, 5):
        pushed_at = NOW - timedelta(days=100 - n)
        digests[f"app:v{n}"] = home.add_image("app", tags=[f"v{n}"], pushed_at=pushed_at, manifest=manifest(f"app{n}"))
        other.add_image("app", tags=[f"v{n}"], pushed_at=pushed_at, manifest=manifest(f"app{n}"))
        for registry in (home, other):
            registry.add_image(
                "edge", tags=[f"v{n}"], pushed_at=pushed_at, manifest=manifest(f"edge{n}{registry.region}")
            )
    digests["app:v0"] = other.add_image("app", tags=["v0"], pushed_at=NOW - timedelta(days=101), manifest=manifest("0"))
    bucket = MemoryBucket(name="inventory")
    bucket.write_json(
        "in-use/prod.json",
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
            "complete": True,
            "images": [
                {
                    "image": f"{HOME_HOST}/app:v2",
                    "namespace": "p",
                    "workload": "Deployment/app",
                    "container": "app",
                    "source": "pod",
                },
                {
                    "image": f"{OTHER_HOST}/edge:v3",
                    "namespace": "p",
                    "workload": "Deployment/cdn",
                    "container": "cdn",
                    "source": "pod",
                },
            ],
        },
    )
    return home, other, bucket, digests


def adapters_of(home: FakeRegistry, other: FakeRegistry, bucket: MemoryBucket, **more: object) -> Adapters:
    return Adapters(
        registry=home, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS, other_registries=(other,), **more
    )


def deleted(report: RunReport) -> dict[tuple[str | None, str], set[str]]:
    return {
        (repository.region, repository.repository_name): {
            tag for entry in repository.deleted for tag in entry.image_tags
        }
        for repository in report.repositories
    }


EXPECTED = {
    (HOME, "app"): {"v1", "v3"},  # v2 runs, v4 is the newest
    (OTHER, "app"): {"v0"},  # v1-v4 are replicas: eu-west-1's rules decide them (and its deletions replicate here)
    (OTHER, "edge"): {"v1", "v2"},  # v3 runs in prod, pulled across Regions; v4 is the newest
}


def test_the_cli_door_prunes_both_registries_each_by_its_own_rules() -> None:
    home, other, bucket, digests = two_regions()

    report = run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    assert report.outcome == "ok"
    assert deleted(report) == EXPECTED
    # edge in eu-west-1: the only policy naming edge is scoped to us-east-1, so nothing governs it here.
    assert home.tags("edge") == ["v1", "v2", "v3", "v4"]
    assert sorted(other.tags("app")) == ["v1", "v2", "v3", "v4"]  # the replicas wait for eu-west-1's deletions
    [replicas] = [r for r in report.repositories if (r.region, r.repository_name) == (OTHER, "app")]
    assert {entry.image_digest: entry.kind for entry in replicas.kept_images} == {
        digests[f"app:v{n}"]: "replica" for n in range(1, 5)
    }
    assert "a replica of app in eu-west-1" in replicas.kept_images[0].detail
    assert report.totals.deleted == 2 + 1 + 2


def test_the_workflow_door_gives_the_same_run_with_every_file_and_lease_apart() -> None:
    home, other, bucket, _ = two_regions()
    leases = MemoryLeases()
    adapters = adapters_of(home, other, bucket, leases=leases)
    config = parse_config(RULES)

    start = start_run(config, adapters, trigger="schedule")
    items = [WorkItem.model_validate(item) for item in json.loads(bucket.objects[start.targets_key])]
    assert [(item.region, item.repository) for item in items] == [(None, "app"), (OTHER, "app"), (OTHER, "edge")]
    assert start.count == 3
    for item in items:
        run_work_item(config, adapters, run_id=item.run_id, repository=item.repository, dry_run=False, key=item.region)
    report = finish_run(adapters, start, config)

    assert deleted(report) == EXPECTED
    run_id = start.run_id
    for key in (
        replication_key(run_id),
        repository_report_key(run_id, "app"),
        repository_report_key(run_id, "app", OTHER),
        repository_snapshot_key("app"),
        repository_snapshot_key("app", OTHER),
    ):
        assert key in bucket.objects, key
    assert repository_report_key(run_id, "app") != repository_report_key(run_id, "app", OTHER)
    assert sorted(leases.taken) == ["app", "us-east-1:app", "us-east-1:edge"]
    assert leases.held == {}


def test_a_push_in_the_other_region_targets_that_registry_alone() -> None:
    home, other, bucket, _ = two_regions()
    adapters = adapters_of(home, other, bucket)

    start = start_run(parse_config(RULES), adapters, trigger="push", repositories=["edge", "app"], key=OTHER)

    items = json.loads(bucket.objects[start.targets_key])
    assert [(item["region"], item["repository"]) for item in items] == [(OTHER, "app"), (OTHER, "edge")]
    # every pruned registry's, for the run's end: one record, by Region
    record = RunReplication.model_validate_json(bucket.objects[replication_key(start.run_id)])
    assert sorted(record.registries) == sorted([HOME, OTHER])


def test_a_target_of_the_other_region_without_a_report_is_failed_in_its_region() -> None:
    home, other, bucket, _ = two_regions()
    adapters = adapters_of(home, other, bucket)
    config = parse_config(RULES)
    start = start_run(config, adapters, trigger="schedule")
    run_work_item(config, adapters, run_id=start.run_id, repository="app", dry_run=False)  # the home one only

    report = finish_run(adapters, start, config)

    assert [(r.region, r.repository_name, r.outcome) for r in report.repositories if r.outcome == "failed"] == [
        (OTHER, "app", "failed"),
        (OTHER, "edge", "failed"),
    ]


def test_a_work_item_of_a_region_not_pruned_is_refused_and_nothing_is_touched() -> None:
    home, other, bucket, _ = two_regions()
    adapters = adapters_of(home, other, bucket)

    with pytest.raises(InputError, match="Region ap-southeast-2 is not one this deployment prunes"):
        run_work_item(parse_config(RULES), adapters, run_id="r", repository="app", dry_run=False, key="ap-southeast-2")
    assert home.mutating_calls == []
    assert other.mutating_calls == []


def test_the_memory_resolves_a_tag_reference_in_the_registry_its_host_names() -> None:
    home, other, bucket, _ = two_regions()

    run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    memory = json.loads(bucket.objects["state/in-use-memory.json"])
    resolved = {image["image"]: image.get("digest") for image in memory["images"]}
    edge_v3 = next(d.image_digest for d in other.describe_images("edge") if "v3" in d.image_tags)
    app_v2 = next(d.image_digest for d in home.describe_images("app") if "v2" in d.image_tags)
    assert resolved == {f"{HOME_HOST}/app:v2": app_v2, f"{OTHER_HOST}/edge:v3": edge_v3}


def test_the_home_region_keeps_the_names_of_a_deployment_of_one_region() -> None:
    assert regional_name("team/app", None) == "team/app"
    assert regional_name("team/app", OTHER) == "us-east-1:team/app"
    assert replication_key("r") == "runs/r/replication.json"
    assert WorkItem(run_id="r", repository="app", trigger="schedule", dry_run=True).to_wire() == {
        "runId": "r",
        "repository": "app",
        "trigger": "schedule",
        "dryRun": True,
    }


def test_a_policy_names_only_regions_the_deployment_prunes() -> None:
    config = parse_config(RULES)
    check_pruned_regions(config, (HOME, OTHER), "retention.yaml")
    with pytest.raises(InputError) as refused:
        check_pruned_regions(config, (HOME,), "retention.yaml")
    assert str(refused.value) == (
        "retention.yaml: policies[0].regions: us-east-1 is not a Region this deployment prunes (regions: eu-west-1)"
    )


@pytest.mark.parametrize(
    ("regions", "problem"),
    [
        ("[us-east-1, us-east-1]", "Region us-east-1 is listed twice"),
        ("[useast1]", "regions"),
        ("[]", "regions"),
    ],
)
def test_a_policy_with_bad_regions_is_one_clear_line(regions: str, problem: str) -> None:
    text = RULES.replace("regions: [us-east-1]", f"regions: {regions}")
    with pytest.raises(InputError) as refused:
        parse_config(text)
    assert problem in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_report_without_a_region_still_reads() -> None:
    assert RepositoryReport.model_validate({"repositoryName": "app", "outcome": "ok"}).region is None


def test_a_source_whose_repository_no_policy_manages_decides_nothing() -> None:
    """app replicates from eu-west-1 with its deletions, but only us-east-1's app is managed: eu-west-1 deletes none of
    it, so us-east-1's rules decide every image there (and the source is not even read)."""
    home, other, bucket, _ = two_regions()
    rules = RULES.replace("  - repositories: [app]\n", "  - repositories: [app]\n    regions: [us-east-1]\n")

    report = run_pipeline(parse_config(rules), adapters_of(home, other, bucket))

    assert deleted(report)[(OTHER, "app")] == {"v0", "v1", "v2", "v3"}  # v4 is the newest
    assert (HOME, "app") not in deleted(report)
    assert ("describe_images", "app") not in home.calls


def test_the_report_totals_each_region_and_the_summary_and_sheet_name_it(capsys: pytest.CaptureFixture[str]) -> None:
    from ecr_retention.domain.reporting.summary import render_summary
    from ecr_retention.handlers.observability import record_region_metrics
    from ecr_retention.report_sheet import records

    home, other, bucket, _ = two_regions()
    report = run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    assert [(region.region, region.totals.repositories, region.totals.deleted) for region in report.regions] == [
        (HOME, 1, 2),
        (OTHER, 2, 3),
    ]
    assert report.totals.deleted == sum(region.totals.deleted for region in report.regions)
    _, body = render_summary(report)
    assert "\n  eu-west-1: 1 repositories, 4 images, kept 2 (1 in use), deleted 2," in body
    assert "\n  us-east-1: 2 repositories, 9 images, kept 6 (1 in use), deleted 3," in body
    assert "\n  eu-west-1:app: ok, 4 images, kept 2, deleted 2" in body
    assert "\n  us-east-1:app: ok, 5 images, kept 4, deleted 1" in body
    sheet = list(records(report))
    assert sheet[0] == "repository,digest,tags,pushed_at,size_bytes,action,reason_kinds,rule,detail,region\r\n"
    assert {line.rstrip("\r\n").rsplit(",", 1)[1] for line in sheet[1:]} == {HOME, OTHER}
    capsys.readouterr()
    record_region_metrics(report)
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    deleted_by_region = {
        document["Region"]: document["ImagesDeleted"] for document in emitted if "ImagesDeleted" in document
    }
    assert deleted_by_region == {HOME: [2.0], OTHER: [3.0]}


def test_a_report_of_one_region_has_no_region_totals() -> None:
    from ecr_retention.report_sheet import records

    home, _, bucket, _ = two_regions()
    report = run_pipeline(
        parse_config(RULES.replace("    regions: [us-east-1]\n", "")),
        Adapters(registry=home, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS),
    )

    assert report.regions == ()
    assert "regions" not in report.to_json_dict()
    assert {line.rstrip("\r\n").rsplit(",", 1)[1] for line in list(records(report))[1:]} == {HOME}
