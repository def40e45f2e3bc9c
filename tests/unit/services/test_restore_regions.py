"""`restore --run` takes the Region from the report (issue 44 item 2): a run that archived in two Regions' repositories
of one name (`team/worker`) is restored exactly, each Region's images through that Region's registry, from whichever
Region the command runs in, and reported per Region; a repository that exists in one Region only is not "gone".

Before: the selections were keyed by repository name alone, so run from eu-west-1 it restored nothing there and
looked up us-east-1's digests ("no such image"), and from us-east-1 it said "12 archived images are restored" while
eu-west-1's stayed archived; us-east-1's `edge` read as "repository gone" from eu-west-1."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ecr_retention.commands import restore as restore_command
from ecr_retention.domain.errors import InputError
from ecr_retention.services.restore import Waiting, removals_of_run, restore_run
from support.fakes import FakeRegistry, MemoryBucket

HOME, OTHER = "eu-west-1", "us-east-1"
ACCOUNT = "123456789012"
RUN_ID = "20261201T030000Z-schedule-1a2b3c4d"
REPORT_KEY = f"reports/2026/12/01/{RUN_ID}.json"
PUSHED = datetime(2026, 10, 1, tzinfo=UTC)
ARCHIVED_AT = datetime(2026, 12, 1, 3, tzinfo=UTC)


def entries(digests: list[str]) -> list[dict[str, object]]:
    return [
        {"imageDigest": d, "imageTags": [], "imagePushedAt": PUSHED.isoformat(), "kind": "quarantine", "detail": "q"}
        for d in digests
    ]


def archived_in_two_regions() -> tuple[FakeRegistry, FakeRegistry, MemoryBucket, dict[tuple[str, str], list[str]]]:
    """team/worker in both Regions, 3 images archived in each (other images: each Region's own); edge in us-east-1
    only, 2 archived; and one deletion in each Region."""
    registries = {region: FakeRegistry(registry_id=ACCOUNT, region=region) for region in (HOME, OTHER)}
    archived: dict[tuple[str, str], list[str]] = {}
    for region, repository, count in ((HOME, "team/worker", 3), (OTHER, "team/worker", 3), (OTHER, "edge", 2)):
        registry = registries[region]
        digests = [
            registry.add_image(repository, tags=[], pushed_at=PUSHED, seed=f"{region}{repository}{n}")
            for n in range(count)
        ]
        for digest in digests:
            registry.archive(repository, digest, ARCHIVED_AT)
        archived[(region, repository)] = digests
    deleted = entries(["sha256:" + "d" * 64])
    document = {
        "schemaVersion": 1,
        "runId": RUN_ID,
        "trigger": "schedule",
        "dryRun": False,
        "startedAt": "2026-12-01T03:00:00Z",
        "finishedAt": "2026-12-01T03:05:00Z",
        "outcome": "ok",
        "registryId": ACCOUNT,
        "region": HOME,
        "repositories": [
            {"repositoryName": name, "region": region, "outcome": "ok", "archived": entries(digests)}
            for (region, name), digests in archived.items()
        ]
        + [
            {"repositoryName": "app", "region": region, "outcome": "ok", "deleted": deleted} for region in (HOME, OTHER)
        ],
    }
    bucket = MemoryBucket(name="inventory")
    bucket.write(REPORT_KEY, json.dumps(document).encode())
    return registries[HOME], registries[OTHER], bucket, archived


def archived_now(registry: FakeRegistry, repository: str) -> set[str]:
    return {d.image_digest for d in registry.describe_images(repository) if d.image_status == "ARCHIVED"}


def test_a_run_that_archived_in_two_regions_is_restored_in_each_through_its_own_registry() -> None:
    home, other, bucket, archived = archived_in_two_regions()
    registries = {HOME: home, OTHER: other}

    report = restore_run(removals_of_run(bucket, RUN_ID), registry_in=lambda region: registries[str(region)])

    assert archived_now(home, "team/worker") == set()
    assert archived_now(other, "team/worker") == set()
    assert archived_now(other, "edge") == set()
    restored = {
        (line.region, line.repository, line.image_digest) for line in report.lines if line.status == "restoring"
    }
    assert restored == {(region, name, digest) for (region, name), digests in archived.items() for digest in digests}
    assert len(report.lines) == 8
    assert not report.has_problems
    assert "gone" not in " ".join(line.detail for line in report.lines)


def test_the_runs_removals_are_counted_per_region() -> None:
    _, _, bucket, _ = archived_in_two_regions()

    removals = removals_of_run(bucket, RUN_ID)

    assert removals.several
    assert {region: (r.archived, r.deleted) for region, r in removals.regions.items()} == {HOME: (3, 1), OTHER: (5, 1)}
    assert sorted(removals.regions[OTHER].selections) == ["edge", "team/worker"]


class Session:
    """The CLI's AWS session (commands/aws_session.py AwsSession), in the given Region, over the fakes."""

    def __init__(self, region: str, registries: dict[str, FakeRegistry], bucket: MemoryBucket) -> None:
        self.region, self.registries, self.the_bucket = region, registries, bucket
        self.asked: list[str | None] = []

    def registry(self, region: str | None = None) -> FakeRegistry:
        self.asked.append(region)
        return self.registries[region or self.region]

    def bucket(self, name: str) -> MemoryBucket:
        return self.the_bucket


@pytest.mark.parametrize("where", [HOME, OTHER])
def test_restore_by_run_restores_exactly_what_was_archived_from_either_region(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home, other, bucket, archived = archived_in_two_regions()
    session = Session(where, {HOME: home, OTHER: other}, bucket)
    monkeypatch.setattr(restore_command.AwsSession, "from_environment", classmethod(lambda cls: session))
    args: Any = argparse.Namespace(
        run_id=RUN_ID, bucket="inventory", repository=None, digest=[], tag=[], wait=False, timeout=None, dry_run=False
    )

    code = restore_command.run(args)

    out, err = capsys.readouterr()
    assert code == 0, err
    assert set(session.asked) == {HOME, OTHER}
    for (region, name), digests in archived.items():
        registry = home if region == HOME else other
        assert archived_now(registry, name) == set(), (region, name)
        assert {detail.image_digest for detail in registry.describe_images(name)} == set(digests)
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["REGION", "REPOSITORY"]
    assert sum(1 for line in lines if line.startswith(f"{HOME} ") and "team/worker" in line) == 3
    assert sum(1 for line in lines if line.startswith(f"{OTHER} ") and "team/worker" in line) == 3
    assert "total: restoring 8 (live)" in out
    assert f"\n  {HOME}: restoring 3\n  {OTHER}: restoring 5" in out
    assert (
        f"run {RUN_ID} deleted 2 images ({HOME} 1, {OTHER} 1); deletions cannot be undone, only its 8 archived images "
        f"({HOME} 3, {OTHER} 5) are restored"
    ) in err
    assert "no such image" not in out
    assert "gone" not in out


def test_a_report_naming_a_region_that_is_none_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home, other, bucket, _ = archived_in_two_regions()
    document = json.loads(bucket.objects[REPORT_KEY])
    document["repositories"][0]["region"] = "EU-WEST-1"
    bucket.write(REPORT_KEY, json.dumps(document).encode())
    session = Session(HOME, {HOME: home, OTHER: other}, bucket)
    monkeypatch.setattr(restore_command.AwsSession, "from_environment", classmethod(lambda cls: session))
    args: Any = argparse.Namespace(
        run_id=RUN_ID, bucket="inventory", repository=None, digest=[], tag=[], wait=False, timeout=None, dry_run=False
    )

    with pytest.raises(InputError, match="the run's report: region: 'EU-WEST-1' is not an AWS Region"):
        restore_command.run(args)
    assert home.mutating_calls == other.mutating_calls == []


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_wait_covers_both_regions_within_the_one_timeout() -> None:
    """us-east-1's restores never finish: eu-west-1's are waited for first, then us-east-1's in what is left of the
    one timeout, not a timeout of their own."""
    home, other, bucket, archived = archived_in_two_regions()
    registries = {HOME: home, OTHER: other}
    clock = Clock()

    def ecr_finishes_home_only(seconds: float) -> None:
        clock.sleep(seconds)
        for digest in archived[(HOME, "team/worker")]:
            home.activate("team/worker", digest)

    waiting = Waiting(timeout=40, clock=lambda: clock.now, sleep=ecr_finishes_home_only, progress=lambda _: None)

    report = restore_run(
        removals_of_run(bucket, RUN_ID), registry_in=lambda region: registries[str(region)], waiting=waiting
    )

    assert {line.status for line in report.lines if line.region == HOME} == {"restored"}
    assert {line.status for line in report.lines if line.region == OTHER} == {"timed-out"}
    assert clock.now == 40
    assert report.has_problems
