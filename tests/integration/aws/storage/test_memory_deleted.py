"""A memory that existed and is gone blocks the run until acknowledged, instead of reading as a first run: a versioned
S3 bucket on moto (delete markers as S3 writes them), the real S3Bucket adapter, and the run's services with an
in-memory registry. Given a run that remembered what dev ran, when the memory is deleted (`aws s3 rm`, or a replicated
delete marker) and dev's manifest with it, then the next run deletes nothing and says why in one line; once someone
acknowledges that very deletion, or restores the memory, runs go on."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest

from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.layout import IN_USE_MEMORY_KEY, memory_deletion_acknowledgement_key
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.inventory import read_run_inventory
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry
from tests.integration.aws.storage.conftest import REGION as S3_REGION

BUCKET = "inventory-123456789012-eu-west-1"
HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
RULES = parse_config("""
version: 1
dry_run: false
safety: {min_age: 1d, max_delete_fraction: 1.0, inventory_max_age: 6h, clusters: [prod], optional_clusters: [dev],
         in_use_grace: 7d}
policies:
  - repositories: ["app"]
    rules:
      - delete: {tags: ["v*"], older_than: 30d}
""")


def manifest(cluster: str, *images: tuple[str, str], generated: timedelta) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 1,
            "cluster": cluster,
            "generatedAt": (NOW + generated).isoformat(),
            "complete": True,
            "images": [
                {
                    "image": image,
                    "digest": digest,
                    "namespace": cluster,
                    "workload": "Deployment/app",
                    "container": "app",
                    "source": "pod",
                }
                for image, digest in images
            ],
        }
    ).encode()


@pytest.fixture
def s3() -> Any:
    client = boto3.client("s3", region_name=S3_REGION)
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": S3_REGION})
    client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    return client


@pytest.fixture
def bucket(s3: Any) -> S3Bucket:
    return S3Bucket(BUCKET, s3)


@pytest.fixture
def registry() -> FakeRegistry:
    """app v1..v4, all old."""
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    for n in range(1, 5):
        registry.add_image("app", tags=[f"v{n}"], pushed_at=NOW - timedelta(days=100 - n), seed=str(n))
    return registry


def digest_of(registry: FakeRegistry, tag: str) -> str:
    [digest] = [d for d, image in registry.repositories["app"].items() if tag in image.detail.image_tags]
    return digest


def run(
    registry: FakeRegistry, s3: Any, bucket: S3Bucket, *, later: timedelta, config: RetentionConfig = RULES
) -> RunReport:
    clock = NOW + later
    s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=manifest("prod", generated=later - timedelta(minutes=5)))
    return run_pipeline(config, Adapters(registry=registry, bucket=bucket, clock=lambda: clock, renderers=RENDERERS))


def remembered_then_deleted(registry: FakeRegistry, s3: Any, bucket: S3Bucket) -> str:
    """A first run while dev runs v2 (remembered), then dev's manifest and the memory deleted: the marker's version."""
    v2 = digest_of(registry, "v2")
    s3.put_object(
        Bucket=BUCKET,
        Key="in-use/dev.json",
        Body=manifest("dev", (f"{HOST}/app:v2", v2), generated=-timedelta(minutes=5)),
    )
    first = run(registry, s3, bucket, later=timedelta(0))
    assert first.outcome == "ok"
    assert sorted(registry.tags("app")) == ["v2"]
    s3.delete_object(Bucket=BUCKET, Key="in-use/dev.json")
    marker: str = s3.delete_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY)["VersionId"]
    return marker


def test_the_adapter_tells_a_deleted_key_from_one_never_written(s3: Any, bucket: S3Bucket) -> None:
    assert bucket.delete_marker(IN_USE_MEMORY_KEY) is None  # never written
    s3.put_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY, Body=b"{}")
    assert bucket.delete_marker(IN_USE_MEMORY_KEY) is None  # written
    # A key the memory's begins, deleted: not the memory's deletion.
    s3.put_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY + ".bak", Body=b"{}")
    s3.delete_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY + ".bak")
    assert bucket.delete_marker(IN_USE_MEMORY_KEY) is None
    marker = s3.delete_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY)["VersionId"]
    deleted = bucket.delete_marker(IN_USE_MEMORY_KEY)
    assert deleted is not None
    assert deleted.version_id == marker
    s3.put_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY, Body=b"{}")  # written again after the deletion
    assert bucket.delete_marker(IN_USE_MEMORY_KEY) is None


def test_a_first_run_is_not_blocked(registry: FakeRegistry, s3: Any, bucket: S3Bucket) -> None:
    report = run(registry, s3, bucket, later=timedelta(0))
    assert report.outcome == "ok"
    assert read_run_inventory(bucket).memory is not None


def test_a_deleted_memory_blocks_the_run_with_one_line_until_acknowledged(
    registry: FakeRegistry, s3: Any, bucket: S3Bucket
) -> None:
    marker = remembered_then_deleted(registry, s3, bucket)

    blocked = run(registry, s3, bucket, later=timedelta(days=1))

    assert blocked.outcome == "blocked"
    assert sorted(registry.tags("app")) == ["v2"]  # the remembered v2 is not deleted as on a first run
    acknowledgement = memory_deletion_acknowledgement_key(marker)
    [reason] = [line for line in blocked.blocked if "in-use memory was deleted" in line]
    assert "\n" not in reason
    assert reason.startswith(f"s3://{BUCKET}/{IN_USE_MEMORY_KEY}: the in-use memory was deleted at ")
    assert f"aws s3api put-object --bucket {BUCKET} --key {acknowledgement}" in reason
    # The report step left the memory unwritten: the next run is blocked too.
    assert bucket.delete_marker(IN_USE_MEMORY_KEY) is not None
    assert run(registry, s3, bucket, later=timedelta(days=1, hours=1)).outcome == "blocked"

    s3.put_object(Bucket=BUCKET, Key=acknowledgement, Body=b"")
    acknowledged = run(registry, s3, bucket, later=timedelta(days=1, hours=2))

    assert acknowledged.outcome == "ok"
    assert registry.tags("app") == []  # nothing runs v2 any more, and the memory of it was given up
    assert bucket.read(IN_USE_MEMORY_KEY, max_bytes=1 << 20) is not None  # a new memory


def test_an_acknowledgement_of_an_earlier_deletion_does_not_let_a_later_one_through(
    registry: FakeRegistry, s3: Any, bucket: S3Bucket
) -> None:
    s3.put_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY, Body=b"{}")
    earlier = s3.delete_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY)["VersionId"]
    s3.put_object(Bucket=BUCKET, Key=memory_deletion_acknowledgement_key(earlier), Body=b"")
    remembered_then_deleted(registry, s3, bucket)

    assert run(registry, s3, bucket, later=timedelta(days=1)).outcome == "blocked"


def test_a_restored_memory_protects_again(registry: FakeRegistry, s3: Any, bucket: S3Bucket) -> None:
    marker = remembered_then_deleted(registry, s3, bucket)
    # The break-glass role deletes the delete marker: the previous version is current again.
    s3.delete_object(Bucket=BUCKET, Key=IN_USE_MEMORY_KEY, VersionId=marker)

    report = run(registry, s3, bucket, later=timedelta(days=1))

    assert report.outcome == "ok"
    assert sorted(registry.tags("app")) == ["v2"]


def test_each_evaluation_of_the_workflow_is_blocked_too(registry: FakeRegistry, s3: Any, bucket: S3Bucket) -> None:
    remembered_then_deleted(registry, s3, bucket)
    s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=manifest("prod", generated=timedelta(days=1)))
    adapters = Adapters(
        registry=registry, bucket=bucket, clock=lambda: NOW + timedelta(days=1, minutes=5), renderers=RENDERERS
    )
    start = start_run(RULES, adapters, trigger="schedule")

    report = run_work_item(RULES, adapters, run_id=start.run_id, repository="app", dry_run=False)

    assert report.outcome == "blocked"
    assert sorted(registry.tags("app")) == ["v2"]


def test_a_memory_whose_history_cannot_be_read_blocks(registry: FakeRegistry, s3: Any) -> None:
    class NoVersions:
        """ListObjectVersions denied, as to a role without s3:ListBucketVersions."""

        def __getattr__(self, name: str) -> Any:
            return getattr(s3, name)

        def get_paginator(self, operation: str) -> Any:
            if operation == "list_object_versions":
                s3.list_object_versions(Bucket="no-such-bucket-here")  # NoSuchBucket: a ClientError
            return s3.get_paginator(operation)

    inventory = read_run_inventory(S3Bucket(BUCKET, NoVersions()))

    assert inventory.memory_problem is not None
    assert "whether it was deleted cannot be told" in inventory.memory_problem
