"""The image table's rows as HTML, written here rather than by the template: a large run's table has 100,000 rows,
and a row through Jinja costs an escaped Markup object per cell (16 for a row), most of a second at that size.

Each value is escaped exactly once, by markupsafe's escape, as the template's autoescaping would escape it; a value
that many rows repeat (a repository, an action, an age, a size, a reason) is escaped once for all of them, and an
image's own text (its digest, its tags) only when it holds a character to escape. The rows come in chunks of many,
each one Markup for the template to pass through, so that the page streams in pieces of a useful size."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import cache
from itertools import islice

from markupsafe import Markup, escape

from ecr_retention.report_page.view import ImageRow, ReasonText

ROWS_PER_CHUNK = 500
# What markupsafe's escape replaces (tests/unit/report_page/test_page_rows.py holds it to that): text without any
# of them escapes to itself.
HTML_SPECIAL = "&<>'\""

Escaped = Callable[[object], Markup]


def escaped_text(text: str) -> str:
    """escape(text), or the text itself when it has nothing to escape: most digests and tags, each of which would
    otherwise cost a Markup object (a third of a row's time)."""
    for char in HTML_SPECIAL:  # five searches of the text: a fifth of a regular expression's time
        if char in text:
            return escape(text)
    return text


def reason_html(reason: ReasonText, escaped: Escaped) -> str:
    rule = f" <i>{escaped(reason.rule)}</i>" if reason.rule else ""
    return f"<p><b>{escaped(reason.kind)}</b>{rule} {escaped(reason.detail)}</p>"


def row_html(row: ImageRow, escaped: Escaped, reasons: Callable[[tuple[ReasonText, ...]], str]) -> str:
    """A row as the template wrote it, ended by its line break. The digest and the tags are the image's own (escaped
    here); the rest repeats from row to row (escaped once, through `escaped`). Joined, not formatted: an f-string
    formats each Markup piece again, twice the time."""
    digest = escaped_text(row.digest)
    repository, action = escaped(row.repository), escaped(row.action)
    return "".join(
        (
            '<tr class="image ',
            action,
            '" data-repository="',
            repository,
            '" data-digest="',
            digest,
            '" data-action="',
            action,
            '" data-age-seconds="',
            str(row.age_seconds),
            '" data-size="',
            "" if row.size is None else str(row.size),
            '"><td>',
            escaped(row.repository_label),
            '</td><td title="',
            digest,
            '">',
            escaped_text(row.short_digest),
            "</td><td>",
            escaped_text(row.tags),
            "</td><td>",
            escaped(row.age),
            "</td><td>",
            escaped(row.size_text),
            "</td><td>",
            escaped(row.action_label),
            "</td><td>",
            reasons(row.reasons),
            "</td></tr>\n",
        )
    )


def table_rows(rows: Iterable[ImageRow]) -> Iterator[Markup]:
    """The rows' HTML in chunks of ROWS_PER_CHUNK rows, each chunk safe markup."""
    escaped: Escaped = cache(escape)

    @cache
    def reasons(texts: tuple[ReasonText, ...]) -> str:
        return "".join(reason_html(reason, escaped) for reason in texts)

    remaining = iter(rows)
    while chunk := [row_html(row, escaped, reasons) for row in islice(remaining, ROWS_PER_CHUNK)]:
        yield Markup("".join(chunk))
