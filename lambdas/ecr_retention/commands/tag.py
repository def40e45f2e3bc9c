"""`ecr-retention tag`: the tagger, once, in this process."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ecr_retention.clock import utc_now
from ecr_retention.commands.aws_session import AwsSession, aws_errors, bucket_name
from ecr_retention.loading import load_config
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.services.tagger import tag_deployed
from ecr_retention.tables import render_tag_report
from ecr_retention.workflow import new_tag_run_id


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "tag",
        help="tag the images deployed in the clusters the rules file's tagging section selects",
        description="Adds <tag_prefix><unix seconds> once to each image of this registry that runs in the "
        "selected clusters and namespaces (from in-use/*.json in the bucket), with the byte-identical manifest. "
        "Tags nothing when the rules file says dry_run: true or --dry-run is given. "
        "Exit 0 ok, 1 an image could not be tagged, 2 bad input.",
    )
    parser.add_argument("--config", required=True, help="the rules file (retention.yaml)")
    parser.add_argument("--bucket", required=True, help="the inventory bucket (in-use/)")
    parser.add_argument("--dry-run", action="store_true", help="show what would be tagged, tag nothing")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    bucket_arg = bucket_name(args.bucket)
    session = AwsSession.from_environment()
    now = utc_now()
    with aws_errors():
        report = tag_deployed(
            config,
            read_inventory_from_bucket(session.bucket(bucket_arg)),
            registry=session.registry(),
            run_id=new_tag_run_id(now),
            now=now,
            dry_run=config.dry_run or args.dry_run,
        )
    if args.format == "json":
        json.dump(report.model_dump(mode="json", by_alias=True), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_tag_report(report))
    return 1 if report.has_problems else 0
