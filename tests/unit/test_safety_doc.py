"""docs/safety.md maps every invariant to the tests that prove it: each `tests/...py::name` it cites must name a
test function (or a method, `::Class::name`) that exists, so the map cannot rot when tests are renamed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"(tests/[\w/]+\.py)::([\w:]+)")


def defined_tests(path: Path) -> set[str]:
    """`name` for module-level tests and `Class::name` for methods."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.update(
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test_")
            )
    return names


def test_every_test_docs_safety_cites_exists() -> None:
    citations = CITATION.findall((ROOT / "docs" / "safety.md").read_text(encoding="utf-8"))
    assert len(citations) > 50
    missing = [
        f"{path}::{name}"
        for path, name in sorted(set(citations))
        if not (ROOT / path).is_file() or name not in defined_tests(ROOT / path)
    ]
    assert missing == []
