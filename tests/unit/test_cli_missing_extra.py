"""A command whose optional dependency is not installed says which extra brings it, in one line, exit 2; any other
missing module stays a traceback (a broken installation is not bad input). tests/packaging/test_wheel.py proves the
same from installed wheels; these run in this process, with the module hidden."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ecr_retention.cli import main


def hide(monkeypatch: pytest.MonkeyPatch, module: str, *importers: str) -> None:
    """`import module` fails as it does where it is not installed; `importers` are imported afresh."""
    monkeypatch.setitem(sys.modules, module, None)
    for name in importers:
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_export_without_the_kubernetes_client_names_the_kubernetes_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "kubernetes", "ecr_retention.kube.client")

    assert main(["export", "--cluster", "prod", "--out", str(tmp_path / "prod.json")]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "ecr-retention export: error: kubernetes is not installed (the kubernetes extra); "
        'pip install "ecr-retention[kubernetes]" (pipx: pipx install --force "ecr-retention[kubernetes]")\n'
    )
    assert not (tmp_path / "prod.json").exists()


def test_snapshot_without_boto3_names_the_aws_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "boto3", "ecr_retention.aws.clients")

    assert main(["snapshot", "--out", str(tmp_path / "snapshot.json")]) == 2

    error = capsys.readouterr().err
    assert error.startswith("ecr-retention snapshot: error: boto3 is not installed (the aws extra); ")
    assert error.count("\n") == 1
    assert not (tmp_path / "snapshot.json").exists()


def test_a_missing_module_that_no_extra_provides_is_not_dressed_as_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hide(monkeypatch, "ecr_retention.exporter.service")

    with pytest.raises(ModuleNotFoundError) as raised:
        main(["export", "--cluster", "prod", "--out", str(tmp_path / "prod.json")])
    assert raised.value.name == "ecr_retention.exporter.service"
