"""`--out` never names one of the command's inputs (issue 35): not by the same path, another spelling, a symbolic link
or a hard link, and not inside the directory of in-use manifests a later plan reads. One line, exit 2, nothing
written: the input is left as it was."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ecr_retention.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NOW = "2026-11-30T06:00:00Z"


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """A copy of the example rules, snapshot and manifests, which a refused --out must leave byte for byte."""
    (tmp_path / "retention.yaml").write_bytes((ROOT / "retention.yaml").read_bytes())
    (tmp_path / "snapshot.json").write_bytes((EXAMPLES / "snapshot.json").read_bytes())
    (tmp_path / "in-use").mkdir()
    for manifest in (EXAMPLES / "in-use").glob("*.json"):
        (tmp_path / "in-use" / manifest.name).write_bytes(manifest.read_bytes())
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    return tmp_path


def contents(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def plan(folder: Path, out: str, *, config: str = "retention.yaml") -> list[str]:
    return [
        "plan",
        "--config",
        str(folder / config),
        "--snapshot",
        str(folder / "snapshot.json"),
        "--manifests",
        str(folder / "in-use"),
        "--now",
        NOW,
        "--format",
        "html",
        "--out",
        out,
    ]


def hard_link(folder: Path) -> str:
    os.link(folder / "retention.yaml", folder / "linked.html")
    return str(folder / "linked.html")


def config_through_symlink(folder: Path) -> str:
    """The config is given as a symbolic link; --out names the file it points to."""
    (folder / "rules-link.yaml").symlink_to(folder / "retention.yaml")
    return str(folder / "retention.yaml")


CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "the snapshot": (lambda f: plan(f, str(f / "snapshot.json")), "is the --snapshot file this command reads"),
    "the config, spelled otherwise": (
        lambda f: plan(f, str(f / "in-use" / ".." / "retention.yaml")),
        "is the --config file this command reads",
    ),
    "a hard link to the config": (lambda f: plan(f, hard_link(f)), "is the --config file this command reads"),
    "what the config links to": (
        lambda f: plan(f, config_through_symlink(f), config="rules-link.yaml"),
        "is the --config file this command reads",
    ),
    "a manifest": (lambda f: plan(f, str(f / "in-use" / "prod.json")), "is in the --manifests directory"),
    "a new file among the manifests": (lambda f: plan(f, str(f / "in-use" / "page.json")), "is in the --manifests"),
    "run's config": (
        lambda f: [
            "run",
            "--config",
            str(f / "retention.yaml"),
            "--bucket",
            "b",
            "--format",
            "csv",
            "--out",
            str(f / "retention.yaml"),
        ],
        "is the --config file this command reads",
    ),
    "snapshot into its manifests directory": (
        lambda f: [
            "snapshot",
            "--out",
            str(f / "new" / "snapshot.json"),
            "--bucket",
            "b",
            "--manifests",
            str(f / "new"),
        ],
        "is in the --manifests directory",
    ),
    "export over its kubeconfig": (
        lambda f: ["export", "--cluster", "dev", "--out", str(f / "kubeconfig"), "--kubeconfig", str(f / "kubeconfig")],
        "is the kubeconfig file this command reads",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_out_that_names_an_input_is_refused_and_nothing_is_written(
    case: str, inputs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    (inputs / "new").mkdir()
    arguments, error = CASES[case]
    command = arguments(inputs)
    before = contents(inputs)
    assert main(command) == 2
    err = capsys.readouterr().err
    assert error in err
    assert len(err.strip().splitlines()) == 1
    assert contents(inputs) == before


def test_out_beside_the_inputs_is_written(inputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(plan(inputs, str(inputs / "page.html"))) == 1  # the example's team-payments/worker is skipped
    assert (inputs / "page.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((inputs / "snapshot.json").read_bytes()) == json.loads((EXAMPLES / "snapshot.json").read_bytes())
    capsys.readouterr()
