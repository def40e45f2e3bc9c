"""services/restore.py on the in-memory registry and bucket: what is archived is restored, what is not is reported
as it is, a second restore does nothing, --wait polls until ACTIVE or the timeout, and a run's report names what
to restore."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.ports import BatchOutcome
from ecr_retention.services.restore import (
    RegionRemovals,
    RunRemovals,
    Selection,
    Waiting,
    removals_of_run,
    restore,
)
from ecr_retention.services.snapshot import MemoryManifestCache
from ecr_retention.workflow import run_started_at
from support.fakes import FakeRegistry, MemoryBucket

REPO = "app"
PUSHED = datetime(2026, 10, 1, tzinfo=UTC)
ARCHIVED_AT = datetime(2026, 11, 1, tzinfo=UTC)
RUN_ID = "20261201T030000Z-schedule-1a2b3c4d"
GIB = 1024**3


def seeded() -> tuple[FakeRegistry, dict[str, str]]:
    registry = FakeRegistry()
    digests = {
        tag: registry.add_image(REPO, tags=[tag], pushed_at=PUSHED, seed=tag, size=GIB)
        for tag in ("pr-1", "pr-2", "v1")
    }
    for tag in ("pr-1", "pr-2"):
        registry.archive(REPO, digests[tag], ARCHIVED_AT)
    return registry, digests


def test_restore_starts_each_archived_image_and_leaves_active_ones() -> None:
    registry, _ = seeded()

    report = restore({REPO: Selection(tags=("pr-1", "pr-2", "v1"))}, registry=registry)

    assert {line.image_tags[0]: line.status for line in report.lines} == {
        "pr-1": "restoring",
        "pr-2": "restoring",
        "v1": "already-active",
    }
    assert registry.count("restore_images") == 2
    assert not report.has_problems
    assert report.fee() == pytest.approx(2 * 0.03)


def test_restore_twice_restores_nothing_the_second_time() -> None:
    registry, digests = seeded()
    restore({REPO: Selection(digests=(digests["pr-1"],))}, registry=registry)
    registry.calls.clear()

    again = restore({REPO: Selection(digests=(digests["pr-1"],))}, registry=registry)

    assert [line.status for line in again.lines] == ["being-restored"]
    assert registry.mutating_calls == []
    registry.activate(REPO, digests["pr-1"])
    assert [line.status for line in restore({REPO: Selection(tags=("pr-1",))}, registry=registry).lines] == [
        "already-active"
    ]


def test_dry_run_says_would_restore_and_changes_nothing() -> None:
    registry, digests = seeded()

    report = restore({REPO: Selection(tags=("pr-1", "v1"))}, registry=registry, dry_run=True)

    assert [line.status for line in report.lines] == ["already-active", "would-restore"]
    assert registry.mutating_calls == []
    assert registry.repositories[REPO][digests["pr-1"]].detail.image_status == "ARCHIVED"


def test_unknown_tag_and_digest_are_failures_and_the_rest_goes_on() -> None:
    registry, digests = seeded()
    missing = "sha256:" + "0" * 64

    report = restore({REPO: Selection(digests=(missing, digests["pr-2"]), tags=("nope",))}, registry=registry)

    assert [(line.status, line.detail) for line in report.lines if line.status == "failed"] == [
        ("failed", "no such image in the repository"),
        ("failed", "tag nope names no image"),
    ]
    assert [line.status for line in report.lines if line.status != "failed"] == ["restoring"]
    assert report.has_problems


def test_an_image_deleted_between_the_read_and_the_restore_fails() -> None:
    registry, digests = seeded()
    registry.before["restore_images"] = lambda fake: fake.repositories[REPO].pop(digests["pr-1"])

    report = restore({REPO: Selection(tags=("pr-1", "pr-2"))}, registry=registry)

    by_tag = {line.image_tags[0]: (line.status, line.detail) for line in report.lines}
    assert by_tag == {
        "pr-1": ("failed", "gone: deleted since it was read"),
        "pr-2": ("restoring", "restore started (ACTIVATING; ECR says within 20 minutes)"),
    }


def test_a_refused_restore_is_a_failure_with_its_code() -> None:
    registry, digests = seeded()
    registry.restore_failures[digests["pr-2"]] = "KmsException"

    report = restore({REPO: Selection(tags=("pr-1", "pr-2"))}, registry=registry)

    assert [(line.image_tags[0], line.status) for line in report.lines] == [("pr-1", "restoring"), ("pr-2", "failed")]
    assert report.lines[1].detail.startswith("KmsException")


def test_a_restore_call_that_raises_fails_its_images_and_the_restore_still_reports() -> None:
    # Given a registry whose restore raises what no adapter anticipated (a defect)
    registry, _ = seeded()

    def broken(repository: str, digests: Sequence[str]) -> BatchOutcome:
        raise RuntimeError("the adapter broke")

    registry.restore_images = broken  # type: ignore[method-assign]

    report = restore({REPO: Selection(tags=("pr-1", "v1"))}, registry=registry)

    assert {line.image_tags[0]: (line.status, line.detail) for line in report.lines} == {
        "pr-1": ("failed", "RestoreFailed: RuntimeError: the adapter broke"),
        "v1": ("already-active", "not archived: nothing to restore"),
    }
    assert report.has_problems


def test_an_answer_that_does_not_name_the_image_is_a_failure_not_a_restore() -> None:
    registry, _ = seeded()
    registry.restore_images = lambda repository, digests: BatchOutcome()  # type: ignore[method-assign]

    report = restore({REPO: Selection(tags=("pr-1",))}, registry=registry)

    assert [(line.status, line.detail) for line in report.lines] == [
        ("failed", "NoAnswer: the registry's answer did not mention this image")
    ]


def test_a_repository_that_does_not_exist_is_one_failure() -> None:
    registry, _ = seeded()

    report = restore({"gone": Selection(tags=("v1",))}, registry=registry)

    assert [(line.repository, line.status) for line in report.lines] == [("gone", "failed")]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_wait_polls_until_each_restore_is_active() -> None:
    registry, digests = seeded()
    clock = Clock()
    progress: list[str] = []

    def finish_after_two_polls(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            registry.activate(REPO, digests["pr-1"])
            registry.activate(REPO, digests["pr-2"])

    waiting = Waiting(timeout=1800, clock=lambda: clock.now, sleep=finish_after_two_polls, progress=progress.append)
    report = restore({REPO: Selection(tags=("pr-1", "pr-2"))}, registry=registry, waiting=waiting)

    assert [line.status for line in report.lines] == ["restored", "restored"]
    assert clock.sleeps == [15.0, 15.0]
    assert progress == ["waiting: 0 of 2 restored, 0s elapsed"]  # then once a minute, or when the count changes


def test_wait_times_out_and_says_the_restore_goes_on() -> None:
    registry, _ = seeded()
    clock = Clock()
    waiting = Waiting(timeout=40, clock=lambda: clock.now, sleep=clock.sleep, progress=lambda _: None)

    report = restore({REPO: Selection(tags=("pr-1",))}, registry=registry, waiting=waiting)

    assert [(line.status, line.detail) for line in report.lines] == [
        ("timed-out", "still ACTIVATING after 40s (the restore goes on)")
    ]
    assert clock.sleeps == [15.0, 15.0, 10.0]
    assert report.has_problems


def entries_of(digests: tuple[str, ...]) -> list[dict[str, object]]:
    return [
        {
            "imageDigest": digest,
            "imageTags": [],
            "imagePushedAt": PUSHED.isoformat(),
            "kind": "delete-rule",
            "detail": "pull-request builds",
        }
        for digest in digests
    ]


def report_body(
    run_id: str = RUN_ID, *, dry_run: bool = False, archived: tuple[str, ...] = (), deleted: tuple[str, ...] = ()
) -> bytes:
    entries = entries_of(archived)
    document = {
        "schemaVersion": 1,
        "runId": run_id,
        "trigger": "schedule",
        "dryRun": dry_run,
        "startedAt": "2026-12-01T03:00:00Z",
        "finishedAt": "2026-12-01T03:05:00Z",
        "outcome": "ok",
        "repositories": [
            {"repositoryName": REPO, "outcome": "ok", "archived": entries},
            {"repositoryName": "other", "outcome": "ok", "deleted": entries_of(deleted)},
        ],
    }
    return json.dumps(document).encode()


def test_a_runs_report_names_the_images_it_archived() -> None:
    bucket = MemoryBucket()
    bucket.write(f"reports/2026/12/01/{RUN_ID}.json", report_body(archived=("sha256:" + "a" * 64,)))

    regions = removals_of_run(bucket, RUN_ID).regions
    assert regions[None].selections == {REPO: Selection(digests=("sha256:" + "a" * 64,))}


def test_a_runs_removals_count_its_deletions_which_cannot_be_restored() -> None:
    bucket = MemoryBucket()
    archived, deleted = ("sha256:" + "a" * 64,), ("sha256:" + "b" * 64, "sha256:" + "c" * 64)
    bucket.write(f"reports/2026/12/01/{RUN_ID}.json", report_body(archived=archived, deleted=deleted))

    removals = removals_of_run(bucket, RUN_ID)

    # A report that names no Region (before a run could prune several): restored in the caller's Region.
    assert removals == RunRemovals({None: RegionRemovals({REPO: Selection(digests=archived)}, archived=1, deleted=2)})
    assert (removals.archived, removals.deleted) == (1, 2)


@pytest.mark.parametrize(
    ("run_id", "body", "message"),
    [
        ("last-night", None, "--run: 'last-night' is not a run id"),
        ("20261301T030000Z-schedule-1a2b3c4d", None, "does not start with a valid date and time"),
        (RUN_ID, None, f"unknown run {RUN_ID}: no report at s3://inventory/reports/2026/12/01/{RUN_ID}.json"),
        (RUN_ID, b"{not json", "reports/2026/12/01/" + RUN_ID + ".json"),
        (RUN_ID, b'{"runId": 3}', "unreadable run report"),
        (RUN_ID, report_body(dry_run=True), "was a dry run: it archived nothing"),
        (RUN_ID, report_body("20261201T030000Z-schedule-ffffffff"), "the report is of run"),
    ],
)
def test_a_run_that_cannot_be_read_is_bad_input(run_id: str, body: bytes | None, message: str) -> None:
    bucket = MemoryBucket()
    if body is not None:
        bucket.write(f"reports/2026/12/01/{RUN_ID}.json", body)

    with pytest.raises(InputError) as raised:
        removals_of_run(bucket, run_id)

    assert message in str(raised.value)


def test_run_started_at_reads_the_run_ids_timestamp() -> None:
    assert run_started_at(RUN_ID) == datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


# --- an image index comes back with its children -----------------------------------------------------------------


def archived_multi_arch() -> tuple[FakeRegistry, dict[str, str]]:
    """v1: an index listing two platform images and a nested index (listing a third), every one of them archived,
    as the pipeline archives an index with its children; v2: an unrelated archived image, left alone."""
    registry = FakeRegistry()
    digests = {name: registry.add_image(REPO, pushed_at=PUSHED, seed=name, size=GIB) for name in ("amd64", "arm64")}
    digests["attestation"] = registry.add_image(REPO, pushed_at=PUSHED, seed="attestation")
    digests["nested"] = registry.add_index(REPO, [digests["attestation"]], tags=(), pushed_at=PUSHED)
    digests["index"] = registry.add_index(
        REPO, [digests["amd64"], digests["arm64"], digests["nested"]], tags=("v1",), pushed_at=PUSHED
    )
    digests["other"] = registry.add_image(REPO, tags=["v2"], pushed_at=PUSHED, seed="other")
    for digest in digests.values():
        registry.archive(REPO, digest, ARCHIVED_AT)
    return registry, digests


def pipeline_cache(registry: FakeRegistry, *digests: str) -> MemoryManifestCache:
    """The index manifests as the pipeline's cache holds them (read while the indexes were ACTIVE)."""
    cache = MemoryManifestCache()
    for digest in digests:
        cache.put(digest, registry.repositories[REPO][digest].manifest)
    return cache


