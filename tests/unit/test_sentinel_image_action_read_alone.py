"""The sentinel reads an ECR Image Action, its common event, by that event's own model (handlers/sentinel.py
observed_in) and loads the union of every event its rules match (handlers/sentinel_events.py SentinelEvent) only for
another event or a refused one: what it acts on, and the one line a refusal reads, are the union's, event by event."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.sentinel.events import Observed
from ecr_retention.handlers.events import parse_event
from ecr_retention.handlers.sentinel import observed_in
from ecr_retention.handlers.sentinel_events import SentinelEvent

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sentinel"
IMAGE_ACTIONS = ("image-deleted.json", "image-archived.json")


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return loaded


def by_the_union(event: Any) -> Observed | str:
    try:
        return parse_event(event, SentinelEvent, "sentinel event").observed()
    except InputError as error:
        return str(error)


def read_alone(event: Any) -> Observed | str:
    try:
        return observed_in(event)
    except InputError as error:
        return str(error)


def variants(event: dict[str, Any]) -> Iterator[Any]:
    """The event, and the event with each of its fields (and each of its detail's) left out, made null, made a number,
    made an empty text, or given another known value."""
    yield event
    for path in [(key,) for key in event] + [("detail", key) for key in event["detail"]]:
        for value in (None, 7, "", "DELETE", "UPDATE_STORAGE_CLASS", "ARCHIVED", "ECR Image Action", "aws.s3", [], {}):
            changed = copy.deepcopy(event)
            *parents, last = path
            target = changed
            for key in parents:
                target = target[key]
            target[last] = value
            yield changed
            del target[last]
            yield changed
    yield {**event, "detail_type": event["detail-type"]}
    yield {key: value for key, value in event.items() if key != "detail-type"} | {"detail_type": event["detail-type"]}
    yield json.dumps(event)
    yield [event]
    yield "not an event"


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.glob("*.json")))
def test_every_event_is_read_as_the_union_reads_it(name: str) -> None:
    event = fixture(name)

    assert read_alone(event) == by_the_union(event)
    assert isinstance(read_alone(event), Observed)


@pytest.mark.parametrize("name", IMAGE_ACTIONS)
def test_an_image_action_with_any_field_changed_is_read_or_refused_as_the_union_does(name: str) -> None:
    results = [(read_alone(event), by_the_union(event)) for event in variants(fixture(name))]

    assert [alone for alone, _ in results] == [union for _, union in results]
    assert any(isinstance(alone, str) for alone, _ in results)  # refusals were among them
    assert sum(isinstance(alone, Observed) for alone, _ in results) > 1
