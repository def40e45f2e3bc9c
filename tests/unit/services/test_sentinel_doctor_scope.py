"""The sentinel's doctor on a new lifecycle policy reads index manifests with BatchGetImage only in a repository a
policy manages (its role has BatchGetImage only there, infra/sentinel.py); in any other repository it knows the
indexes the manifest cache holds, and asks ECR for no manifest."""

from __future__ import annotations

import json
from datetime import timedelta

from ecr_retention.domain.sentinel.events import Observed
from ecr_retention.domain.sentinel.trail_events import LifecyclePolicyPut
from ecr_retention.services.sentinel import SentinelPorts, watch
from ecr_retention.services.snapshot import BucketManifestCache
from tests.support.builders import HOST, NOW, config
from tests.support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

PUSHED = NOW - timedelta(days=40)
KEEP_ONE = {
    "rules": [
        {
            "rulePriority": 1,
            "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1},
            "action": {"type": "expire"},
        }
    ]
}


def put_policy(repository: str) -> Observed:
    put = LifecyclePolicyPut.model_validate(
        {
            "eventSource": "ecr.amazonaws.com",
            "eventName": "PutLifecyclePolicy",
            "eventID": "trail-9",
            "eventTime": NOW.isoformat(),
            "userIdentity": {"arn": "arn:aws:sts::123456789012:assumed-role/Admin/mary"},
            "requestParameters": {"repositoryName": repository, "lifecyclePolicyText": json.dumps(KEEP_ONE)},
        }
    )
    return Observed("event-9", NOW, put)


def registry_with_an_index(repository: str) -> FakeRegistry:
    registry = FakeRegistry()
    children = [registry.add_image(repository, pushed_at=PUSHED, seed=arch) for arch in ("amd64", "arm64")]
    registry.add_index(repository, children, tags=("1.0",), pushed_at=PUSHED)
    registry.add_image(repository, tags=["2.0"], pushed_at=PUSHED + timedelta(days=1), seed="two")
    registry.lifecycle_policies[repository] = json.dumps(KEEP_ONE)  # what GetLifecyclePolicy answers now
    return registry


def ports(registry: FakeRegistry) -> SentinelPorts:
    bucket = MemoryBucket()
    bucket.write_json(
        "in-use/prod.json",
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
            "complete": True,
            "images": [{"image": f"{HOST}/tools:2.0", "namespace": "ops", "workload": "Job/x", "container": "x"}],
        },
    )
    return SentinelPorts(registry, bucket, RecordingNotifier(), BucketManifestCache(bucket))


def test_the_doctor_asks_ecr_for_no_manifest_in_a_repository_no_policy_manages() -> None:
    registry = registry_with_an_index("tools")
    rules = config([{"delete": {"untagged": True, "older_than": "1d"}}], repositories=("app",))
    watch(put_policy("tools"), config=rules, ports=ports(registry), now=NOW)
    assert registry.count("get_manifests") == 0


def test_the_doctor_reads_uncached_index_manifests_in_a_managed_repository() -> None:
    registry = registry_with_an_index("app")
    rules = config([{"delete": {"untagged": True, "older_than": "1d"}}], repositories=("app",))
    watch(put_policy("app"), config=rules, ports=ports(registry), now=NOW)
    assert registry.count("get_manifests") == 1
