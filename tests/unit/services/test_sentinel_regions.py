"""The sentinel and the tagger in a deployment of several Regions (issue 37): an event from another pruned Region is
matched against what runs from THAT Region's registry, confirmed and healed there, recorded under the repository's
regional name and alerted naming the Region; an event from a Region the deployment does not prune changes nothing;
the run's in-use check reads the records of its own Region; the tagger tags in each registry."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.in_use.references import MissingReference, Removal
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.domain.sentinel.events import Observed
from ecr_retention.domain.sentinel.trail_events import LifecyclePolicyPut
from ecr_retention.layout import alert_claim_key, removal_key, removals_prefix
from ecr_retention.registries import Registries
from ecr_retention.services.in_use_check import told_by_removals
from ecr_retention.services.removals import read_removals
from ecr_retention.services.sentinel import SentinelPorts, watch
from ecr_retention.services.snapshot import BucketManifestCache
from ecr_retention.services.tagger import tag_deployed_everywhere
from tests.support.builders import ACCOUNT, HOST, NOW, config, in_use, replication_rule
from tests.support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier
from tests.unit.services.test_sentinel import PUSHED, SENTINEL_ROLE, archived, deleted

HOME, OTHER = "eu-west-1", "us-east-1"
RULES = config([{"delete": {"untagged": True, "older_than": "1d"}}])
OTHER_HOST = f"{ACCOUNT}.dkr.ecr.{OTHER}.amazonaws.com"


class Regions:
    """A deployment pruning eu-west-1 (home) and us-east-1, one repository `app` in each, on in-memory ports."""

    def __init__(self) -> None:
        self.home = FakeRegistry()
        self.other = FakeRegistry(region=OTHER)
        self.bucket = MemoryBucket()
        self.notifier = RecordingNotifier()
        self.ports = SentinelPorts(
            self.home,
            self.bucket,
            self.notifier,
            BucketManifestCache(self.bucket),
            sentinel_role=SENTINEL_ROLE,
            other_registries=(self.other,),
        )

    def runs(self, cluster: str, *entries: tuple[str, str]) -> None:
        self.bucket.write_json(
            f"in-use/{cluster}.json",
            {
                "schemaVersion": 1,
                "cluster": cluster,
                "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
                "complete": True,
                "images": [
                    {
                        "image": image,
                        "digest": digest,
                        "namespace": cluster,
                        "workload": "Deployment/app",
                        "container": "app",
                        "source": "pod",
                    }
                    for image, digest in entries
                ],
            },
        )

    def watch(self, detail: Any, region: str | None, rules: RetentionConfig | None = None) -> Any:
        rules = rules or config([{"delete": {"untagged": True, "older_than": "1d"}}])
        return watch(Observed("event-1", NOW, detail, region=region), config=rules, ports=self.ports, now=NOW)

    def alerts(self) -> list[tuple[str, str]]:
        return [(subject, body) for subject, body, _ in self.notifier.messages]


def test_a_delete_in_another_pruned_region_is_matched_against_what_runs_from_that_registry() -> None:
    # Given app@<digest> of us-east-1 runs in prod, and eu-west-1 holds an app of the same name that nothing runs
    regions = Regions()
    running = regions.other.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{OTHER_HOST}/app@{running}", running))
    regions.other.repositories["app"].pop(running)
    # When us-east-1's DELETE reaches the home bus
    watched = regions.watch(deleted(running), OTHER)
    # Then it is confirmed in us-east-1's registry (the home one, which still holds the digest, is not asked)
    [(subject, body)] = regions.alerts()
    assert subject.startswith(f"ecr-retention sentinel: app@sha256:{running[7:19]} deleted in {OTHER} while ")
    assert f"just removed or archived in the registry of {OTHER}." in body
    assert "prod: prod/Deployment/app (pod)" in body
    assert [call for call in regions.home.calls if call[0] == "describe_images_by_id"] == []
    assert watched.alerted
    assert watched.region == OTHER
    # And its record and claim are under the repository's regional name; the home Region's prefix stays empty
    assert watched.recorded == (removal_key("app", NOW, "event-1", 0, OTHER),)
    assert watched.recorded[0].startswith("removals/us-east-1%3Aapp/")
    assert regions.bucket.read(alert_claim_key("app", NOW, "event-1", OTHER), max_bytes=10_000) is not None
    assert not regions.bucket.list_objects(removals_prefix("app"))
    [recorded] = read_removals(regions.bucket, "app", sentinel=SENTINEL_ROLE, key=OTHER).removals
    assert recorded.region == OTHER


def test_a_reference_into_the_home_registry_is_not_broken_by_the_same_name_deleted_elsewhere() -> None:
    # Given prod runs eu-west-1's app@<digest>; us-east-1 deletes its own copy of that digest
    regions = Regions()
    running = regions.home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.other.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{HOST}/app@{running}", running))
    regions.other.repositories["app"].pop(running)
    # Then nothing that runs came from us-east-1: recorded, not alerted
    watched = regions.watch(deleted(running), OTHER)
    assert regions.alerts() == []
    assert len(watched.recorded) == 1


def test_an_archive_in_another_pruned_region_is_restored_in_that_registry() -> None:
    regions = Regions()
    running = regions.other.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{OTHER_HOST}/app:1.0", running))
    regions.other.archive("app", running, NOW)
    regions.home.archive("app", running, NOW)

    watched = regions.watch(archived(running), OTHER)

    assert regions.other.repositories["app"][running].detail.image_status == "ACTIVATING"
    assert regions.home.repositories["app"][running].detail.image_status == "ARCHIVED"
    assert watched.restored == 1


def test_a_policy_scoped_to_the_home_region_does_not_make_the_other_regions_repository_managed() -> None:
    regions = Regions()
    running = regions.other.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{OTHER_HOST}/app:1.0", running))
    regions.other.archive("app", running, NOW)
    rules = config(
        policies=[{"repositories": ["app"], "regions": ["eu-west-1"], "rules": [{"delete": {"untagged": True}}]}]
    )

    regions.watch(archived(running), OTHER, rules)

    assert regions.other.repositories["app"][running].detail.image_status == "ARCHIVED"
    [(_, body)] = regions.alerts()
    assert f"`AWS_REGION={OTHER} ecr-retention restore --repository app --digest {running}`" in body


def test_an_event_from_a_region_the_deployment_does_not_prune_changes_nothing_and_alerts_nothing() -> None:
    regions = Regions()
    running = regions.home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{HOST}/app@{running}", running))
    regions.home.repositories["app"].pop(running)

    watched = regions.watch(deleted(running), "ap-southeast-2")

    assert regions.alerts() == []
    assert not regions.bucket.list_objects("removals/")
    assert regions.home.calls == []
    assert regions.other.calls == []
    assert watched.summary()["ignored"] == (
        "event event-1 happened in ap-southeast-2, a Region this deployment does not prune "
        "(regions: eu-west-1, us-east-1): nothing done"
    )


def test_a_home_region_event_keeps_the_keys_and_names_the_region_when_several_are_pruned() -> None:
    regions = Regions()
    running = regions.home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{HOST}/app@{running}", running))
    regions.home.repositories["app"].pop(running)

    watched = regions.watch(deleted(running), "eu-west-1")

    assert watched.recorded == (removal_key("app", NOW, "event-1", 0),)
    [(subject, _)] = regions.alerts()
    assert " deleted in eu-west-1 while " in subject


def test_the_in_use_check_tells_a_finding_by_the_records_of_its_own_region() -> None:
    # Given a record of app's removal in us-east-1, and one in the home Region
    bucket = MemoryBucket()
    digest = "sha256:" + "a" * 64
    for region, event in ((OTHER, "elsewhere"), (None, "home")):
        removal = Removal(
            repository_name="app",
            image_digest=digest,
            action="deleted",
            cause="image-action",
            removed_at=NOW - timedelta(hours=1 if region else 2),
            event_id=event,
            writer=SENTINEL_ROLE,
            region=region,
        )
        bucket.write(removal_key("app", removal.removed_at, event, 0, region), removal.model_dump_json().encode())
    finding = MissingReference(
        repository_name="app", image=f"app@{digest}", image_digest=digest, missing="digest", in_use_by=()
    )
    there = Registries.of(FakeRegistry(), (FakeRegistry(region=OTHER),)).in_region(OTHER)
    assert there is not None
    # When each Region's check tells its finding
    [told_there] = told_by_removals(bucket, [finding], SENTINEL_ROLE, there.key)[0]["app"]
    [told_home] = told_by_removals(bucket, [finding], SENTINEL_ROLE)[0]["app"]
    # Then each names its own Region's removal
    assert told_there.removed is not None
    assert told_there.removed.event_id == "elsewhere"
    assert told_home.removed is not None
    assert told_home.removed.event_id == "home"
    assert "region" not in told_home.model_dump(mode="json")["removed"]


def test_the_tagger_tags_in_each_registry_what_runs_from_it() -> None:
    home, other = FakeRegistry(), FakeRegistry(region=OTHER)
    here = home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="home")
    there = other.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="there")
    inventory = Inventory((in_use("prod", (f"{HOST}/app:1.0", None), (f"{OTHER_HOST}/app:1.0", None)),))
    inventory = Inventory(
        tuple(
            manifest.model_copy(
                update={
                    "images": tuple(
                        image.model_copy(update={"digest": here if HOST in image.image else there})
                        for image in manifest.images
                    )
                }
            )
            for manifest in inventory.manifests
        )
    )
    rules = RetentionConfig.model_validate(
        {
            "version": 1,
            "safety": {"clusters": []},
            "policies": [{"repositories": ["app"], "rules": [{"delete": {"untagged": True}}]}],
            "tagging": [{"clusters": ["prod"], "tag_prefix": "deployed-"}],
        }
    )

    report = tag_deployed_everywhere(
        rules, inventory, registries=Registries.of(home, (other,)), run_id="t", now=NOW, dry_run=False
    )

    assert {(entry.region, entry.image_digest, entry.status) for entry in report.entries} == {
        (None, here, "tagged"),
        (OTHER, there, "tagged"),
    }
    assert any(tag.startswith("deployed-") for tag in other.repositories["app"][there].detail.image_tags)
    home_entry = next(entry for entry in report.entries if entry.region is None)
    assert "region" not in home_entry.model_dump(by_alias=True)


def test_a_deletion_replicated_between_pruned_regions_gives_one_alert() -> None:
    # Given eu-west-1's app replicating to us-east-1 with its deletions, and prod running us-east-1's replica
    regions = Regions()
    regions.home.replication = ReplicationConfiguration.model_validate(
        {"rules": [replication_rule((OTHER, ACCOUNT), prefixes=("app",))]}
    )
    running = regions.home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.other.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{OTHER_HOST}/app@{running}", running))
    # When eu-west-1 deletes it, and the deletion replicates: one event in each Region
    regions.home.repositories["app"].pop(running)
    regions.other.repositories["app"].pop(running)
    at_source = regions.watch(deleted(running), None)
    at_destination = regions.watch(deleted(running), OTHER)
    # Then the source's alert names what ran from the replica, and the destination's event adds no second one
    [(_, body)] = regions.alerts()
    assert "Runs in: prod (us-east-1, replicated): prod/Deployment/app (pod)." in body
    assert at_source.alerted
    assert not at_destination.alerted
    assert len(at_destination.recorded) == 1


def test_a_deletion_made_in_the_destination_alone_still_alerts_there() -> None:
    # Given the same replication, but us-east-1's copy deleted there alone (eu-west-1 still holds the image)
    regions = Regions()
    regions.home.replication = ReplicationConfiguration.model_validate(
        {"rules": [replication_rule((OTHER, ACCOUNT), prefixes=("app",))]}
    )
    running = regions.home.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.other.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    regions.runs("prod", (f"{OTHER_HOST}/app@{running}", running))
    regions.other.repositories["app"].pop(running)

    watched = regions.watch(deleted(running), OTHER)

    assert watched.alerted
    assert len(regions.alerts()) == 1


KEEP_ONE = {
    "rules": [
        {
            "rulePriority": 1,
            "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1},
            "action": {"type": "expire"},
        }
    ]
}


def put_keep_one(registry: FakeRegistry) -> LifecyclePolicyPut:
    """A "keep 1" policy put on app, as ECR holds it now and CloudTrail tells it."""
    registry.lifecycle_policies["app"] = json.dumps(KEEP_ONE)
    return LifecyclePolicyPut.model_validate(
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "PutLifecyclePolicy",
            "eventID": "trail-3",
            "eventTime": NOW.isoformat(),
            "userIdentity": {"arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/mary"},
            "requestParameters": {"repositoryName": "app", "lifecyclePolicyText": json.dumps(KEEP_ONE)},
        }
    )


def test_every_sentinel_alert_names_its_region_when_several_are_pruned() -> None:
    # Given prod runs the oldest app of each Region: a "keep 1" policy put in each, then each deleted
    regions = Regions()
    for registry, host, seed in ((regions.home, HOST, "h"), (regions.other, OTHER_HOST, "o")):
        oldest = registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed=f"{seed}1")
        registry.add_image("app", tags=["2.0"], pushed_at=PUSHED + timedelta(days=1), seed=f"{seed}2")
        regions.runs(f"prod-{seed}", (f"{host}/app:1.0", oldest))
    # When each policy is put, and then the oldest images deleted
    for registry, region in ((regions.home, HOME), (regions.other, OTHER)):
        regions.watch(put_keep_one(registry), region)
    for registry, region, event in ((regions.home, HOME, "home"), (regions.other, OTHER, "other")):
        [oldest] = [d for d, image in registry.repositories["app"].items() if "1.0" in image.detail.image_tags]
        registry.repositories["app"].pop(oldest)
        watch(Observed(event, NOW, deleted(oldest), region=region), config=RULES, ports=regions.ports, now=NOW)
    # Then each alert names its Region, in its subject and its first line
    alerts = regions.alerts()
    assert [subject.split(": ", 1)[1] for subject, _ in alerts] == [
        f"the new lifecycle policy of app in {HOME} would take in-use images or tags",
        f"the new lifecycle policy of app in {OTHER} would take in-use images or tags",
        f"app:1.0 deleted in {HOME} while prod-h/Deployment/app runs it",
        f"app:1.0 deleted in {OTHER} while prod-o/Deployment/app runs it",
    ]
    assert [body.splitlines()[0] for _, body in alerts] == [
        f"A lifecycle policy was just put on app in {HOME} by arn:aws:sts::{ACCOUNT}:assumed-role/Admin/mary. ECR "
        "applies it within 24 hours. It would:",
        f"A lifecycle policy was just put on app in {OTHER} by arn:aws:sts::{ACCOUNT}:assumed-role/Admin/mary. ECR "
        "applies it within 24 hours. It would:",
        f"Workloads run images that were just removed or archived in the registry of {HOME}.",
        f"Workloads run images that were just removed or archived in the registry of {OTHER}.",
    ]
