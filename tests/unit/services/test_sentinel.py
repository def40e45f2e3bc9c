"""The sentinel service (services/sentinel.py) on in-memory ports: a removal is recorded, matched against what runs,
confirmed with the registry, healed when archived in a managed repository, and told in one alert."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.domain.in_use.references import Removal
from ecr_retention.domain.sentinel.events import ImageArchived, ImageDeleted, Observed
from ecr_retention.domain.sentinel.trail_events import ImagesBatchDeleted, LifecyclePolicyPut, PolicyExecution
from ecr_retention.layout import IN_USE_MEMORY_KEY, alert_claim_key, removal_key, removals_prefix
from ecr_retention.ports import BatchOutcome, NotificationFailed
from ecr_retention.services.removals import read_removals
from ecr_retention.services.sentinel import SentinelPorts, watch
from ecr_retention.services.snapshot import BucketManifestCache
from tests.support.builders import ACCOUNT, HOST, NOW, config, replication_rule
from tests.support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

PUSHED = NOW - timedelta(days=40)
SENTINEL_ROLE = f"arn:aws:iam::{ACCOUNT}:role/ecr-retention-Sentinel"
REPLICA_HOST = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"


class World:
    def __init__(self) -> None:
        self.registry = FakeRegistry()
        self.bucket = MemoryBucket()
        self.notifier = RecordingNotifier()
        self.ports = SentinelPorts(
            self.registry, self.bucket, self.notifier, BucketManifestCache(self.bucket), sentinel_role=SENTINEL_ROLE
        )
        self.slept: list[float] = []
        self.meanwhile: Any = None  # what another delivery does while this one waits for its claim

    def runs(self, cluster: str, *entries: tuple[str, str | None], workload: str = "Deployment/app") -> None:
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
                        **({"digest": digest} if digest else {}),
                        "namespace": cluster,
                        "workload": workload,
                        "container": "app",
                        "source": "pod",
                    }
                    for image, digest in entries
                ],
            },
        )

    def remembers(self, cluster: str, image: str, digest: str, *, seen: timedelta, references: int) -> None:
        """The in-use memory as the last run left it: `cluster` ran `image` `seen` ago, in a reading of `references`
        references."""
        self.bucket.write_json(
            IN_USE_MEMORY_KEY,
            {
                "schemaVersion": 1,
                "updatedAt": NOW.isoformat(),
                "clusters": {cluster: {"last": {"generatedAt": (NOW - seen).isoformat(), "references": references}}},
                "images": [
                    {
                        "image": image,
                        "digest": digest,
                        "namespace": cluster,
                        "workload": "Deployment/app",
                        "container": "app",
                        "source": "pod",
                        "cluster": cluster,
                        "lastSeenAt": (NOW - seen).isoformat(),
                    }
                ],
            },
        )

    def watch(self, detail: Any, event_id: str = "event-1", **safety: Any) -> Any:
        rules = config([{"delete": {"untagged": True, "older_than": "1d"}}], **safety)
        return watch(Observed(event_id, NOW, detail), config=rules, ports=self.ports, now=NOW, sleep=self.sleep)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.meanwhile is not None:
            self.meanwhile()

    def alerts(self) -> list[tuple[str, str]]:
        return [(subject, body) for subject, body, _ in self.notifier.messages]


def deleted(digest: str | None, tag: str | None = None, repository: str = "app") -> ImageDeleted:
    return ImageDeleted.model_validate(
        {
            "result": "SUCCESS",
            "action-type": "DELETE",
            "repository-name": repository,
            **({"image-digest": digest} if digest else {}),
            **({"image-tag": tag} if tag else {}),
        }
    )


def archived(digest: str, repository: str = "app") -> ImageArchived:
    return ImageArchived.model_validate(
        {
            "result": "SUCCESS",
            "action-type": "UPDATE_STORAGE_CLASS",
            "target-storage-class": "ARCHIVE",
            "repository-name": repository,
            "image-digest": digest,
        }
    )


def lifecycle(digest: str, *tags: str, repository: str = "app", action: str = "expire") -> PolicyExecution:
    return PolicyExecution.model_validate(
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "PolicyExecutionEvent",
            "eventID": "trail-1",
            "serviceEventDetails": {
                "repositoryName": repository,
                "lifecycleEventPolicy": {"lifecycleEventRules": [{"rulePriority": 1, "action": action}]},
                "lifecycleEventImageActions": [
                    {"lifecycleEventImage": {"digest": digest, "tagList": list(tags)}, "rulePriority": 1}
                ],
            },
        }
    )


@pytest.fixture
def world() -> World:
    return World()


def test_a_deleted_image_a_workload_runs_by_digest_is_alerted_naming_workload_image_and_cause(world: World) -> None:
    # Given prod runs app by digest, and a lifecycle policy deletes that image
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    # When the PolicyExecutionEvent arrives
    watched = world.watch(lifecycle(running, "1.0"))
    # Then one alert names the workload, the image, the rule and what follows
    [(subject, body)] = world.alerts()
    assert subject.startswith("ecr-retention sentinel: app@sha256:")
    assert "prod: prod/Deployment/app (pod)" in body
    assert "deleted 2026-11-30 06:00 UTC by lifecycle rule 1 of app's policy" in body
    assert "no longer exists: the next pull fails" in body
    assert watched.alerted
    assert len(watched.recorded) == 1


def test_a_deleted_image_a_workload_runs_by_tag_is_alerted(world: World) -> None:
    running = world.registry.add_image("app", tags=["dev"], pushed_at=PUSHED, seed="dev")
    world.runs("dev", (f"{HOST}/app:dev", running))
    world.registry.repositories["app"].pop(running)
    world.watch(deleted(running, "dev"))
    [(_, body)] = world.alerts()
    assert "app:dev no longer exists" in body
    assert "an ECR DELETE action" in body


def test_a_broken_collector_does_not_silence_the_sentinel_the_memory_speaks_for_its_cluster(world: World) -> None:
    # Given dev ran app:dev 2h ago by the memory, and dev's manifest is now empty, complete and fresh
    running = world.registry.add_image("app", tags=["dev"], pushed_at=PUSHED, seed="dev")
    world.remembers("dev", f"{HOST}/app:dev", running, seen=timedelta(hours=2), references=10)
    world.runs("dev")
    world.registry.repositories["app"].pop(running)
    # When a lifecycle policy deletes the image
    world.watch(lifecycle(running, "dev"))
    # Then the alert names it and says why the memory speaks
    [(subject, body)] = world.alerts()
    assert subject == "ecr-retention sentinel: app:dev deleted while dev/Deployment/app runs it"
    assert (
        "Runs in: dev: dev/Deployment/app (pod); dev's manifest now reports 0 images; by the in-use memory dev ran it "
        "2h ago." in body
    )


def test_a_workload_that_moved_on_in_a_healthy_reading_is_not_alerted(world: World) -> None:
    # Given dev ran app:dev 2h ago by the memory, and dev's healthy manifest now runs app:dev2 instead
    old = world.registry.add_image("app", tags=["dev"], pushed_at=PUSHED, seed="dev")
    new = world.registry.add_image("app", tags=["dev2"], pushed_at=PUSHED, seed="dev2")
    world.remembers("dev", f"{HOST}/app:dev", old, seen=timedelta(hours=2), references=1)
    world.runs("dev", (f"{HOST}/app:dev2", new))
    world.registry.repositories["app"].pop(old)
    # When the old image is deleted, nothing is alerted: the workload moved on
    world.watch(lifecycle(old, "dev"))
    assert world.alerts() == []


def test_a_removal_of_an_image_nothing_runs_is_recorded_not_alerted(world: World) -> None:
    running = world.registry.add_image("app", tags=["2.0"], pushed_at=PUSHED, seed="two")
    old = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:2.0", running))
    world.registry.repositories["app"].pop(old)

    watched = world.watch(lifecycle(old, "1.0"))

    assert world.alerts() == []
    [recorded] = read_removals(world.bucket, "app", sentinel=SENTINEL_ROLE).removals
    assert (recorded.image_digest, recorded.image_tags, recorded.cause, recorded.rule_priority) == (
        old,
        ("1.0",),
        "lifecycle",
        1,
    )
    assert watched.recorded == tuple(world.bucket.list_objects(removals_prefix("app")))


def test_a_tag_removed_from_a_digest_that_stays_alerts_the_tag_reference_not_the_digest_reference(
    world: World,
) -> None:
    # Given one image carrying dev and 1.0; dev runs by tag in one cluster, the digest in another
    shared = world.registry.add_image("app", tags=["dev", "1.0"], pushed_at=PUSHED, seed="shared")
    world.runs("dev", (f"{HOST}/app:dev", shared))
    world.runs("prod", (f"{HOST}/app@{shared}", shared))
    # When someone removes only the tag dev (the digest stays, under 1.0)
    world.registry.set_tags("app", shared, ["1.0"])
    world.watch(deleted(shared, "dev"))
    # Then the alert names app:dev and not the digest reference, which still pulls
    [(_, body)] = world.alerts()
    assert "app:dev no longer exists" in body
    assert "prod:" not in body


def test_a_tag_removal_that_leaves_every_reference_pullable_is_not_alerted(world: World) -> None:
    shared = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="shared")
    world.runs("prod", (f"{HOST}/app@{shared}", shared))
    world.watch(deleted(shared, "dev"))
    assert world.alerts() == []


def test_a_reference_to_a_replica_that_deletions_reach_is_alerted(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.2"], pushed_at=PUSHED, seed="v12")
    world.registry.replication = world.registry.replication.model_validate(
        {"rules": [replication_rule(("us-east-1", ACCOUNT), delete=True)]}
    )
    world.runs("us-prod", (f"{REPLICA_HOST}/app:1.2", running))
    world.registry.repositories["app"].pop(running)
    world.watch(lifecycle(running, "1.2"))
    [(_, body)] = world.alerts()
    assert "us-prod (us-east-1, replicated)" in body


def test_an_unreadable_replication_matches_this_registrys_references_and_says_so(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.2"], pushed_at=PUSHED, seed="v12")
    world.registry.replication_problem = "DescribeRegistry failed: AccessDenied"
    world.runs("prod", (f"{HOST}/app:1.2", running))
    world.registry.repositories["app"].pop(running)
    world.watch(lifecycle(running, "1.2"))
    [(_, body)] = world.alerts()
    assert "Only this registry's references were matched" in body


def test_a_removed_child_of_an_in_use_index_is_alerted(world: World) -> None:
    # Given prod runs a multi-arch image whose index manifest the pipeline cached
    amd = world.registry.add_image("app", pushed_at=PUSHED, seed="amd64")
    arm = world.registry.add_image("app", pushed_at=PUSHED, seed="arm64")
    index = world.registry.add_index("app", [amd, arm], tags=["3.0"], pushed_at=PUSHED)
    world.bucket.write(f"manifests/{index}.json", world.registry.repositories["app"][index].manifest.encode())
    world.runs("prod", (f"{HOST}/app:3.0", index))
    # When its arm64 child is deleted
    world.registry.repositories["app"].pop(arm)
    world.watch(deleted(arm))
    # Then the alert says the platform image of app:3.0 is gone
    [(_, body)] = world.alerts()
    assert "a platform image of app:3.0" in body


def test_an_archived_in_use_image_in_a_managed_repository_is_restored_and_the_alert_says_so(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:1.0", running))
    world.registry.archive("app", running, NOW)
    watched = world.watch(archived(running))
    assert world.registry.repositories["app"][running].detail.image_status == "ACTIVATING"
    [(_, body)] = world.alerts()
    assert "is ARCHIVED: the next pull fails until it is restored" in body
    assert "Restore: restore started" in body
    assert watched.restored == 1


def test_an_archived_in_use_image_in_an_unmanaged_repository_is_not_restored(world: World) -> None:
    running = world.registry.add_image("tools", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/tools:1.0", running))
    world.registry.archive("tools", running, NOW)
    world.watch(archived(running, repository="tools"))
    assert world.registry.repositories["tools"][running].detail.image_status == "ARCHIVED"
    assert ("restore_images", "tools") not in world.registry.calls
    [(_, body)] = world.alerts()
    assert "not restored: no policy of the rules file manages this repository" in body


def test_restore_in_use_off_leaves_the_archived_image_and_says_why(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:1.0", running))
    world.registry.archive("app", running, NOW)
    world.watch(archived(running), restore_in_use=False)
    assert world.registry.repositories["app"][running].detail.image_status == "ARCHIVED"
    [(_, body)] = world.alerts()
    assert "not restored: safety.restore_in_use is off" in body


def test_a_refused_restore_is_named_in_the_alert(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:1.0", running))
    world.registry.archive("app", running, NOW)
    world.registry.restore_failures[running] = "KmsException"
    world.watch(archived(running))
    [(_, body)] = world.alerts()
    assert "restore refused (KmsException: injected)" in body


def _answering(outcome: BatchOutcome | Exception) -> Any:
    """A restore_images that answers `outcome` (or raises it), whatever it is asked."""

    def restore_images(repository: str, digests: Sequence[str]) -> BatchOutcome:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return restore_images


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        ("gone", "not restored (ImageNotFound: no longer in the repository: it could not be restored)"),
        ("unconfirmed", "not restored (NotConfirmed: the registry did not confirm the restore)"),
        ("unanswered", "restore refused (no answer)"),
        ("already", "already ACTIVE or being restored"),
        ("raised", "restore refused (RestoreFailed: RuntimeError: the adapter broke)"),
    ],
)
def test_a_restore_the_registry_did_not_confirm_started_is_not_counted_restored_and_the_alert_says_why(
    world: World, answer: str, told: str
) -> None:
    # Given an in-use image archived in a managed repository, whose restore ECR answers other than ACTIVATING
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:1.0", running))
    world.registry.archive("app", running, NOW)
    outcomes: dict[str, BatchOutcome | Exception] = {
        "unconfirmed": BatchOutcome(unconfirmed=(running,)),
        "unanswered": BatchOutcome(),
        "already": BatchOutcome(already=(running,)),
        "raised": RuntimeError("the adapter broke"),
    }
    if answer == "gone":  # deleted between the confirmation and the restore
        world.registry.before["restore_images"] = lambda fake: fake.repositories["app"].pop(running)
    else:
        world.registry.restore_images = _answering(outcomes[answer])  # type: ignore[method-assign]
    # When the sentinel heals it
    watched = world.watch(archived(running))
    # Then the alert still goes out, says what became of the restore, and nothing counts as restored
    [(_, body)] = world.alerts()
    assert f"  Restore: {told}." in body.splitlines()
    assert watched.restored == 0
    assert watched.summary()["restored"] == 0
    assert watched.alerted


def test_a_lifecycle_transition_rule_is_read_as_an_archive(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:1.0", running))
    world.registry.archive("app", running, NOW)
    world.watch(lifecycle(running, "1.0", action="transition"))
    [(_, body)] = world.alerts()
    assert "archived 2026-11-30 06:00 UTC by lifecycle rule 1" in body


def test_the_same_removal_told_by_a_second_event_is_not_alerted_twice(world: World) -> None:
    # Given a lifecycle expiry that ECR tells twice: as an ECR Image Action DELETE and as a PolicyExecutionEvent
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    world.watch(deleted(running, "1.0"), event_id="image-action")
    # When the second event arrives
    world.watch(lifecycle(running, "1.0"), event_id="service-event")
    # Then there is one alert, and both removals are on record (the second says which rule)
    assert len(world.alerts()) == 1
    assert sorted(r.cause for r in read_removals(world.bucket, "app", sentinel=SENTINEL_ROLE).removals) == [
        "image-action",
        "lifecycle",
    ]


def test_a_deletion_told_tag_by_tag_alerts_once_naming_every_tag_reference(world: World) -> None:
    # Given one image under 1.0 and latest, each pulled by tag somewhere
    image = world.registry.add_image("app", tags=["1.0", "latest"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:1.0", image))
    world.runs("dev", (f"{HOST}/app:latest", image))
    world.registry.repositories["app"].pop(image)
    # When ECR tells the deletion with one DELETE event per tag
    world.watch(deleted(image, "1.0"), event_id="tag-1.0")
    world.watch(deleted(image, "latest"), event_id="tag-latest")
    # Then the first event's alert names both references, and the second adds nothing
    [(_, body)] = world.alerts()
    assert "app:1.0 no longer exists" in body
    assert "app:latest no longer exists" in body
    first = next(
        r for r in read_removals(world.bucket, "app", sentinel=SENTINEL_ROLE).removals if r.event_id == "tag-1.0"
    )
    assert set(first.alerted) == {"app:1.0", "app:latest"}


def test_a_reference_an_earlier_removal_left_pullable_is_alerted_when_a_later_one_breaks_it(world: World) -> None:
    # Given prod pulls the image by digest, and someone removes only its tag dev (the digest stays)
    image = world.registry.add_image("app", tags=["dev", "1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{image}", image))
    world.registry.set_tags("app", image, ["1.0"])
    world.watch(deleted(image, "dev"), event_id="tag-dev")
    assert world.alerts() == []
    # When a lifecycle rule deletes the image minutes later
    world.registry.repositories["app"].pop(image)
    world.watch(lifecycle(image, "1.0"), event_id="lifecycle")
    # Then that deletion is alerted: the earlier record named the digest but alerted nothing
    [(_, body)] = world.alerts()
    assert "no longer exists: the next pull fails" in body


def test_the_same_event_delivered_twice_alerts_once(world: World) -> None:
    """EventBridge and Lambda may deliver one event twice: the second delivery finds the event's alert published."""
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    world.watch(deleted(running))
    second = world.watch(deleted(running))
    assert len(world.alerts()) == 1
    assert not second.alerted
    assert second.notes[0].startswith("another delivery of event event-1 published its alert")
    # and the first delivery's record still says what its alert named
    [recorded] = read_removals(world.bucket, "app", sentinel=SENTINEL_ROLE).removals
    assert recorded.alerted == (f"app@{running[:19]}",)


