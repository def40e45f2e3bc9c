"""A run over several Regions succeeds or fails as a whole (issue 44 item 1): both doors, the workflow's steps and
`run`, list every pruned Region before the first mutation; a Region that cannot be listed is that Region's failure in
the stored run report (the memory updated and the summary published as at any end), never an exception after
something was removed; and a block of one Region is that Region's, never "nothing deleted" after removals elsewhere.

Before: `run` pruned eu-west-1, then died listing us-east-1 (no report, no memory, a FAILED message naming nothing),
and a block of us-east-1 made the run's outcome, its SNS subject and its page say nothing was deleted anywhere."""

from __future__ import annotations

import json

import pytest
from unit.services.test_several_regions import HOME, OTHER, RULES, deleted, two_regions

from ecr_retention.domain.config import parse_config
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.ports import RepositoriesUnlistable
from ecr_retention.report_page.checks import blocked_check
from ecr_retention.report_page.view import page_view_of
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import UNLISTED, start_run
from ecr_retention.workflow import WorkItem
from support.builders import NOW
from support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

DENIED = "DescribeRepositories failed: AccessDeniedException: not authorized to perform ecr:DescribeRepositories"
UNREADABLE = "DescribeRegistry failed: AccessDeniedException: not authorized to perform ecr:DescribeRegistry"


def adapters_of(home: FakeRegistry, other: FakeRegistry, bucket: MemoryBucket, notifier: RecordingNotifier) -> Adapters:
    return Adapters(
        registry=home,
        bucket=bucket,
        notifier=notifier,
        clock=lambda: NOW,
        renderers=RENDERERS,
        other_registries=(other,),
    )


def the_workflow(adapters: Adapters) -> RunReport:
    """The workflow's steps as the state machine runs them: targets, one evaluation per work item, the report."""
    config = parse_config(RULES)
    start = start_run(config, adapters, trigger="schedule")
    for item in json.loads(adapters.bucket.read(start.targets_key, max_bytes=1 << 20) or b"[]"):
        work = WorkItem.model_validate(item)
        run_work_item(config, adapters, run_id=work.run_id, repository=work.repository, dry_run=False, key=work.region)
    return finish_run(adapters, start, config)


def the_cli(adapters: Adapters) -> RunReport:
    return run_pipeline(parse_config(RULES), adapters)


DOORS = pytest.mark.parametrize("door", [the_workflow, the_cli], ids=["workflow", "run"])


def stored_report(bucket: MemoryBucket, report: RunReport) -> dict[str, object]:
    key = str(report.report_url).removeprefix(f"s3://{bucket.name}/")
    stored: dict[str, object] = json.loads(bucket.objects[key])
    return stored


@DOORS
def test_a_second_region_that_cannot_be_listed_is_its_failure_and_the_run_reports_what_it_removed(door: object) -> None:
    home, other, bucket, _ = two_regions()
    other.listing_failure = DENIED
    shared: list[tuple[str, str]] = []
    home.calls = other.calls = shared  # one log of both registries' calls, in order
    notifier = RecordingNotifier()

    report = door(adapters_of(home, other, bucket, notifier))  # type: ignore[operator]

    # Every Region listed before the first mutation.
    listings = [index for index, call in enumerate(shared) if call[0] == "repository_names"]
    first_mutation = next(index for index, call in enumerate(shared) if call[0] in ("delete_images", "archive_images"))
    assert len(listings) == 2
    assert max(listings) < first_mutation
    # The home Region pruned; us-east-1 named as failed, nothing touched there.
    assert deleted(report)[(HOME, "app")] == {"v1", "v3"}
    assert sorted(other.tags("app")) == ["v0", "v1", "v2", "v3", "v4"]
    assert sorted(other.tags("edge")) == ["v1", "v2", "v3", "v4"]
    [failed] = [repo for repo in report.repositories if repo.outcome == "failed"]
    assert (failed.region, failed.repository_name) == (OTHER, UNLISTED)
    assert failed.error is not None
    assert failed.error.startswith("the repositories of us-east-1 could not be listed")
    assert DENIED in failed.error
    assert report.outcome == "partial"
    # Stored, remembered and published as any run's end.
    assert stored_report(bucket, report)["outcome"] == "partial"
    assert "state/in-use-memory.json" in bucket.objects
    [(subject, body, attributes)] = notifier.messages
    assert subject.startswith("ecr-retention run partial: deleted 2 images")
    assert attributes["outcome"] == "partial"
    assert f"{OTHER}:{UNLISTED}: failed (the repositories of us-east-1 could not be listed" in body