def short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


def test_restoring_an_index_by_tag_restores_its_archived_children_and_nested_indexes() -> None:
    registry, digests = archived_multi_arch()
    cache = pipeline_cache(registry, digests["index"], digests["nested"])

    report = restore({REPO: Selection(tags=("v1",))}, registry=registry, manifests=cache)

    restored = {"index", "amd64", "arm64", "nested", "attestation"}
    by_digest = {line.image_digest: line for line in report.lines}
    assert set(by_digest) == {digests[name] for name in restored}
    assert {line.status for line in report.lines} == {"restoring"}
    assert by_digest[digests["amd64"]].detail.endswith(f"(child of index {short(digests['index'])})")
    assert by_digest[digests["attestation"]].detail.endswith(f"(child of index {short(digests['nested'])})")
    assert registry.repositories[REPO][digests["other"]].detail.image_status == "ARCHIVED"
    assert registry.count("get_manifests") == 0  # ECR serves no manifest of an archived index: the cache does
    assert report.fee() == pytest.approx(2 * 0.03, rel=0.01)


def test_a_dry_run_of_an_index_names_the_children_it_would_restore() -> None:
    registry, digests = archived_multi_arch()
    cache = pipeline_cache(registry, digests["index"], digests["nested"])

    report = restore({REPO: Selection(digests=(digests["index"],))}, registry=registry, manifests=cache, dry_run=True)

    assert len(report.lines) == 5
    assert {line.status for line in report.lines} == {"would-restore"}
    assert registry.mutating_calls == []