def test_a_retry_after_a_failed_publish_alerts(world: World) -> None:
    """The first attempt's publish failed (the function errs, Lambda retries): its claim is released, not held."""
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    publish = world.notifier.publish

    def failing(*_: Any, **__: Any) -> None:
        raise NotificationFailed("SNS Publish failed: InternalError")

    world.notifier.publish = failing  # type: ignore[method-assign]
    with pytest.raises(NotificationFailed):
        world.watch(deleted(running))
    world.notifier.publish = publish  # type: ignore[method-assign]
    assert world.watch(deleted(running)).alerted
    assert len(world.alerts()) == 1


def claim_of(world: World, state: str, writer: str | None = SENTINEL_ROLE) -> str:
    """The claim another delivery of event-1 left on its alert."""
    key = alert_claim_key("app", NOW, "event-1")
    world.bucket.write_json(
        key,
        {"schemaVersion": 1, "eventId": "event-1", "state": state, "at": NOW.isoformat()}
        | ({"writer": writer} if writer else {}),
    )
    return key


def test_a_delivery_at_the_same_instant_waits_for_the_one_that_holds_the_claim(world: World) -> None:
    # Given another delivery of the same event has claimed its alert and is publishing
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    claim_of(world, "claimed")
    world.meanwhile = lambda: claim_of(world, "published")
    # When this delivery finds the claim, it waits; the other publishes: this one does not
    watched = world.watch(deleted(running))
    assert world.slept == [2]
    assert world.alerts() == []
    assert not watched.alerted


