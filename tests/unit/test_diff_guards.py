"""`diff` under the brakes (issue 35): a repository over max_delete_fraction and a blocked run keep every image today,
but a brake is not a decision. The diff counts what the rules decide, says what a run removes now, and `--fail-on`
judges the rules' figure and names it."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.commands.diff_text import diff_markdown, diff_table_lines, headline
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.review.diff_conditions import breaches, parse_conditions
from ecr_retention.domain.review.rules_diff import RulesDiff, diff_rules
from support.builders import HOST, NOW, config, image, in_use, repository, snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE_NOW = "2026-11-30T06:00:00Z"

VERSIONS = {"delete": {"tags": ["v*"], "older_than": "30d"}}
# Ten releases, v0 the newest: keep_newest 8 removes 2 of 11 images (18%), keep_newest 2 removes 8 (73%).
APP = repository("app", *(image(f"v{n}", f"v{n}", age=timedelta(days=40 + n)) for n in range(10)), image("l", "latest"))


def keep_newest(count: int, **safety: Any) -> RetentionConfig:
    return config([{"delete": {"tags": ["v*"], "older_than": "30d", "keep_newest": count}}], **safety)


def diff_of(base: RetentionConfig, new: RetentionConfig, inventory: Inventory | None = None) -> RulesDiff:
    return diff_rules(base, new, snapshot(APP), inventory or Inventory(), NOW)


def readme_rules() -> str:
    """The rules file of the README's "How it decides", as the README shows it."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## How it decides") :]
    match = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert match is not None
    return match[1]


