"""The planner builds its decisions without validating them again (Decision.planned): they must be the validated
decisions in every respect a reader of the plan can see, and the plan's images in the one exact order."""

from __future__ import annotations

import copy
import pickle
from datetime import UTC, datetime, timedelta

import pytest

from ecr_retention.domain.planning import newest_first
from ecr_retention.domain.planning.plan import Decision, Plan
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import OCI_INDEX, config, digest, image, index_manifest, plan, repository, snapshot

DAY = timedelta(days=1)


def _varied_plan() -> Plan:
    """Kept, deleted and archived images; none, one and two tags; a size and none; a child of an index."""
    cfg = config(
        [
            {"keep": {"tags": ["v*"]}},
            {"delete": {"tags": ["pr-*"], "older_than": "7d", "archive": True}},
            {"delete": {"older_than": "30d"}},
        ]
    )
    unsized = image("unsized", "pr-9", age=DAY * 40)
    del unsized["imageSizeInBytes"]
    snap = snapshot(
        repository(
            "app",
            image("release", "v2", "latest", age=DAY * 90),
            image("pr", "pr-1", age=DAY * 10),
            image("old", age=DAY * 60),
            image("young", age=DAY * 2),
            image("index", "v3", media_type=OCI_INDEX, age=DAY * 50),
            image("child", age=DAY * 50),
            unsized,
            manifests={"index": index_manifest("child")},
        )
    )
    return plan(cfg, snap)


def _validated(decision: Decision) -> Decision:
    return Decision(
        image_digest=decision.image_digest,
        image_tags=decision.image_tags,
        image_pushed_at=decision.image_pushed_at,
        image_size_in_bytes=decision.image_size_in_bytes,
        action=decision.action,
        reasons=decision.reasons,
    )


DECISIONS = _varied_plan().repositories[0].images


def test_the_varied_plan_has_what_the_comparisons_need() -> None:
    assert {d.action for d in DECISIONS} == {"keep", "delete", "archive"}
    assert {len(d.image_tags) for d in DECISIONS} == {0, 1, 2}
    assert None in {d.image_size_in_bytes for d in DECISIONS}


@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d.image_digest[7:15])
def test_a_planned_decision_is_the_validated_decision_in_every_respect(decision: Decision) -> None:
    validated = _validated(decision)
    assert decision == validated
    assert hash(decision) == hash(validated)
    assert repr(decision) == repr(validated)
    assert decision.model_fields_set == validated.model_fields_set
    assert decision.__getstate__() == validated.__getstate__()
    assert decision.model_dump() == validated.model_dump()
    assert decision.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert decision.model_dump(mode="json", by_alias=True) == validated.model_dump(mode="json", by_alias=True)
    assert decision.model_dump_json(by_alias=True, indent=2) == validated.model_dump_json(by_alias=True, indent=2)
    assert decision.model_dump_json(exclude_defaults=True) == validated.model_dump_json(exclude_defaults=True)
    for restored in (pickle.loads(pickle.dumps(decision)), copy.deepcopy(decision), copy.copy(decision)):
        assert restored == validated
        assert restored.model_fields_set == validated.model_fields_set


def test_a_planned_decision_is_frozen_as_the_validated_one_is() -> None:
    with pytest.raises(ValueError, match="frozen"):
        DECISIONS[0].action = "delete"  # type: ignore[misc]


def test_model_copy_of_a_planned_decision_changes_the_copy_alone() -> None:
    first, second = DECISIONS[0], DECISIONS[1]
    update = {"action": "keep", "reasons": ()}
    copied = first.model_copy(update=update)
    assert copied == _validated(first).model_copy(update=update)
    assert copied.model_fields_set == _validated(first).model_copy(update=update).model_fields_set
    assert first.action != "keep" or first.reasons != ()  # the original is unchanged
    assert first == _validated(first)
    assert second.model_fields_set == _validated(second).model_fields_set


def test_a_plans_decisions_share_one_set_of_field_names() -> None:
    """pydantic's set of the fields given is per instance when validated: most of a decision's memory."""
    assert len({id(d.model_fields_set) for d in DECISIONS}) == 1


def _pushed(*pushed: tuple[str, datetime]) -> tuple[ImageDetail, ...]:
    details = [
        {"imageDigest": digest(seed), "imagePushedAt": at.isoformat(), "imageTags": [seed]} for seed, at in pushed
    ]
    return snapshot({"repositoryName": "app", "imageDetails": details}).repositories[0].image_details


def test_newest_first_is_exact_to_the_microsecond_in_any_year() -> None:
    """A float of epoch seconds cannot tell microseconds apart late in the calendar; the order must."""
    late = datetime(9000, 1, 1, tzinfo=UTC)
    images = _pushed(("a", late), ("b", late + timedelta(microseconds=1)), ("c", late))
    assert [i.image_tags[0] for i in newest_first(images)] == ["b", *sorted(["a", "c"], key=lambda s: digest(s))]
