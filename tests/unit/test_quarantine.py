"""safety.quarantine: a deletion passes through the archive (SPEC.md "Archived images: quarantine and restore").
An image enters quarantine (archived instead of deleted), waits there, and leaves it for good once archived longer
than the quarantine; what becomes protected meanwhile is never deleted, and restored when a cluster runs it."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from pydantic import ValidationError

from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.reporting.run_report import RunReport, report_of_plan
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.report_sheet import render_sheet
from ecr_retention.tables import render_plan_table
from support.builders import (
    HOST,
    OCI_INDEX,
    action_of,
    config,
    decision_of,
    digest,
    image,
    in_use,
    index_manifest,
    kinds_of,
    plan,
    removed,
    repository,
    snapshot,
)

DAY = timedelta(days=1)
DELETE_OLD = {"delete": {"tags": ["*"], "older_than": "30d"}}
QUARANTINE = "30d"


def stage(result: Plan, seed: str) -> str | None:
    return decision_of(result, "app", seed).quarantine_stage


def test_without_quarantine_a_delete_rule_deletes_at_once() -> None:
    result = plan(config([DELETE_OLD]), snapshot(repository("app", image("a", "v1"))))
    assert action_of(result, "app", "a") == "delete"
    assert stage(result, "a") is None


def test_a_deletion_enters_quarantine_it_is_archived_instead() -> None:
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE), snapshot(repository("app", image("a", "v1"))))
    assert action_of(result, "app", "a") == "archive"
    assert stage(result, "a") == "enters"
    main = decision_of(result, "app", "a").main_reason
    assert main.kind == "quarantine"
    assert main.rule == "policies[0].rules[0]"  # the rule it stands in for
    assert main.detail == "archived instead of deleted, for safety.quarantine 30d"
    assert kinds_of(result, "app", "a") == ["quarantine", "delete-rule"]
    assert result.repositories[0].summary.deleted == 0
    assert result.repositories[0].summary.archived == 1


def test_an_image_archived_for_less_than_the_quarantine_waits_archived() -> None:
    snap = snapshot(repository("app", image("a", "v1", archived_ago=10 * DAY)))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "a") == "keep"
    assert stage(result, "a") == "waits"
    detail = decision_of(result, "app", "a").main_reason.detail
    assert "in quarantine: archived 10d ago" in detail
    assert removed(result) == set()


def test_exactly_the_quarantine_is_not_longer_than_it() -> None:
    snap = snapshot(repository("app", image("a", "v1", archived_ago=30 * DAY)))
    assert action_of(plan(config([DELETE_OLD], quarantine=QUARANTINE), snap), "app", "a") == "keep"


def test_an_image_archived_longer_than_the_quarantine_leaves_it_for_good() -> None:
    snap = snapshot(repository("app", image("a", "v1", archived_ago=31 * DAY)))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "a") == "delete"
    assert stage(result, "a") == "leaves"
    assert "deleted for good" in decision_of(result, "app", "a").main_reason.detail
    assert result.repositories[0].summary.deleted == 1


def test_an_archived_image_without_last_archived_at_is_kept() -> None:
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED")))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "a") == "keep"
    assert "no lastArchivedAt" in decision_of(result, "app", "a").main_reason.detail


def test_a_future_last_archived_at_counts_as_archived_now() -> None:
    snap = snapshot(repository("app", image("a", "v1", archived_ago=-400 * DAY)))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "a") == "keep"
    assert stage(result, "a") == "waits"


def test_an_image_in_quarantine_that_a_cluster_runs_again_is_restored_not_deleted() -> None:
    snap = snapshot(repository("app", image("a", "v1", archived_ago=60 * DAY), image("b", "v0", archived_ago=60 * DAY)))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE), snap, in_use("prod", (f"{HOST}/app@{digest('a')}", "a")))
    assert action_of(result, "app", "a") == "restore"
    assert decision_of(result, "app", "a").main_reason.kind == "in-use"
    assert action_of(result, "app", "b") == "delete"  # the other one leaves quarantine as planned


def test_an_image_in_quarantine_that_a_keep_rule_now_selects_is_kept_archived() -> None:
    rules = [{"keep": {"tags": ["release-*"]}}, DELETE_OLD]
    snap = snapshot(repository("app", image("a", "release-1", archived_ago=60 * DAY)))
    result = plan(config(rules, quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "a") == "keep"  # SPEC: restored when in use, kept otherwise
    assert kinds_of(result, "app", "a")[0] == "keep-rule"
    assert stage(result, "a") is None


def test_a_young_image_never_enters_quarantine() -> None:
    snap = snapshot(repository("app", image("a", "v1", age=timedelta(hours=1))))
    result = plan(config([{"delete": {"tags": ["*"]}}], quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "a") == "keep"
    assert decision_of(result, "app", "a").main_reason.kind == "min-age"


def test_an_archive_rule_is_no_deletion_and_does_not_start_a_quarantine_clock() -> None:
    snap = snapshot(repository("app", image("a", "pr-1"), image("b", "pr-2", archived_ago=365 * DAY)))
    result = plan(config([{"delete": {"tags": ["pr-*"], "archive": True}}], quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "a") == "archive"
    assert stage(result, "a") is None
    assert action_of(result, "app", "b") == "keep"  # already archived; only a delete rule deletes it


def test_an_index_and_its_children_enter_and_leave_quarantine_together() -> None:
    entering = snapshot(
        repository(
            "app",
            image("idx", "old", media_type=OCI_INDEX),
            image("amd64"),
            image("sig", subject="idx"),
            manifests={"idx": index_manifest("amd64")},
        )
    )
    cfg = config([{"delete": {"tags": ["old"]}}], quarantine=QUARANTINE)
    result = plan(cfg, entering)
    assert {action_of(result, "app", seed) for seed in ("idx", "amd64", "sig")} == {"archive"}
    assert {stage(result, seed) for seed in ("idx", "amd64", "sig")} == {"enters"}
    assert kinds_of(result, "app", "sig") == ["quarantine", "referrer"]
    leaving = snapshot(
        repository(
            "app",
            image("idx", "old", media_type=OCI_INDEX, archived_ago=40 * DAY),
            image("amd64", archived_ago=40 * DAY),
            image("sig", subject="idx", archived_ago=40 * DAY),
            manifests={"idx": index_manifest("amd64")},
        )
    )
    result = plan(cfg, leaving)
    assert removed(result) == {digest("idx"), digest("amd64"), digest("sig")}
    assert {action_of(result, "app", seed) for seed in ("idx", "amd64", "sig")} == {"delete"}


def test_a_child_archived_later_than_its_index_waits_for_its_own_quarantine() -> None:
    snap = snapshot(
        repository(
            "app",
            image("idx", "old", media_type=OCI_INDEX, archived_ago=40 * DAY),
            image("amd64", archived_ago=5 * DAY),
            image("arm64"),
            manifests={"idx": index_manifest("amd64", "arm64")},
        )
    )
    result = plan(config([{"delete": {"tags": ["old"]}}], quarantine=QUARANTINE), snap)
    assert action_of(result, "app", "idx") == "delete"
    assert action_of(result, "app", "amd64") == "keep"  # archived 5 days: it waits
    assert action_of(result, "app", "arm64") == "archive"  # never archived: it enters quarantine
    assert kinds_of(result, "app", "arm64")[:2] == ["quarantine", "index-child"]


def test_an_index_waiting_in_quarantine_keeps_its_children() -> None:
    snap = snapshot(
        repository(
            "app",
            image("idx", "old", media_type=OCI_INDEX, archived_ago=5 * DAY),
            image("amd64", archived_ago=40 * DAY),
            manifests={"idx": index_manifest("amd64")},
        )
    )
    result = plan(config([{"delete": {"tags": ["old"]}}], quarantine=QUARANTINE), snap)
    assert removed(result) == set()
    assert decision_of(result, "app", "amd64").main_reason.kind == "index-child"


def test_quarantine_archives_count_toward_max_delete_fraction() -> None:
    snap = snapshot(repository("app", image("a", "v1"), image("b", "v2"), image("c", "v3", age=DAY / 2)))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE, max_delete_fraction=0.5), snap)
    assert result.repositories[0].skipped is not None
    assert removed(result) == set()


def test_a_blocked_run_neither_archives_nor_deletes_under_quarantine() -> None:
    snap = snapshot(repository("app", image("a", "v1"), image("b", "v0", archived_ago=90 * DAY)))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE, clusters=["missing"]), snap)
    assert result.blocked
    assert removed(result) == set()
    assert {stage(result, "a"), stage(result, "b")} == {None}  # kept by the block, not waiting
    assert kinds_of(result, "app", "b")[:2] == ["blocked", "quarantine"]


def test_nothing_is_deleted_under_quarantine_unless_archived_longer_than_it() -> None:
    """Every delete in a plan with quarantine is of an image ARCHIVED longer than the quarantine."""
    images = [
        image(f"i{n}", f"v{n}", age=(n + 1) * 7 * DAY, archived_ago=(n * 5 * DAY) if n % 3 else None) for n in range(30)
    ]
    snap = snapshot(repository("app", *images))
    result = plan(config([DELETE_OLD], quarantine=QUARANTINE), snap)
    by_seed = {digest(f"i{n}"): n for n in range(30)}
    for decision in result.repositories[0].images:
        if decision.action == "delete":
            n = by_seed[decision.image_digest]
            assert n % 3
            assert n * 5 > 30
    assert any(d.action == "delete" for d in result.repositories[0].images)


@pytest.mark.parametrize("value", ["0d", "-1d", "forever", 30])
def test_a_bad_quarantine_is_one_clear_error(value: object) -> None:
    with pytest.raises(ValidationError, match="duration"):
        config([DELETE_OLD], quarantine=value)


# --- how plans and reports say it ------------------------------------------------------------------


def quarantine_report(*, dry_run: bool = True) -> RunReport:
    snap = snapshot(
        repository(
            "app",
            image("enters", "v3"),
            image("waits", "v2", archived_ago=10 * DAY),
            image("leaves", "v1", archived_ago=40 * DAY),
        )
    )
    report = report_of_plan(plan(config([DELETE_OLD], quarantine=QUARANTINE), snap), run_id="r-1", manifests=())
    return report if dry_run else report.model_copy(update={"dry_run": False})


def test_the_report_counts_what_entered_left_and_waits_in_quarantine() -> None:
    report = quarantine_report()
    [repo] = report.repositories

    assert [(e.image_digest, e.kind) for e in repo.archived] == [(digest("enters"), "quarantine")]
    assert [(e.image_digest, e.kind) for e in repo.deleted] == [(digest("leaves"), "quarantine")]
    assert [(e.image_digest, e.kind) for e in repo.kept_images] == [(digest("waits"), "quarantine")]
    assert repo.archived[0].rule == "policies[0].rules[0]"
    totals = report.to_json_dict()["totals"]
    assert (totals["enteredQuarantine"], totals["leftQuarantine"], totals["inQuarantine"]) == (1, 1, 1)


def test_the_summary_says_what_the_quarantine_did() -> None:
    _, dry = render_summary(quarantine_report())
    _, real = render_summary(quarantine_report(dry_run=False))
    _, without = render_summary(
        report_of_plan(
            plan(config([DELETE_OLD]), snapshot(repository("app", image("a", "v1")))), run_id="r", manifests=()
        )
    )

    assert "Quarantine: would enter 1 (archived instead of deleted), would leave 1 for good" in dry
    assert (
        "Quarantine: entered 1 (archived instead of deleted), left 1 for good (deleted after their quarantine), "
        in real
    )
    assert "1 waiting archived" in real
    assert "Quarantine" not in without


def test_the_plan_table_and_the_sheet_name_the_quarantine() -> None:
    result = plan(
        config([DELETE_OLD], quarantine=QUARANTINE),
        snapshot(repository("app", image("enters", "v3"), image("leaves", "v1", archived_ago=40 * DAY))),
    )
    table = render_plan_table(result)
    rows = list(csv.DictReader(io.StringIO(render_sheet(report_of_plan(result, run_id="r", manifests=())))))

    assert "archive  quarantine [policies[0].rules[0]]: archived instead of deleted, for safety.quarantine 30d" in table
    assert "; quarantine: 1 enter (archived instead of deleted), 1 leave for good, 0 wait" in table
    assert (
        "delete   quarantine [policies[0].rules[0]]: archived 40d ago, past safety.quarantine 30d: deleted for" in table
    )
    assert {row["action"]: row["reason_kinds"] for row in rows} == {
        "archive": "quarantine;delete-rule",
        "delete": "quarantine;delete-rule",
    }
