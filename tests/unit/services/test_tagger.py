"""tag_deployed: each image deployed in the selected clusters and namespaces gets `<prefix><unix seconds>`
once, with its byte-identical manifest; other registries' images and dry runs touch nothing."""

from __future__ import annotations

import json
from datetime import timedelta

from ecr_retention.domain.config import parse_config
from ecr_retention.domain.inventory.manifest import read_inventory
from ecr_retention.ports import TagOutcome
from ecr_retention.services.tagger import tag_deployed
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry

HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
RULES = """
version: 1
safety: {clusters: [prod]}
tagging:
  - clusters: [prod]
    namespaces: ["team-*"]
    tag_prefix: deployed-prod-
policies:
  - repositories: ["*"]
    rules: [{delete: {untagged: true}}]
"""
STAMP = str(int(NOW.timestamp()))


def entry(image: str, namespace: str = "team-a", digest: str | None = None) -> dict[str, object]:
    data: dict[str, object] = {
        "image": image,
        "namespace": namespace,
        "workload": "Deployment/x",
        "container": "x",
        "source": "pod",
    }
    if digest:
        data["digest"] = digest
    return data


def inventory(*entries: dict[str, object], cluster: str = "prod"):  # type: ignore[no-untyped-def]
    body = {
        "schemaVersion": 1,
        "cluster": cluster,
        "generatedAt": NOW.isoformat(),
        "complete": True,
        "images": list(entries),
    }
    return read_inventory([(f"in-use/{cluster}.json", json.dumps(body).encode())])


def seeded() -> tuple[FakeRegistry, dict[str, str]]:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    old = NOW - timedelta(days=3)
    digests = {
        "api": registry.add_image("api", tags=["v1"], pushed_at=old, seed="api"),
        "web": registry.add_image("web", tags=["v2"], pushed_at=old, seed="web"),
        "frozen": registry.add_image("frozen", tags=["v3"], pushed_at=old, seed="frozen"),
    }
    registry.immutable.add("frozen")
    return registry, digests


def test_deployed_images_are_tagged_once_with_identical_manifests() -> None:
    registry, digests = seeded()
    inv = inventory(
        entry(f"{HOST}/api:v1", digest=digests["api"]),
        entry(f"{HOST}/web@{digests['web']}"),
        entry(f"{HOST}/api:v1", namespace="kube-system", digest=digests["api"]),
    )

    report = tag_deployed(parse_config(RULES), inv, registry=registry, run_id="t", now=NOW, dry_run=False)

    assert {(e.repository_name, e.status) for e in report.entries} == {("api", "tagged"), ("web", "tagged")}
    api = registry.repositories["api"][digests["api"]]
    assert api.detail.image_tags == ("v1", f"deployed-prod-{STAMP}")
    assert registry.digests("api") == {digests["api"]}  # same digest: the manifest went back byte for byte

    again = tag_deployed(
        parse_config(RULES), inv, registry=registry, run_id="t2", now=NOW + timedelta(hours=1), dry_run=False
    )

    assert {e.status for e in again.entries} == {"already-tagged"}
    assert registry.count("put_tag") == 2


def test_dry_run_tags_nothing() -> None:
    registry, digests = seeded()
    inv = inventory(entry(f"{HOST}/api:v1", digest=digests["api"]))

    report = tag_deployed(parse_config(RULES), inv, registry=registry, run_id="t", now=NOW, dry_run=True)

    assert [e.status for e in report.entries] == ["would-tag"]
    assert registry.mutating_calls == []
    assert registry.count("get_manifests") == 0


def test_immutable_repository_refusal_is_reported_not_retried() -> None:
    registry, digests = seeded()
    inv = inventory(entry(f"{HOST}/frozen:v3", digest=digests["frozen"]))

    report = tag_deployed(parse_config(RULES), inv, registry=registry, run_id="t", now=NOW, dry_run=False)

    assert [e.status for e in report.entries] == ["immutable"]
    assert registry.count("put_tag") == 1
    assert report.has_problems


