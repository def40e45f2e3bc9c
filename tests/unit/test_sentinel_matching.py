"""The sentinel's pure core (domain/in_use/references.py): which references workloads pull from this registry, which of them a
removal may have broken, and which the next pull cannot get."""

from __future__ import annotations

from datetime import timedelta

from ecr_retention.domain.in_use.references import (
    PulledReference,
    Removal,
    affected_by,
    by_repository,
    missing_references,
    pulled_references,
)
from ecr_retention.domain.inventory.manifest import ClusterReadings, InUseMemory, Inventory, Reading, RememberedImage
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from tests.support.builders import ACCOUNT, HOST, NOW, REGION, config, digest, image, in_use, replication_rule

GRACE = timedelta(days=7)
REPLICA_HOST = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"


SAFETY = config([{"delete": {"untagged": True}}], in_use_grace="7d", inventory_max_age="6h").safety


def references(
    *manifests: object,
    memory: InUseMemory | None = None,
    replication: dict | None = None,
    problems: dict[str, str] | None = None,
) -> tuple:
    return pulled_references(
        Inventory(manifests=tuple(manifests), memory=memory, problems=problems or {}),  # type: ignore[arg-type]
        now=NOW,
        safety=SAFETY,
        registry=RegistryCoordinates(ACCOUNT, REGION, ReplicationConfiguration.model_validate(replication or {})),
    )


def details(*entries: dict) -> list[ImageDetail]:
    return [ImageDetail.model_validate(entry) for entry in entries]


def removal(repository: str = "app", seed: str | None = "dev-build", *tags: str, **more: object) -> Removal:
    return Removal.model_validate(
        {
            "repositoryName": repository,
            "imageDigest": digest(seed) if seed else None,
            "imageTags": list(tags),
            "action": "deleted",
            "cause": "lifecycle",
            "rulePriority": 1,
            "removedAt": NOW.isoformat(),
            "eventId": "e-1",
            **more,
        }
    )


def test_pulled_references_group_workloads_by_image_and_skip_other_registries() -> None:
    # Given two clusters pulling app:dev, one pulling by digest, and an image from Docker Hub
    prod = in_use("prod", (f"{HOST}/app:dev", "dev-build"), ("nginx:1.27", None))
    dev = in_use("dev", (f"{HOST}/app:dev", "dev-build"), (f"{HOST}/app@{digest('old')}", "old"))
    # When the references are collected
    found = references(prod, dev)
    # Then there is one reference per image name, with both workloads, and nothing of Docker Hub
    assert [(r.repository, r.tag, r.digest) for r in found] == [("app", "dev", None), ("app", None, digest("old"))]
    assert [w.cluster for w in found[0].workloads] == ["dev", "prod"]
    assert found[0].resolved == {digest("dev-build")}
    assert found[0].image == "app:dev"
    assert found[1].image == f"app@{digest('old')[:19]}"


def test_a_reference_to_a_replica_that_deletions_reach_names_the_source_repository() -> None:
    rules = {"rules": [replication_rule(("us-east-1", ACCOUNT), delete=True)]}
    found = references(in_use("us-prod", (f"{REPLICA_HOST}/app:1.2", "v12")), replication=rules)
    assert [(r.repository, r.tag) for r in found] == [("app", "1.2")]
    assert found[0].workloads[0].replica == "us-east-1, replicated"


def test_a_reference_to_a_replica_without_delete_replication_is_not_ours() -> None:
    rules = {"rules": [replication_rule(("us-east-1", ACCOUNT), delete=False)]}
    assert references(in_use("us-prod", (f"{REPLICA_HOST}/app:1.2", "v12")), replication=rules) == ()


def remembered(cluster: str, *tags: str, seen: timedelta = timedelta(hours=2), **readings: int) -> InUseMemory:
    """A memory that remembers app:<tag> in this cluster for each tag, last seen `seen` ago; `last`, `previous`: the
    reference counts of the cluster's recorded readings (the last one `seen` ago, the previous a day before)."""
    recorded = {}
    if "last" in readings:
        last = Reading(generated_at=NOW - seen, references=readings["last"])
        previous = readings.get("previous")
        before = None if previous is None else Reading(generated_at=NOW - seen - timedelta(days=1), references=previous)
        recorded[cluster] = ClusterReadings(last=last, previous=before)
    return InUseMemory(
        schema_version=1,
        updated_at=NOW,
        clusters=recorded,
        images=tuple(
            RememberedImage(
                image=f"{HOST}/app:{tag}",
                digest=digest(tag),
                namespace="default",
                workload="Deployment/web",
                container="web",
                source="pod",
                cluster=cluster,
                last_seen_at=NOW - seen,
            )
            for tag in tags
        ),
    )


