"""`ecr-retention lifecycle-diff`: which images a change of a native lifecycle policy newly expires or archives, and
which of them run. Both policies evaluated by the simulator on the same images and time; read-only."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ecr_retention.commands.lifecycle_diff_text import DEFAULT_IMAGES_LISTED, lifecycle_markdown, table_lines
from ecr_retention.commands.lifecycle_preview import (
    RepositoryImages,
    chosen_repository,
    load_images,
    load_policy,
    lookalike_host_warnings,
    warn,
)
from ecr_retention.commands.registry_inputs import inputs_from_bucket
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.in_use.index import InUseIndex
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.review.lifecycle_diff import diff_lifecycle
from ecr_retention.loading import load_manifests, parse_now


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "lifecycle-diff",
        help="what a native lifecycle policy change newly expires or archives, and which of those images run",
        description="Evaluates --base (the policy as it is) and --policy (as the change makes it) with ECR's "
        "semantics on the same images and time, and prints the images whose fate changes, with the workloads "
        "that run them. Native policies have no brake (ECR acts within a day), so what the policy decides is what "
        "happens. Exit 0, 1 when the change expires or archives an image a workload runs, or expires or archives "
        "any image while no in-use manifest tells which images run (none read, or one unreadable): the in-use "
        "effect is then unknown, and a gate does not pass what it cannot judge; 2 on bad input.",
    )
    parser.add_argument("--policy", required=True, help="the lifecycle policy JSON as the change makes it")
    parser.add_argument("--base", required=True, help="the lifecycle policy JSON as it is")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--images", help="`aws ecr describe-images` output, or an ecr-retention snapshot")
    source.add_argument("--bucket", help="the inventory bucket: the repository as the last sweep read it")
    parser.add_argument("--repository", help="the repository (required with --bucket, or a snapshot of several)")
    parser.add_argument(
        "--region", help="with --bucket, when the deployment prunes several Regions: the repository's Region"
    )
    parser.add_argument("--manifests", help="directory of in-use manifests (<cluster>.json), with --images")
    parser.add_argument("--now", help="evaluate as of this ISO 8601 time (default: the current time)")
    parser.add_argument(
        "--format",
        choices=("table", "json", "markdown"),
        default="table",
        help="markdown: the pull-request comment, bounded and escaped as diff's",
    )
    parser.add_argument(
        "--images-per-repository",
        type=int,
        default=DEFAULT_IMAGES_LISTED,
        metavar="N",
        help=f"markdown: the changed images listed, running ones first (default {DEFAULT_IMAGES_LISTED})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    new, base = load_policy(args.policy), load_policy(args.base)
    if args.images_per_repository < 0:
        raise InputError("--images-per-repository: must not be negative")
    now = parse_now(args.now)
    found, inventory = images_and_inventory(args)
    name = found.repository_name or new.repository_name
    in_use = InUseIndex.build(inventory.protecting, found.registry)
    warn(lookalike_host_warnings(inventory))
    diff = diff_lifecycle(
        base.policy,
        new.policy,
        found.images,
        now,
        manifests=found.manifests,
        repository_name=name,
        in_use=in_use,
        in_use_unknown=in_use_unknown(inventory),
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(diff.model_dump(mode="json", by_alias=True), indent=2) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(lifecycle_markdown(diff, images_listed=args.images_per_repository))
    else:
        sys.stdout.writelines(f"{line}\n" for line in table_lines(diff))
    return 1 if diff.running_removed or diff.unknown_removed else 0


def in_use_unknown(inventory: Inventory) -> str | None:
    """Why the inventory does not tell which images run, or None when it does: no readable manifest (the doctor's
    "in-use check skipped"), or a manifest that cannot be read (its images may run)."""
    if inventory.problems:
        source = sorted(inventory.problems)[0]
        more = f" and {len(inventory.problems) - 1} more" if len(inventory.problems) > 1 else ""
        return f"in-use manifest {source}{more} could not be read"
    if not inventory.protecting:
        return "no in-use manifest was read (pass --manifests DIR, or --bucket)"
    return None


def images_and_inventory(args: argparse.Namespace) -> tuple[RepositoryImages, Inventory]:
    if args.images is not None:
        return load_images(args.images, args.repository), load_manifests(args.manifests)
    if args.repository is None:
        raise InputError("--repository: required with --bucket (the repository whose policy changes)")
    if args.manifests is not None:
        raise InputError("--manifests goes with --images: with --bucket, the bucket's in-use manifests are read")
    inputs = inputs_from_bucket(args.bucket, args.region)
    chosen = chosen_repository(inputs.snapshot, f"s3://{args.bucket}/snapshots/", args.repository)
    found = RepositoryImages(
        images=chosen.image_details,
        manifests=dict(chosen.manifests),
        repository_name=chosen.repository_name,
        registry=inputs.snapshot.registry,
    )
    return found, inputs.inventory
