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
from collections.abc import Iterator
from typing import TextIO

from ecr_retention.domain.report import EntryGroup, ImageEntry, RepositoryReport, RunReport, grouped_entries

COLUMNS = ("repository", "digest", "tags", "pushed_at", "size_bytes", "action", "reason_kinds", "rule", "detail")
# Tags are space-separated (ECR tags hold no whitespace); reason kinds are joined with ";".
TAG_SEPARATOR = " "
KIND_SEPARATOR = ";"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
GUARD = "'"


def guarded(cell: str) -> str:
    """The cell as a spreadsheet shows it as text: a leading formula character gets a single quote before it."""
    return GUARD + cell if cell.startswith(FORMULA_STARTS) else cell


def reason_cells(entry: ImageEntry) -> tuple[str, str, str]:
    """The reason kinds, the rule and the detail: every reason the plan gave, and what became of the removal."""
    kinds = [reason.kind for reason in entry.reasons] or [entry.kind]
    if entry.kind not in kinds:  # a cancellation or failure is what became of the removal: listed too
        kinds.append(entry.kind)
    detail = f"{entry.error_code}: {entry.detail}" if entry.error_code else entry.detail
    return KIND_SEPARATOR.join(dict.fromkeys(kinds)), guarded(entry.rule or ""), guarded(detail)


def sheet_row(repository: str, action: str, entry: ImageEntry) -> tuple[str, ...]:
    """One image's cells, `repository` guarded already. The push time, the action and the reason kinds need no
    guard: they start with a digit or a letter."""
    size = entry.image_size_in_bytes
    return (
        repository,
        guarded(entry.image_digest),
        guarded(TAG_SEPARATOR.join(entry.image_tags)),
        f"{entry.image_pushed_at:%Y-%m-%dT%H:%M:%SZ}",
        "" if size is None else guarded(str(size)),
        action,
        *reason_cells(entry),
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


def sheet_rows(report: RunReport) -> Iterator[tuple[str, ...]]:
    """Repositories by name (as the report lists them), then images newest first, ties by digest."""
    for repo in report.repositories:
        repository = guarded(repo.repository_name)
        for action, entry in newest_first(repo):
            yield sheet_row(repository, action, entry)


def write_sheet(report: RunReport, file: TextIO) -> None:
    writer = csv.writer(file, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(COLUMNS)
    writer.writerows(sheet_rows(report))


def render_sheet(report: RunReport) -> str:
    buffer = io.StringIO(newline="")
    write_sheet(report, buffer)
    return buffer.getvalue()
