"""The checks a reviewer would make by hand, each with its status and evidence (data-check ids are stable)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ecr_retention.domain.doctor.models import Finding
from ecr_retention.domain.planning.plan_parts import ReplicaRegistry
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.report_page import render_page
from tests.unit.report_page.dom import Element, parse
from tests.unit.report_page.reports import (
    DELETE_RULE,
    PRICE,
    STARTED,
    entry,
    kept,
    missing,
    mixed_run,
    prod_manifest,
    reason,
    repo,
    run,
)


def checks_of(report: RunReport) -> dict[str, Element]:
    items = parse(render_page(report, PRICE)).by_id("checks").find_all("li", class_="check")
    return {item.attrs["data-check"]: item for item in items}


def status(report: RunReport, check: str) -> str:
    return checks_of(report)[check].attrs["data-status"]


def test_a_clean_run_passes_every_check() -> None:
    report = run(repo("app", kept_images=[kept("k1", "latest")], deleted=[entry("d1", "1.0.0")]))

    checks = checks_of(report)

    assert list(checks) == [
        "blocked",
        "manifest:prod",
        "in-use",
        "in-use-archived",
        "in-use-missing",
        "removals-unprotected",
        "spared",
        "dependents",
        "max-delete-fraction",
        "quarantine",
        "cancellations",
        "failures",
        "replication",
        "findings",
        "warnings",
    ]
    assert {name: item.attrs["data-status"] for name, item in checks.items()} == dict.fromkeys(checks, "pass")


@pytest.mark.parametrize(
    ("state", "mark", "word"), [("pass", "✓", "pass"), ("warn", "!", "warn"), ("fail", "✗", "FAIL")]
)
def test_every_status_has_a_mark_and_a_word(state: str, mark: str, word: str) -> None:
    report = run(repo("app", outcome="blocked", blocked=("cluster prod: stale",)), run_warnings=("something to know",))
    item = next(item for item in checks_of(report).values() if item.attrs["data-status"] == state)

    assert item.find("span", class_="mark").text() == mark
    assert item.find("strong", class_="word").text() == word


def test_blocked_fails_with_its_reasons() -> None:
    report = run(repo("app", outcome="blocked", blocked=("cluster prod: in-use manifest is 7h old",)))

    check = checks_of(report)["blocked"]

    assert check.attrs["data-status"] == "fail"
    assert "cluster prod: in-use manifest is 7h old" in check.text()


def test_an_expected_manifest_shows_its_age_at_the_finish_and_references() -> None:
    text = checks_of(run())["manifest:prod"].text()

    assert "2026-11-30 02:30:00 UTC" in text
    assert "34m old" in text  # generated 30 minutes before the start, the run took 4
    assert "12 image references" in text
    assert "complete" in text


def test_a_manifest_problem_fails() -> None:
    report = run(
        manifests=[
            prod_manifest(generated_at=None, complete=None, references=0, problem="cluster prod: no in-use manifest")
        ]
    )

    check = checks_of(report)["manifest:prod"]

    assert check.attrs["data-status"] == "fail"
    assert "cluster prod: no in-use manifest" in check.text()


def test_a_manifest_of_another_cluster_protects_but_is_not_required() -> None:
    report = run(manifests=[prod_manifest(), prod_manifest(cluster="ci", expected=False, references=3)])

    checks = checks_of(report)

    assert list(checks)[1:3] == ["manifest:prod", "manifest:ci"]
    assert checks["manifest:ci"].attrs["data-status"] == "pass"
    assert "not required" in checks["manifest:ci"].text()


def test_in_use_counts_references_and_protected_images() -> None:
    report = run(repo("app", kept_images=[kept("k1", kind="in-use"), kept("k2", kind="in-use")]))

    check = checks_of(report)["in-use"]

    assert check.attrs["data-status"] == "pass"
    assert "12 references in 1 manifest protect 2 images" in check.text()


def test_in_use_warns_without_any_manifest() -> None:
    report = run(manifests=[prod_manifest(generated_at=None, complete=None, references=0, problem="missing")])

    assert status(report, "in-use") == "warn"


def test_in_use_images_missing_warn_naming_workload_reference_and_what_removed_them() -> None:
    # Given app:dev is gone (lifecycle rule 1 took it) and tools:2.0 of an unmanaged repository too
    report = run(
        repo("app", kept_images=[kept("k1", "latest")], in_use_missing=(missing("app", "dev", removed=True),)),
        other_in_use_missing=(missing("tools", "2.0", workload="CronJob/tools"),),
    )
    # When the page is rendered, its check warns (the run's outcome is its own) and lists each one
    check = checks_of(report)["in-use-missing"]
    assert check.attrs["data-status"] == "warn"
    assert report.outcome == "ok"
    text = check.text()
    assert "In-use images missing: 2" in text
    assert (
        "the next pull of prod: prod/Deployment/app (pod) fails: app:dev no longer exists "
        "(deleted 2026-11-30 01:00 UTC by lifecycle rule 1 of app's policy)"
    ) in text
    assert "the next pull of prod: prod/CronJob/tools (pod) fails: tools:2.0 no longer exists" in text


@pytest.mark.parametrize("kind", ["in-use", "keep-rule", "min-age", "blocked", "skipped"])
def test_a_removal_with_a_protecting_reason_fails(kind: str) -> None:
    report = run(repo("app", deleted=[entry("d1", reasons=[DELETE_RULE, reason(kind)])], archived=[entry("a1")]))  # type: ignore[arg-type]

    check = checks_of(report)["removals-unprotected"]

    assert check.attrs["data-status"] == "fail"
    assert "1 removal of 2" in check.text()
    assert kind in check.text()


def test_removals_unprotected_passes_with_the_count_checked() -> None:
    text = checks_of(mixed_run())["removals-unprotected"].text()

    assert "5 removals checked" in text


def test_spared_counts_min_age_keep_newest_and_keep_rule() -> None:
    check = checks_of(mixed_run())["spared"]

    assert "by min-age 1, by keep-newest 1, by keep-rule 1" in check.text()
    assert "keep-rule policies[0].rules[0]: 1 image" in check.text()


def test_dependents_count_children_and_referrers_kept_and_removed() -> None:
    text = checks_of(mixed_run())["dependents"].text()

    assert "kept with their kept parents: 1 child, 1 signature or attestation" in text
    assert "removed with their parents: 1 child, 1 signature or attestation" in text


def test_a_skipped_repository_warns_by_name() -> None:
    report = run(repo("app", outcome="skipped", skipped="would delete 9 of 10 images, more than 0.5"), repo("web"))

    check = checks_of(report)["max-delete-fraction"]

    assert check.attrs["data-status"] == "warn"
    assert "app: would delete 9 of 10 images, more than 0.5" in check.text()


def test_cancellations_warn_with_their_count() -> None:
    check = checks_of(mixed_run())["cancellations"]

    assert check.attrs["data-status"] == "warn"
    assert "1 removal cancelled" in check.text()
    assert "tag-changed" in check.text()


def test_quarantine_passes_and_names_what_entered_and_left_it() -> None:
    entering = reason("quarantine", "archived instead of deleted: safety.quarantine ...", "policies[0].rules[1]")
    leaving = reason("quarantine", "archived 95d ago, longer than safety.quarantine 90d: deleted for good")
    report = run(
        repo(
            "app",
            kept_images=[kept("w", "v0", kind="quarantine")],
            archived=[entry("a", "v1", reasons=[entering, DELETE_RULE])],
            deleted=[entry("d", "v2", reasons=[leaving, DELETE_RULE]), entry("x", "v3")],
        )
    )

    check = checks_of(report)["quarantine"]

    assert check.attrs["data-status"] == "pass"
    text = check.text()
    assert "1 image entered quarantine (archived instead of deleted), 1 left it for good (deleted), 1 waiting" in text
    assert "entered: archived instead of deleted" in text
    assert "left for good: archived 95d ago" in text
    assert (report.totals.entered_quarantine, report.totals.left_quarantine, report.totals.in_quarantine) == (1, 1, 1)
    totals = parse(render_page(report, PRICE)).find_all("dd", **{"data-total": "leftQuarantine"})
    assert len(totals) == 1


def test_without_quarantine_its_totals_are_not_shown() -> None:
    report = run(repo("app", deleted=[entry("d1", "1.0.0")]))

    assert "no image entered or left a quarantine" in checks_of(report)["quarantine"].text()
    assert parse(render_page(report, PRICE)).find_all("dd", **{"data-total": "leftQuarantine"}) == []


def test_failures_fail_with_count_and_error_codes() -> None:
    check = checks_of(mixed_run())["failures"]

    assert check.attrs["data-status"] == "fail"
    assert "1 image failed (ImageNotFoundException 1)" in check.text()


@pytest.mark.parametrize("outcome", ["failed", "busy"])
def test_a_failed_or_busy_repository_fails(outcome: str) -> None:
    report = run(repo("app", outcome=outcome, error="AccessDenied on DescribeImages"))

    check = checks_of(report)["failures"]

    assert check.attrs["data-status"] == "fail"
    assert f"app: {outcome} (AccessDenied on DescribeImages)" in check.text()


UNWATCHED = ReplicaRegistry(registry_id="210987654321", region="us-east-1")
WATCHED = ReplicaRegistry(registry_id="210987654321", region="eu-central-1", expected_clusters=("dr",))


def test_no_replication_passes_and_says_so() -> None:
    check = checks_of(mixed_run())["replication"]

    assert check.attrs["data-status"] == "pass"
    assert "no repository's deletions replicate" in check.text()


def test_removals_replicated_to_an_unwatched_destination_warn() -> None:
    report = run(repo("app", deleted=[entry("d1")], deletion_replicates_to=(UNWATCHED,)))

    check = checks_of(report)["replication"]

    assert check.attrs["data-status"] == "warn"
    assert "app deletions reach us-east-1 (210987654321) (no expected cluster there)" in check.text()


def test_an_unwatched_destination_without_removals_is_only_a_finding() -> None:
    report = run(repo("app", kept_images=[kept("k1")], deletion_replicates_to=(UNWATCHED,)))

    check = checks_of(report)["replication"]

    assert check.attrs["data-status"] == "pass"
    assert "this run removes nothing here" in check.text()


def test_a_watched_destination_passes_naming_its_clusters() -> None:
    report = run(repo("app", deleted=[entry("d1")], deletion_replicates_to=(WATCHED,)))

    check = checks_of(report)["replication"]

    assert check.attrs["data-status"] == "pass"
    assert "expected clusters there: dr" in check.text()


def test_lifecycle_findings_warn_with_counts() -> None:
    finding = Finding(
        severity="error", code="expires-in-use", message="rule 1 expires app:1.1.0 in use", fix="add a rule"
    )
    report = run(repo("app", lifecycle_findings=(finding,)))

    check = checks_of(report)["findings"]

    assert check.attrs["data-status"] == "warn"
    assert "1 lifecycle policy finding (1 errors), 0 creation-template findings" in check.text()
    assert "rule 1 expires app:1.1.0 in use" in check.text()


def test_warnings_warn_and_are_listed() -> None:
    report = run(run_warnings=("repository gone: old-app",))

    check = checks_of(report)["warnings"]

    assert check.attrs["data-status"] == "warn"
    assert "repository gone: old-app" in check.text()


def test_evidence_is_capped_and_says_how_many_more() -> None:
    report = run(repo("app", cancelled=[entry(f"c{i}", kind="tag-changed") for i in range(60)]))

    check = checks_of(report)["cancellations"]

    assert len(check.find_all("li")) == 51
    assert "… and 10 more" in check.text()


def test_the_manifest_age_is_at_the_finish() -> None:
    report = run(manifests=[prod_manifest(generated_at=STARTED - timedelta(hours=2))])

    assert "2h old at the run's finish" in checks_of(report)["manifest:prod"].text()
