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

from ecr_retention.domain.report import ImageEntry, RunReport, grouped_entries

COLUMNS = ("repository", "digest", "tags", "pushed_at", "size_bytes", "action", "reason_kinds", "rule", "detail")
# Tags are space-separated (ECR tags hold no whitespace); reason kinds are joined with ";".
TAG_SEPARATOR = " "
KIND_SEPARATOR = ";"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
GUARD = "'"


def guarded(cell: str) -> str:
    """The cell as a spreadsheet shows it as text: a leading formula character gets a single quote before it."""
    return GUARD + cell if cell.startswith(FORMULA_STARTS) else cell


def sheet_row(repository: str, action: str, entry: ImageEntry) -> tuple[str, ...]:
    kinds = [reason.kind for reason in entry.reasons] or [entry.kind]
    if entry.kind not in kinds:  # a cancellation or failure is what became of the removal: listed too
        kinds.append(entry.kind)
    detail = f"{entry.error_code}: {entry.detail}" if entry.error_code else entry.detail
    return (
        repository,
        entry.image_digest,
        TAG_SEPARATOR.join(entry.image_tags),
        f"{entry.image_pushed_at:%Y-%m-%dT%H:%M:%SZ}",
        "" if entry.image_size_in_bytes is None else str(entry.image_size_in_bytes),
        action,
        KIND_SEPARATOR.join(dict.fromkeys(kinds)),
        entry.rule or "",
        detail,
    )


def sheet_rows(report: RunReport) -> Iterator[tuple[str, ...]]:
    """Repositories by name (as the report lists them), then images newest first, ties by digest (the plan's order
    of "newest")."""
    for repo in report.repositories:
        ordered = sorted(
            grouped_entries(repo), key=lambda item: (-item[1].image_pushed_at.timestamp(), item[1].image_digest)
        )
        for action, entry in ordered:
            yield sheet_row(repo.repository_name, action, entry)


def render_sheet(report: RunReport) -> str:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(COLUMNS)
    writer.writerows(tuple(guarded(cell) for cell in row) for row in sheet_rows(report))
    return buffer.getvalue()
