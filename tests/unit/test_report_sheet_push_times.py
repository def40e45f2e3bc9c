"""The sheet writes each day's part of a push time once and the time of day from a table (report_sheet.py
pushed_at_cells): every cell must still be what strftime writes, in any year, for the first push time of a day and
for every one after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from ecr_retention.report_sheet import pushed_at_cell, pushed_at_cells

MOMENTS = st.datetimes(timezones=st.just(UTC))


@given(st.lists(MOMENTS, max_size=20), st.lists(st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=30))))
def test_every_push_time_of_a_sheet_is_written_as_strftime_writes_it(
    moments: list[datetime], later: list[timedelta]
) -> None:
    cell = pushed_at_cells()
    # Some on days already written: the same instants again, and others some hours after the first.
    again = [*moments, *moments, *(moments[0] + step for step in later if moments and moments[0] + step > moments[0])]

    assert [cell(moment) for moment in again] == [f"{moment:%Y-%m-%dT%H:%M:%SZ}" for moment in again]


def test_the_first_years_and_the_last_are_written_as_pushed_at_cell_writes_them() -> None:
    cell = pushed_at_cells()
    for moment in (
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(1000, 1, 1, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 11, 30, 6, 0, tzinfo=UTC),
        datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    ):
        assert cell(moment) == pushed_at_cell(moment)
