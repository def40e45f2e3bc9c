"""The run report as a CSV sheet (docs/report.md#the-sheet): pure, from a RunReport (a plan is a dry run).

One row per image, every image of the report exactly once, its action one of the report's entry groups
(domain/reporting/report.py ENTRY_GROUPS: keep, delete, archive, cancelled, failed, restore: an in-use image found archived,
restored or, in dry run, that would be; restore-failed: ECR refused it), after a header row; then one row per in-use
reference the next pull cannot get (action and kind `in-use-missing`: not an image, the finding of SPEC "The
sentinel"). RFC 4180 as the csv
module writes it: fields separated by commas, quoted only when they hold a comma, a quote or a line break (a quote
doubled inside), records ended by CRLF. Values are the report's own, except that a cell a spreadsheet would read as a
formula (it starts with =, +, -, @, a tab or a carriage return: OWASP's list) is prefixed with a single quote, so
that opening the sheet never runs a value that came from a registry.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from datetime import date, datetime
from functools import cache
from itertools import islice
from operator import attrgetter

from ecr_retention.domain.in_use.references import IN_USE_MISSING, MissingReference
from ecr_retention.domain.reporting.report import EntryGroup, ImageEntry, RepositoryReport, grouped_entries
from ecr_retention.domain.reporting.run_report import RunReport

# `region` last: added with several Regions, after the columns consumers already read by position.
COLUMNS = (
    "repository",
    "digest",
    "tags",
    "pushed_at",
    "size_bytes",
    "action",
    "reason_kinds",
    "rule",
    "detail",
    "region",
)
# Tags are space-separated (ECR tags hold no whitespace); reason kinds are joined with ";".
TAG_SEPARATOR = " "
KIND_SEPARATOR = ";"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
GUARD = "'"
MIN_FOUR_DIGIT_YEAR = 1000
DELIMITER = ","
LINE_END = "\r\n"
RECORDS_PER_CHUNK = 2000

Row = tuple[str, ...]
ReasonText = Callable[[tuple[str, ...], str, str | None, str, str | None], str]
_kind = attrgetter("kind")


def guarded(cell: str) -> str:
    """The cell as a spreadsheet shows it as text: a leading formula character gets a single quote before it."""
    return GUARD + cell if cell.startswith(FORMULA_STARTS) else cell


def reason_cells(kinds: tuple[str, ...], kind: str, rule: str | None, detail: str, error_code: str | None) -> Row:
    """The reason kinds, the rule and the detail of an entry: every reason kind the plan gave (`kinds`), and what
    became of the removal (`kind`, `detail`, `error_code`)."""
    listed = list(kinds) or [kind]
    if kind not in listed:  # a cancellation or failure is what became of the removal: listed too
        listed.append(kind)
    shown = f"{error_code}: {detail}" if error_code else detail
    return KIND_SEPARATOR.join(dict.fromkeys(listed)), guarded(rule or ""), guarded(shown)


def reason_text(kinds: tuple[str, ...], kind: str, rule: str | None, detail: str, error_code: str | None) -> str:
    return csv_text(reason_cells(kinds, kind, rule, detail, error_code))


def pushed_at_cell(moment: datetime) -> str:
    """`2026-11-30T06:00:00Z`, formatted from the fields (strftime takes three times as long) where the two agree:
    from the year 1000 on (before it, how strftime writes a year is the platform's)."""
    if moment.year < MIN_FOUR_DIGIT_YEAR:
        return f"{moment:%Y-%m-%dT%H:%M:%SZ}"
    fields = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
    return "%d-%02d-%02dT%02d:%02d:%02dZ" % fields  # noqa: UP031 - one C call; an f-string formats field by field


# "HH:MM:SSZ", the end of every push time's cell, whatever its year; and each of its two-digit numbers as written.
TIME_OF_DAY_LENGTH = len("00:00:00Z")
TWO_DIGITS = tuple(f"{number:02d}" for number in range(60))


def pushed_at_cells() -> Callable[[datetime], str]:
    """pushed_at_cell for the push times of one sheet: a run's images were pushed on a few hundred days, so each day's
    part of the cell (`2026-11-30T`) is written once, and the time of day after it from a table of two-digit numbers
    (formatting the three numbers took most of a record's time)."""
    days: dict[date, str] = {}

    def cell(moment: datetime) -> str:
        day = days.get(moment.date())
        if day is None:
            day = days[moment.date()] = pushed_at_cell(moment)[:-TIME_OF_DAY_LENGTH]
        return f"{day}{TWO_DIGITS[moment.hour]}:{TWO_DIGITS[moment.minute]}:{TWO_DIGITS[moment.second]}Z"

    return cell


def csv_text(cells: Row) -> str:
    """Cells as the csv module writes them in a record of more than one cell, without the line end. Cells none of
    which holds a comma, a quote or a line break (what the module quotes) are written by the module as they are,
    joined by commas: joined here, for the module looks up every character of every cell (three quarters of the
    sheet's time). Any others are the module's to write."""
    line = DELIMITER.join(cells)
    if line.count(DELIMITER) == len(cells) - 1 and '"' not in line and "\r" not in line and "\n" not in line:
        return line
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator=LINE_END, quoting=csv.QUOTE_MINIMAL).writerow(cells)
    return buffer.getvalue().removesuffix(LINE_END)


