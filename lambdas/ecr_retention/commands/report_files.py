"""`--format html|csv --out FILE` of `plan` and `run`: the run report's page or sheet, written to a file.

`table` and `json` print to standard output and take no --out; `html` and `csv` need it. The arguments are checked
before anything else runs (a `run` deletes nothing when they are wrong). The file is written beside its final name
and then renamed over it, so a reader never sees half a page; its path goes to standard error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.loading import InputPaths, check_not_an_input, check_replaceable, open_beside
from ecr_retention.tables import printable

FORMATS = ("table", "json", "html", "csv")
FILE_FORMATS = ("html", "csv")


def add_format_arguments(parser: Any) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table or json on standard output; html (the page) or csv (the sheet) into --out",
    )
    parser.add_argument("--out", metavar="FILE", help="where --format html or csv writes (replaced if it exists)")


def output_file(
    args: argparse.Namespace, *, inputs: InputPaths, input_directories: InputPaths | None = None
) -> Path | None:
    """The file --format html|csv writes, checked, never one of the command's `inputs` (or a file in one of its
    `input_directories`); None for table and json. Raises InputError (exit 2)."""
    if args.format not in FILE_FORMATS:
        if args.out is not None:
            raise InputError(f"--out is for --format html or csv; --format {args.format} prints to standard output")
        return None
    if args.out is None:
        raise InputError(f"--format {args.format} needs --out FILE")
    path = Path(args.out)
    if path.is_dir():
        raise InputError(f"--out: {path} is a directory")
    check_replaceable(path, "--out")
    if not path.parent.is_dir():
        raise InputError(f"--out: directory {path.parent} does not exist")
    check_not_an_input(path, "--out", files=inputs, directories=input_directories)
    return path


def render(report: RunReport, config: RetentionConfig, output: str) -> str:
    price = StoragePrice.for_region(report.region, config.report.storage_price_per_gb_month)
    if output == "html":
        from ecr_retention.report_page import render_page  # Jinja2 loads only when a page is asked for

        return render_page(report, price)
    from ecr_retention.report_sheet import render_sheet

    return render_sheet(report)


def write_report_file(path: Path, report: RunReport, config: RetentionConfig, output: str, command: str) -> None:
    """Render, write beside `path`, rename over it; then one line on standard error naming the file."""
    text = render(report, config, output)
    # Beside the final name (a rename within one directory is atomic), created as open() creates files (umask).
    try:
        descriptor, temporary = open_beside(path)
    except OSError as error:
        raise InputError(f"--out: cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as file:
            file.write(text)
        check_replaceable(path, "--out")  # again: a run takes minutes, and the name may hold something else now
        os.replace(temporary, path)
    except OSError as error:
        raise InputError(f"--out: cannot write {path}: {error.strerror or error}") from None
    finally:
        temporary.unlink(missing_ok=True)  # gone already when the rename happened
    what = "page" if output == "html" else "sheet"
    print(printable(f"ecr-retention {command}: wrote the {what} to {path.resolve()}"), file=sys.stderr)
