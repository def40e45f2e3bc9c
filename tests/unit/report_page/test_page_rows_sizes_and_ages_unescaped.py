"""The image table writes an image's age and size in words as they are (rows.py): escaping would leave them as they
are, whatever the size (none, negative, huge) and the age, so the page is the one escaping them wrote."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape

from ecr_retention.domain.durations import humanize_seconds
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.report_page.rows import has_html_special


@settings(max_examples=2_000, deadline=None)
@given(st.none() | st.integers(min_value=-(2**70), max_value=2**70))
def test_a_size_in_words_holds_nothing_to_escape(size: int | None) -> None:
    text = human_bytes(size)

    assert not has_html_special(text)
    assert str(escape(text)) == text


@settings(max_examples=2_000, deadline=None)
@given(st.integers(min_value=0, max_value=10**12))
def test_an_age_in_words_holds_nothing_to_escape(seconds: int) -> None:
    text = humanize_seconds(seconds)

    assert not has_html_special(text)
    assert str(escape(text)) == text