def image_record(
    repository: str,
    action: str,
    entry: ImageEntry,
    reasons: ReasonText = reason_text,
    region: str = "",
    pushed_at: Callable[[datetime], str] = pushed_at_cell,
) -> str:
    """One image's record, `repository` and `region` (its cell as written) guarded already. The push time, the action
    and the reason kinds need no guard: they start with a digit or a letter. `reasons` writes the last three cells (a
    run repeats a few dozen combinations of reasons over its images: the caller may write each once), `pushed_at` the
    push time's (pushed_at_cells: each day's part once)."""
    size = entry.image_size_in_bytes
    cells = (
        repository,
        guarded(entry.image_digest),
        guarded(TAG_SEPARATOR.join(entry.image_tags)),
        pushed_at(entry.image_pushed_at),
        "" if size is None else guarded(str(size)),
        action,
    )
    given = entry.reasons
    kinds = (given[0].kind,) if len(given) == 1 else tuple(map(_kind, given))  # most images: one, without iterators
    last = reasons(kinds, entry.kind, entry.rule, entry.detail, entry.error_code)
    return csv_text(cells) + DELIMITER + last + DELIMITER + region + LINE_END


def _newest_first(item: tuple[EntryGroup, ImageEntry]) -> tuple[float, str]:
    return -item[1].image_pushed_at.timestamp(), item[1].image_digest


def newest_first(repo: RepositoryReport) -> list[tuple[EntryGroup, ImageEntry]]:
    """The repository's entries with their groups, newest first, ties by digest (the plan's order of "newest")."""
    return sorted(grouped_entries(repo), key=_newest_first)


def records(report: RunReport) -> Iterator[str]:
    """The header's record, then the images': repositories by name (as the report lists them), then images newest
    first, ties by digest."""
    yield csv_text(COLUMNS) + LINE_END
    reasons, pushed_at = cache(reason_text), pushed_at_cells()
    for repo in report.repositories:
        repository = guarded(repo.repository_name)
        region = csv_text((guarded(report.region_of(repo) or ""), ""))[:-1]  # one cell, as csv writes it
        for action, entry in newest_first(repo):
            yield image_record(repository, action, entry, reasons, region, pushed_at)
    for found in report.in_use_missing:
        yield missing_record(found)


def missing_record(found: MissingReference) -> str:
    """An in-use reference the next pull cannot get: not an image of the registry (it is gone), so no push time or
    size; its digest is the reference's own, or what the clusters resolved its tag to (space-separated)."""
    digest = found.image_digest or TAG_SEPARATOR.join(found.resolved_digests)
    cells = (
        guarded(found.repository_name),
        guarded(digest),
        guarded(found.image_tag or ""),
        "",
        "",
        IN_USE_MISSING,
        IN_USE_MISSING,
        "",
        guarded(found.detail),
        guarded(found.region or ""),  # named when the run prunes several Regions, as the finding's detail names it
    )
    return csv_text(cells) + LINE_END


def render_sheet(report: RunReport) -> str:
    return "".join(records(report))


def sheet_bytes(report: RunReport) -> bytes:
    """The sheet encoded as it is written, many records at a time: never the whole sheet as text and then again as
    bytes."""
    buffer, lines = io.BytesIO(), records(report)
    while chunk := "".join(islice(lines, RECORDS_PER_CHUNK)):
        buffer.write(chunk.encode("utf-8"))
    return buffer.getvalue()
