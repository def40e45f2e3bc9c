"""The sentinel and a hold in a replica the source's deletions reach (docs/holds.md): a removal of the image in the
source removes the held replica too, so it is alerted naming the hold and where it is held; without delete
replication the replica stays, and nothing is alerted."""

from __future__ import annotations

from ecr_retention.domain.holds.stored import hold_json
from tests.support.builders import ACCOUNT, digest, replication_rule
from tests.support.holds import a_hold
from tests.unit.services.test_sentinel import World, deleted


def replicating_with_a_hold_there(*, delete: bool) -> World:
    world = World()
    world.registry.replication = world.registry.replication.model_validate(
        {"rules": [replication_rule(("us-east-1", ACCOUNT), delete=delete)]}
    )
    held = a_hold("app", "kept", region="us-east-1", owner="alice@example.com")
    world.bucket.objects[held.image.key] = hold_json(held)
    return world


def test_a_removal_in_the_source_of_an_image_held_in_a_reached_replica_is_alerted_saying_where_it_is_held() -> None:
    world = replicating_with_a_hold_there(delete=True)

    world.watch(deleted(digest("kept")))

    [(subject, body)] = world.alerts()
    assert "held by alice@example.com" in subject
    assert "held in us-east-1 (a deletion here reaches it) by alice@example.com until " in body


def test_a_removal_in_the_source_of_an_image_held_in_a_replica_without_delete_replication_alerts_nothing() -> None:
    world = replicating_with_a_hold_there(delete=False)

    world.watch(deleted(digest("kept")))

    assert world.alerts() == []