def test_the_archived_children_of_an_active_index_are_found_through_its_manifest_from_ecr() -> None:
    registry, digests = archived_multi_arch()
    registry.activate(REPO, digests["index"])  # restored earlier, alone
    registry.activate(REPO, digests["nested"])

    report = restore({REPO: Selection(tags=("v1",))}, registry=registry)

    statuses = {line.image_digest: line.status for line in report.lines}
    assert statuses == {
        digests["index"]: "already-active",
        digests["nested"]: "already-active",
        digests["amd64"]: "restoring",
        digests["arm64"]: "restoring",
        digests["attestation"]: "restoring",
    }


def test_an_archived_index_whose_manifest_is_unknown_says_to_restore_again_and_a_second_restore_finds_its_children() -> (
    None
):
    registry, digests = archived_multi_arch()

    first = restore({REPO: Selection(tags=("v1",))}, registry=registry)

    [line] = first.lines
    assert (line.image_digest, line.status) == (digests["index"], "restoring")
    assert first.unfinished == [
        f"{REPO}: index {short(digests['index'])} is not ACTIVE and its manifest is not cached, so its archived "
        "children are not known yet (ECR serves no manifest of an archived image): once it is ACTIVE, restore again "
        "(or use --wait) to restore them"
    ]
    assert first.notes == []
    assert first.has_problems  # the index cannot be pulled until its children are back
    registry.activate(REPO, digests["index"])

    second = restore({REPO: Selection(tags=("v1",))}, registry=registry)

    statuses = {line.image_digest: line.status for line in second.lines}
    assert statuses == {
        digests["index"]: "already-active",
        digests["amd64"]: "restoring",
        digests["arm64"]: "restoring",
        digests["nested"]: "restoring",
    }


