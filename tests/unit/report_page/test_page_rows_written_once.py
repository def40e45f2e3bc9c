"""The image table's rows write a row's reasons once for every row that gives the same one reason, and its age in
words and its size without escaping them (rows.py). Each row must still be what escaping every cell the template's
way writes, for hostile text too: the long way is written out here, from markupsafe and the view's wording alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape

from ecr_retention.domain.durations import humanize_seconds
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.planning.reasons import ReasonKind
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.reporting.report import ImageEntry
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.report_page.rows import HTML_SPECIAL, ReasonsCell, escaped_str, image_rows
from ecr_retention.report_page.text import INVISIBLE, visible
from ecr_retention.report_page.view import action_label, reason_text, reasons_of, table_entries
from tests.unit.report_page.reports import STARTED, repo, run

KINDS: tuple[ReasonKind, ...] = ("delete-rule", "keep-rule", "in-use", "min-age", "restore-failed", "tag-changed")
TEXT = st.text(st.sampled_from(["a", " ", ",", "=", *HTML_SPECIAL, "é", *INVISIBLE[:3]]), max_size=8)
REASONS = st.builds(Reason, kind=st.sampled_from(KINDS), rule=st.none() | TEXT, detail=TEXT)
# By the names ImageEntry's signature gives (its aliases): builds() draws a parameter of that signature it is not given
# from its type, and pydantic reads an alias before a field's name.
ENTRIES = st.builds(
    ImageEntry,
    imageDigest=st.sampled_from(["sha256:" + "ab" * 32, "sha256:<x>", "sha512:é" + "1" * 20, ""]),
    imageTags=st.lists(TEXT, max_size=2).map(tuple),
    imagePushedAt=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)),
    imageSizeInBytes=st.none() | st.integers(min_value=-(2**10), max_value=2**60),
    kind=st.sampled_from(KINDS),
    rule=st.none() | TEXT,
    detail=TEXT,
    errorCode=st.none() | TEXT,
    reasons=st.lists(REASONS, max_size=3).map(tuple),
)
LISTS = ("kept_images", "deleted", "archived", "cancelled", "failed", "restored", "restore_failed")


def cell(value: object) -> str:
    return str(escape(value))


def reasons_the_long_way(entry: ImageEntry, action: str) -> str:
    return "".join(
        f"<p><b>{cell(r.kind)}</b>{f' <i>{cell(r.rule)}</i>' if r.rule else ''} {cell(r.detail)}</p>"
        for r in reasons_of(entry, action, reason_text)
    )


def rows_the_long_way(report: RunReport) -> list[str]:
    """Every cell escaped as the template's autoescaping escapes it, nothing written once for many rows."""
    rows = []
    for repository in report.repositories:
        at = repository.evaluated_at or report.started_at
        name, region = cell(repository.repository_name), cell(report.region_of(repository) or "unknown")
        for action, entries in table_entries(repository):
            for entry in entries:
                digest, size = cell(entry.image_digest), entry.image_size_in_bytes
                age = max(0, int((at - entry.image_pushed_at).total_seconds()))
                rows.append(
                    f'<tr class="image {cell(action)}" data-repository="{name}" data-region="{region}" '
                    f'data-digest="{digest}" data-action="{cell(action)}" data-age-seconds="{age}" '
                    f'data-size="{"" if size is None else size}">'
                    f"<td>{cell(visible(repository.repository_name))}</td>"
                    f'<td title="{digest}">{cell(visible(short_digest(entry.image_digest, with_algorithm=True)))}</td>'
                    f"<td>{cell(visible(', '.join(entry.image_tags)))}</td><td>{cell(humanize_seconds(age))}</td>"
                    f"<td>{cell(human_bytes(size))}</td><td>{cell(action_label(entry, action, report.dry_run))}</td>"
                    f"<td>{reasons_the_long_way(entry, action)}</td></tr>\n"
                )
    return rows


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LISTS), ENTRIES), max_size=12), st.booleans())
def test_every_row_is_what_escaping_every_cell_writes(placed: list[tuple[str, ImageEntry]], dry_run: bool) -> None:
    lists: dict[str, list[ImageEntry]] = {name: [] for name in LISTS}
    for name, entry in placed:
        lists[name].append(entry)
    report = run(repo("team/<a>", **lists), repo("app", kept_images=[e for _, e in placed]), dry_run=dry_run)

    assert list(image_rows(report)) == rows_the_long_way(report)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(ENTRIES, st.sampled_from(["keep", "delete", "archive", "cancelled", "failed", "restore"]))))
def test_a_reasons_cell_is_the_same_whether_written_first_or_found_again(rows: list[tuple[ImageEntry, str]]) -> None:
    reasons_cell = ReasonsCell(cache(escaped_str))

    for entry, action in [*rows, *rows]:
        assert reasons_cell(entry, action) == reasons_the_long_way(entry, action)


def test_rows_of_one_reason_share_its_cell_and_others_name_what_became_of_the_removal() -> None:
    reason = Reason(kind="delete-rule", rule="policies[0].rules[1]", detail="delete <old>")
    failed = ImageEntry(
        image_digest="sha256:" + "1" * 64,
        image_tags=(),
        image_pushed_at=STARTED - timedelta(days=3),
        kind="delete-failed",
        detail="ECR refused",
        error_code="KmsError",
        reasons=(reason,),
    )
    reasons_cell = ReasonsCell(cache(escaped_str))

    shared = reasons_cell(failed, "delete")
    assert reasons_cell(failed, "archive") is shared
    assert shared == "<p><b>delete-rule</b> <i>policies[0].rules[1]</i> delete &lt;old&gt;</p>"
    assert reasons_cell(failed, "failed") == "<p><b>delete-failed</b> KmsError: ECR refused</p>" + shared


@given(st.none() | st.integers(min_value=-(2**80), max_value=2**80))
def test_a_size_in_words_holds_nothing_to_escape(size: int | None) -> None:
    assert escape(human_bytes(size)) == human_bytes(size)


@given(st.integers(min_value=0, max_value=10**12))
def test_an_age_in_words_holds_nothing_to_escape(seconds: int) -> None:
    assert escape(humanize_seconds(seconds)) == humanize_seconds(seconds)
