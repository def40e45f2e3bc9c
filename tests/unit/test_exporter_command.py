"""`ecr-retention export` arguments: bad input is one line and exit 2, before any cluster is contacted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecr_retention.cli import main


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--cluster", "prod/eu", "--out", "m.json"], "--cluster 'prod/eu': a cluster name is 1-100 letters"),
        (["--cluster", "prod", "--bucket", "b", "--prefix", "in-use"], "--prefix 'in-use': must end with '/'"),
        (["--cluster", "prod", "--bucket", "b", "--prefix", "/in-use/"], "no leading or doubled '/'"),
        (["--cluster", "prod", "--out", "m.json", "--prefix", "in-use/"], "--prefix applies to --bucket"),
        (["--cluster", "prod", "--out", "m.json", "--kubeconfig", "absent"], "kubeconfig absent: no such file"),
        (["--cluster", "prod", "--bucket", "s3://inventory"], "--bucket 's3://inventory': not a bucket name"),
        (["--cluster", "prod", "--bucket", "my inventory"], "--bucket 'my inventory': not a bucket name"),
        (["--cluster", "prod", "--bucket", ""], "--bucket '': not a bucket name"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    arguments: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUBECONFIG", raising=False)

    code = main(["export", *arguments])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("ecr-retention export: error: ")
    assert message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize(
    "arguments",
    [
        ["--out", "m.json"],  # no --cluster
        ["--cluster", "prod"],  # no destination
        ["--cluster", "prod", "--out", "m.json", "--bucket", "b"],  # two destinations
        ["--cluster", "prod", "--out", "m.json", "--page-size", "0"],
    ],
)
def test_usage_errors_exit_2(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["export", *arguments])

    assert exit_info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
