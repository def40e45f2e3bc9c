"""The demo's last checks (demo/verify.py, step 5) fail when the alert or the sweep's report leave out what they must
name: `make demo` exits non-zero unless the sentinel named the workloads, the image and the rule, and the sweep
reported the reference missing, when and by what."""

from __future__ import annotations

from datetime import UTC, datetime

from ecr_retention.domain.in_use.references import MissingReference, Removal
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention_dev.demo.verify import Alert, alert_names, missing_reported
from support.reports import dry_run_report

RULE = "lifecycle rule 1 of app's policy"
WORKLOADS = ["dev: dev/Deployment/app"]
DEV = Workload(cluster="dev", namespace="dev", workload="Deployment/app", source="pod")
REMOVAL = Removal(
    repository_name="app",
    image_digest="sha256:" + "8" * 64,
    image_tags=("1.12.359-dev", "dev"),
    action="deleted",
    cause="lifecycle",
    rule_priority=1,
    removed_at=datetime(2026, 12, 1, 9, 14, tzinfo=UTC),
    event_id="event-1",
)
BODY = (
    "app@sha256:888888888888 (tags 1.12.359-dev, dev): deleted 2026-12-01 09:14 UTC by lifecycle rule 1 of app's "
    "policy.\n- app:dev no longer exists: the next pull fails.\n  Runs in: dev: dev/Deployment/app (pod)."
)


def report_listing(*missing: MissingReference) -> RunReport:
    return dry_run_report(3).model_copy(update={"in_use_missing": missing})


def missing_dev(removed: Removal | None = REMOVAL) -> MissingReference:
    return MissingReference(
        repository_name="app", image="app:dev", image_tag="dev", missing="tag", in_use_by=(DEV,), removed=removed
    )


def test_an_alert_naming_the_workload_the_image_and_the_rule_passes() -> None:
    check = alert_names([Alert("other", "app:1.0 ..."), Alert("sentinel", BODY)], "app:dev", WORKLOADS, RULE)

    assert (check.ok, check.offenders) == (True, ())


def test_an_alert_without_the_rule_fails_naming_what_is_missing() -> None:
    body = BODY.replace("by lifecycle rule 1 of app's policy", "by an ECR DELETE action")

    check = alert_names([Alert("sentinel", body)], "app:dev", WORKLOADS, RULE)

    assert (check.ok, check.offenders) == (False, (f"not named: {RULE}",))


def test_no_alert_for_the_reference_fails() -> None:
    assert not alert_names([Alert("sentinel", "app:1.0 ...")], "app:dev", WORKLOADS, RULE).ok
    assert not alert_names([], "app:dev", WORKLOADS, RULE).ok


def test_the_sweep_listing_the_reference_with_when_and_by_what_passes() -> None:
    check = missing_reported(report_listing(missing_dev()), "app:dev", WORKLOADS, RULE)

    assert check.ok
    assert (
        check.detail
        == "the sweep's report lists app:dev: deleted 2026-12-01 09:14 UTC by lifecycle rule 1 of app's policy"
    )


def test_the_sweep_not_saying_what_removed_it_fails() -> None:
    assert not missing_reported(report_listing(missing_dev(removed=None)), "app:dev", WORKLOADS, RULE).ok


def test_the_sweep_not_listing_the_reference_fails() -> None:
    check = missing_reported(report_listing(), "app:dev", WORKLOADS, RULE)

    assert (check.ok, check.offenders) == (False, ("app:dev: not in the report's inUseMissing",))
