"""The run report as a CSV sheet (docs/report.md#the-sheet): pure, from a RunReport (a plan is a dry run).

One row per image, every image of the report exactly once, its action one of the report's entry groups
(domain/report.py ENTRY_GROUPS: keep, delete, archive, cancelled, failed, restore: an in-use image found archived,
restored or, in dry run, that would be; restore-failed: ECR refused it), after a header row. RFC 4180 through the
csv module: fields separated by commas, quoted only when they hold a comma, a quote or a line break (a quote doubled
inside), records ended by CRLF. Values are the report's own, except that a cell a spreadsheet would read as a
formula (it starts with =, +, -, @, a tab or a carriage return: OWASP's list) is prefixed with a single quote, so
that opening the sheet never runs a value that came from a registry.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import cache
from operator import attrgetter
from typing import TextIO

from ecr_retention.domain.report import EntryGroup, ImageEntry, RepositoryReport, RunReport, grouped_entries

COLUMNS = ("repository", "digest", "tags", "pushed_at", "size_bytes", "action", "reason_kinds", "rule", "detail")
# Tags are space-separated (ECR tags hold no whitespace); reason kinds are joined with ";".
TAG_SEPARATOR = " "
KIND_SEPARATOR = ";"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
GUARD = "'"
MIN_FOUR_DIGIT_YEAR = 1000

Row = tuple[str, ...]
Cells = tuple[str, str, str]
ReasonCells = Callable[[tuple[str, ...], str, str | None, str, str | None], Cells]
_kind = attrgetter("kind")


def guarded(cell: str) -> str:
    """The cell as a spreadsheet shows it as text: a leading formula character gets a single quote before it."""
    return GUARD + cell if cell.startswith(FORMULA_STARTS) else cell


def reason_cells(kinds: tuple[str, ...], kind: str, rule: str | None, detail: str, error_code: str | None) -> Cells:
    """The reason kinds, the rule and the detail of an entry: every reason kind the plan gave (`kinds`), and what
    became of the removal (`kind`, `detail`, `error_code`)."""
    listed = list(kinds) or [kind]
    if kind not in listed:  # a cancellation or failure is what became of the removal: listed too
        listed.append(kind)
    shown = f"{error_code}: {detail}" if error_code else detail
    return KIND_SEPARATOR.join(dict.fromkeys(listed)), guarded(rule or ""), guarded(shown)


def pushed_at_cell(moment: datetime) -> str:
    """`2026-11-30T06:00:00Z`, formatted from the fields (strftime takes three times as long) where the two agree:
    from the year 1000 on (before it, how strftime writes a year is the platform's)."""
    if moment.year < MIN_FOUR_DIGIT_YEAR:
        return f"{moment:%Y-%m-%dT%H:%M:%SZ}"
    fields = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
    return "%d-%02d-%02dT%02d:%02d:%02dZ" % fields  # noqa: UP031 - one C call; an f-string formats field by field


def sheet_row(repository: str, action: str, entry: ImageEntry, reasons: ReasonCells = reason_cells) -> Row:
    """One image's cells, `repository` guarded already. The push time, the action and the reason kinds need no
    guard: they start with a digit or a letter. `reasons` words the last three cells (a run repeats a few dozen
    combinations of reasons over its images: the caller may word each once)."""
    size = entry.image_size_in_bytes
    return (
        repository,
        guarded(entry.image_digest),
        guarded(TAG_SEPARATOR.join(entry.image_tags)),
        pushed_at_cell(entry.image_pushed_at),
        "" if size is None else guarded(str(size)),
        action,
        *reasons(tuple(map(_kind, entry.reasons)), entry.kind, entry.rule, entry.detail, entry.error_code),
    )


def _digest(item: tuple[EntryGroup, ImageEntry]) -> str:
    return item[1].image_digest


def _pushed(item: tuple[EntryGroup, ImageEntry]) -> float:
    return item[1].image_pushed_at.timestamp()


def newest_first(repo: RepositoryReport) -> list[tuple[EntryGroup, ImageEntry]]:
    """The repository's entries with their groups, newest first, ties by digest (the plan's order of "newest"):
    sorted by digest, then by push time, which a stable sort does without a key tuple per entry."""
    entries = sorted(grouped_entries(repo), key=_digest)
    entries.sort(key=_pushed, reverse=True)  # reversed, a sort still keeps equal keys in their order
    return entries


def sheet_rows(report: RunReport) -> Iterator[Row]:
    """Repositories by name (as the report lists them), then images newest first, ties by digest."""
    reasons = cache(reason_cells)
    for repo in report.repositories:
        repository = guarded(repo.repository_name)
        for action, entry in newest_first(repo):
            yield sheet_row(repository, action, entry, reasons)


def write_sheet(report: RunReport, file: TextIO) -> None:
    writer = csv.writer(file, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(COLUMNS)
    writer.writerows(sheet_rows(report))


def render_sheet(report: RunReport) -> str:
    buffer = io.StringIO(newline="")
    write_sheet(report, buffer)
    return buffer.getvalue()


def sheet_bytes(report: RunReport) -> bytes:
    """The sheet encoded as it is written: never the whole sheet as text and then again as bytes."""
    buffer = io.BytesIO()
    with io.TextIOWrapper(buffer, encoding="utf-8", newline="") as text:
        write_sheet(report, text)
        text.flush()
        return buffer.getvalue()
