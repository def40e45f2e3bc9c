"""The image table's rows, computed and written here in one pass over the report rather than by the template: the
table is the one part of the page that grows with the run (100,000 rows for as many images), and a row through
Jinja costs an escaped Markup object per cell (16 for a row), most of a second at that size. The figures are the
view's (view.py: the age, the action's label, the reasons); this module writes the tags the template wrote.

Each value is escaped exactly once, by markupsafe's escape, as the template's autoescaping would escape it; a value
that many rows repeat (a repository, an action, the reasons) is escaped once for all of them, and an image's own text
(its digest, its tags) only when it holds a character to escape. An age and a size in words (`3d`, `19.1 MiB`) are
digits, letters, a point and a space, which escaping leaves as they are: they are written as they are. The rows come
in chunks of many, each one Markup for the template to pass through, so that the page streams in pieces of a useful
size."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from itertools import islice

from markupsafe import Markup, escape

from ecr_retention.domain.durations import humanize_seconds
from ecr_retention.domain.registry.digests import SHORT_DIGEST_WITH_ALGORITHM, short_digest
from ecr_retention.domain.reporting.report import ImageEntry
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.report_page.text import visible
from ecr_retention.report_page.view import (
    OUTCOME_ACTIONS,
    ReasonText,
    action_label,
    reason_text,
    reasons_of,
    table_entries,
)

ROWS_PER_CHUNK = 500
# What markupsafe's escape replaces (tests/unit/report_page/test_page_rows.py holds it to that): text without any
# of them escapes to itself.
HTML_SPECIAL = "&<>'\""

Escaped = Callable[[object], str]


def escaped_str(value: object) -> str:
    """escape(value) as plain text: a row is built by an f-string, which would format each Markup piece again."""
    return str(escape(value))


def escaped_text(text: str) -> str:
    """escaped_str(text), or the text itself when it has nothing to escape: most digests and tags, each of which
    would otherwise cost a Markup object (a third of a row's time)."""
    return escaped_str(text) if has_html_special(text) else text


def has_html_special(text: str) -> bool:
    # Five searches of the text: a fifth of a regular expression's time, and half of any() over a generator's.
    for char in HTML_SPECIAL:  # noqa: SIM110
        if char in text:
            return True
    return False


def digest_cells(digest: str) -> tuple[str, str]:
    """The digest as its attributes write it, and its short form as its cell shows it. A digest (sha256:<hex>)
    holds nothing to escape or to show, nor then does its prefix, which is taken as it is."""
    if digest.isascii() and not has_html_special(digest):
        return digest, digest[:SHORT_DIGEST_WITH_ALGORITHM]
    return escaped_text(digest), escaped_text(visible(short_digest(digest, with_algorithm=True)))


def reason_html(reason: ReasonText, escaped: Escaped) -> str:
    rule = f" <i>{escaped(reason.rule)}</i>" if reason.rule else ""
    return f"<p><b>{escaped(reason.kind)}</b>{rule} {escaped(reason.detail)}</p>"


@dataclass(frozen=True, slots=True)
class GroupText:
    """What the rows of one repository's entries of one action share, escaped once: the text before the digest,
    between it and the age, and between the size and the digest again; the action's label, unless it is the entry's
    own (action_label: a restore's)."""

    opening: str
    acting: str
    naming: str
    label: str | None


def group_text(repository: str, region: str, label: str, shown: str, action: str) -> GroupText:
    return GroupText(
        opening=f'<tr class="image {shown}" data-repository="{repository}" data-region="{region}" data-digest="',
        acting=f'" data-action="{shown}" data-age-seconds="',
        naming=f'"><td>{label}</td><td title="',
        label=None if action == "restore" else shown,
    )


class ReasonsCell:
    """The reasons' cell of an image's row. Most rows give one reason, of a few dozen a run repeats, and say nothing
    of what became of a removal: each of those cells is written once, looked up by the reason's kind, rule and detail.
    Any other row's reasons are worded by reasons_of, each distinct reason once."""

    def __init__(self, escaped: Escaped) -> None:
        self._escaped = escaped
        self._text_of = cache(reason_text)
        self._by_reason: dict[tuple[str, str | None, str], str] = {}
        self.html = cache(self._html)

    def __call__(self, entry: ImageEntry, action: str) -> str:
        given = entry.reasons
        if len(given) != 1 or action in OUTCOME_ACTIONS or entry.kind == "restore-failed":
            return self.html(reasons_of(entry, action, self._text_of))
        reason = given[0]
        key = (reason.kind, reason.rule, reason.detail)
        cell = self._by_reason.get(key)
        if cell is None:
            cell = self._by_reason[key] = self.html((self._text_of(*key),))
        return cell

    def _html(self, reasons: tuple[ReasonText, ...]) -> str:
        return "".join(reason_html(reason, self._escaped) for reason in reasons)


def image_rows(report: RunReport) -> Iterator[str]:
    """Each image's row as the template wrote it, ended by its line break, repository by repository in the table's
    order. The age in words and the size are written as they are: neither holds a character to escape."""
    escaped: Escaped = cache(escaped_str)
    reasons_cell = ReasonsCell(escaped)
    dry_run = report.dry_run
    for repo in report.repositories:
        at = repo.evaluated_at or report.started_at
        repository, label = escaped(repo.repository_name), escaped(visible(repo.repository_name))
        region = escaped(report.region_of(repo) or "unknown")
        for action, entries in table_entries(repo):
            shared = group_text(repository, region, label, escaped(action), action)
            for entry in entries:
                digest, short = digest_cells(entry.image_digest)
                age = max(0, int((at - entry.image_pushed_at).total_seconds()))  # at its evaluation, none below 0
                size = entry.image_size_in_bytes
                yield (
                    f'{shared.opening}{digest}{shared.acting}{age}" data-size="{"" if size is None else size}'
                    f'{shared.naming}{digest}">{short}</td>'
                    f"<td>{escaped_text(visible(', '.join(entry.image_tags)))}</td><td>{humanize_seconds(age)}</td>"
                    f"<td>{human_bytes(size)}</td>"
                    f"<td>{shared.label or escaped(action_label(entry, action, dry_run))}</td>"
                    f"<td>{reasons_cell(entry, action)}</td></tr>\n"
                )


def table_rows(report: RunReport) -> Iterator[Markup]:
    """The rows' HTML in chunks of ROWS_PER_CHUNK rows, each chunk safe markup."""
    rows = image_rows(report)
    while chunk := "".join(islice(rows, ROWS_PER_CHUNK)):
        yield Markup(chunk)
