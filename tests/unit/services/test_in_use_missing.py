"""The run's in-use check (SPEC "The sentinel", finding in-use-missing) on fakes: each evaluation checks its managed
repository against the snapshot it read; the report step checks the other repositories by image id and says, from the
sentinel's record of removals, when and by what a missing image went. It never blocks, never deletes, never fails."""

from __future__ import annotations

import json
from datetime import timedelta

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.in_use.references import Removal
from ecr_retention.domain.inventory.manifest import read_inventory
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.layout import IN_USE_MEMORY_KEY, removal_key
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.snapshot import MemoryManifestCache
from ecr_retention.services.targets_step import start_run
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import MUTATING, FakeRegistry, MemoryBucket, RecordingNotifier

HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
SENTINEL_ROLE = f"arn:aws:iam::{ACCOUNT}:role/ecr-retention-Sentinel"
RULES = """
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: [prod]}
policies:
  - repositories: ["app"]
    rules:
      - keep: {tags: [latest]}
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
"""


def rules() -> RetentionConfig:
    return parse_config(RULES)


def manifest(*references: tuple[str, str | None]) -> bytes:
    """prod's manifest: (image, resolved digest or None) each, all run by prod/Deployment/app."""
    return json.dumps(
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
            "complete": True,
            "images": [
                {"image": image, "namespace": "prod", "workload": "Deployment/app", "container": "app", "source": "pod"}
                | ({"digest": digest} if digest else {})
                for image, digest in references
            ],
        }
    ).encode()


def registry_with_app() -> tuple[FakeRegistry, dict[str, str]]:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    images = {
        name: registry.add_image("app", tags=[name], pushed_at=NOW - timedelta(days=60 - n), seed=name)
        for n, name in enumerate(["v1", "v2", "latest"])
    }
    return registry, images


def evaluated(registry: FakeRegistry, *references: tuple[str, str | None]):  # type: ignore[no-untyped-def]
    inputs = RunInputs(
        run_id="r",
        config=rules(),
        inventory=read_inventory([("in-use/prod.json", manifest(*references))]),
        dry_run=True,
        replication=RegistryReplication(),
    )
    return evaluate_repository("app", inputs, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)


def cli_run(
    registry: FakeRegistry, bucket: MemoryBucket, *, trigger: str = "cli", sentinel: str | None = SENTINEL_ROLE
) -> RunReport:
    adapters = Adapters(
        registry=registry,
        bucket=bucket,
        notifier=RecordingNotifier(),
        clock=lambda: NOW,
        sentinel_role=sentinel,
        renderers=RENDERERS,
    )
    return run_pipeline(rules(), adapters, trigger=trigger, force_dry_run=True)  # type: ignore[arg-type]


def bucket_with(*references: tuple[str, str | None]) -> MemoryBucket:
    bucket = MemoryBucket()
    bucket.write("in-use/prod.json", manifest(*references))
    return bucket


def test_a_managed_repository_whose_in_use_tag_is_gone_reports_it_missing() -> None:
    # Given prod runs app:dev, and no image of app carries the tag dev any more
    registry, images = registry_with_app()
    # When app is evaluated
    report = evaluated(registry, (f"{HOST}/app:dev", images["v1"]), (f"{HOST}/app:v2", None))
    # Then app:dev is missing (by tag), named with its workload and the digest prod ran; app:v2 is there
    [found] = report.in_use_missing
    assert (found.image, found.missing, found.resolved_digests) == ("app:dev", "tag", (images["v1"],))
    assert found.detail == "the next pull of prod: prod/Deployment/app (pod) fails: app:dev no longer exists"
    # And the finding decides nothing: the evaluation made no extra call and the outcome is the plan's
    assert report.outcome == "ok"
    assert registry.count("describe_images_by_id") == 0


def test_a_managed_repository_whose_in_use_digest_is_gone_reports_it_missing() -> None:
    registry, _ = registry_with_app()
    gone = "sha256:" + "e" * 64
    report = evaluated(registry, (f"{HOST}/app@{gone}", gone))
    [found] = report.in_use_missing
    assert (found.missing, found.image_digest, found.image) == ("digest", gone, "app@sha256:eeeeeeeeeeee")


