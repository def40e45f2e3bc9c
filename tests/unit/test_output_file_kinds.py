"""`--out` names a regular file or a new one, for every command that writes one (plan/run `--format html|csv`,
snapshot, export, export-aws): a device, a FIFO or a symbolic link is refused in one line, exit 2, before any work,
and is left as it was. The output is written beside its name and renamed over it, so whatever held the name would
be unlinked and replaced: `/dev/null` itself, as root.

Symbolic links are refused, also those to a regular file: the rename would replace the link, not the file it points
to, and a link planted in a shared directory such as /tmp must not choose where a command (perhaps run as root)
writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ecr_retention.cli import main
from ecr_retention.commands import report_files
from ecr_retention.commands.export import _out_path
from ecr_retention.domain.errors import InputError
from ecr_retention.loading import check_output_file, write_file_atomically

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NOT_REGULAR = "is not a regular file; name a new or regular file"
SYMLINK = "is a symbolic link; name a new or regular file"


def plan_csv(out: str) -> int:
    return main(
        [
            "plan",
            "--config",
            str(ROOT / "retention.yaml"),
            "--snapshot",
            str(EXAMPLES / "snapshot.json"),
            "--manifests",
            str(EXAMPLES / "in-use"),
            "--now",
            "2026-11-30T06:00:00Z",
            "--format",
            "csv",
            "--out",
            out,
        ]
    )


@pytest.fixture(autouse=True)
def dev_null_is_never_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests name /dev/null, and run as root a regression would replace the machine's /dev/null with a
    regular file (it happened once): every rename over it fails the test instead."""
    replace = os.replace

    def guarded(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        assert os.path.abspath(target) != os.devnull, "os.replace over /dev/null"
        replace(source, target)

    monkeypatch.setattr(os, "replace", guarded)


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_plan_out_dev_null_is_one_line_and_exit_2_and_dev_null_stays_a_device(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = plan_csv("/dev/null")

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err == f"ecr-retention plan: error: --out: /dev/null {NOT_REGULAR}\n"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_plan_out_fifo_is_refused_and_the_fifo_stays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipe = fifo(tmp_path)

    assert plan_csv(str(pipe)) == 2

    assert capsys.readouterr().err == f"ecr-retention plan: error: --out: {pipe} {NOT_REGULAR}\n"
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    assert list(tmp_path.iterdir()) == [pipe]


def test_plan_out_symlink_to_a_regular_file_is_refused_and_both_stay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "real.csv"
    target.write_text("before")
    link = tmp_path / "link.csv"
    link.symlink_to(target)

    assert plan_csv(str(link)) == 2

    assert capsys.readouterr().err == f"ecr-retention plan: error: --out: {link} {SYMLINK}\n"
    assert link.is_symlink()
    assert target.read_text() == "before"


def test_plan_out_regular_file_is_still_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.csv"
    out.write_text("an older sheet")

    assert plan_csv(str(out)) == 1  # the examples hold a skipped repository

    assert out.read_text().startswith("repository,")
    assert list(tmp_path.iterdir()) == [out]


def test_plan_out_that_became_a_fifo_while_the_plan_ran_is_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "plan.csv"
    render = report_files.render

    def render_then_swap(*args: object) -> str:
        os.mkfifo(out)  # the name changes hands between the check of the arguments and the write
        return render(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(report_files, "render", render_then_swap)

    assert plan_csv(str(out)) == 2

    assert capsys.readouterr().err == f"ecr-retention plan: error: --out: {out} {NOT_REGULAR}\n"
    assert stat.S_ISFIFO(os.lstat(out).st_mode)
    assert list(tmp_path.iterdir()) == [out]  # no temporary left behind


@pytest.mark.parametrize("command", ["snapshot", "export-aws"])
def test_snapshot_and_export_aws_refuse_dev_null_before_any_aws_call(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    # No credentials and no endpoint: an AWS call would fail otherwise than with this line.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")

    code = main([command, "--out", "/dev/null"])

    assert code == 2
    assert capsys.readouterr().err == f"ecr-retention {command}: error: --out: /dev/null {NOT_REGULAR}\n"


@pytest.mark.parametrize("kind", ["fifo", "symlink to a file", "dangling symlink"])
def test_check_output_file_refuses_what_is_not_a_regular_file(kind: str, tmp_path: Path) -> None:
    if kind == "fifo":
        path, expected = fifo(tmp_path), NOT_REGULAR
    else:
        path, expected = tmp_path / "link", SYMLINK
        target = tmp_path / ("real" if kind == "symlink to a file" else "absent")
        if kind == "symlink to a file":
            target.write_text("kept")
        path.symlink_to(target)

    with pytest.raises(InputError) as refused:
        check_output_file(path, "--out")

    assert str(refused.value) == f"--out: {path} {expected}"


def test_write_file_atomically_refuses_a_name_that_became_a_fifo(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.json"
    check_output_file(path, "--out")
    os.mkfifo(path)

    with pytest.raises(InputError, match=NOT_REGULAR):
        write_file_atomically(path, b"{}")

    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert list(tmp_path.iterdir()) == [path]


def test_write_file_atomically_writes_a_new_file_and_replaces_a_regular_one(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.json"
    write_file_atomically(path, b"first")
    write_file_atomically(path, b"second")

    assert path.read_bytes() == b"second"
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("kind", ["device", "fifo", "symlink"])
def test_export_out_refuses_what_is_not_a_regular_file(kind: str, tmp_path: Path) -> None:
    if kind == "device":
        path, expected = Path("/dev/null"), NOT_REGULAR
    elif kind == "fifo":
        path, expected = fifo(tmp_path), NOT_REGULAR
    else:
        (tmp_path / "real.json").write_text("{}")
        path, expected = tmp_path / "prod.json", SYMLINK
        path.symlink_to(tmp_path / "real.json")

    with pytest.raises(InputError) as refused:
        _out_path(str(path))

    assert str(refused.value) == f"--out {str(path)!r}: {expected}"
