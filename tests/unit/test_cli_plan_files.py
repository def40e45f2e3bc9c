"""`ecr-retention plan --format html|csv --out FILE`: the plan as the report of its dry run, in a file; wrong
arguments are one line and exit 2, the exit codes of the plan are unchanged."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from ecr_retention.cli import main
from ecr_retention.commands import report_files
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.report_sheet import COLUMNS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NOW = "2026-11-30T06:00:00Z"


def plan(*extra: str, config: Path = ROOT / "retention.yaml") -> int:
    return main(
        [
            "plan",
            "--config",
            str(config),
            "--snapshot",
            str(EXAMPLES / "snapshot.json"),
            "--manifests",
            str(EXAMPLES / "in-use"),
            "--now",
            NOW,
            *extra,
        ]
    )


def test_plan_csv_writes_one_row_per_image_of_the_plan_and_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_code = plan("--format", "json")  # 1: the examples hold a skipped repository
    document = capsys.readouterr().out
    out = tmp_path / "plan.csv"

    code = plan("--format", "csv", "--out", str(out))

    captured = capsys.readouterr()
    assert code == json_code == 1
    assert captured.out == ""
    assert captured.err == f"ecr-retention plan: wrote the sheet to {out}\n"
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"), newline="")))
    assert tuple(rows[0]) == COLUMNS
    planned = {
        (repo["repositoryName"], image["imageDigest"], image["action"])
        for repo in json.loads(document)["repositories"]
        for image in repo["images"]
    }
    assert {(row[0], row[1], row[5]) for row in rows[1:]} == planned
    assert len(rows) - 1 == len(planned)
    assert list(tmp_path.iterdir()) == [out]


def test_plan_html_writes_the_page_of_the_plan_as_a_dry_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[RunReport, StoragePrice]] = []

    def render_page(report: RunReport, price: StoragePrice) -> str:
        seen.append((report, price))
        return "<!DOCTYPE html><p>page</p>"

    monkeypatch.setattr("ecr_retention.report_page.render_page", render_page)
    out = tmp_path / "plan.html"
    out.write_text("an older page")

    assert plan("--format", "html", "--out", str(out)) == 1

    assert out.read_text() == "<!DOCTYPE html><p>page</p>"
    [(report, price)] = seen
    assert report.run_id == "plan-20261130T060000Z"
    assert (report.trigger, report.dry_run, report.outcome) == ("cli", True, "partial")
    assert report.manifests, "the manifests' evidence is on the page"
    assert price == StoragePrice.for_region(report.region)


def test_the_rules_file_price_is_the_pages_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prices: list[StoragePrice] = []
    monkeypatch.setattr(
        "ecr_retention.report_page.render_page", lambda report, price: prices.append(price) or "<html></html>"
    )
    rules = tmp_path / "retention.yaml"
    rules.write_text((ROOT / "retention.yaml").read_text() + "report:\n  storage_price_per_gb_month: 0.25\n")

    assert plan("--format", "html", "--out", str(tmp_path / "p.html"), config=rules) == 1

    assert [price.per_gb_month for price in prices] == [0.25]


def test_a_blocked_plan_still_writes_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "blocked.csv"
    code = main(
        [
            "plan",
            "--config",
            str(ROOT / "retention.yaml"),
            "--snapshot",
            str(EXAMPLES / "snapshot.json"),
            "--now",
            NOW,
            "--format",
            "csv",
            "--out",
            str(out),
        ]
    )
    assert code == 1
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"), newline="")))
    assert {row[5] for row in rows[1:]} == {"keep"}
    assert {row[6].split(";")[0] for row in rows[1:] if row[6] != "no-policy"} == {"blocked"}


BAD = {
    "html without --out": (["--format", "html"], "--format html needs --out FILE"),
    "csv without --out": (["--format", "csv"], "--format csv needs --out FILE"),
    "--out with table": (
        ["--out", "{tmp}/x.txt"],
        "--out is for --format html or csv; --format table prints to standard output",
    ),
    "--out with json": (
        ["--format", "json", "--out", "{tmp}/x.json"],
        "--out is for --format html or csv; --format json prints to standard output",
    ),
    "--out is a directory": (["--format", "csv", "--out", "{tmp}"], "--out: {tmp} is a directory"),
    "--out in a missing directory": (
        ["--format", "html", "--out", "{tmp}/missing/p.html"],
        "--out: directory {tmp}/missing does not exist",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_wrong_output_arguments_are_one_line_and_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments, message = BAD[case]
    code = plan(*(argument.format(tmp=tmp_path) for argument in arguments))
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err == f"ecr-retention plan: error: {message.format(tmp=tmp_path)}\n"
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_format_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        plan("--format", "xml")
    assert stopped.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "invalid choice: 'xml'" in line


def test_a_file_that_cannot_be_written_leaves_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(source: object, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(report_files.os, "replace", refuse)
    out = tmp_path / "plan.csv"

    assert plan("--format", "csv", "--out", str(out)) == 2

    assert capsys.readouterr().err == f"ecr-retention plan: error: --out: cannot write {out}: Permission denied\n"
    assert list(tmp_path.iterdir()) == []