def test_a_tag_that_moved_to_another_digest_is_not_missing() -> None:
    # Given prod resolved app:latest to v1's digest, and latest now points to another image
    registry, images = registry_with_app()
    report = evaluated(registry, (f"{HOST}/app:latest", images["v1"]))
    # Then the next pull gets the new image: nothing is missing
    assert report.in_use_missing == ()


def test_an_archived_in_use_image_is_not_missing() -> None:
    registry, images = registry_with_app()
    registry.archive("app", images["v1"], NOW - timedelta(days=1))
    report = evaluated(registry, (f"{HOST}/app@{images['v1']}", images["v1"]), (f"{HOST}/app:v1", images["v1"]))
    assert report.in_use_missing == ()
    assert [entry.image_digest for entry in report.in_use_archived] == [images["v1"]]


def test_a_cli_run_checks_an_unmanaged_repository_by_image_id_only() -> None:
    # Given prod runs tools:1.0 (there) and tools:2.0 (gone) from a repository no policy manages
    registry, _ = registry_with_app()
    tools = registry.add_image("tools", tags=["1.0"], pushed_at=NOW - timedelta(days=3), seed="t")
    bucket = bucket_with((f"{HOST}/tools:1.0", tools), (f"{HOST}/tools:2.0", None))
    # When a CLI run reports
    report = cli_run(registry, bucket)
    # Then tools was looked up by image id, once, and never listed or planned
    assert registry.count("describe_images_by_id") == 1
    assert ("describe_images", "tools") not in registry.calls
    [found] = report.in_use_missing
    assert (found.repository_name, found.image, found.missing) == ("tools", "tools:2.0", "tag")
    # And it never changes the outcome nor causes a removal
    assert report.outcome == "ok"
    assert registry.mutating_calls == []


def test_a_referenced_repository_that_does_not_exist_misses_all_its_references() -> None:
    registry, _ = registry_with_app()
    report = cli_run(registry, bucket_with((f"{HOST}/gone:1", None), (f"{HOST}/gone:2", None)))
    assert [(f.image, f.missing) for f in report.in_use_missing] == [("gone:1", "repository"), ("gone:2", "repository")]
    assert "repository gone does not exist" in report.in_use_missing[0].detail


def test_a_lookup_that_fails_is_a_warning_naming_the_repository_never_a_failure() -> None:
    registry, _ = registry_with_app()
    registry.add_image("tools", tags=["1.0"], pushed_at=NOW - timedelta(days=3), seed="t")
    registry.lookup_failures["tools"] = "DescribeImages failed: ThrottlingException: Rate exceeded"
    report = cli_run(registry, bucket_with((f"{HOST}/tools:1.0", None)))
    assert report.outcome == "ok"
    assert report.in_use_missing == ()
    assert any(w.startswith("tools: 1 in-use reference(s) could not be checked") for w in report.warnings)
    assert any("ThrottlingException" in w for w in report.warnings)


def test_references_are_looked_up_100_ids_a_call() -> None:
    registry, _ = registry_with_app()
    registry.add_image("tools", tags=["t0"], pushed_at=NOW - timedelta(days=3), seed="t")
    report = cli_run(registry, bucket_with(*((f"{HOST}/tools:t{n}", None) for n in range(150))))
    assert registry.count("describe_images_by_id") == 2
    assert len(report.in_use_missing) == 149


def recorded(bucket: MemoryBucket, ran: str, *, writer: str | None, event: str = "e-1", **more: object) -> Removal:
    """The sentinel's record that lifecycle rule 1 of app's policy deleted `ran` 2h ago, as `writer` wrote it."""
    removal = Removal(
        repository_name="app",
        image_digest=ran,
        action="deleted",
        cause="lifecycle",
        rule_priority=1,
        removed_at=NOW - timedelta(hours=2),
        event_id=event,
        writer=writer,
        **more,  # type: ignore[arg-type]
    )
    bucket.write(removal_key("app", removal.removed_at, event, 0), removal.model_dump_json(by_alias=True).encode())
    return removal


