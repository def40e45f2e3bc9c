"""`ecr-retention hold` on input a reader of the first version found unhandled: a reason or owner out of the hold's
bounds is one line (no traceback, nothing written), a tag that two holds were placed by is not guessed at, and a hold
checked against the default safety.max_hold says so."""

from __future__ import annotations

import pytest
from integration.cli.test_hold_command import a_deleted_image, hold, one_line

from support.pipeline_harness import Pipeline


def test_an_empty_reason_or_an_overlong_owner_is_refused_in_one_line_and_nothing_is_written(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))

    empty = hold(pipeline, capsys, "add", f"{repository}@{digest}", "--until", "2d", "--reason", "")
    long_owner = hold(
        pipeline, capsys, "add", f"{repository}@{digest}", "--until", "2d", "--reason", "x", "--owner", "o" * 300
    )

    for refused in (empty, long_owner):
        assert refused.code == 2
        assert one_line(refused).startswith("ecr-retention hold: error: hold add: ")
    assert "reason" in one_line(empty)
    assert "owner" in one_line(long_owner)
    assert pipeline.keys("holds/") == []


def test_removing_by_a_tag_two_holds_were_placed_by_names_both_and_lifts_neither(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two images each held by the tag `pinned` when it pointed at them (the tag moved in between)
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))
    other = next(
        image["imageDigest"]
        for image in pipeline.ecr.describe_images(repositoryName=repository)["imageDetails"]
        if image["imageDigest"] != digest
    )
    for held in (digest, other):
        manifest = pipeline.ecr.batch_get_image(repositoryName=repository, imageIds=[{"imageDigest": held}])
        pipeline.ecr.put_image(
            repositoryName=repository, imageManifest=manifest["images"][0]["imageManifest"], imageTag="pinned"
        )
        placed = hold(pipeline, capsys, "add", f"{repository}:pinned", "--until", "2d", "--reason", "pin")
        assert placed.code == 0, placed.stderr

    # When the hold is removed by the tag
    removed = hold(pipeline, capsys, "remove", f"{repository}:pinned")

    # Then neither is lifted, and the line names both digests
    assert removed.code == 2
    line = one_line(removed)
    assert "2 holds were placed by this tag" in line
    assert digest in line
    assert other in line
    assert len(pipeline.keys("holds/")) == 2


def test_a_hold_checked_against_the_default_max_hold_says_so(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    repository, digest, _ = a_deleted_image(pipeline, pipeline.config(dry_run=False))

    placed = hold(pipeline, capsys, "add", f"{repository}@{digest}", "--until", "60d", "--reason", "audit")

    assert placed.code == 0, placed.stderr
    assert "note: --until was checked against the default safety.max_hold (90d)" in placed.stderr