def test_the_memory_speaks_only_for_clusters_without_a_readable_manifest() -> None:
    # Given a memory that remembers app:1.0 in prod and app:0.9 in staging, and a current manifest for prod only
    memory = remembered("prod", "1.0", seen=timedelta(days=1))
    memory = memory.model_copy(
        update={"images": memory.images + remembered("staging", "0.9", seen=timedelta(days=1)).images}
    )
    found = references(in_use("prod", (f"{HOST}/app:1.1", "1.1")), memory=memory)
    # Then prod is what its manifest says now, and staging is what the memory remembers
    assert [(r.tag, r.workloads[0].cluster) for r in found] == [("0.9", "staging"), ("1.1", "prod")]
    assert (
        found[0].workloads[0].remembered == "staging's manifest is missing; by the in-use memory staging ran it 1d ago"
    )


def test_an_empty_fresh_complete_reading_is_suspect_and_the_memory_speaks_for_it() -> None:
    """The broken collector: dev's manifest is there, complete and fresh, and names nothing."""
    memory = remembered("dev", "dev", last=10)
    [found] = references(in_use("dev"), memory=memory)
    assert (found.image, found.workloads[0].cluster) == ("app:dev", "dev")
    assert str(found.workloads[0]) == (
        "dev: default/Deployment/web (pod), dev's manifest now reports 0 images; by the in-use memory dev ran it 2h ago"
    )


def test_a_reading_naming_fewer_than_half_of_its_last_is_suspect() -> None:
    # Given dev named 10 references at its last reading and now names 3 (app:a, app:b, app:c)
    memory = remembered("dev", "dev", last=10)
    now = in_use("dev", *((f"{HOST}/app:{tag}", tag) for tag in "abc"))
    found = {r.image: r for r in references(now, memory=memory)}
    # Then app:dev, which only the memory names, counts as running, worded with the counts
    assert found["app:dev"].workloads[0].remembered == (
        "dev's manifest now names 3 of its last 10 references; by the in-use memory dev ran it 2h ago"
    )
    assert found["app:a"].workloads[0].remembered is None


def test_the_memory_already_holding_the_suspect_reading_compares_it_with_the_one_before() -> None:
    """The run after the collector broke recorded the empty reading as dev's last: the previous one decides."""
    empty = in_use("dev", (f"{HOST}/app:a", "a"), age=timedelta(hours=2))
    memory = remembered("dev", "dev", last=1, previous=10)
    found = {r.image: r for r in references(empty, memory=memory)}
    assert found["app:dev"].workloads[0].remembered == (
        "dev's manifest now names 1 of its last 10 references; by the in-use memory dev ran it 2h ago"
    )


def test_a_workload_that_moved_on_in_a_healthy_reading_is_not_counted_as_running() -> None:
    # Given dev ran app:dev 2h ago, and now names 9 of its last 10 references, app:dev not among them
    memory = remembered("dev", "dev", last=10)
    healthy = in_use("dev", *((f"{HOST}/app:{n}", str(n)) for n in range(9)))
    # Then app:dev is not running: the workload moved on
    assert "app:dev" not in {r.image for r in references(healthy, memory=memory)}


def test_missing_unreadable_incomplete_and_stale_readings_are_suspect_each_in_its_words() -> None:
    memory = remembered("dev", "dev", last=10)
    one = (f"{HOST}/app:a", "a")
    words = {
        "missing": references(memory=memory),
        "unreadable": references(memory=memory, problems={"in-use/dev.json": "not JSON"}),
        "incomplete": references(in_use("dev", one, complete=False), memory=memory),
        "stale": references(in_use("dev", one, age=timedelta(hours=7)), memory=memory),
    }
    said = {
        kind: next(r for r in found if r.image == "app:dev").workloads[0].remembered for kind, found in words.items()
    }
    assert said == {
        "missing": "dev's manifest is missing; by the in-use memory dev ran it 2h ago",
        "unreadable": "dev's manifest cannot be read; by the in-use memory dev ran it 2h ago",
        "incomplete": "dev's manifest is incomplete (complete: false); by the in-use memory dev ran it 2h ago",
        "stale": "dev's manifest is 7h old, older than inventory_max_age 6h; by the in-use memory dev ran it 2h ago",
    }


def test_the_memory_speaks_only_within_its_grace() -> None:
    memory = remembered("dev", "dev", seen=timedelta(days=8), last=10)
    assert references(in_use("dev"), memory=memory) == ()


def test_removal_matches_by_digest_by_tag_and_by_resolved_digest() -> None:
    by_tag, by_digest = references(
        in_use("dev", (f"{HOST}/app:dev", "dev-build"), (f"{HOST}/app@{digest('old')}", "old"))
    )
    # a lifecycle expiry that lists the tags matches the tag reference
    assert affected_by(removal("app", "dev-build", "dev", "1.12.370-dev"), [by_tag, by_digest]) == (by_tag,)
    # a removal by digest alone (no tags in the event) matches the tag reference through the digest it resolved to
    assert affected_by(removal("app", "dev-build"), [by_tag, by_digest]) == (by_tag,)
    # a removal of the digest a reference pulls matches it
    assert affected_by(removal("app", "old", "0.1"), [by_tag, by_digest]) == (by_digest,)


