"""An image's times (ImageDetail, LeanUtcDatetime) are written to JSON by pydantic's own encoder, not by
format_timestamp: a snapshot (`ecr-retention snapshot`, each evaluation's kept snapshot) holds a time or more for each
of its images, and a Python call for each was most of what dumping one costs. Every time an image can hold is aware
in UTC, so the text must be format_timestamp's, whatever the time was given as, or the snapshots written, and the
comparison that decides whether a kept snapshot is written again, would change."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from ecr_retention.domain.registry.images import ImageDetail, Snapshot, _checked_twins
from ecr_retention.domain.timestamps import LeanUtcDatetime, UtcDatetime, format_timestamp, parse_timestamp
from tests.unit.test_registry_models import DIGEST, IMAGE_VALUES, TIMESTAMPS, outcome, snapshot_of

LEAN = TypeAdapter(LeanUtcDatetime)
CHECKED = TypeAdapter(UtcDatetime)  # written by format_timestamp, as an image's times were


def accepted(value: Any) -> bool:
    try:
        parse_timestamp(value)
    except ValueError:
        return False
    return True


@settings(max_examples=2_000, deadline=None)
@given(TIMESTAMPS.filter(accepted))
def test_an_image_time_is_written_as_format_timestamp_writes_it(value: Any) -> None:
    held = LEAN.validate_python(value)

    assert held.tzinfo is UTC
    assert LEAN.dump_json(held) == json.dumps(format_timestamp(held)).encode() == CHECKED.dump_json(held)
    assert LEAN.dump_python(held, mode="json") == format_timestamp(held) == CHECKED.dump_python(held, mode="json")
    assert LEAN.dump_python(held) is held  # Python mode: the datetime itself


@settings(max_examples=500, deadline=None)
@given(st.lists(IMAGE_VALUES, max_size=4))
def test_a_snapshot_is_written_as_the_checked_models_wrote_it(images: list[Any]) -> None:
    document = snapshot_of(*images)
    checked = outcome(_checked_twins()[Snapshot].validate_python, document)
    lean = outcome(Snapshot.__pydantic_validator__.validate_python, document)
    if isinstance(checked, list):
        return  # refused alike: tests/unit/test_registry_models.py
    twin = _checked_twins()[Snapshot]

    assert json.dumps(lean.model_dump(mode="json", by_alias=True, exclude_none=True)) == json.dumps(
        twin.dump_python(checked, mode="json", by_alias=True, exclude_none=True)
    )
    assert lean.model_dump_json(by_alias=True) == twin.dump_json(checked, by_alias=True).decode()


def test_an_image_built_with_times_in_other_offsets_writes_them_in_utc() -> None:
    east = timezone(timedelta(hours=5, minutes=30))
    image = ImageDetail(
        image_digest=DIGEST,
        image_pushed_at=datetime(2026, 11, 30, 11, 30, tzinfo=east),
        last_recorded_pull_time=datetime(2026, 11, 30, 12, 0, 0, 250, tzinfo=east),
        last_archived_at="2026-11-29T23:00:00-01:00",
        last_activated_at=1_764_482_400,
    )

    assert image.model_dump(mode="json", by_alias=True, exclude_none=True) == {
        "imageDigest": DIGEST,
        "imageTags": [],
        "imagePushedAt": "2026-11-30T06:00:00Z",
        "lastRecordedPullTime": "2026-11-30T06:30:00.000250Z",
        "imageStatus": "ACTIVE",
        "lastArchivedAt": "2026-11-30T00:00:00Z",
        "lastActivatedAt": "2025-11-30T06:00:00Z",
    }


def test_a_time_without_an_offset_is_still_refused() -> None:
    with pytest.raises(ValidationError, match="no UTC offset"):
        LEAN.validate_python(datetime(2026, 11, 30, 6, 0))
