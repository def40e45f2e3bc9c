"""`ecr-retention restore`: bring archived images back to STANDARD, those a run archived or those named here."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ecr_retention.commands.aws_session import AwsSession, aws_errors, bucket_name, region_options
from ecr_retention.domain.durations import parse_duration
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.reporting.cost import RESTORE_PRICE_PER_GB
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.services.restore import (
    POLL_SECONDS,
    ReadOnlyManifests,
    RegionRemovals,
    RestoreLine,
    RestoreReport,
    RestoreStatus,
    RunRemovals,
    Selection,
    Waiting,
    removals_of_run,
    restore,
    restore_run,
)
from ecr_retention.services.snapshot import BucketManifestCache
from ecr_retention.tables import MAX_REASON_WIDTH, MAX_TAGS_WIDTH, clip, format_rows, printable
from ecr_retention.workflow import run_started_at

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")  # the OCI distribution spec's tag
REPOSITORY = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")  # ECR's pattern
DEFAULT_TIMEOUT = "30m"  # ECR: "within 20 minutes"
STATUSES: tuple[RestoreStatus, ...] = (
    "would-restore",
    "restoring",
    "restored",
    "being-restored",
    "already-active",
    "timed-out",
    "failed",
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "restore",
        help="bring archived images back to STANDARD: those a run archived, or those named by digest or tag",
        description="Restores archived images (UpdateImageStorageClass to STANDARD, one call an image): every image "
        "the run archived (--run, read from its report in --bucket), or the images of --repository named by "
        "--digest and --tag (repeatable). An image index comes back with its archived children, nested indexes too "
        "(ECR serves an archived index's manifest to no one: with --wait its children follow once it is ACTIVE, "
        "without it a second restore finds them). Images that are not archived are reported and left alone, so "
        "running it twice is harmless. A restore takes up to about 20 minutes (ACTIVATING) and costs the restore fee "
        f"(${RESTORE_PRICE_PER_GB:g}/GB). Exit 0 ok, 1 a restore failed or timed out, or (without --wait) an index's "
        "children are not ACTIVE yet, named on stderr (restore again until it exits 0), 2 bad input.",
    )
    parser.add_argument(
        "--run", dest="run_id", metavar="RUN_ID", help="restore every image this run archived (needs --bucket)"
    )
    parser.add_argument("--bucket", help="the inventory bucket holding the run's report (reports/)")
    parser.add_argument("--repository", metavar="NAME", help="the repository of the --digest and --tag images")
    parser.add_argument("--digest", action="append", default=[], metavar="D", help="an image digest (repeatable)")
    parser.add_argument("--tag", action="append", default=[], metavar="T", help="an image tag (repeatable)")
    parser.add_argument("--wait", action="store_true", help="wait until every restored image is ACTIVE")
    parser.add_argument("--timeout", help=f"how long --wait waits (default {DEFAULT_TIMEOUT}), e.g. 45m")
    parser.add_argument("--dry-run", action="store_true", help="show what would be restored, restore nothing")
    parser.set_defaults(run=run)


def check_arguments(args: argparse.Namespace) -> float:
    """Every argument checked before any AWS call; the --wait timeout in seconds."""
    _check_source(args)
    return _wait_timeout(args)


def _check_source(args: argparse.Namespace) -> None:
    if args.run_id is not None and args.repository is not None:
        raise InputError("--run and --repository exclude each other: restore a run's images or a repository's")
    if args.run_id is None and args.repository is None:
        raise InputError("give --run RUN_ID (with --bucket) or --repository NAME with --digest or --tag")
    if args.run_id is not None:
        _check_run(args)
    else:
        _check_images(args)


def _wait_timeout(args: argparse.Namespace) -> float:
    # Without --wait nothing waits: a timeout given there would be silently ignored, and a restore thought bounded.
    if args.timeout is not None and not args.wait:
        raise InputError("--timeout goes with --wait: without --wait the restores start and nothing waits for them")
    try:
        return parse_duration(args.timeout or DEFAULT_TIMEOUT).total_seconds()
    except ValueError as error:
        raise InputError(f"--timeout: {error}") from None


def _check_run(args: argparse.Namespace) -> None:
    if args.digest or args.tag:
        raise InputError("--digest and --tag go with --repository, not with --run")
    if args.bucket is None:
        raise InputError("--run needs --bucket NAME: the run's report is in the inventory bucket")
    bucket_name(args.bucket)
    run_started_at(args.run_id)


def _check_images(args: argparse.Namespace) -> None:
    if args.bucket is not None:
        raise InputError("--bucket goes with --run, not with --repository")
    if not REPOSITORY.match(args.repository):
        raise InputError(f"--repository: {args.repository!r} is not an ECR repository name")
    if not args.digest and not args.tag:
        raise InputError("--repository needs --digest D or --tag T (repeatable)")
    _check_each("--digest", args.digest, DIGEST, "an image digest (sha256: and 64 lowercase hex digits)")
    _check_each("--tag", args.tag, TAG, "an image tag")


def _check_each(option: str, values: Sequence[str], pattern: re.Pattern[str], what: str) -> None:
    for value in values:
        if not pattern.match(value):
            raise InputError(f"{option}: {value!r} is not {what}")


def run(args: argparse.Namespace) -> int:
    timeout = check_arguments(args)
    session = AwsSession.from_environment()
    waiting = Waiting(timeout, time.monotonic, time.sleep, _progress, interval=POLL_SECONDS) if args.wait else None
    with aws_errors():
        if args.run_id is not None:
            report = _restore_run(args, session, waiting)
        else:
            selections = {args.repository: Selection(digests=tuple(args.digest), tags=tuple(args.tag))}
            report = restore(selections, registry=session.registry(), dry_run=args.dry_run, waiting=waiting)
    print(render_restore_report(report))
    for note in (*report.notes, *report.unfinished):
        _progress(note)
    return 1 if report.has_problems else 0


def _restore_run(args: argparse.Namespace, session: AwsSession, waiting: Waiting | None) -> RestoreReport:
    """What the run archived, each Region's through a registry of the Region its report names (issue 44)."""
    bucket = session.bucket(args.bucket)
    removals = removals_of_run(bucket, args.run_id)
    region_options([region for region in removals.regions if region is not None], "the run's report: region")
    if removals.deleted:
        _progress(_what_cannot_be_restored(args.run_id, removals, dry_run=args.dry_run))
    return restore_run(
        removals,
        registry_in=session.registry,
        dry_run=args.dry_run,
        waiting=waiting,
        # The pipeline's copies of index manifests: ECR serves none while an index is archived.
        manifests=ReadOnlyManifests(BucketManifestCache(bucket)),
    )