def test_a_claim_whose_holder_died_does_not_lose_the_alert(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    key = claim_of(world, "claimed")
    world.watch(deleted(running))
    # The holder never said it published: after waiting 20 s this delivery alerts, and says so in the claim
    assert sum(world.slept) == 20
    assert len(world.alerts()) == 1
    assert json.loads(world.bucket.objects[key])["state"] == "published"


def test_a_forged_claim_silences_nothing(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    claim_of(world, "published", writer="arn:aws:iam::123456789012:role/Insider")
    world.watch(deleted(running))
    assert len(world.alerts()) == 1
    assert world.slept == []


def forged(world: World, image: str, running: str, writer: str | None) -> str:
    """A record under removals/ as an insider would write it, with writer `writer`, claiming the alert was sent."""
    key = removal_key("app", NOW, "forged", 0)
    world.bucket.write_json(
        key,
        {
            "schemaVersion": 1,
            "repositoryName": "app",
            "imageDigest": running,
            "action": "deleted",
            "cause": "lifecycle",
            "removedAt": NOW.isoformat(),
            "eventId": "forged",
            "alerted": [image],
        }
        | ({"writer": writer} if writer else {}),
    )
    return key


@pytest.mark.parametrize("writer", ["arn:aws:iam::123456789012:role/Insider", None], ids=["other-writer", "no-writer"])
def test_a_forged_removals_record_is_ignored_and_named_in_the_alert(world: World, writer: str | None) -> None:
    # Given an insider wrote a record saying the alert for app:1.0 went out, then deleted the image
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app:1.0", running))
    key = forged(world, "app:1.0", running, writer)
    world.registry.repositories["app"].pop(running)
    # When the deletion's event arrives
    world.watch(deleted(running, "1.0"))
    # Then it is alerted all the same, and the alert names the record it ignored
    [(_, body)] = world.alerts()
    assert "app:1.0 no longer exists" in body
    assert f"this deployment's sentinel did not write (they silence nothing): s3://inventory/{key} (writer" in body


def test_a_sentinel_that_does_not_know_its_role_suppresses_nothing(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    world.ports = replace(world.ports, sentinel_role=None)
    world.watch(deleted(running, "1.0"), event_id="image-action")
    world.watch(lifecycle(running, "1.0"), event_id="service-event")
    world.watch(lifecycle(running, "1.0"), event_id="service-event")
    assert len(world.alerts()) == 3


def test_a_registry_that_cannot_confirm_alerts_every_candidate_as_unconfirmed(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.lookup_failures["app"] = "DescribeImages failed: ThrottlingException"
    world.watch(deleted(running))
    [(_, body)] = world.alerts()
    assert "may be gone (the registry could not be asked to confirm)" in body


def test_a_defect_while_confirming_still_alerts_every_candidate_as_unconfirmed(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))

    def broken(*_: object) -> None:
        raise RuntimeError("an answer no adapter anticipated")

    world.registry.describe_images_by_id = broken  # type: ignore[method-assign]
    world.watch(deleted(running))
    [(_, body)] = world.alerts()
    assert "may be gone (the registry could not be asked to confirm)" in body


def test_confirming_asks_for_the_referenced_images_only(world: World) -> None:
    """No listing of the whole repository: DescribeImages by the references' tags and digests."""
    running = world.registry.add_image("app", tags=["dev"], pushed_at=PUSHED, seed="dev")
    world.runs("dev", (f"{HOST}/app:dev", running))
    world.registry.repositories["app"].pop(running)
    world.watch(deleted(running, "dev"))
    assert ("describe_images", "app") not in world.registry.calls
    assert ("describe_images_by_id", "app") in world.registry.calls


def test_a_batch_delete_names_its_principal(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    call = ImagesBatchDeleted.model_validate(
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "BatchDeleteImage",
            "eventID": "trail-2",
            "eventTime": NOW.isoformat(),
            "userIdentity": {"arn": "arn:aws:iam::123456789012:user/Mary_Major"},
            "requestParameters": {"repositoryName": "app", "imageIds": [{"imageDigest": running}]},
            "responseElements": {"imageIds": [{"imageDigest": running, "imageTag": "1.0"}], "failures": []},
        }
    )
    world.watch(call)
    [(_, body)] = world.alerts()
    assert "a BatchDeleteImage call by arn:aws:iam::123456789012:user/Mary_Major" in body
    [recorded] = read_removals(world.bucket, "app", sentinel=SENTINEL_ROLE).removals
    assert recorded.principal == "arn:aws:iam::123456789012:user/Mary_Major"
    assert recorded.image_tags == ("1.0",)


def test_a_new_lifecycle_policy_that_would_expire_an_in_use_image_is_alerted_before_ecr_acts(world: World) -> None:
    # Given prod runs the oldest of three images, and someone puts a "keep 1" policy
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.registry.add_image("app", tags=["2.0"], pushed_at=PUSHED + timedelta(days=1), seed="two")
    world.registry.add_image("app", tags=["3.0"], pushed_at=PUSHED + timedelta(days=2), seed="three")
    world.runs("prod", (f"{HOST}/app:1.0", running))
    policy = {
        "rules": [
            {
                "rulePriority": 1,
                "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1},
                "action": {"type": "expire"},
            }
        ]
    }
    world.registry.lifecycle_policies["app"] = json.dumps(policy)  # what GetLifecyclePolicy answers now
    put = LifecyclePolicyPut.model_validate(
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "PutLifecyclePolicy",
            "eventID": "trail-3",
            "eventTime": NOW.isoformat(),
            "userIdentity": {"arn": "arn:aws:sts::123456789012:assumed-role/Admin/mary"},
            "requestParameters": {"repositoryName": "app", "lifecyclePolicyText": json.dumps(policy)},
        }
    )
    # When the call is seen
    watched = world.watch(put)
    # Then one alert names the policy's author and the in-use image, and nothing is recorded or changed
    [(subject, body)] = world.alerts()
    assert "the new lifecycle policy of app" in subject
    assert "by arn:aws:sts::123456789012:assumed-role/Admin/mary" in body
    assert "prod: prod/Deployment/app (pod)" in body
    assert watched.policy_findings >= 1
    assert world.bucket.list_objects("removals/") == {}
    assert not [call for call in world.registry.calls if call[0] in ("delete_images", "archive_images")]


def test_the_record_of_removals_reads_back_as_removals(world: World) -> None:
    world.watch(lifecycle("sha256:" + "a" * 64, "1.0", "latest"))
    [key] = world.bucket.list_objects(removals_prefix("app"))
    assert key.startswith("removals/app/20261130T060000Z-trail-1-0")
    assert Removal.model_validate_json(world.bucket.objects[key]).told == (
        "deleted 2026-11-30 06:00 UTC by lifecycle rule 1 of app's policy"
    )
