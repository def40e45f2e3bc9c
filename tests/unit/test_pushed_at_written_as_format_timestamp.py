"""A report's per-image push time (ImageEntry.image_pushed_at, LeanPushedAt) is read from JSON without a Python call
and written by pydantic's own encoder, not by format_timestamp: it must read and refuse what parse_timestamp does,
word a refusal as parse_timestamp words it, and write format_timestamp's text for every time an entry can hold, or
the JSON report (and the repository reports the workers store, which the report step and `restore --run` read back)
would change."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.domain.timestamps import LeanPushedAt, PushedAt, format_timestamp
from ecr_retention.run_files import repository_report_of
from tests.unit.test_registry_models import TIMESTAMPS

ENTRIES = TypeAdapter(ImageEntry)
OFFSETS = st.integers(-23 * 60, 23 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
# Every time an entry can be given: aware datetimes in any offset (microseconds or none), their ISO text, epoch seconds.
INSTANTS = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.one_of(st.just(UTC), OFFSETS)
)
PUSHED = st.one_of(
    INSTANTS,
    INSTANTS.map(datetime.isoformat),
    INSTANTS.map(format_timestamp),
    st.integers(0, 4_000_000_000),
    st.floats(0, 4_000_000_000, allow_nan=False).map(lambda seconds: round(seconds, 3)),
)


def entry(pushed: Any) -> ImageEntry:
    return ImageEntry(
        image_digest="sha256:" + "a" * 64, image_tags=("v1",), image_pushed_at=pushed, kind="keep-rule", detail="kept"
    )


@settings(max_examples=1_500, deadline=None)
@given(PUSHED)
def test_the_json_push_time_is_format_timestamps_text(pushed: Any) -> None:
    image = entry(pushed)
    expected = format_timestamp(image.image_pushed_at)

    assert image.image_pushed_at.tzinfo is UTC
    assert json.loads(ENTRIES.dump_json(image, by_alias=True))["imagePushedAt"] == expected
    assert ENTRIES.dump_python(image, mode="json", by_alias=True)["imagePushedAt"] == expected  # as workers store it
    assert ENTRIES.dump_python(image)["image_pushed_at"] == image.image_pushed_at  # Python mode: the datetime


def as_json(value: Any) -> str:
    return json.dumps(value.isoformat() if isinstance(value, datetime) else value)


@settings(max_examples=2_000, deadline=None)
@given(TIMESTAMPS.filter(lambda value: not isinstance(value, bytes)))
def test_json_is_read_and_refused_as_parse_timestamp_reads_it(value: Any) -> None:
    text = as_json(value)
    try:
        expected: datetime | None = TypeAdapter(PushedAt).validate_json(text)  # parse_timestamp, called for each
    except ValidationError:
        expected = None
    try:
        lean: datetime | None = TypeAdapter(LeanPushedAt).validate_json(text)
    except ValidationError:
        lean = None

    assert repr(lean) == repr(expected)  # the same instant, and the same tzinfo: datetime.UTC
    if lean is not None:
        assert lean.tzinfo is UTC


@pytest.mark.parametrize(
    ("pushed", "words"),
    [
        ("2026-11-30T06:00:00", "timestamp '2026-11-30T06:00:00' has no UTC offset; add one, such as Z or +00:00"),
        ("now", "invalid timestamp 'now': expected ISO 8601 or epoch seconds"),
        (None, "invalid timestamp None: expected ISO 8601 or epoch seconds"),
    ],
)
def test_a_stored_report_with_a_bad_push_time_is_worded_by_parse_timestamp(pushed: Any, words: str) -> None:
    stored = RepositoryReport(repository_name="app", outcome="ok", kept_images=(entry(0),)).model_dump(
        mode="json", by_alias=True
    )
    stored["keptImages"][0]["imagePushedAt"] = pushed

    with pytest.raises(InputError) as refused:
        repository_report_of(json.dumps(stored).encode(), "s3://inventory/runs/r/repositories/x.json")

    assert str(refused.value) == (
        f"s3://inventory/runs/r/repositories/x.json: unreadable repository report: keptImages[0].imagePushedAt: {words}"
    )


def test_a_stored_repository_report_reads_back_to_the_same_report_and_text() -> None:
    report = RepositoryReport(repository_name="app", outcome="ok", kept_images=(entry("2026-11-30T06:00:00.25+01:00"),))
    stored = json.dumps(report.model_dump(mode="json", by_alias=True))

    assert '"imagePushedAt": "2026-11-30T05:00:00.250000Z"' in stored
    assert repository_report_of(stored.encode(), "stored") == report