def test_wait_restores_the_children_of_an_archived_index_once_its_manifest_can_be_read() -> None:
    registry, digests = archived_multi_arch()
    clock = Clock()

    def ecr_finishes_every_restore(seconds: float) -> None:
        clock.sleep(seconds)
        for digest, stored in registry.repositories[REPO].items():
            if stored.detail.image_status == "ACTIVATING":
                registry.activate(REPO, digest)

    waiting = Waiting(timeout=1800, clock=lambda: clock.now, sleep=ecr_finishes_every_restore, progress=lambda _: None)
    report = restore({REPO: Selection(tags=("v1",))}, registry=registry, waiting=waiting)

    statuses = {line.image_digest: line.status for line in report.lines}
    assert statuses == {digests[name]: "restored" for name in ("index", "amd64", "arm64", "nested", "attestation")}
    assert report.notes == []
    assert clock.sleeps == [15.0, 15.0, 15.0]  # the index, then its children and the nested index, then its child
    assert registry.repositories[REPO][digests["other"]].detail.image_status == "ARCHIVED"


def test_wait_that_times_out_before_the_index_is_active_still_names_its_unknown_children() -> None:
    registry, _ = archived_multi_arch()
    clock = Clock()
    waiting = Waiting(timeout=20, clock=lambda: clock.now, sleep=clock.sleep, progress=lambda _: None)

    report = restore({REPO: Selection(tags=("v1",))}, registry=registry, waiting=waiting)

    [line] = report.lines
    assert (line.status, line.detail) == ("timed-out", "still ACTIVATING after 20s (the restore goes on)")
    [note] = report.notes
    assert "its archived children are not known yet" in note


