"""The image table's rows take shortcuts (rows.py): a clean digest's short form as it is, each group's text written
once, the age in words from its whole seconds. Each must write what the long way wrote, for hostile text too."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from ecr_retention.domain.durations import humanize_age, humanize_seconds
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.report_page.rows import digest_cells, escaped_text, group_text
from ecr_retention.report_page.text import INVISIBLE, visible
from ecr_retention.report_page.view import action_label
from tests.unit.report_page.reports import entry

DIGESTS = st.one_of(
    st.text("0123456789abcdef", min_size=64, max_size=64).map(lambda hex_digits: "sha256:" + hex_digits),
    st.text(st.sampled_from(["a", "1", ":", "&", "<", ">", "'", '"', "é", *INVISIBLE]), max_size=30),
    st.text(max_size=30),
)


@settings(max_examples=1_000, deadline=None)
@given(DIGESTS)
def test_a_digest_is_written_as_escaping_and_showing_it_would(digest: str) -> None:
    expected = (escaped_text(digest), escaped_text(visible(short_digest(digest, with_algorithm=True))))

    assert digest_cells(digest) == expected


@settings(max_examples=1_000, deadline=None)
@given(st.timedeltas(min_value=timedelta(days=-400), max_value=timedelta(days=40_000)))
def test_an_age_in_words_is_humanize_ages(age: timedelta) -> None:
    assert humanize_seconds(max(0, int(age.total_seconds()))) == humanize_age(age)


def test_only_a_restore_is_labelled_by_its_entry() -> None:
    image = entry("1")
    for action in ("delete", "archive", "failed", "cancelled", "keep"):
        shared = group_text("app", "eu-west-1", "app", action, action)
        assert shared.label == action == action_label(image, action, dry_run=True)
    assert group_text("app", "eu-west-1", "app", "restore", "restore").label is None
