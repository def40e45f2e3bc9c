"""Events are checked for where they came from (docs/safety.md section 30), in the sentinel's service on in-memory
ports: an event of another account changes nothing and says so in one line; a new lifecycle policy is checked as ECR
holds it (GetLifecyclePolicy), never as the event tells it; and a record silences only an alert of the same cause, so
that an event blaming another principal or rule (mistaken, or forged by invoking the function) hides nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.domain.sentinel.events import Observed
from ecr_retention.domain.sentinel.trail_events import ImagesBatchDeleted, LifecyclePolicyPut, PolicyExecution
from ecr_retention.services.removals import read_removals
from ecr_retention.services.sentinel import watch
from support.log_lines import warnings_of
from tests.support.builders import ACCOUNT, HOST, NOW, config
from tests.unit.services.test_sentinel import PUSHED, SENTINEL_ROLE, World, deleted, lifecycle

FOREIGN = "210987654321"
KEEP_ONE = {
    "rules": [
        {
            "rulePriority": 1,
            "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1},
            "action": {"type": "expire"},
        }
    ]
}
HARMLESS = {
    "rules": [
        {
            "rulePriority": 1,
            "selection": {
                "tagStatus": "tagged",
                "tagPrefixList": ["pr-"],
                "countType": "imageCountMoreThan",
                "countNumber": 100,
            },
            "action": {"type": "expire"},
        }
    ]
}


@pytest.fixture
def world() -> World:
    return World()


def watch_from(world: World, detail: Any, account: str | None, event_id: str = "event-1") -> Any:
    rules = config([{"delete": {"untagged": True, "older_than": "1d"}}])
    observed = Observed(event_id, NOW, detail, account=account)
    return watch(observed, config=rules, ports=world.ports, now=NOW, sleep=world.sleep)


def a_running_image_deleted(world: World) -> str:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.runs("prod", (f"{HOST}/app@{running}", running))
    world.registry.repositories["app"].pop(running)
    return running


# --- another account's events ---------------------------------------------------------------------------------------


def test_an_event_of_another_account_records_nothing_alerts_nothing_and_says_so_in_one_line(world: World) -> None:
    # Given a removal that would alert if it were this registry's
    running = a_running_image_deleted(world)
    # When another account's genuine ECR event of a repository of the same name reaches the sentinel
    with warnings_of("ecr_retention.services.sentinel") as lines:
        watched = watch_from(world, deleted(running, "1.0"), FOREIGN)
    # Then nothing is recorded, read, restored or alerted, and one warning line names the account
    assert world.alerts() == []
    assert world.bucket.list_objects("removals/") == {}
    assert world.registry.calls == []
    assert watched.ignored is not None
    assert f"came from account {FOREIGN}, not this deployment's ({ACCOUNT})" in watched.ignored
    assert lines == [watched.ignored]
    assert watched.summary()["ignored"] == watched.ignored


def test_another_accounts_new_lifecycle_policy_is_not_checked_against_this_registry(world: World) -> None:
    world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.registry.lifecycle_policies["app"] = json.dumps(KEEP_ONE)
    watched = watch_from(world, put_policy(KEEP_ONE), FOREIGN)
    assert watched.ignored is not None
    assert world.registry.calls == []


def test_an_event_of_this_account_is_watched(world: World) -> None:
    running = a_running_image_deleted(world)
    watched = watch_from(world, deleted(running, "1.0"), ACCOUNT)
    assert watched.alerted
    assert watched.ignored is None


# --- a new lifecycle policy, read from ECR ------------------------------------------------------------------------


def put_policy(policy: dict[str, Any]) -> LifecyclePolicyPut:
    return LifecyclePolicyPut.model_validate(
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "PutLifecyclePolicy",
            "eventID": "trail-3",
            "eventTime": NOW.isoformat(),
            "userIdentity": {"arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/mary"},
            "requestParameters": {"repositoryName": "app", "lifecyclePolicyText": json.dumps(policy)},
        }
    )


def three_images_the_oldest_running(world: World) -> None:
    running = world.registry.add_image("app", tags=["1.0"], pushed_at=PUSHED, seed="one")
    world.registry.add_image("app", tags=["2.0"], pushed_at=PUSHED + timedelta(days=1), seed="two")
    world.registry.add_image("app", tags=["3.0"], pushed_at=PUSHED + timedelta(days=2), seed="three")
    world.runs("prod", (f"{HOST}/app:1.0", running))


def test_a_new_policy_is_checked_as_ecr_holds_it_not_as_the_event_tells_it(world: World) -> None:
    # Given ECR holds a policy that expires the running image, and an event whose text is harmless
    three_images_the_oldest_running(world)
    world.registry.lifecycle_policies["app"] = json.dumps(KEEP_ONE)
    # When the event is seen
    watched = watch_from(world, put_policy(HARMLESS), ACCOUNT)
    # Then the alert is about the policy ECR will apply
    [(subject, _)] = world.alerts()
    assert "the new lifecycle policy of app" in subject
    assert watched.policy_findings >= 1
    assert ("lifecycle_policy", "app") in world.registry.calls


def test_a_forged_policy_text_alerts_nothing_when_ecr_holds_a_harmless_policy(world: World) -> None:
    three_images_the_oldest_running(world)
    world.registry.lifecycle_policies["app"] = json.dumps(HARMLESS)
    watched = watch_from(world, put_policy(KEEP_ONE), ACCOUNT)
    assert world.alerts() == []
    assert watched.policy_findings == 0


def test_a_repository_with_no_lifecycle_policy_now_has_nothing_to_check(world: World) -> None:
    three_images_the_oldest_running(world)
    watched = watch_from(world, put_policy(KEEP_ONE), ACCOUNT)
    assert world.alerts() == []
    assert watched.notes == ("the repository has no lifecycle policy now: nothing to check",)
    assert ("describe_images", "app") not in world.registry.calls


# --- dedupe per cause ---------------------------------------------------------------------------------------------


def batch_deleted(digest: str, principal: str, event_id: str) -> ImagesBatchDeleted:
    return ImagesBatchDeleted.model_validate(
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "BatchDeleteImage",
            "eventID": event_id,
            "eventTime": NOW.isoformat(),
            "userIdentity": {"arn": principal},
            "requestParameters": {"repositoryName": "app", "imageIds": [{"imageDigest": digest}]},
            "responseElements": {"imageIds": [{"imageDigest": digest, "imageTag": "1.0"}], "failures": []},
        }
    )


def lifecycle_rule(digest: str, priority: int, event_id: str) -> PolicyExecution:
    event = lifecycle(digest, "1.0").model_dump(by_alias=True)
    event["eventID"] = event_id
    event["serviceEventDetails"]["lifecycleEventImageActions"][0]["rulePriority"] = priority
    return PolicyExecution.model_validate(event)


MARY = f"arn:aws:iam::{ACCOUNT}:user/Mary_Major"
BOB = f"arn:aws:iam::{ACCOUNT}:user/Bob"


def test_an_event_blaming_a_lifecycle_rule_does_not_silence_the_call_that_names_who_deleted(world: World) -> None:
    # Given a first event (forged by invoking the function, delivered right after the deletion) that blames rule 1
    running = a_running_image_deleted(world)
    watch_from(world, lifecycle_rule(running, 1, "forged"), ACCOUNT, event_id="forged")
    # When the genuine BatchDeleteImage event arrives, naming who deleted it
    watched = watch_from(world, batch_deleted(running, MARY, "trail-2"), ACCOUNT, event_id="trail-2")
    # Then it is alerted too, naming the principal
    assert watched.alerted
    assert len(world.alerts()) == 2
    assert f"a BatchDeleteImage call by {MARY}" in world.alerts()[1][1]


def test_a_call_by_another_principal_is_alerted_although_one_by_someone_else_was(world: World) -> None:
    running = a_running_image_deleted(world)
    watch_from(world, batch_deleted(running, BOB, "trail-1"), ACCOUNT, event_id="trail-1")
    watch_from(world, batch_deleted(running, MARY, "trail-2"), ACCOUNT, event_id="trail-2")
    assert [MARY in body for _, body in world.alerts()] == [False, True]


def test_another_lifecycle_rule_is_alerted_although_one_rule_was(world: World) -> None:
    running = a_running_image_deleted(world)
    watch_from(world, lifecycle_rule(running, 1, "rule-1"), ACCOUNT, event_id="rule-1")
    watch_from(world, lifecycle_rule(running, 2, "rule-2"), ACCOUNT, event_id="rule-2")
    assert len(world.alerts()) == 2
    assert "lifecycle rule 2 of app's policy" in world.alerts()[1][1]


def test_the_same_cause_told_again_is_still_one_alert(world: World) -> None:
    # ECR tells a call's deletion as an Image Action DELETE (no cause) and as the BatchDeleteImage call; a second
    # event of the same call (another trail) names the same principal.
    running = a_running_image_deleted(world)
    watch_from(world, deleted(running, "1.0"), ACCOUNT, event_id="image-action")
    watch_from(world, batch_deleted(running, MARY, "trail-2"), ACCOUNT, event_id="trail-2")
    watch_from(world, batch_deleted(running, MARY, "trail-2b"), ACCOUNT, event_id="trail-2b")
    assert len(world.alerts()) == 1
    causes = sorted(r.cause for r in read_removals(world.bucket, "app", sentinel=SENTINEL_ROLE).removals)
    assert causes == ["api", "api", "image-action"]
