"""A report's entry for an image as its plan decided it (ImageEntry.from_decision without what became of a removal) is
built from the decision's values without validating them again: it must be the entry validation builds, field for
field and type for type, written and read back alike, for every decision a plan can hold. What became of a removal
(a kind, a detail, an error code: ECR's words) is still validated."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from ecr_retention.domain.planning.plan import Decision
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.planning.reasons import ReasonKind
from ecr_retention.domain.reporting.report import ImageEntry
from ecr_retention.domain.reporting.run_report import report_of_plan
from support.builders import config, image, in_use, plan, repository, snapshot

ENTRIES = TypeAdapter(ImageEntry)
OFFSETS = st.integers(-23 * 60, 23 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))


def built(model: Any) -> Any:
    """The model built from the fields given by name (st.builds would also fill its aliases, which win)."""

    def build(**fields: Any) -> Any:
        return model(**fields)

    return build


REASONS = st.builds(
    built(Reason),
    kind=st.sampled_from(get_args(ReasonKind)),
    rule=st.none() | st.text(max_size=12),
    detail=st.text(max_size=30),
)
DECISIONS = st.builds(
    built(Decision),
    image_digest=st.text(min_size=1, max_size=80),
    image_tags=st.lists(st.text(min_size=1, max_size=10), unique=True, max_size=3).map(tuple),
    image_pushed_at=st.datetimes(
        min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.one_of(st.just(UTC), OFFSETS)
    ),
    image_size_in_bytes=st.none() | st.integers(0, 2**40),
    action=st.sampled_from(["keep", "delete", "archive", "restore"]),
    reasons=st.lists(REASONS, min_size=1, max_size=3).map(tuple),
)


def validated(decision: Decision) -> ImageEntry:
    """The entry as from_decision built it before: every field validated."""
    main = decision.main_reason
    return ImageEntry(
        image_digest=decision.image_digest,
        image_tags=decision.image_tags,
        image_pushed_at=decision.image_pushed_at,
        image_size_in_bytes=decision.image_size_in_bytes,
        kind=main.kind,
        rule=main.rule,
        detail=main.detail,
        error_code=None,
        reasons=decision.reasons,
    )


def assert_the_same_entry(built: ImageEntry, expected: ImageEntry) -> None:
    assert type(built) is ImageEntry
    assert built == expected
    assert hash(built) == hash(expected)
    for field in dataclasses.fields(ImageEntry):
        mine, theirs = getattr(built, field.name), getattr(expected, field.name)
        assert type(mine) is type(theirs), field.name
    assert built.image_pushed_at.tzinfo is UTC
    assert ENTRIES.dump_json(built, by_alias=True) == ENTRIES.dump_json(expected, by_alias=True)
    assert ENTRIES.dump_python(built, mode="json") == ENTRIES.dump_python(expected, mode="json")
    assert ENTRIES.validate_json(ENTRIES.dump_json(built, by_alias=True)) == expected
    assert pickle.loads(pickle.dumps(built)) == expected
    assert repr(built) == repr(expected)


@settings(max_examples=500, deadline=None)
@given(DECISIONS)
def test_an_entry_of_a_decision_is_the_entry_validation_builds(decision: Decision) -> None:
    assert_the_same_entry(ImageEntry.from_decision(decision), validated(decision))


def test_the_entries_of_a_plan_are_those_validation_builds() -> None:
    cfg = config(
        [{"keep": {"tags": ["v1*"]}}, {"delete": {"tags": ["*"], "older_than": "30d"}}, {"delete": {"untagged": True}}]
    )
    snap = snapshot(
        repository(
            "app",
            image("kept", "v1.0"),
            image("old", "v0"),
            image("untagged"),
            image("young", "v9", age=timedelta(hours=1)),
            image("archived", "v2", status="ARCHIVED"),
        )
    )
    result = plan(cfg, snap, in_use("prod", ("123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:v2", "archived")))
    [repo] = report_of_plan(result, run_id="r-1", manifests=()).repositories
    decisions = {d.image_digest: d for d in result.repositories[0].images}
    entries = [*repo.kept_images, *repo.deleted, *repo.archived, *repo.restored, *repo.in_use_archived]

    assert {d.action for d in decisions.values()} >= {"keep", "delete"}
    assert len(entries) >= len(decisions)
    for entry in entries:
        assert_the_same_entry(entry, validated(decisions[entry.image_digest]))


def test_what_became_of_a_removal_is_still_validated() -> None:
    decision = Decision(
        image_digest="sha256:" + "a" * 64,
        image_tags=("v1",),
        image_pushed_at=datetime(2026, 11, 1, tzinfo=UTC),
        action="delete",
        reasons=(Reason(kind="delete-rule", rule="[policies[0].rules[0]]", detail="delete"),),
    )
    failed: Any = 42  # an error code that is no text

    with pytest.raises(ValidationError):
        ImageEntry.from_decision(decision, kind="delete-failed", detail="refused", error_code=failed)
    entry = ImageEntry.from_decision(decision, kind="delete-failed", detail="refused", error_code="KmsError")
    assert (entry.kind, entry.detail, entry.error_code) == ("delete-failed", "refused", "KmsError")
