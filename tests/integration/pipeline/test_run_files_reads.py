"""A run's files on moto S3: the targets step stores every pruned registry's replication as one record, and each work
item reads it once, however many Regions the deployment prunes (issue 44 item 6)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import boto3
from moto import mock_aws

from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.domain.config import parse_config
from ecr_retention.layout import replication_key
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.targets_step import start_run
from ecr_retention.workflow import WorkItem
from tests.unit.services.test_several_regions import EXPECTED, RULES, adapters_of, deleted, two_regions

REGION = "eu-west-1"
BUCKET = "inventory"


def get_object_keys(client: Any) -> Counter[str]:
    """Key -> the GetObject requests the client sent for it."""
    keys: Counter[str] = Counter()

    def record(params: dict[str, Any], **_: Any) -> None:
        keys[params["Key"]] += 1

    client.meta.events.register("before-parameter-build.s3.GetObject", record)
    return keys


def test_each_work_item_reads_the_runs_replication_record_once_whatever_the_regions() -> None:
    home, other, memory, _ = two_regions()
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        bucket = S3Bucket(BUCKET, s3)
        for key, body in memory.objects.items():
            bucket.write(key, body)
        adapters, config = adapters_of(home, other, bucket), parse_config(RULES)
        start = start_run(config, adapters, trigger="schedule")
        items = [
            WorkItem.model_validate(item)
            for item in json.loads(s3.get_object(Bucket=BUCKET, Key=start.targets_key)["Body"].read())
        ]
        reads = get_object_keys(s3)
        for item in items:
            run_work_item(
                config, adapters, run_id=item.run_id, repository=item.repository, dry_run=False, key=item.region
            )

        assert len(items) == 3  # two Regions' work items
        assert reads[replication_key(start.run_id)] == len(items)
        assert not [key for key in reads if "replication" in key and key != replication_key(start.run_id)]
        assert deleted(finish_run(adapters, start, config)) == EXPECTED
