"""`ecr-retention snapshot`: read a live registry (read-only) into the snapshot `plan` reads."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ecr_retention.commands.aws_session import AwsFailure, AwsSession, aws_errors, bucket_name, region_options
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.registry.replication import GRANT
from ecr_retention.layout import MEMORY_FILE
from ecr_retention.loading import check_not_an_input, check_output_file, write_file_atomically
from ecr_retention.ports import ImagesUnreadable, ReplicationUnreadable
from ecr_retention.services.inventory import inventory_objects
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_registry

Progress = Callable[[int, int, str], None]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "snapshot",
        help="read a live registry into a snapshot file for `plan` (read-only)",
        description="Reads the registry's replication rules (DescribeRegistry) and every repository (or those "
        "matching --repositories) with DescribeRepositories, "
        "DescribeImages (all storage classes) and BatchGetImage for image indexes, and writes the snapshot "
        "format that `plan --snapshot` reads. Read-only. Progress goes to stderr.",
    )
    parser.add_argument("--out", required=True, type=Path, help="the snapshot file to write")
    parser.add_argument(
        "--region",
        action="append",
        default=[],
        metavar="REGION",
        help='read this Region\'s registry (repeat for several: one file, {"registries": [...]}, one per Region, in '
        "this order); default: the standard configuration's Region",
    )
    parser.add_argument("--repositories", nargs="+", metavar="PATTERN", help="only repositories matching these globs")
    parser.add_argument(
        "--bucket",
        help="the inventory bucket: also record its in-use manifests and the in-use memory into --manifests, "
        "byte for byte, so that `plan --manifests` decides as the pipeline does (S3 read access only)",
    )
    parser.add_argument("--manifests", type=Path, help="the directory to record them in (with --bucket)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    regions = snapshot_regions(args.region)  # bad input before any AWS call
    session = AwsSession.from_environment()

    def progress(number: int, total: int, name: str) -> None:
        if total >= 20 and (number % 10 == 0 or number == total):
            print(f"snapshot: {number}/{total} repositories ({name})", file=sys.stderr)

    snapshots = [read_registry(session, region, args.repositories, progress) for region in regions]
    if args.repositories and not any(snapshot.repositories for snapshot in snapshots):
        raise InputError(f"--repositories: no repository matches {' '.join(args.repositories)}")
    write_snapshots(args.out, snapshots)
    if args.bucket is not None:
        record_inventory(session, bucket_name(args.bucket), args.manifests)
    return 0


def write_snapshots(out: Path, snapshots: Sequence[Snapshot]) -> None:
    """One registry as the snapshot format has it, several as `{"registries": [...]}`; what was read, on stderr."""
    documents = [snapshot.model_dump(mode="json", by_alias=True, exclude_none=True) for snapshot in snapshots]
    body = json.dumps(documents[0] if len(documents) == 1 else {"registries": documents}, indent=1)
    write_file_atomically(out, body.encode())
    for snapshot in snapshots:
        images = sum(len(repo.image_details) for repo in snapshot.repositories)
        where = f" in {snapshot.region}" if len(snapshots) > 1 else ""
        print(f"snapshot: {len(snapshot.repositories)} repositories, {images} images{where} -> {out}", file=sys.stderr)


def snapshot_regions(regions: Sequence[str]) -> tuple[str | None, ...]:
    """Each --region once, in order; none: the session's Region (None), as the command always read it."""
    return region_options(regions) or (None,)


def read_registry(
    session: AwsSession, region: str | None, patterns: Sequence[str] | None, progress: Progress
) -> Snapshot:
    """One Region's registry (None: the session's), through a client of that Region."""
    with aws_errors():
        try:
            return snapshot_registry(
                session.registry(region), MemoryManifestCache(), patterns=patterns, progress=progress
            )
        except ReplicationUnreadable as error:
            need = f": {GRANT}" if error.denied else ", so none is written"
            raise AwsFailure(f"{error}; a snapshot records where deletions replicate to{need}") from None
        except ImagesUnreadable as error:  # an answer that is not one (a digest listed twice): no snapshot
            raise AwsFailure(f"{error}; no snapshot is written") from None


def _check_outputs(args: argparse.Namespace) -> None:
    """The --out file, and the --manifests directory the inventory is recorded into (with --bucket only)."""
    check_output_file(args.out, "--out")
    # plan --manifests reads every .json of the directory the inventory is recorded into: the snapshot is none
    check_not_an_input(args.out, "--out", files={}, directories={"--manifests": args.manifests})
    if (args.bucket is None) != (args.manifests is None):
        raise InputError("--bucket and --manifests go together: the inventory is recorded into the directory")
    if args.manifests is not None:
        check_manifests_directory(args.manifests)


def check_manifests_directory(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise InputError(f"--manifests: {directory} is not a directory")
    if directory.is_dir() and any(directory.glob("*.json")):
        raise InputError(f"--manifests: {directory} holds .json files already; name an empty or new directory")


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(exist_ok=True)
    except OSError as error:
        raise InputError(f"--manifests: cannot create {folder}: {error.strerror or error}") from None


def record_inventory(session: AwsSession, bucket: str, directory: Path) -> None:
    """The in-use manifests and the memory as the pipeline's next run would read them."""
    with aws_errors():
        objects = inventory_objects(session.bucket(bucket))
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"--manifests: cannot create {directory}: {error.strerror or error}") from None
    for name, body in objects.items():
        if "/" in name:  # a spoke's, under its account's subfolder (ecr_retention.loading.load_manifests)
            _make_folder(directory / name.split("/", 1)[0])
        write_file_atomically(directory / name, body)
    memory = "with the in-use memory" if MEMORY_FILE in objects else "no in-use memory yet"
    manifests = len(objects) - (MEMORY_FILE in objects)
    print(f"snapshot: {manifests} in-use manifests, {memory} -> {directory}", file=sys.stderr)
