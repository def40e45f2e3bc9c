"""`ecr-retention hold add | list | remove`: pin an image for a time, with an owner and a reason (docs/holds.md)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime
from typing import Any

from ecr_retention.clock import utc_now
from ecr_retention.commands.aws_session import AwsSession, aws_errors, bucket_name, region_options
from ecr_retention.domain.config import DEFAULT_MAX_HOLD
from ecr_retention.domain.durations import format_duration, parse_duration
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.holds.model import Holds
from ecr_retention.domain.holds.protection import ending_soon
from ecr_retention.domain.holds.stored import Hold, hold_json
from ecr_retention.domain.timestamps import format_timestamp, parse_timestamp
from ecr_retention.loading import load_config
from ecr_retention.tables import format_rows, printable

REFERENCE = re.compile(
    r"^(?P<repository>(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})|@(?P<digest>sha256:[0-9a-f]{64}))?$"
)
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "hold",
        help="pin an image for a time (add), list the holds, or lift one (remove)",
        description="A hold keeps one image, whatever the rules say, until a date, with an owner and a reason "
        "(docs/holds.md). Exit 0 ok, 2 bad input.",
    )
    actions = parser.add_subparsers(dest="hold_action", required=True, metavar="ACTION", parser_class=type(parser))
    add = actions.add_parser("add", help="place a hold: REPOSITORY[:TAG|@DIGEST] (a repository alone: its latest)")
    add.add_argument("image", metavar="REPOSITORY[:TAG|@DIGEST]")
    add.add_argument(
        "--until", required=True, help="when the hold ends: a date (UTC midnight), an ISO 8601 time, or 30d"
    )
    add.add_argument("--reason", required=True, help="why the image is held, for everyone who reads a report")
    add.add_argument("--owner", help="who holds it (default: the caller's AWS identity)")
    add.add_argument("--config", help="the rules file, for safety.max_hold (default 90d)")
    listing = actions.add_parser("list", help="list the holds, ended and malformed ones included")
    listing.add_argument("--format", choices=("table", "json"), default="table")
    listing.add_argument("--now", help=argparse.SUPPRESS)
    remove = actions.add_parser("remove", help="lift a hold: REPOSITORY@DIGEST, or REPOSITORY:TAG it was placed by")
    remove.add_argument("image", metavar="REPOSITORY[:TAG|@DIGEST]")
    for action in (add, listing, remove):
        action.add_argument("--bucket", required=True, help="the inventory bucket (holds/)")
        action.add_argument("--region", help="the Region of the registry (default: the session's)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    bucket_arg = bucket_name(args.bucket)
    region = region_options((args.region,))[0] if args.region else None
    if args.hold_action == "add":
        return _add(args, bucket_arg, region)
    if args.hold_action == "remove":
        return _remove(args, bucket_arg, region)
    return _list(args, bucket_arg, region)


def parse_image(text: str) -> tuple[str, str | None, str | None]:
    """REPOSITORY[:TAG|@DIGEST]; a repository alone is its `latest`, as `docker pull` reads it."""
    match = REFERENCE.fullmatch(text)
    if match is None:
        raise InputError(
            f"{text!r} is not REPOSITORY[:TAG|@sha256:<64 hex>] (a hold names one image of one repository)"
        )
    if match["digest"] is None and match["tag"] is None:
        return match["repository"], "latest", None
    return match["repository"], match["tag"], match["digest"]


def parse_until(text: str, now: datetime) -> datetime:
    """A date (its UTC midnight), an ISO 8601 time with its offset, or a duration from now (30d)."""
    try:
        if DATE.fullmatch(text):
            return parse_timestamp(f"{text}T00:00:00Z")
        if re.fullmatch(r"\d+[smhdw]", text):
            return now + parse_duration(text)
        return parse_timestamp(text)
    except ValueError as error:
        raise InputError(f"--until: {error}") from None


def _add(args: argparse.Namespace, bucket_arg: str, region: str | None) -> int:
    from ecr_retention.services.holds import HoldRequest, place_hold

    repository, tag, digest = parse_image(args.image)
    now = utc_now()
    until = parse_until(args.until, now)
    max_hold = load_config(args.config).safety.max_hold if args.config else DEFAULT_MAX_HOLD
    session = AwsSession.from_environment()
    owner = args.owner or session.caller or session.registry_id
    request = HoldRequest(repository, tag, digest, until, args.reason, owner)
    with aws_errors():
        hold = place_hold(
            request, registry=session.registry(region), bucket=session.bucket(bucket_arg), now=now, max_hold=max_hold
        )
    print(
        printable(f"held {hold.placed_on} in {hold.region} for {hold.owner} until {format_timestamp(hold.until)}"),
        file=sys.stderr,
    )
    if not args.config:  # a run bounds every hold by its rules' max_hold, which may be shorter than the default
        print(
            f"note: --until was checked against the default safety.max_hold ({format_duration(DEFAULT_MAX_HOLD)}); "
            "a run protects a hold no longer than its rules' safety.max_hold: pass --config to check against them",
            file=sys.stderr,
        )
    return 0


def _remove(args: argparse.Namespace, bucket_arg: str, region: str | None) -> int:
    from ecr_retention.services.holds import remove_hold

    repository, tag, digest = parse_image(args.image)
    session = AwsSession.from_environment()
    with aws_errors():
        key = remove_hold(session.bucket(bucket_arg), region or session.region, repository, tag=tag, digest=digest)
    print(printable(f"removed s3://{bucket_arg}/{key}"), file=sys.stderr)
    return 0


def _list(args: argparse.Namespace, bucket_arg: str, region: str | None) -> int:
    from ecr_retention.services.holds import list_holds

    now = parse_timestamp(args.now) if args.now else utc_now()
    session = AwsSession.from_environment()
    with aws_errors():
        holds = list_holds(session.bucket(bucket_arg))
    if args.format == "json":
        sys.stdout.write(json.dumps(holds_document(holds, region, now), indent=2) + "\n")
    else:
        sys.stdout.writelines(f"{line}\n" for line in holds_table(holds, region, now))
    return 0


def holds_document(holds: Holds, region: str | None, now: datetime) -> dict[str, Any]:
    return {
        "holds": [
            {**json.loads(hold_json(hold)), "ended": hold.until <= now}
            for hold in holds.held
            if region in (None, hold.region)
        ],
        "malformed": [
            {
                "source": malformed.source,
                "images": [str(image) for image in malformed.images],
                "problem": malformed.problem,
            }
            for malformed in holds.malformed
        ],
        "unreadable": [{"source": source, "problem": problem} for source, problem in sorted(holds.unreadable.items())],
    }


def holds_table(holds: Holds, region: str | None, now: datetime) -> list[str]:
    rows: list[tuple[str, ...]] = [("REGION", "IMAGE", "OWNER", "UNTIL", "STATE", "REASON")]
    rows += _held_rows(holds, region, now)
    rows += [
        (image.region, f"{image.repository}@{image.digest}", "?", "-", "malformed", malformed.problem)
        for malformed in holds.malformed
        for image in malformed.images
    ]
    rows += [("?", source, "?", "-", "unreadable", problem) for source, problem in sorted(holds.unreadable.items())]
    return format_rows(rows) if len(rows) > 1 else ["no holds"]


def _held_rows(holds: Holds, region: str | None, now: datetime) -> list[tuple[str, ...]]:
    soon = {hold.image for hold, _ in ending_soon(holds, now, DEFAULT_MAX_HOLD)}

    def state(hold: Hold) -> str:
        if hold.until <= now:
            return "ended"
        return "ends soon" if hold.image in soon else "in force"

    return [
        (hold.region, hold.placed_on, hold.owner, format_timestamp(hold.until), state(hold), hold.reason)
        for hold in holds.held
        if region in (None, hold.region)
    ]