def test_images_of_other_accounts_regions_and_clusters_are_never_touched() -> None:
    registry, digests = seeded()
    inv = inventory(
        entry(f"210987654321.dkr.ecr.{REGION}.amazonaws.com/api@{digests['api']}"),
        entry(f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/api@{digests['api']}"),
        entry(f"docker.io/library/nginx@{digests['api']}"),
    )
    staging = inventory(entry(f"{HOST}/web@{digests['web']}"), cluster="staging")

    for inv_ in (inv, staging):
        report = tag_deployed(parse_config(RULES), inv_, registry=registry, run_id="t", now=NOW, dry_run=False)
        assert report.entries == ()
    assert registry.calls == []


def test_tag_only_reference_is_noted_not_tagged() -> None:
    registry, _ = seeded()

    report = tag_deployed(
        parse_config(RULES), inventory(entry(f"{HOST}/api:v1")), registry=registry, run_id="t", now=NOW, dry_run=False
    )

    assert report.entries == ()
    assert any("no resolved digest" in note for note in report.notes)


def test_two_images_of_one_repository_deployed_together_each_get_a_tag_of_their_own() -> None:
    registry, digests = seeded()
    rollout = registry.add_image("api", tags=["v2"], pushed_at=NOW - timedelta(hours=3), seed="api-v2")
    inv = inventory(
        entry(f"{HOST}/api:v1", digest=digests["api"]), entry(f"{HOST}/api:v2", namespace="team-b", digest=rollout)
    )

    report = tag_deployed(parse_config(RULES), inv, registry=registry, run_id="t", now=NOW, dry_run=False)

    assert [e.status for e in report.entries] == ["tagged", "tagged"]
    marks = {
        digest: [t for t in registry.repositories["api"][digest].detail.image_tags if t.startswith("deployed-prod-")]
        for digest in (digests["api"], rollout)
    }
    # One shared `deployed-prod-<seconds>` would move from the first image to the second (or be refused by an
    # immutable repository): each image carries its own, and none names a time after the run.
    assert sorted(marks.values()) == [[f"deployed-prod-{int(NOW.timestamp()) - 1}"], [f"deployed-prod-{STAMP}"]]
    assert {e.tag for e in report.entries} == {tags[0] for tags in marks.values()}


def test_images_of_repositories_no_policy_manages_are_noted_not_tagged() -> None:
    registry, digests = seeded()
    rules = RULES.replace('repositories: ["*"]', 'repositories: ["api", "fro*"]')
    inv = inventory(
        entry(f"{HOST}/api:v1", digest=digests["api"]),
        entry(f"{HOST}/web@{digests['web']}"),
        entry(f"{HOST}/web:v2", namespace="team-b", digest=digests["web"]),
    )

    report = tag_deployed(parse_config(rules), inv, registry=registry, run_id="t", now=NOW, dry_run=False)

    assert [(e.repository_name, e.status) for e in report.entries] == [("api", "tagged")]
    assert report.notes == ("web: no policy manages this repository; not tagged",)
    assert {repository for _, repository in registry.calls} == {"api"}


def test_a_refused_tag_is_reported_with_the_registry_s_words() -> None:
    registry, digests = seeded()
    registry.put_tag = lambda repository, manifest, tag: TagOutcome("failed", "AccessDeniedException: no PutImage")  # type: ignore[method-assign]
    inv = inventory(
        entry(f"{HOST}/api:v1", digest=digests["api"]), entry(f"{HOST}/frozen:v3", digest=digests["frozen"])
    )

    report = tag_deployed(parse_config(RULES), inv, registry=registry, run_id="t", now=NOW, dry_run=False)

    assert [(e.repository_name, e.status, e.detail) for e in report.entries] == [
        ("api", "failed", "AccessDeniedException: no PutImage"),
        ("frozen", "failed", "AccessDeniedException: no PutImage"),
    ]
    assert report.has_problems


def test_an_immutable_refusal_keeps_ecr_s_message() -> None:
    registry, digests = seeded()
    inv = inventory(entry(f"{HOST}/frozen:v3", digest=digests["frozen"]))

    report = tag_deployed(parse_config(RULES), inv, registry=registry, run_id="t", now=NOW, dry_run=False)

    assert [(e.status, e.detail) for e in report.entries] == [
        ("immutable", "ImageTagAlreadyExistsException: the repository's tags are immutable")
    ]
