"""The README's commands table names every command with every option, and the docs stand on their own."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ecr_retention.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def subcommands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def table_row(command: str) -> str:
    rows = [line for line in README.splitlines() if re.match(rf"\| `ecr-retention {command}( [^`]*)?` \|", line)]
    assert len(rows) == 1, f"the commands table has {len(rows)} rows for {command}"
    return rows[0]


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_the_commands_table_lists_every_option_of(command: str) -> None:
    row = table_row(command)
    options = {
        option
        for action in subcommands()[command]._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
    assert {option for option in options if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", row)} == set()


def test_no_document_cites_files_outside_the_repository() -> None:
    documents = [ROOT / "README.md", ROOT / "retention.yaml", *sorted((ROOT / "docs").glob("*.md"))]
    cited = {
        f"{path.name}: {match}"
        for path in documents
        for match in re.findall(r"shared/\S+|\bseeds?\s+0\d\d", path.read_text(), flags=re.IGNORECASE)
    }
    assert cited == set()