def _what_cannot_be_restored(run_id: str, removals: RunRemovals, *, dry_run: bool) -> str:
    """The run's deletions are gone for good: said once, so that a restore by run is not taken for an undo. A run of
    several Regions says what it removed in each."""
    deleted = _images(removals.deleted) + _by_region(removals, lambda removed: removed.deleted)
    said = f"run {run_id} deleted {deleted}; deletions cannot be undone"
    if not removals.archived:
        return f"{said}, and it archived none: nothing to restore"
    verb = "would be restored" if dry_run else ("is restored" if removals.archived == 1 else "are restored")
    archived = _images(removals.archived, "archived ") + _by_region(removals, lambda removed: removed.archived)
    return f"{said}, only its {archived} {verb}"


def _by_region(removals: RunRemovals, count: Callable[[RegionRemovals], int]) -> str:
    """` (eu-west-1 4, us-east-1 3)`: a count of each Region, for a run of several; "" for one."""
    if not removals.several:
        return ""
    return " (" + ", ".join(f"{region} {count(removed)}" for region, removed in removals.regions.items()) + ")"


def _images(count: int, kind: str = "") -> str:
    return f"{count} {kind}image" + ("" if count == 1 else "s")


def _progress(message: str) -> None:
    print(printable(f"ecr-retention restore: {message}"), file=sys.stderr, flush=True)


RESTORE_COLUMNS = ("REPOSITORY", "DIGEST", "TAGS", "SIZE", "RESULT", "DETAIL")


def render_restore_report(report: RestoreReport) -> str:
    """The table of every image and the total; a restore of several Regions (a run's) has a REGION column and a
    total per Region too."""
    regions = list(dict.fromkeys(line.region for line in report.lines if line.region is not None))
    lines = _table(report.lines, named=bool(regions)) if report.lines else ["no image to restore"]
    lines.append(restore_total_line(report))
    lines += [f"  {region}: {_counts(_of_region(report.lines, region)) or 'nothing to do'}" for region in regions]
    return "\n".join(printable(line) for line in lines)


def _of_region(lines: Sequence[RestoreLine], region: str) -> list[RestoreLine]:
    return [line for line in lines if line.region == region]


def _table(lines: Sequence[RestoreLine], *, named: bool) -> list[str]:
    if not named:
        return format_rows([RESTORE_COLUMNS, *map(restore_row, lines)])
    return format_rows([("REGION", *RESTORE_COLUMNS), *((line.region or "-", *restore_row(line)) for line in lines)])


def _counts(lines: Sequence[RestoreLine]) -> str:
    """`restoring 6, already-active 1`: the count of each status among the lines."""
    counts = Counter(line.status for line in lines)
    return ", ".join(f"{status} {counts[status]}" for status in STATUSES if counts[status])


def restore_row(line: RestoreLine) -> tuple[str, ...]:
    return (
        line.repository,
        short_digest(line.image_digest) or "-",
        clip(",".join(line.image_tags) or "<untagged>", MAX_TAGS_WIDTH),
        human_bytes(line.size),
        line.status,
        clip(line.detail, MAX_REASON_WIDTH),
    )


def restore_total_line(report: RestoreReport) -> str:
    """The count of each status, the mode, and what restoring the images costs (ECR's restore fee)."""
    mode = "dry run: nothing restored" if report.dry_run else "live"
    total = f"total: {_counts(report.lines) or 'nothing to do'} ({mode})"
    if not report.restored_bytes():
        return total
    verb = "would cost" if report.dry_run else "costs"
    return (
        f"{total}; restoring {human_bytes(report.restored_bytes())} {verb} about ${report.fee():.2f} "
        f"(${RESTORE_PRICE_PER_GB:g}/GB)"
    )