def test_a_recorded_removal_says_when_and_by_what_the_image_went() -> None:
    # Given the sentinel recorded that lifecycle rule 1 of app's policy deleted the image that carried dev
    registry, _ = registry_with_app()
    ran = "sha256:" + "d" * 64
    bucket = bucket_with((f"{HOST}/app:dev", ran))
    removal = recorded(bucket, ran, writer=SENTINEL_ROLE)
    bucket.write(removal_key("app", NOW, "broken", 0), b"{not json")
    # When a run reports
    report = cli_run(registry, bucket)
    # Then the finding, in the run and under app, names when and by what, and the unreadable record is a warning
    [found] = report.in_use_missing
    assert found.detail.endswith(
        "app:dev no longer exists (deleted "
        f"{removal.removed_at:%Y-%m-%d %H:%M} UTC by lifecycle rule 1 of app's policy)"
    )
    [app] = [repo for repo in report.repositories if repo.repository_name == "app"]
    assert app.in_use_missing == (found,)
    assert any("1 recorded removal(s) could not be read" in w for w in report.warnings)
    # And the report names the removal, not who wrote its record (the check counted only the sentinel's)
    assert "writer" not in json.loads(report.model_dump_json(by_alias=True))["inUseMissing"][0]["removed"]


def test_a_forged_removal_record_tells_nothing_and_is_a_warning() -> None:
    # Given an insider's record blames lifecycle rule 1 for the image that carried dev, and an older release's record
    registry, _ = registry_with_app()
    ran = "sha256:" + "d" * 64
    bucket = bucket_with((f"{HOST}/app:dev", ran))
    recorded(bucket, ran, writer="arn:aws:iam::123456789012:role/Insider", event="forged")
    recorded(bucket, ran, writer=None, event="old-release")
    # When a run reports, the finding says nothing of what removed it, and a warning names what was ignored
    report = cli_run(registry, bucket)
    [found] = report.in_use_missing
    assert found.removed is None
    [warning] = [w for w in report.warnings if "recorded removal(s)" in w]
    assert warning.startswith("app: 2 recorded removal(s) not written by this deployment's sentinel were ignored")


def test_a_run_that_does_not_know_the_sentinel_uses_no_record_and_says_so() -> None:
    registry, _ = registry_with_app()
    ran = "sha256:" + "d" * 64
    bucket = bucket_with((f"{HOST}/app:dev", ran))
    recorded(bucket, ran, writer=SENTINEL_ROLE)
    report = cli_run(registry, bucket, sentinel=None)
    assert report.in_use_missing[0].removed is None
    assert any("this run does not know the deployment's sentinel role" in w for w in report.warnings)


def test_removals_are_read_only_for_repositories_with_a_missing_reference() -> None:
    registry, _ = registry_with_app()
    bucket = bucket_with((f"{HOST}/app:v2", None))
    read: list[str] = []
    listing = bucket.list_objects
    bucket.list_objects = lambda prefix: read.append(prefix) or listing(prefix)  # type: ignore[method-assign]
    cli_run(registry, bucket)
    assert not any(prefix.startswith("removals/") for prefix in read)


def test_the_workflow_report_step_checks_what_no_evaluation_did() -> None:
    # Given a scheduled run whose one target is app, and prod also runs tools:2.0, which is gone
    registry, _ = registry_with_app()
    registry.add_image("tools", tags=["1.0"], pushed_at=NOW - timedelta(days=3), seed="t")
    bucket = bucket_with((f"{HOST}/tools:2.0", None), (f"{HOST}/app:dev", None))
    adapters = Adapters(
        registry=registry, bucket=bucket, notifier=RecordingNotifier(), clock=lambda: NOW, renderers=RENDERERS
    )
    start = start_run(rules(), adapters, trigger="schedule", force_dry_run=True)
    run_work_item(rules(), adapters, run_id=start.run_id, repository="app", dry_run=True)
    # When the report step runs
    report = finish_run(adapters, start, rules())
    # Then app's finding came from its evaluation, tools' from the report step's lookup
    assert [(f.repository_name, f.image) for f in report.in_use_missing] == [("app", "app:dev"), ("tools", "tools:2.0")]
    assert [call for call in registry.calls if call[0] == "describe_images_by_id"] == [
        ("describe_images_by_id", "tools")
    ]
    assert not any(call[0] in MUTATING for call in registry.calls)