@DOORS
def test_the_home_region_that_cannot_be_listed_fails_alone_too(door: object) -> None:
    home, other, bucket, _ = two_regions()
    home.listing_failure = DENIED
    notifier = RecordingNotifier()

    report = door(adapters_of(home, other, bucket, notifier))  # type: ignore[operator]

    assert home.mutating_calls == []
    assert deleted(report)[(OTHER, "edge")] == {"v1", "v2"}
    assert [(r.region, r.repository_name) for r in report.repositories if r.outcome == "failed"] == [(HOME, UNLISTED)]
    assert stored_report(bucket, report)["outcome"] == "partial"


@DOORS
def test_when_no_region_can_be_listed_the_run_fails_before_it_acts(door: object) -> None:
    home, other, bucket, _ = two_regions()
    home.listing_failure = other.listing_failure = DENIED
    notifier = RecordingNotifier()

    with pytest.raises(RepositoriesUnlistable, match="AccessDeniedException"):
        door(adapters_of(home, other, bucket, notifier))  # type: ignore[operator]

    assert home.mutating_calls == other.mutating_calls == []


@DOORS
def test_a_block_of_one_region_is_that_regions_and_never_reads_as_nothing_deleted(door: object) -> None:
    home, other, bucket, _ = two_regions()
    other.replication_problem = UNREADABLE  # us-east-1 is blocked; eu-west-1 prunes
    notifier = RecordingNotifier()

    report = door(adapters_of(home, other, bucket, notifier))  # type: ignore[operator]

    assert deleted(report)[(HOME, "app")] == {"v1", "v3"}
    assert other.count("delete_images") == 0
    assert report.totals.deleted == 2
    assert report.outcome == "partial"
    # Each reason names the Region it blocked.
    assert report.blocked
    assert all(reason.startswith(f"{OTHER}: ") for reason in report.blocked), report.blocked
    assert "the registry's replication configuration is unknown" in report.blocked[0]
    # The SNS subject and body, the page's header, its blocked section and its check.
    [(subject, body, _)] = notifier.messages
    assert "BLOCKED" not in subject
    assert "nothing deleted" not in subject
    assert subject.startswith("ecr-retention run partial: deleted 2 images")
    assert "nothing was deleted anywhere" not in body
    assert "BLOCKED in part, nothing was deleted where these apply" in body
    page = page_view_of(report, StoragePrice.for_region(HOME, None))
    assert page.header.headline.startswith("deleted 2 images")
    assert page.blocked_title == "Blocked in part: nothing was deleted where these apply"
    assert "nothing was deleted anywhere" not in str(blocked_check(report))
    html = RENDERERS.page(report, StoragePrice.for_region(HOME, None)).decode()
    assert "nothing was deleted anywhere" not in html


def test_a_run_that_removed_nothing_is_still_blocked_in_the_words_of_one_region() -> None:
    """Both Regions blocked (the inventory): nothing removed anywhere, so the run is blocked, as it always said."""
    home, other, bucket, _ = two_regions()
    bucket.objects.pop("in-use/prod.json")
    notifier = RecordingNotifier()

    report = the_cli(adapters_of(home, other, bucket, notifier))

    assert report.totals.deleted == 0
    assert report.outcome == "blocked"
    [(subject, body, _)] = notifier.messages
    assert "BLOCKED: nothing deleted in 3 repositories" in subject
    assert "BLOCKED, nothing was deleted anywhere:" in body
    assert all(reason.startswith(f"{HOME}, {OTHER}: ") for reason in report.blocked), report.blocked
    assert render_summary(report)[0] == subject
