"""Faults during a run, served by moto through the emulator's EcrFidelity so that botocore's real retry logic
answers them: throttling bursts and storms, per-image BatchDeleteImage failures, a repository deleted mid-run, a
tag moved between the plan and the delete. In every case nothing protected goes, nothing the report claims
deleted is still there, and the report says exactly what happened."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from ecr_retention.aws.clients import MAX_ATTEMPTS
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.services.run import run_pipeline
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from support.expectations import State, assert_registry_is, candidates, expected_after, planned, without_archive_time
from support.pipeline_harness import Pipeline, build_pipeline, run_cli, write_rules
from support.realistic_registry import BUCKET, BULK_REPOSITORY


def comparable(state: State) -> State:
    return {
        repository: {digest: without_archive_time(detail) for digest, detail in details.items()}
        for repository, details in state.items()
    }


@pytest.fixture(scope="module")
def fault_free() -> tuple[State, RunReport]:
    """The registry and the report after the same run without faults (a registry of its own, gone when this
    returns: each test builds its own)."""
    with mock_aws(), EcrFidelity() as fidelity:
        pipeline = build_pipeline(fidelity)
        report = run_pipeline(pipeline.config(dry_run=False), pipeline.adapters())
        return comparable(pipeline.state()), report


def removed_digests(report: RunReport) -> dict[str, set[str]]:
    return {r.repository_name: {e.image_digest for e in (*r.deleted, *r.archived)} for r in report.repositories}


def test_throttling_bursts_are_ridden_out_and_the_run_ends_as_without_them(
    pipeline: Pipeline, fault_free: tuple[State, RunReport], retry_delays: list[float]
) -> None:
    clean_state, clean_report = fault_free
    # The backend listing page (after app's reading, its reading under the lease and its re-check), then app's second
    # BatchDeleteImage: each throttled on all but its last attempt.
    pipeline.fidelity.throttle("DescribeImages", times=MAX_ATTEMPTS - 1, after=3)
    pipeline.fidelity.throttle("BatchDeleteImage", times=MAX_ATTEMPTS - 1, after=1)

    report = run_pipeline(pipeline.config(dry_run=False), pipeline.adapters())

    assert comparable(pipeline.state()) == clean_state
    assert report.outcome == "ok"
    assert removed_digests(report) == removed_digests(clean_report)
    assert report.totals == clean_report.totals
    throttled = [c for c in pipeline.recorder.calls if c.attempts is not None and c.attempts > 1]
    assert [(c.operation, c.params["repositoryName"], c.attempts) for c in throttled] == [
        ("BatchDeleteImage", "app", MAX_ATTEMPTS),
        ("DescribeImages", "backend", MAX_ATTEMPTS),
    ]
    assert len(retry_delays) == 2 * (MAX_ATTEMPTS - 1)  # real retries, without their sleeps


def test_a_throttling_storm_on_batch_delete_image_fails_the_rest_and_claims_nothing_it_did_not_delete(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = pipeline.state()
    plan = pipeline.plan(pipeline.config(dry_run=False))
    # The first BatchDeleteImage (app's first wave) passes; from then on every attempt is throttled.
    pipeline.fidelity.throttle("BatchDeleteImage", times=1_000_000, after=1)

    result = run_cli(
        pipeline.recorder,
        capsys,
        "run",
        "--config",
        str(write_rules(tmp_path, dry_run=False)),
        "--bucket",
        BUCKET,
        "--topic-arn",
        pipeline.topic_arn,
        "--format",
        "json",
    )

    assert result.code == 1
    assert "Traceback" not in result.stderr
    report = RunReport.model_validate(json.loads(result.stdout))
    assert report.outcome == "partial"
    after = pipeline.state()
    by_name = {r.repository_name: r for r in report.repositories}
    seeded = pipeline.seeded

    def codes(repository: str) -> dict[str, str | None]:
        return {seeded.label_of(e.image_digest): e.error_code for e in by_name[repository].failed}

    # app: the first wave went (and its archives, another operation); the signature of v1.0.0 did not.
    assert codes("app") == {"app v1.0.0 signature": "ThrottlingException"}
    assert len(by_name["app"].deleted) == 9
    assert len(by_name["app"].archived) == 6
    for name in ("backend", "docker.io/library/nginx", "frontend"):
        assert set(codes(name).values()) == {"ThrottlingException"}, name
        assert by_name[name].deleted == ()
    # platform/runtime: the indexes were refused, so their children, signatures and SBOM were never sent.
    assert codes("platform/runtime") == {
        "runtime 2.0.0": "ThrottlingException",
        "runtime 2.1.0": "ThrottlingException",
        "runtime 2.0.0 amd64": "ParentNotRemoved",
        "runtime 2.0.0 arm64": "ParentNotRemoved",
        "runtime 2.0.0 signature": "ParentNotRemoved",
        "runtime 2.0.0 sbom": "ParentNotRemoved",
        "runtime 2.1.0 arm64": "ParentNotRemoved",
        "runtime 2.1.0 attestation": "ParentNotRemoved",
        "runtime 2.1.0 signature": "ParentNotRemoved",
    }
    # The bulk repository: its first call of 100 failed, the rest was not attempted.
    assert Counter(codes(BULK_REPOSITORY).values()) == {"ThrottlingException": 100, "NotAttempted": 616}
    # Every planned removal is reported either done or failed; the report claims nothing that is still there.
    for repository, removals in candidates(plan).items():
        if not removals:
            continue
        entry: RepositoryReport = by_name[repository]
        done = {e.image_digest for e in (*entry.deleted, *entry.archived)}
        failed = {e.image_digest for e in entry.failed}
        assert done | failed == set(removals), repository
        assert not done & failed, repository
        assert {e.image_digest for e in entry.deleted}.isdisjoint(after[repository]), repository
        assert failed <= set(after[repository]), repository
    # Nothing the plan keeps is touched.
    for repository_plan in plan.repositories:
        name = repository_plan.repository_name
        for kept in (d.image_digest for d in repository_plan.images if d.action == "keep"):
            assert after[name][kept] == before[name][kept], (name, kept)
    [message] = pipeline.messages()
    assert message["MessageAttributes"]["outcome"]["Value"] == "partial"
    assert "ThrottlingException" in message["Message"]


def test_batch_delete_image_failures_are_reported_image_by_image(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(config)
    seeded = pipeline.seeded
    oldest, untagged, v106 = seeded.digest("app v1.0.0"), seeded.digest("app untagged 10d"), seeded.digest("app v1.0.6")
    pipeline.fidelity.refuse_delete(oldest, "KmsError", "The KMS key used to encrypt the image is disabled")
    moto = MotoEcr(pipeline.ecr)

    def meanwhile() -> None:
        """Between the re-check and the delete: someone builds a multi-arch index on the old untagged image,
        and someone else deletes v1.0.6."""
        moto.push_index(
            "app", "v1.2.0-combined", children=(seeded.images["app untagged 10d"],), platforms=("linux/amd64",)
        )
        moto.backend.repositories["app"].images.remove(moto.image("app", v106))

    pipeline.fidelity.before("BatchDeleteImage", meanwhile, call=1)

    report = run_pipeline(config, pipeline.adapters())

    app = next(r for r in report.repositories if r.repository_name == "app")
    assert {(seeded.label_of(e.image_digest), e.kind, e.error_code) for e in app.failed} == {
        ("app v1.0.0", "delete-failed", "KmsError"),
        ("app untagged 10d", "delete-failed", "ImageReferencedByManifestList"),
        ("app v1.0.0 signature", "delete-failed", "ParentNotRemoved"),
    }
    assert [(seeded.label_of(e.image_digest), e.kind) for e in app.cancelled] == [("app v1.0.6", "tag-changed")]
    assert "already gone" in app.cancelled[0].detail
    assert {e.image_digest for e in app.deleted} == planned(plan, "delete")["app"] - {
        oldest,
        untagged,
        v106,
        seeded.digest("app v1.0.0 signature"),
    }
    assert app.outcome == "partial"
    assert report.outcome == "partial"
    assert {r.repository_name: r.outcome for r in report.repositories if r.repository_name != "app"} == {
        name: "ok" for name in removed_names(plan) if name != "app"
    }
    after = pipeline.state()
    for digest in (oldest, untagged, seeded.digest("app v1.0.0 signature")):
        assert after["app"][digest] == before["app"][digest]
    assert v106 not in after["app"]
    expected = expected_after(before, plan)
    combined = {d for d in after["app"] if d not in before["app"]}
    assert len(combined) == 1  # the index pushed meanwhile
    expected["app"] |= {d: before["app"][d] for d in (oldest, untagged, seeded.digest("app v1.0.0 signature"))}
    expected["app"] |= {d: after["app"][d] for d in combined}
    assert_registry_is(after, expected, archived=planned(plan, "archive"))
    [message] = pipeline.messages()
    for code in ("KmsError", "ImageReferencedByManifestList"):
        assert code in message["Message"]


def removed_names(plan: Any) -> list[str]:
    return [r.repository_name for r in plan.repositories if r.policy is not None]


def test_a_repository_deleted_mid_run_is_reported_gone_and_the_run_goes_on(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(config)
    moto = MotoEcr(pipeline.ecr)
    # nginx is deleted after it was read (before its lifecycle policy is: the third repository evaluated);
    # frontend between its re-check and its deletion (its BatchDeleteImage is the run's fourth).
    pipeline.fidelity.before("GetLifecyclePolicy", lambda: moto.delete_repository("docker.io/library/nginx"), call=3)
    pipeline.fidelity.before("BatchDeleteImage", lambda: moto.delete_repository("frontend"), call=4)

    report = run_pipeline(config, pipeline.adapters())

    by_name = {r.repository_name: r for r in report.repositories}
    assert by_name["docker.io/library/nginx"].outcome == "gone"
    assert by_name["docker.io/library/nginx"].deleted == ()
    frontend = by_name["frontend"]
    assert frontend.outcome == "partial"
    assert frontend.deleted == ()
    assert {e.image_digest for e in frontend.failed} == planned(plan, "delete")["frontend"]
    assert {e.error_code for e in frontend.failed} == {"RepositoryNotFoundException"}
    assert report.outcome == "partial"
    later = {"platform/runtime", "release/payments", BULK_REPOSITORY, "team-data/new-service", "app", "backend"}
    assert {name: by_name[name].outcome for name in later} == dict.fromkeys(later, "ok")
    expected = expected_after(before, plan)
    del expected["docker.io/library/nginx"], expected["frontend"]
    assert_registry_is(pipeline.state(), expected, archived=planned(plan, "archive"))


def test_a_tag_moved_between_plan_and_delete_cancels_that_image_only(pipeline: Pipeline) -> None:
    config = pipeline.config(dry_run=False)
    before = pipeline.state()
    plan = pipeline.plan(config)
    seeded = pipeline.seeded
    v104, untagged = seeded.images["app v1.0.4"], seeded.images["app untagged 3d"]

    def meanwhile() -> None:
        """After app was planned, before it is re-checked: `dev` moves onto v1.0.4, and a build is tagged."""
        for image, tag in ((v104, "dev"), (untagged, "v1.1.0-rc.1")):
            pipeline.ecr.put_image(
                repositoryName="app",
                imageManifest=image.manifest,
                imageManifestMediaType=image.media_type,
                imageDigest=image.digest,
                imageTag=tag,
            )

    pipeline.fidelity.before("GetLifecyclePolicy", meanwhile, call=1)

    report = run_pipeline(config, pipeline.adapters())

    app = next(r for r in report.repositories if r.repository_name == "app")
    assert [(seeded.label_of(e.image_digest), e.kind) for e in app.cancelled] == sorted(
        [("app v1.0.4", "tag-changed"), ("app untagged 3d", "tag-changed")], key=lambda entry: seeded.digest(entry[0])
    )
    details = {seeded.label_of(e.image_digest): e.detail for e in app.cancelled}
    assert details["app v1.0.4"] == "tags changed since the plan (v1.0.4 -> dev, v1.0.4); kept this run"
    assert details["app untagged 3d"] == "tags changed since the plan (<untagged> -> v1.1.0-rc.1); kept this run"
    assert app.failed == ()
    assert {e.image_digest for e in app.deleted} == planned(plan, "delete")["app"] - {v104.digest, untagged.digest}
    after = pipeline.state()
    assert sorted(after["app"][v104.digest]["imageTags"]) == ["dev", "v1.0.4"]
    assert after["app"][untagged.digest]["imageTags"] == ["v1.1.0-rc.1"]
    assert after["app"][seeded.digest("app dev")]["imageTags"] == ["v1.1.0-dev.3"]  # `dev` left it; it stays
    expected = expected_after(before, plan)
    for image in (v104, untagged):
        expected["app"][image.digest] = after["app"][image.digest]
    expected["app"][seeded.digest("app dev")] = after["app"][seeded.digest("app dev")]
    assert_registry_is(after, expected, archived=planned(plan, "archive"))