def broken_collector(bucket: MemoryBucket, ran: str) -> None:
    """dev ran app:dev 2h ago by the in-use memory, and its manifest is now empty, complete and fresh."""
    seen = (NOW - timedelta(hours=2)).isoformat()
    bucket.write(
        "in-use/dev.json",
        json.dumps(
            {"schemaVersion": 1, "cluster": "dev", "generatedAt": NOW.isoformat(), "complete": True, "images": []}
        ).encode(),
    )
    remembered = {"image": f"{HOST}/app:dev", "digest": ran, "namespace": "dev", "workload": "Deployment/app"}
    bucket.write(
        IN_USE_MEMORY_KEY,
        json.dumps(
            {
                "schemaVersion": 1,
                "updatedAt": seen,
                "clusters": {"dev": {"last": {"generatedAt": seen, "references": 10}}},
                "images": [remembered | {"container": "app", "source": "pod", "cluster": "dev", "lastSeenAt": seen}],
            }
        ).encode(),
    )


def test_a_broken_collector_does_not_silence_the_check_the_memory_speaks_through_the_workflow() -> None:
    # Given dev's manifest is empty while the memory says dev ran app:dev 2h ago, and app:dev is gone
    registry, _ = registry_with_app()
    bucket = bucket_with((f"{HOST}/app:v2", None))
    broken_collector(bucket, "sha256:" + "d" * 64)
    notifier = RecordingNotifier()
    adapters = Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS)
    # When a scheduled run evaluates app in its own step and reports in another
    start = start_run(rules(), adapters, trigger="schedule", force_dry_run=True)
    run_work_item(rules(), adapters, run_id=start.run_id, repository="app", dry_run=True)
    report = finish_run(adapters, start, rules())
    # Then app:dev is missing, and the finding says why the memory speaks, in the report and in the summary
    [found] = report.in_use_missing
    assert found.detail == (
        "the next pull of dev: dev/Deployment/app (pod) fails: app:dev no longer exists; dev's manifest now reports "
        "0 images; by the in-use memory dev ran it 2h ago"
    )
    [(_, body, _)] = notifier.messages
    assert f"  {found.detail}" in body


def test_a_push_run_checks_only_the_repositories_it_evaluated() -> None:
    registry, _ = registry_with_app()
    bucket = bucket_with((f"{HOST}/tools:2.0", None), (f"{HOST}/app:dev", None))
    adapters = Adapters(
        registry=registry, bucket=bucket, notifier=RecordingNotifier(), clock=lambda: NOW, renderers=RENDERERS
    )
    start = start_run(rules(), adapters, trigger="push", repositories=["app"], force_dry_run=True)
    run_work_item(rules(), adapters, run_id=start.run_id, repository="app", dry_run=True)
    report = finish_run(adapters, start, rules())
    assert [f.image for f in report.in_use_missing] == ["app:dev"]
    assert registry.count("describe_images_by_id") == 0


def test_the_summary_names_each_missing_image() -> None:
    registry, _ = registry_with_app()
    notifier = RecordingNotifier()
    adapters = Adapters(
        registry=registry,
        bucket=bucket_with((f"{HOST}/app:dev", None)),
        notifier=notifier,
        clock=lambda: NOW,
        renderers=RENDERERS,
    )
    run_pipeline(rules(), adapters, trigger="cli", force_dry_run=True)
    [(_, body, _)] = notifier.messages
    assert "In-use images MISSING from the registry (1): the next pull fails" in body
    assert "  the next pull of prod: prod/Deployment/app (pod) fails: app:dev no longer exists" in body


def test_a_defect_in_the_check_is_a_warning_and_the_run_reports_as_before() -> None:
    # Given a registry whose by-id lookup breaks in a way no port declares
    registry, _ = registry_with_app()
    registry.add_image("tools", tags=["1.0"], pushed_at=NOW - timedelta(days=3), seed="t")

    def broken(_: FakeRegistry) -> None:
        raise RuntimeError("a bug")

    registry.before["describe_images_by_id"] = broken
    bucket = bucket_with((f"{HOST}/tools:1.0", None), (f"{HOST}/app:v2", None))
    # When a run reports, it still reports, with the same outcome and a warning that says the check failed
    report = cli_run(registry, bucket)
    assert report.outcome == "ok"
    assert "the in-use references could not be checked: RuntimeError: a bug" in report.warnings
    assert bucket.objects.get(report.report_url.removeprefix("s3://inventory/")) is not None  # type: ignore[union-attr]