def platform_index(registry: FakeRegistry) -> dict[str, str]:
    """v1: an index of a linux/amd64 and a linux/arm64/v8 image and buildx's provenance attestation, as buildx pushes
    them, all archived; the manifest is in the pipeline's cache."""
    digests = {name: registry.add_image(REPO, pushed_at=PUSHED, seed=name) for name in ("amd64", "arm64", "att")}
    entries = [
        {"digest": digests["amd64"], "platform": {"os": "linux", "architecture": "amd64"}},
        {"digest": digests["arm64"], "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
        {
            "digest": digests["att"],
            "platform": {"os": "unknown", "architecture": "unknown"},
            "annotations": {"vnd.docker.reference.type": "attestation-manifest"},
        },
    ]
    media_type = "application/vnd.oci.image.index.v1+json"
    manifest = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", **entry} for entry in entries],
    }
    digests["index"] = registry.add_image(REPO, tags=["v1"], pushed_at=PUSHED, manifest=manifest, media_type=media_type)
    for digest in digests.values():
        registry.archive(REPO, digest, ARCHIVED_AT)
    return digests


def test_without_wait_an_index_is_unfinished_until_a_restore_finds_its_children_active_naming_them() -> None:
    registry = FakeRegistry()
    digests = platform_index(registry)
    cache = pipeline_cache(registry, digests["index"])
    v1 = {REPO: Selection(tags=("v1",))}

    first = restore(v1, registry=registry, manifests=cache)

    assert {line.status for line in first.lines} == {"restoring"}
    assert first.unfinished == [
        f"{REPO}: index {short(digests['index'])} cannot be pulled until its children are ACTIVE, and 3 of 3 are not "
        f"yet: {short(digests['amd64'])} linux/amd64 (restoring), {short(digests['arm64'])} linux/arm64/v8 "
        f"(restoring), {short(digests['att'])} attestation (restoring); restore again once they are (it exits 0 then), "
        "or use --wait"
    ]
    assert first.has_problems

    for name in ("index", "amd64"):
        registry.activate(REPO, digests[name])
    second = restore(v1, registry=registry, manifests=cache)
    [said] = second.unfinished
    assert f"2 of 3 are not yet: {short(digests['arm64'])} linux/arm64/v8 (being-restored), " in said
    assert second.has_problems
    assert registry.count("restore_images") == 4  # one per image, by the first restore: none is started again

    for name in ("arm64", "att"):
        registry.activate(REPO, digests[name])
    third = restore(v1, registry=registry, manifests=cache)
    assert {line.status for line in third.lines} == {"already-active"}
    assert third.unfinished == []
    assert not third.has_problems


def test_a_dry_run_of_an_index_is_no_unfinished_restore() -> None:
    registry = FakeRegistry()
    digests = platform_index(registry)

    report = restore(
        {REPO: Selection(tags=("v1",))},
        registry=registry,
        manifests=pipeline_cache(registry, digests["index"]),
        dry_run=True,
    )

    assert report.unfinished == []
    assert not report.has_problems
