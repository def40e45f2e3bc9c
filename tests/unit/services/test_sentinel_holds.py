"""The sentinel and the holds (SPEC "Holds", docs/holds.md): a removal or an archive of a held image is alerted at
once, naming the hold (owner, reason, until), whether or not anything runs it; one removal told by two events is one
alert; an ended hold, or a removal of a tag only, alerts nothing."""

from __future__ import annotations

from datetime import timedelta

from ecr_retention.domain.holds.stored import hold_json
from tests.support.builders import HOST, digest
from tests.support.holds import a_hold
from tests.unit.services.test_sentinel import World, archived, deleted, lifecycle


def holding(world: World, seed: str, **kwargs: object) -> None:
    held = a_hold("app", seed, **kwargs)  # type: ignore[arg-type]
    world.bucket.objects[held.image.key] = hold_json(held)


def test_a_held_image_removed_by_a_native_policy_is_alerted_naming_the_hold() -> None:
    world = World()
    holding(world, "kept", owner="alice@example.com", reason="audit INC-42")

    watched = world.watch(lifecycle(digest("kept"), "v1"))

    [(subject, body)] = world.alerts()
    assert subject.startswith("ecr-retention sentinel: held image app@sha256:")
    assert "deleted, held by alice@example.com" in subject
    assert "held by alice@example.com until 2026-12-30T06:00:00Z (in 30d): audit INC-42" in body
    assert "lifecycle rule 1 of app's policy" in body
    assert watched.alerted
    assert watched.summary()["held"] == [f"holds/eu-west-1/app/{digest('kept')}.json"]


def test_a_held_image_archived_is_alerted() -> None:
    world = World()
    holding(world, "kept")

    world.watch(archived(digest("kept")))

    [(subject, _)] = world.alerts()
    assert "archived" in subject


def test_one_removal_of_a_held_image_told_by_two_events_is_one_alert() -> None:
    world = World()
    holding(world, "kept")

    world.watch(lifecycle(digest("kept"), "v1"), event_id="event-1")
    world.watch(deleted(digest("kept"), "v1"), event_id="event-2")

    assert len(world.alerts()) == 1


def test_a_held_image_that_also_runs_is_one_alert_naming_both() -> None:
    world = World()
    holding(world, "kept", owner="bob")
    world.runs("prod", (f"{HOST}/app:v1", digest("kept")))

    world.watch(deleted(digest("kept")))

    [(subject, body)] = world.alerts()
    assert "prod/Deployment/app runs it" in subject
    assert "Held images were just removed or archived" in body
    assert "held by bob until " in body


def test_an_ended_hold_or_another_image_alerts_nothing() -> None:
    world = World()
    holding(world, "ended", until=-timedelta(hours=1))
    holding(world, "kept")

    world.watch(deleted(digest("ended")))
    world.watch(deleted(digest("other")), event_id="event-2")

    assert world.alerts() == []