def test_removal_of_something_not_running_matches_nothing() -> None:
    found = references(in_use("dev", (f"{HOST}/app:dev", "dev-build")))
    assert affected_by(removal("app", "other", "1.0.0"), found) == ()
    # the same digest and tag in another repository is another image
    assert affected_by(removal("frontend", "dev-build", "dev"), found) == ()


def test_removal_of_a_child_of_an_in_use_index_matches_the_index_reference() -> None:
    found = references(in_use("prod", (f"{HOST}/multi:2.0", "index")))
    children = {digest("index"): [digest("amd64"), digest("arm64")]}
    assert affected_by(removal("multi", "arm64"), found, children) == found
    assert affected_by(removal("multi", "arm64"), found) == ()


def test_a_tag_removal_names_a_digest_reference_only_through_the_registry() -> None:
    # Given a workload that pulls by digest and an event that removed the tag dev from that digest
    found = references(in_use("dev", (f"{HOST}/app@{digest('dev-build')}", "dev-build")))
    tag_removal = removal("app", "dev-build", "dev")
    # Then the removal may have taken it (the event cannot say whether the digest went too) ...
    assert affected_by(tag_removal, found) == found
    # ... and the registry, which still has the digest, says nothing is missing
    assert missing_references(found, details(image("dev-build", "1.12.370-dev"))) == ()


def test_missing_references_tag_digest_and_repository() -> None:
    found = references(
        in_use(
            "dev", (f"{HOST}/app:dev", "dev-build"), (f"{HOST}/app@{digest('old')}", "old"), (f"{HOST}/app:1.0", None)
        )
    )
    # Given a registry where dev moved to another image, the old digest is gone, and 1.0 is archived
    images = details(image("new-build", "dev"), image("v10", "1.0", status="ARCHIVED"))
    # Then only the digest reference is missing: a moved tag and an archived image are not
    missing = missing_references(found, images)
    assert [(m.image_digest, m.missing) for m in missing] == [(digest("old"), "digest")]
    assert missing[0].detail.startswith("the next pull of dev: default/Deployment/web (pod) fails: app@sha256:")
    # And a repository that does not exist misses every reference
    assert {m.missing for m in missing_references(found, None)} == {"repository"}


def test_a_missing_reference_says_when_and_by_what_it_was_removed() -> None:
    found = references(in_use("dev", (f"{HOST}/app:dev", "dev-build")))
    earlier = removal("app", "dev-build", "dev", removedAt=(NOW - timedelta(days=3)).isoformat(), cause="image-action")
    latest = removal("app", "dev-build", "dev", removedAt="2026-12-01T09:14:27Z")
    [missing] = missing_references(found, details(image("v1", "1.0")), [earlier, latest, removal("app", "x", "other")])
    assert missing.removed == latest
    assert missing.detail == (
        "the next pull of dev: default/Deployment/web (pod) fails: app:dev no longer exists "
        "(deleted 2026-12-01 09:14 UTC by lifecycle rule 1 of app's policy)"
    )


def test_removal_by_what_names_each_cause() -> None:
    assert removal(cause="api", principal="arn:aws:iam::1:user/ana").by_what == (
        "a BatchDeleteImage call by arn:aws:iam::1:user/ana"
    )
    assert "CloudTrail" in removal(cause="image-action", rulePriority=None).by_what
    assert removal(cause="image-action", action="archived").told.startswith("archived ")


def test_pulled_reference_image_id_asks_for_what_the_pull_asks_for() -> None:
    tag = PulledReference("app", "dev", None, frozenset(), ())
    pinned = PulledReference("app", None, digest("x"), frozenset(), ())
    assert tag.image_id == {"imageTag": "dev"}
    assert pinned.image_id == {"imageDigest": digest("x")}


def test_a_finding_is_told_later_by_a_removal_of_the_digest_its_cluster_ran() -> None:
    # Given app:dev is missing, found by an evaluation that read no removals
    found = references(in_use("dev", (f"{HOST}/app:dev", "dev-build")))
    [missing] = missing_references(found, details(image("v1", "1.0")))
    assert (missing.removed, missing.resolved_digests) == (None, (digest("dev-build"),))
    # When the report step reads a removal that names only the digest dev ran (an API deletion by digest)
    by_digest = removal("app", "dev-build", cause="api", principal="arn:aws:iam::123456789012:user/ci")
    told = missing.told_by([by_digest, removal("app", "x")])
    # Then the finding says when and by what; a removal that names nothing of it leaves it as it was
    assert told.removed == by_digest
    assert told.detail.endswith(
        "(deleted 2026-11-30 06:00 UTC by a BatchDeleteImage call by arn:aws:iam::123456789012:user/ci)"
    )
    assert missing.told_by([removal("app", "x")]) is missing


def test_references_by_repository_group_once() -> None:
    found = references(in_use("dev", (f"{HOST}/app:dev", "a"), (f"{HOST}/tools:1", None), (f"{HOST}/app:1.0", None)))
    grouped = by_repository(found)
    assert {name: [r.image for r in refs] for name, refs in grouped.items()} == {
        "app": ["app:1.0", "app:dev"],
        "tools": ["tools:1"],
    }