def test_keep_newest_20_to_5_on_the_readme_example_fails_deletions_increase(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Given the README's rules and the example registry, when keep_newest goes from 20 to 5, app goes over
    max_delete_fraction: a run keeps all of app today, but the rules delete more, and the review fails."""
    base = readme_rules()
    assert "older_than: 30d, keep_newest: 20}" in base
    (tmp_path / "base.yaml").write_text(base)
    (tmp_path / "new.yaml").write_text(
        base.replace("older_than: 30d, keep_newest: 20}", "older_than: 30d, keep_newest: 5}")
    )
    arguments = ["diff", "--base", str(tmp_path / "base.yaml"), "--config", str(tmp_path / "new.yaml")]
    arguments += ["--snapshot", str(EXAMPLES / "snapshot.json"), "--manifests", str(EXAMPLES / "in-use")]
    arguments += ["--now", EXAMPLE_NOW, "--fail-on", "deletions-increase"]

    assert main(arguments) == 1

    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("this change deletes 10 more images")
    assert "keeps" not in first  # what the guard holds back is not spared
    assert "the max_delete_fraction guard skips app (110 removals) under the new rules" in first
    assert "a run on these inputs removes 0 images now (100 under the old rules)" in first
    (fail,) = [line for line in out.splitlines() if line.startswith("FAIL:")]
    assert fail == (
        "FAIL: deletions-increase: the new rules remove 110 images, the old ones 100 (judged on what the rules "
        "decide, with the brakes off; a run on these inputs removes 0 now under the new rules, 100 under the old)"
    )


def test_the_readme_example_diff_in_json_states_both_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = readme_rules()
    (tmp_path / "base.yaml").write_text(base)
    (tmp_path / "new.yaml").write_text(base.replace("keep_newest: 20}", "keep_newest: 5}"))
    arguments = ["diff", "--base", str(tmp_path / "base.yaml"), "--config", str(tmp_path / "new.yaml")]
    arguments += ["--snapshot", str(EXAMPLES / "snapshot.json"), "--manifests", str(EXAMPLES / "in-use")]
    assert main([*arguments, "--now", EXAMPLE_NOW, "--format", "json", "--fail-on", "deletions-over", "0"]) == 1
    document = json.loads(capsys.readouterr().out)
    totals = document["totals"]
    assert (totals["removalsBefore"], totals["removalsAfter"]) == (100, 110)
    assert (totals["removalsBeforeNow"], totals["removalsAfterNow"]) == (100, 0)
    (app,) = document["repositories"]
    assert (app["removalsAfter"], app["removalsAfterNow"]) == (110, 0)
    assert app["skippedAfter"].startswith("the plan removes 110 of 137 images")
    change = app["changes"][0]
    assert change["after"] | {"reasons": None} == {
        "action": "delete",
        "reasons": None,
        "heldBy": "max_delete_fraction",
        "actionNow": "keep",
    }
    assert change["before"]["heldBy"] is None
    assert change["before"]["actionNow"] == "keep"
    assert "judged on what the rules decide" in document["failed"][0]


def test_the_planner_with_the_brakes_off_names_the_skip_and_keeps_the_rules_decisions() -> None:
    rules, snap = keep_newest(2, max_delete_fraction=0.5), snapshot(APP)
    braked = plan_registry(rules, snap, Inventory(), NOW)
    unbraked = plan_registry(rules, snap, Inventory(), NOW, brakes_off=True)
    (held,), (free,) = braked.repositories, unbraked.repositories
    assert held.skipped == free.skipped
    assert held.skipped is not None
    assert held.summary.deleted == 0
    assert free.summary.deleted == 8
    # the same reasons, less the skip's: the skipped plan's would-be deletions are exactly what the rules decide
    assert [d.reasons[1:] for d in held.images if d.reasons[0].kind == "skipped"] == [
        d.reasons for d in free.images if d.action == "delete"
    ]


def test_a_stricter_change_over_max_delete_fraction_counts_what_the_rules_decide() -> None:
    diff = diff_of(keep_newest(8, max_delete_fraction=0.5), keep_newest(2, max_delete_fraction=0.5))
    (app,) = diff.repositories
    assert [change.change for change in app.changes] == ["deleted"] * 6
    assert {change.after.held_by for change in app.changes} == {"max_delete_fraction"}
    assert {change.after.action_now for change in app.changes} == {"keep"}
    totals = diff.totals
    assert (totals.deleted.images, totals.spared.images) == (6, 0)
    assert (totals.removals_before, totals.removals_after, totals.removals_before_now, totals.removals_after_now) == (
        2,
        8,
        2,
        0,
    )
    assert headline(diff) == (
        "this change deletes 6 more images (600.0 MiB) in 1 repository; no in-use image changes fate; but the "
        "max_delete_fraction guard skips app (8 removals) under the new rules: a run on these inputs removes 0 images "
        "now (2 under the old rules); what the rules decide beyond that waits only for a share under "
        "max_delete_fraction or a raised limit"
    )
    assert breaches(parse_conditions(["deletions-increase", "deletions-over", "0"]), diff) == [
        "deletions-increase: the new rules remove 8 images, the old ones 2 (judged on what the rules decide, with the "
        "brakes off; a run on these inputs removes 0 now under the new rules, 2 under the old)",
        "deletions-over 0: the change removes 6 more images (judged on what the rules decide, with the brakes off; a "
        "run on these inputs removes 0 now under the new rules, 2 under the old)",
    ]
    table = "\n".join(diff_table_lines(diff))
    assert "the new rules remove 8 here (the old ones 2; a run removes 2 here today)" in table
    assert "keep -> delete  keep: keep-newest" in table
    assert "delete, skipped now: delete-rule [policies[0].rules[0]]" in table
    assert "app: now SKIPPED" in diff_markdown(diff)


def test_a_change_that_lifts_the_skip_says_that_its_removals_now_go() -> None:
    """The old rules decide more, the new ones less: no increase to fail on, but today nothing goes and tomorrow the
    new rules' removals do; the diff says so."""
    diff = diff_of(keep_newest(2, max_delete_fraction=0.5), keep_newest(8, max_delete_fraction=0.5))
    (app,) = diff.repositories
    assert {change.change for change in app.changes} == {"spared"}
    assert {change.before.held_by for change in app.changes} == {"max_delete_fraction"}
    assert (diff.totals.removals_before_now, diff.totals.removals_after_now) == (0, 2)
    assert breaches(parse_conditions(["deletions-increase"]), diff) == []
    assert (
        "the max_delete_fraction guard skipped app (8 removals) under the old rules: a run on these inputs removes 2 images now (0 under the old rules)"
        in headline(diff)
    )
    assert "no longer skipped" in "\n".join(diff_table_lines(diff))


def test_skipped_under_both_rules_the_change_is_still_judged() -> None:
    diff = diff_of(keep_newest(3, max_delete_fraction=0.5), keep_newest(1, max_delete_fraction=0.5))
    (app,) = diff.repositories
    assert (app.removals_before, app.removals_after, app.removals_before_now, app.removals_after_now) == (7, 9, 0, 0)
    assert breaches(parse_conditions(["deletions-increase"]), diff) != []
    assert "SKIPPED under both rules" in "\n".join(diff_table_lines(diff))


def test_a_run_blocked_under_the_new_rules_is_named_and_the_rules_still_judged() -> None:
    """The new rules expect a cluster whose manifest is missing: a run deletes nothing, and the diff says what the rules
    decide and that nothing goes now."""
    diff = diff_of(keep_newest(8), keep_newest(2, clusters=["prod"]))
    assert diff.blocked
    assert not diff.blocked_before
    (app,) = diff.repositories
    assert {change.after.held_by for change in app.changes} == {"blocked"}
    assert (diff.totals.removals_before_now, diff.totals.removals_after_now) == (2, 0)
    assert "but a run under the new rules is blocked on these inputs" in headline(diff)
    assert "waits only for fresh manifests" in headline(diff)
    assert breaches(parse_conditions(["deletions-increase"]), diff)[0].endswith(
        "(judged on what the rules decide, with the brakes off; a run on these inputs removes 0 now under the new "
        "rules, 2 under the old)"
    )


def test_a_run_blocked_under_the_old_rules_only_is_named() -> None:
    stale = in_use("prod", (f"{HOST}/app:latest", None), age=timedelta(days=3))
    diff = diff_of(
        keep_newest(8, clusters=["prod"], inventory_max_age="6h"),
        keep_newest(8, clusters=[]),
        inventory=Inventory(manifests=(stale,)),
    )
    assert diff.blocked_before
    assert not diff.blocked
    assert diff.repositories == ()  # the rules decide the same
    lines = list(diff_table_lines(diff))
    assert any(
        line.startswith("note: under the old rules a run on these inputs would delete nothing") for line in lines
    )
    assert "a run on these inputs removes 2 images now (0 under the old rules)" in headline(diff)


def test_an_archived_image_the_new_rules_delete_after_the_quarantine_is_counted_not_hidden() -> None:
    """Under a quarantine, an archived image the rules remove is kept until it has been archived long enough: the new
    rules decide its deletion today, and it goes when the quarantine ends."""
    archived = repository(
        "app",
        image("a1", "pr-1", archived_ago=timedelta(days=2)),
        image("a2", "pr-2", archived_ago=timedelta(days=3)),
        image("v1", "v1"),
    )
    base = config([VERSIONS], quarantine="30d")
    new = config([VERSIONS, {"delete": {"tags": ["pr-*"], "older_than": "30d"}}], quarantine="30d")
    diff = diff_rules(base, new, snapshot(archived), Inventory(), NOW)
    (app,) = diff.repositories
    assert [(c.before.action, c.after.action, c.after.held_by) for c in app.changes] == [
        ("keep", "delete", "quarantine"),
        ("keep", "delete", "quarantine"),
    ]
    assert {change.after.action_now for change in app.changes} == {"keep"}
    assert headline(diff).startswith(
        "this change deletes 2 more images (200.0 MiB) in 1 repository; no in-use image changes fate; but 2 images "
        "the new rules newly delete wait in the quarantine: a run on these inputs removes 1 image now (1 under the "
        "old rules); what the rules decide beyond that waits only for the end of its safety.quarantine"
    )
    assert "delete, after the quarantine: quarantine" in "\n".join(diff_table_lines(diff))
    assert breaches(parse_conditions(["deletions-increase"]), diff) == [
        "deletions-increase: the new rules remove 3 images, the old ones 1 (judged on what the rules decide, with the "
        "brakes off; a run on these inputs removes 1 now under the new rules, 1 under the old)"
    ]
