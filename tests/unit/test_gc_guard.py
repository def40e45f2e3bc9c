"""The cyclic collector is off during the bulk work (load, plan, render) and back on afterwards, as it was."""

from __future__ import annotations

import argparse
import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ecr_retention import cli
from ecr_retention.commands import plan as plan_command
from ecr_retention.gc_guard import cyclic_gc_off
from support.collector_watch import watched

RULES = """
version: 1
safety: {clusters: [], max_delete_fraction: 1}
policies:
  - repositories: [app]
    rules:
      - delete: {tags: ["*"], older_than: 30d}
"""


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_off_inside_and_back_on_after_even_when_the_work_fails() -> None:
    seen = []

    @cyclic_gc_off()
    def failing_work() -> None:
        seen.append(gc.isenabled())
        raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError):
        failing_work()
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_already_off_stays_off_and_nesting_keeps_it_off_until_the_outermost_ends() -> None:
    with cyclic_gc_off():
        with cyclic_gc_off():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with cyclic_gc_off():
        pass
    assert not gc.isenabled()


def test_imports_are_frozen_out_of_reach_of_the_collector() -> None:
    with cyclic_gc_off():
        pass
    assert gc.get_freeze_count() > 0


def plan_files(tmp_path: Path) -> list[str]:
    (tmp_path / "retention.yaml").write_text(RULES)
    image = {"imageDigest": "sha256:" + "1" * 64, "imageTags": ["v1"], "imagePushedAt": "2026-01-01T00:00:00Z"}
    snapshot = {"repositories": [{"repositoryName": "app", "imageDetails": [image]}]}
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    config, snapshot_path = str(tmp_path / "retention.yaml"), str(tmp_path / "snapshot.json")
    return ["plan", "--config", config, "--snapshot", snapshot_path, "--now", "2026-11-30T06:00:00Z"]


def test_a_plan_loads_plans_and_renders_with_the_collector_off_and_leaves_it_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[str, bool]] = []
    for name in ("load_inputs", "plan_registry", "plan_table_lines"):
        monkeypatch.setattr(plan_command, name, watched(seen, name, getattr(plan_command, name)))

    assert cli.main(plan_files(tmp_path)) == 0

    assert seen == [("load_inputs", False), ("plan_registry", False), ("plan_table_lines", False)]
    assert gc.isenabled()
    assert "111111111111  v1" in capsys.readouterr().out


def test_a_plan_refused_for_bad_input_leaves_the_collector_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = plan_files(tmp_path)
    (tmp_path / "snapshot.json").write_text("{not json")

    assert cli.main(args) == 2

    assert gc.isenabled()
    assert "error" in capsys.readouterr().err


def test_commands_that_talk_to_aws_or_host_the_emulator_keep_the_collector() -> None:
    commands = {
        name
        for action in cli.build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    }
    assert {"plan", "validate", "lifecycle-preview", "doctor", "diff"} == cli.OFFLINE_COMMANDS
    assert commands > cli.OFFLINE_COMMANDS
    assert {"demo", "run", "snapshot", "export"} <= commands - cli.OFFLINE_COMMANDS
