"""`ecr-retention export-aws`: write the in-use manifests of ECS and Lambda, one per account and region."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from ecr_retention.commands.aws_session import aws_errors, bucket_name, region_options
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.aws import DEFAULT_REVISIONS, RoleArn, account_of_role, count_summary
from ecr_retention.domain.limits import IN_USE_MANIFEST
from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.loading import check_output_file, read_limited, write_file_atomically

if TYPE_CHECKING:
    from ecr_retention.ports import ManifestStore
    from ecr_retention.services.aws_inventory import ManifestCollection

EXIT_OK, EXIT_PROBLEMS = 0, 1
MAX_PROBLEMS_SHOWN = 20


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export-aws",
        help="export the images ECS and Lambda use (in-use manifests aws-<account>-<region>)",
        description="Read ECS services (every live deployment and task set), running and pending tasks, scheduled "
        "tasks (EventBridge rules and Scheduler), the newest ACTIVE task-definition revisions of each family, and "
        "Lambda container-image functions with their versions and aliases, and write one in-use manifest per "
        "account and region, in-use/aws-<account>-<region>.json. Read-only, with the standard AWS credentials; "
        "--role-arn adds a spoke account read through that role. A part that cannot be read is named on stderr "
        "and the manifest is written with complete: false. Exit 0 when every manifest is complete and written, "
        "1 otherwise, 2 on bad input.",
    )
    destination = parser.add_mutually_exclusive_group(required=True)
    destination.add_argument("--bucket", metavar="NAME", help="write s3://BUCKET/in-use/aws-<account>-<region>.json")
    destination.add_argument(
        "--out", type=Path, metavar="FILE", help="write the one manifest to this file (one account and region)"
    )
    parser.add_argument(
        "--regions", nargs="+", metavar="REGION", help="regions to read (default: the configured AWS region)"
    )
    parser.add_argument(
        "--role-arn",
        action="append",
        default=[],
        metavar="ARN",
        help="a read-only role in a spoke account, assumed with STS; repeatable, one per account",
    )
    parser.add_argument(
        "--revisions",
        type=_revisions,
        default=DEFAULT_REVISIONS,
        metavar="N",
        help=f"newest ACTIVE revisions kept per task-definition family (default {DEFAULT_REVISIONS}; 0: none)",
    )
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class FileManifestStore:
    path: Path

    def store(self, name: str, body: bytes) -> str:
        write_file_atomically(self.path, body)
        return str(self.path)

    def stored(self, name: str) -> tuple[str, bytes | None]:
        return str(self.path), read_limited(self.path, IN_USE_MANIFEST) if self.path.exists() else None


def run(args: argparse.Namespace) -> int:
    # Imported here so that the offline commands start without boto3.
    from ecr_retention.aws.accounts import AwsAccounts
    from ecr_retention.aws.clients import default_factory
    from ecr_retention.services.aws_inventory import export_aws_inventory, failed_collections

    role_arns = _role_arns(args.role_arn)
    given = _regions(args.regions) if args.regions else None
    store = _store(args, role_arns, given)
    regions = given if given is not None else (_default_region(),)
    with aws_errors():
        collections = export_aws_inventory(
            AwsAccounts(default_factory(), role_arns), regions, store, revisions=args.revisions
        )
    for collection in collections:
        _print(collection)
    return EXIT_PROBLEMS if failed_collections(collections) else EXIT_OK


def _store(args: argparse.Namespace, role_arns: tuple[str, ...], regions: tuple[str, ...] | None) -> ManifestStore:
    """The --out file, which holds one manifest only, or the --bucket."""
    from ecr_retention.aws.clients import client
    from ecr_retention.aws.s3_bucket import S3Bucket
    from ecr_retention.services.aws_inventory import BucketManifestStore

    if args.out is None:
        return BucketManifestStore(S3Bucket(bucket_name(args.bucket), client("s3")))
    if role_arns or (regions is not None and len(regions) > 1):
        raise InputError("--out takes one manifest (one region of the own account); use --bucket for more")
    check_output_file(args.out, "--out")
    return FileManifestStore(args.out)


def _default_region() -> str:
    from ecr_retention.aws.clients import default_region

    region = default_region()
    if not region:
        raise InputError("no AWS region: give --regions, or set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's)")
    return region


def _print(collection: ManifestCollection) -> None:
    name = collection.name
    references = f"{len(collection.manifest.images)} image references from {count_summary(collection.counts)}"
    if collection.store_error is not None:
        print(f"{name}: {references}; NOT written: {collection.store_error}", file=sys.stderr)
    else:
        state = "complete" if not collection.problems else "INCOMPLETE (complete: false)"
        print(f"{name}: {references}; {state}; wrote {collection.location}")
    for problem in collection.problems[:MAX_PROBLEMS_SHOWN]:
        print(f"{name}: not read: {problem}", file=sys.stderr)
    if len(collection.problems) > MAX_PROBLEMS_SHOWN:
        print(f"{name}: and {len(collection.problems) - MAX_PROBLEMS_SHOWN} more parts not read", file=sys.stderr)


def _role_arns(texts: list[str]) -> tuple[str, ...]:
    adapter: TypeAdapter[str] = TypeAdapter(RoleArn)
    seen: dict[str, str] = {}
    for text in texts:
        try:
            adapter.validate_python(text)
        except ValidationError:
            raise InputError(f"--role-arn {text!r}: not an IAM role ARN (arn:aws:iam::<account>:role/<name>)") from None
        account = account_of_role(text)
        if account in seen:
            raise InputError(
                f"--role-arn {text!r}: account {account} already has role {seen[account]}; one per account"
            )
        seen[account] = text
    return tuple(seen.values())


def _regions(texts: list[str]) -> tuple[str, ...]:
    adapter: TypeAdapter[str] = TypeAdapter(AwsRegion)
    for text in texts:
        try:
            adapter.validate_python(text)
        except ValidationError:
            raise InputError(f"--regions {text!r}: not an AWS region name such as eu-west-1") from None
    return region_options(texts, "--regions")


def _revisions(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value
