"""Golden files: outputs recorded from the code as it was, compared byte for byte on every run.

`check_golden(path, text)` compares `text` with the recorded file and fails with a unified diff of the first
differences. With UPDATE_GOLDEN=1 in the environment it (re)writes the file instead, so a deliberate change of
behaviour is recorded by running the golden tests once with it and reviewing `git diff tests/golden/`.

`digest_summary(text)` turns a large JSON document into a small, reviewable one: the sha256 and size of the
exact bytes, every small value as it is, and for each large list of records (a plan's or a report's
repositories, their images) the record's scalar fields with a sha256 of the rest, so that a difference still
points at the repository it is in.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
GOLDEN_DATA = Path(__file__).resolve().parents[1] / "golden" / "data"
LARGE = 2_000  # characters of compact JSON above which a list is summarized
DIFF_LINES = 80

# A run id's random part: 20261130T060000Z-schedule-1a2b3c4d, tag-20261130T060000Z-1a2b3c4d.
RUN_ID_UUID = re.compile(r"(\d{8}T\d{6}Z-(?:[a-z]+-)?)[0-9a-f]{8}\b")


def normalize_run_ids(text: str) -> str:
    return RUN_ID_UUID.sub(r"\1<uuid>", text)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check_golden(path: Path, actual: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as file:
            file.write(actual)
        return
    if not path.exists():
        pytest.fail(f"{path} is not recorded: run the golden tests once with UPDATE_GOLDEN=1")
    with path.open(encoding="utf-8", newline="") as file:
        expected = file.read()
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"{path.name} (recorded)",
            tofile=f"{path.name} (now)",
        )
        shown = "".join(line for _, line in zip(range(DIFF_LINES), diff, strict=False))
        pytest.fail(
            f"output differs from the golden file {path} (UPDATE_GOLDEN=1 re-records it, deliberately):\n{shown}",
            pytrace=False,
        )


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _summarize(value: Any, *, records: bool = True) -> Any:
    """Small values as they are; a large list as its count and sha256, and (one level deep: the repositories,
    not their images) each of its records with its large fields summarized the same way."""
    if isinstance(value, dict):
        return {key: _summarize(item, records=records) for key, item in value.items()}
    if isinstance(value, list) and len(_compact(value)) > LARGE:
        summary: dict[str, Any] = {"count": len(value), "sha256": sha256(_compact(value))}
        if records and all(isinstance(item, dict) for item in value):
            summary["items"] = [_summarize(item, records=False) for item in value]
        return summary
    return value


def digest_summary(text: str) -> str:
    """A reviewable stand-in for a large JSON document (see the module's docstring)."""
    document = json.loads(text)
    summary = {"bytes": len(text.encode()), "sha256": sha256(text), "document": _summarize(document)}
    return json.dumps(summary, indent=1) + "\n"
