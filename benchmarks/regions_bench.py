"""Several Regions benchmark: the ECR calls of one dry-run sweep over two Regions' registries, per Region, against
their minimum (docs/regions.md).

    python benchmarks/regions_bench.py [--tree CHECKOUT] [--fraction 1.0]

The registries, written straight into moto's backend (in this process, `mock_aws`, with moto made to behave like ECR
where a sweep depends on it: ecr_retention_dev.emulator.EcrFidelity): eu-west-1, the home Region, holds `app` (2,000
images) and 9 repositories of 500; `app` replicates to us-east-1 with its deletions, so us-east-1 holds app's
replicas (the same 2,000 images) and 4 repositories of its own of 500. The sweep is `ecr-retention run --dry-run
--region us-east-1` (cli.main in this process), its ECR calls counted on the client by Region and operation (every
call botocore made, a page of a paginator each; retries apart). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from collections import Counter
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from measuring import add_tree_argument, check_tree, figure

HOME, OTHER = "eu-west-1", "us-east-1"
ACCOUNT = "123456789012"
BUCKET = "bench-inventory"
NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
RULES = """
version: 1
dry_run: true
safety: {min_age: 1d, max_delete_fraction: 1, inventory_max_age: 6h, clusters: []}
policies:
  - repositories: ["*"]
    rules:
      - delete: {tags: ["bulk-*"], older_than: 30d, keep_newest: 50}
      - delete: {untagged: true, older_than: 7d}
"""
PAGE = 1000  # DescribeImages and DescribeRepositories answer up to 1,000 a page


def registries(fraction: float) -> dict[str, dict[str, int]]:
    """Region -> repository -> images."""
    scaled = max(1, round(500 * fraction))
    home = {"app": max(1, round(2000 * fraction)), **{f"team-{n}/service": scaled for n in range(9)}}
    other = {"app": home["app"], **{f"edge-{n}/cdn": scaled for n in range(4)}}
    return {HOME: home, OTHER: other}


def minimum_calls(region: str, seeded: dict[str, dict[str, int]]) -> Counter[str]:
    """What a dry-run sweep of one Region's registry cannot do with less: list its repositories, every page of every
    repository's images, each repository's native lifecycle policy, the registry's replication rules once, and (home
    only, where the report step runs) the repository creation templates. A replica's source listing is not in it:
    a sweep that shared the source's own listing would not need it."""
    repositories = seeded[region]
    calls = Counter(
        {
            "DescribeRegistry": 1,
            "DescribeRepositories": math.ceil(len(repositories) / PAGE),
            "DescribeImages": sum(math.ceil(count / PAGE) for count in repositories.values()),
            "GetLifecyclePolicy": len(repositories),
        }
    )
    if region == HOME:
        calls["DescribeRepositoryCreationTemplates"] = 1
    return calls


def seed(seeded: dict[str, dict[str, int]]) -> None:
    import boto3

    from ecr_retention_dev.emulator.seeding import MotoEcr

    for region, repositories in seeded.items():
        ecr = MotoEcr(boto3.client("ecr", region_name=region))
        for name, count in repositories.items():
            ecr.create_repository(name)
            # The same repository name and count in two Regions: the same images (the replicas of app).
            ecr.seed_images(name, count, newest=NOW - timedelta(hours=2), interval=timedelta(hours=3))
    boto3.client("ecr", region_name=HOME).put_replication_configuration(
        replicationConfiguration={
            "rules": [
                {
                    "destinations": [{"region": OTHER, "registryId": ACCOUNT}],
                    "repositoryFilters": [{"filter": "app", "filterType": "PREFIX_MATCH"}],
                    "deleteReplication": {"enabled": True},
                }
            ]
        }
    )
    boto3.client("s3", region_name=HOME).create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": HOME}
    )


def sweep(rules: Path) -> tuple[int, Counter[tuple[str, str]]]:
    """`ecr-retention run --dry-run --region us-east-1`, its ECR calls counted by (Region, operation)."""
    import ecr_retention.cli as cli
    from ecr_retention.aws.clients import ClientFactory, set_default_factory

    calls: Counter[tuple[str, str]] = Counter()

    def count(client: Any) -> None:
        if client.meta.service_model.service_name != "ecr":
            return
        region = client.meta.region_name

        def called(model: Any, **_: Any) -> None:
            calls[(region, model.name)] += 1

        client.meta.events.register("before-call.ecr", called)

    set_default_factory(ClientFactory(on_create=count))
    try:
        with open(os.devnull, "w") as quiet, redirect_stdout(quiet):  # the run's own report
            code = cli.main(["run", "--config", str(rules), "--bucket", BUCKET, "--dry-run", "--region", OTHER])
    finally:
        set_default_factory(None)
    return code, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--fraction", type=float, default=1.0, help="scale the registries (0.1: 700 images)")
    args = parser.parse_args()
    check_tree(args.tree)
    for name, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": HOME}.items():
        os.environ[name] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)
    from moto import mock_aws

    from ecr_retention_dev.emulator.fidelity import EcrFidelity

    seeded = registries(args.fraction)
    with mock_aws(), EcrFidelity(), tempfile.TemporaryDirectory(prefix="regions-bench-") as directory:
        seed(seeded)
        rules = Path(directory) / "rules.yaml"
        rules.write_text(RULES)
        code, calls = sweep(rules)
    print(f"ECR calls of one dry-run sweep of two Regions (exit {code}):")
    overall = (0, 0)
    for region, repositories in seeded.items():
        minimum = minimum_calls(region, seeded)
        made = Counter({operation: n for (where, operation), n in calls.items() if where == region})
        images = sum(repositories.values())
        print(f"  {region}: {len(repositories)} repositories, {images:,} images")
        for operation in sorted(set(made) | set(minimum)):
            print(f"    {operation:<36} {made[operation]:>5} / {minimum[operation]:<5} (actual / minimum)")
        total, least = sum(made.values()), sum(minimum.values())
        print(f"    {'total':<36} {total:>5} / {least:<5} ratio {total / least:.2f}")
        figure(f"regions_api_calls_over_minimum_{region}", total / least)
        overall = (overall[0] + total, overall[1] + least)
    print(
        f"  both Regions: {overall[0]} / {overall[1]} ratio {overall[0] / overall[1]:.2f} (the excess, in eu-west-1: "
        "us-east-1's app lists its source there once, to leave the replicas to eu-west-1's rules)"
    )


if __name__ == "__main__":
    main()
