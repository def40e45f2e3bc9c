"""`ecr-retention run`: one whole pipeline run in this process, through the services the Lambdas call."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ecr_retention.commands.aws_session import (
    AwsSession,
    aws_errors,
    bucket_name,
    region_options,
    sentinel_role,
    topic_arn,
)
from ecr_retention.commands.report_files import add_format_arguments, output_file, write_report_file
from ecr_retention.domain.config import check_pruned_regions
from ecr_retention.domain.errors import InputError
from ecr_retention.loading import load_config
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.run import run_pipeline
from ecr_retention.tables import printable, render_run_report


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run the whole pipeline once, in this process (reads in-use manifests, plans, deletes, reports)",
        description="One whole run through the same services the Lambdas call: reads in-use/*.json from the "
        "bucket, plans every repository a policy matches, re-checks and deletes or archives (never when the "
        "rules file says dry_run: true or --dry-run is given), writes the report under reports/ and publishes "
        "the summary (and the page and the sheet beside it). --format html or csv also writes the page or the "
        "sheet into --out. Uses the standard AWS credentials, region and AWS_ENDPOINT_URL. "
        "Exit 0 ok, 1 blocked/skipped/partial/failed, 2 bad input.",
    )
    parser.add_argument("--config", required=True, help="the rules file (retention.yaml)")
    parser.add_argument("--bucket", required=True, help="the inventory bucket (in-use/, reports/)")
    parser.add_argument("--topic-arn", help="publish the run summary to this SNS topic")
    parser.add_argument("--repositories", nargs="+", metavar="PATTERN", help="only repositories matching these globs")
    parser.add_argument("--dry-run", action="store_true", help="report only, whatever the rules file says")
    parser.add_argument(
        "--region",
        action="append",
        default=[],
        metavar="REGION",
        help="also prune this Region's registry (repeat for several); the standard configuration's Region, where the "
        "bucket, the topic and the lease table are, is always pruned, first",
    )
    parser.add_argument("--lease-table", help="DynamoDB lease table of a deployed stack, so runs never overlap")
    parser.add_argument(
        "--sentinel-role",
        metavar="ARN",
        help="the deployed stack's sentinel role (its SENTINEL_ROLE_ARN): the sentinel's records of removals/ it wrote "
        "say when and by what an in-use image went; without it, no record is used",
    )
    add_format_arguments(parser)
    parser.set_defaults(run=run)


def pruned_regions(home: str, others: Sequence[str]) -> tuple[str, ...]:
    """The home Region first, then each --region once; a name that is no Region is bad input."""
    return tuple(dict.fromkeys((home, *region_options(others))))


def run(args: argparse.Namespace) -> int:
    out = output_file(args, inputs={"--config": args.config})  # before the run: wrong arguments delete nothing
    config = load_config(args.config)
    bucket = bucket_name(args.bucket)
    topic = topic_arn(args.topic_arn) if args.topic_arn else None
    role = sentinel_role(args.sentinel_role) if args.sentinel_role else None
    others = region_options(args.region)  # bad input before any AWS call
    session = AwsSession.from_environment()
    regions = pruned_regions(session.region, others)
    check_pruned_regions(config, regions, args.config)
    adapters = Adapters(
        registry=session.registry(),
        other_registries=tuple(session.registry(region) for region in regions[1:]),
        bucket=session.bucket(bucket),
        notifier=session.notifier(topic),
        leases=session.leases(args.lease_table),
        sentinel_role=role,
        renderers=RENDERERS,
    )
    with aws_errors():
        report = run_pipeline(config, adapters, trigger="cli", patterns=args.repositories, force_dry_run=args.dry_run)
    if out is not None:
        try:
            write_report_file(out, report, config, args.format, "run")
        except InputError as error:  # the run is done and reported: not a bad-input exit
            print(
                printable(f"ecr-retention run: error: {error}; the run's report is {report.report_url}"),
                file=sys.stderr,
            )
            return 1
    elif args.format == "json":
        sys.stdout.write(report.to_json(indent=2) + "\n")
    else:
        print(render_run_report(report))
    return 1 if report.has_problems else 0
