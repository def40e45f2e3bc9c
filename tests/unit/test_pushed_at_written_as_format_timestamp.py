"""A report's per-image push time (ImageEntry.image_pushed_at, PushedAt) is written by pydantic's own encoder, not by
format_timestamp: the text must be format_timestamp's for every time the entry can hold, or the JSON report (and the
repository reports the workers store, which `restore --run` and the report step read back) would change."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.domain.timestamps import format_timestamp

ENTRIES = TypeAdapter(ImageEntry)
OFFSETS = st.integers(-23 * 60, 23 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
# Every time an entry can be given: aware datetimes in any offset (microseconds or none), their ISO text, epoch seconds.
INSTANTS = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.one_of(st.just(UTC), OFFSETS)
)
PUSHED = st.one_of(
    INSTANTS,
    INSTANTS.map(datetime.isoformat),
    INSTANTS.map(lambda moment: format_timestamp(moment)),
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


def test_a_stored_repository_report_reads_back_to_the_same_text() -> None:
    report = RepositoryReport(repository_name="app", outcome="ok", kept_images=(entry("2026-11-30T06:00:00.25+01:00"),))
    stored = json.dumps(report.model_dump(mode="json", by_alias=True))

    assert '"imagePushedAt": "2026-11-30T05:00:00.250000Z"' in stored
    assert RepositoryReport.model_validate_json(stored) == report
