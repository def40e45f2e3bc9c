"""The complexity gate (issue 36): any block of the product package above 8 fails, closures and methods included."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import complexity_gate

SIMPLE = "def simple(x):\n    return x + 1\n"

# Nine decisions: complexity 10.
BRANCHES = "".join(f"    if x == {n}:\n        return {n}\n" for n in range(9))
OVER = f"def tangled(x):\n{BRANCHES}    return -1\n"
OVER_METHOD = "class Holder:\n    def method(self, x):\n" + BRANCHES.replace("    ", "        ") + "        return -1\n"
OVER_CLOSURE = (
    "def outer():\n    def inner(x):\n" + BRANCHES.replace("    ", "        ") + "        return -1\n    return inner\n"
)


def _gate(tmp_path: Path, source: str, *extra: str) -> int:
    module = tmp_path / "module.py"
    module.write_text(source)
    return complexity_gate.main([*extra, str(tmp_path)])


def test_a_simple_function_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _gate(tmp_path, SIMPLE) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("source", "name", "line"),
    [(OVER, "tangled", 1), (OVER_METHOD, "Holder.method", 2), (OVER_CLOSURE, "outer.inner", 2)],
)
def test_an_over_complex_block_fails_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, name: str, line: int
) -> None:
    assert _gate(tmp_path, source) == 1
    assert capsys.readouterr().out == f"{tmp_path}/module.py:{line} {name} complexity 10 > 8\n"


def test_the_bar_is_an_argument(tmp_path: Path) -> None:
    assert _gate(tmp_path, OVER, "--max", "10") == 0
    assert _gate(tmp_path, OVER, "--max", "9") == 1


def test_the_product_package_is_within_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert complexity_gate.main(["--max", "8", "lambdas/ecr_retention"]) == 0
