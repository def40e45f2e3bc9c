"""The in-use memory across runs, through the services both doors call (the workflow's steps and `ecr-retention run`):
a manifest deleted or emptied between two runs takes no protection with it, tag references are remembered with the
digest their tag pointed to, an unreadable memory blocks and is never overwritten, and a drop is a warning in the
report and the summary."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.inventory.manifest import parse_memory
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.layout import IN_USE_MEMORY_KEY
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
RULES = """
version: 1
dry_run: false
safety: {{min_age: 1d, max_delete_fraction: 1.0, inventory_max_age: 6h, clusters: [prod], optional_clusters: [dev],
          in_use_grace: {grace}}}
policies:
  - repositories: ["app"]
    rules:
      - delete: {{tags: ["v*"], older_than: 30d}}
"""


def rules(grace: str = "7d") -> RetentionConfig:
    return parse_config(RULES.format(grace=grace))


def manifest(cluster: str, *images: tuple[str, str | None], age: timedelta = timedelta(minutes=5)) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 1,
            "cluster": cluster,
            "generatedAt": (NOW - age).isoformat(),
            "complete": True,
            "images": [
                {
                    "image": reference,
                    **({"digest": digest} if digest else {}),
                    "namespace": cluster,
                    "workload": "Deployment/app",
                    "container": "app",
                    "source": "template" if digest is None else "pod",
                }
                for reference, digest in images
            ],
        }
    ).encode()


def seeded() -> tuple[FakeRegistry, MemoryBucket, dict[str, str]]:
    """app v1..v4, all old; prod runs nothing of app; dev runs v2 by digest and v3 by a tag-only template."""
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    digests = {
        f"v{n}": registry.add_image("app", tags=[f"v{n}"], pushed_at=NOW - timedelta(days=100 - n), seed=str(n))
        for n in range(1, 5)
    }
    bucket = MemoryBucket()
    bucket.objects["in-use/prod.json"] = manifest("prod")
    bucket.objects["in-use/dev.json"] = manifest("dev", (f"{HOST}/app:v2", digests["v2"]), (f"{HOST}/app:v3", None))
    return registry, bucket, digests


def run(registry: FakeRegistry, bucket: MemoryBucket, config: RetentionConfig, *, later: timedelta) -> RunReport:
    clock = NOW + later
    bucket.objects["in-use/prod.json"] = manifest("prod", age=-later + timedelta(minutes=5))
    return run_pipeline(config, Adapters(registry=registry, bucket=bucket, clock=lambda: clock, renderers=RENDERERS))


def test_deleting_a_manifest_between_runs_unprotects_nothing_it_named() -> None:
    registry, bucket, _ = seeded()
    first = run(registry, bucket, rules(), later=timedelta(0))
    assert sorted(registry.tags("app")) == ["v2", "v3"]
    assert first.totals.deleted == 2

    del bucket.objects["in-use/dev.json"]
    second = run(registry, bucket, rules(), later=timedelta(days=1))

    assert sorted(registry.tags("app")) == ["v2", "v3"]
    assert second.outcome == "ok"
    (app,) = second.repositories
    reasons = {entry.image_tags[0]: entry for entry in app.kept_images}
    assert reasons["v2"].rule == "remembered"
    assert reasons["v2"].detail.startswith("dev: dev/Deployment/app (pod), last seen 1d ago, protected until ")
    assert any(w.startswith("cluster dev: no in-use manifest now, it reported 2 images at ") for w in second.warnings)


def test_emptying_a_manifest_between_runs_unprotects_nothing_it_named_and_the_summary_says_so() -> None:
    registry, bucket, _ = seeded()
    run(registry, bucket, rules(), later=timedelta(0))

    bucket.objects["in-use/dev.json"] = manifest("dev", age=-timedelta(days=1))
    notifier = RecordingNotifier()
    clock = NOW + timedelta(days=1, minutes=10)
    report = run_pipeline(
        rules(), Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: clock, renderers=RENDERERS)
    )

    assert sorted(registry.tags("app")) == ["v2", "v3"]
    warning = next(w for w in report.warnings if w.startswith("cluster dev: now reports 0 images, it reported 2"))
    assert warning in notifier.messages[0][1]


def test_a_tag_reference_is_remembered_with_the_digest_its_tag_pointed_to() -> None:
    registry, bucket, digests = seeded()
    run(registry, bucket, rules(), later=timedelta(0))

    memory = parse_memory("memory", bucket.objects[IN_USE_MEMORY_KEY])
    assert {(i.image.rsplit(":", 1)[-1], i.digest) for i in memory.images} == {
        ("v2", digests["v2"]),
        ("v3", digests["v3"]),
    }


def test_the_workflow_steps_update_the_memory_once_in_the_report_step() -> None:
    registry, bucket, _ = seeded()
    adapters = Adapters(registry=registry, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)
    start = start_run(rules(), adapters, trigger="schedule")
    run_work_item(rules(), adapters, run_id=start.run_id, repository="app", dry_run=False)
    assert IN_USE_MEMORY_KEY not in bucket.objects

    finish_run(adapters, start, rules())

    memory = parse_memory("memory", bucket.objects[IN_USE_MEMORY_KEY])
    assert {i.cluster for i in memory.images} == {"dev"}
    assert sorted(memory.clusters) == ["dev", "prod"]


def test_an_unreadable_memory_blocks_every_deletion_and_is_never_overwritten() -> None:
    registry, bucket, _ = seeded()
    bucket.objects[IN_USE_MEMORY_KEY] = b'{"schemaVersion": 1, "updatedAt": "2026-11-30T00:00:00Z", "images": ['

    report = run(registry, bucket, rules(), later=timedelta(0))

    assert report.outcome == "blocked"
    assert report.blocked[0].startswith(
        "s3://inventory/state/in-use-memory.json: unreadable in-use memory: invalid JSON"
    )
    assert sorted(registry.tags("app")) == ["v1", "v2", "v3", "v4"]
    assert bucket.objects[IN_USE_MEMORY_KEY].endswith(b'"images": [')
    assert any("it was not updated, and every run stays blocked until it is" in w for w in report.warnings)


def test_with_a_grace_of_zero_nothing_is_remembered() -> None:
    registry, bucket, _ = seeded()
    run(registry, bucket, rules("0s"), later=timedelta(0))
    del bucket.objects["in-use/dev.json"]

    run(registry, bucket, rules("0s"), later=timedelta(days=1))

    assert IN_USE_MEMORY_KEY not in bucket.objects
    assert registry.tags("app") == []


def test_a_memory_over_half_its_cap_is_a_warning_before_it_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from ecr_retention.domain.limits import SizeLimit
    from ecr_retention.services import memory

    monkeypatch.setattr(memory, "IN_USE_MEMORY", SizeLimit("in-use memory", 1024))
    registry, bucket, _ = seeded()

    report = run(registry, bucket, rules(), later=timedelta(0))

    assert any(
        w.startswith("the in-use memory is 0.0 MiB, over half its 1 KiB cap: past it, every run is blocked")
        for w in report.warnings
    )
    assert IN_USE_MEMORY_KEY in bucket.objects


CLAIMED = timedelta(days=365 * 73)  # a clock that says 2099


def test_a_manifest_dated_in_the_future_is_remembered_as_of_the_run_and_the_summary_names_it() -> None:
    registry, bucket, digests = seeded()
    bucket.objects["in-use/dev.json"] = manifest("dev", (f"{HOST}/app:v2", digests["v2"]), age=-CLAIMED)
    notifier = RecordingNotifier()

    first = run_pipeline(
        rules(), Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS)
    )

    warning = next(w for w in first.warnings if w.startswith("cluster dev: its in-use manifest says it was generated"))
    assert warning == (
        "cluster dev: its in-use manifest says it was generated at 2099-11-12T06:00:00Z, after this run's clock "
        "(2026-11-30T06:00:00Z): the in-use memory remembers its references as seen now, not then; check the clock "
        "(and time zone) of what writes it"
    )
    assert warning in notifier.messages[0][1]
    memory = parse_memory("memory", bucket.objects[IN_USE_MEMORY_KEY])
    assert {image.last_seen_at for image in memory.images} == {NOW}
    assert memory.clusters["dev"].last.generated_at == NOW

    # dev's manifest goes: its reading is forgotten with the grace, not kept (and said to protect) until 2099
    del bucket.objects["in-use/dev.json"]
    later = run(registry, bucket, rules(), later=timedelta(days=8))
    assert "v2" not in registry.tags("app")
    assert not [w for w in later.warnings if "2099" in w]


def test_a_memory_dated_in_the_future_protects_for_the_grace_from_the_run_not_until_then() -> None:
    registry, bucket, digests = seeded()
    # a run whose clock said 2099, as dev's collector's did, wrote the memory
    bucket.objects["in-use/dev.json"] = manifest("dev", (f"{HOST}/app:v2", digests["v2"]), age=-CLAIMED)
    run(registry, bucket, rules(), later=CLAIMED)
    del bucket.objects["in-use/dev.json"]

    now = run(registry, bucket, rules(), later=timedelta(0))

    (app,) = now.repositories
    [kept] = [entry for entry in app.kept_images if entry.image_tags == ("v2",)]
    assert kept.detail == (
        "dev: dev/Deployment/app (pod), last seen at 2099-11-12T06:00:00Z, after this run's clock, so counted as seen "
        "now: protected until 2026-12-07T06:00:00Z"
    )
    assert (
        "cluster dev: the in-use memory holds references last seen at 2099-11-12T06:00:00Z, after this run's clock "
        "(2026-11-30T06:00:00Z): counted as seen now, they protect until 2026-12-07T06:00:00Z, not 2099-11-19T06:00:00Z"
    ) in now.warnings
    assert {image.last_seen_at for image in parse_memory("memory", bucket.objects[IN_USE_MEMORY_KEY]).images} == {NOW}

    run(registry, bucket, rules(), later=timedelta(days=8))
    assert sorted(registry.tags("app")) == []  # the grace ran from the run that read it, and nothing runs them now
