"""What `plan` and `diff` plan against: a snapshot file and a directory of manifests, or the inventory bucket, where
the pipeline keeps each repository as its last evaluation read it, the in-use manifests and the memory (S3 read
access only; never ECR)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from ecr_retention.commands.aws_session import aws_errors, bucket_name, region_options, s3_bucket
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.registry.swept import SweptRegistry
from ecr_retention.loading import load_holds, load_manifests, load_snapshots


@dataclass(frozen=True)
class RegistryInputs:
    snapshot: Snapshot  # the first (or only) registry
    inventory: Inventory
    read_at: dict[str, datetime] = field(default_factory=dict)  # from the bucket: when each repository was read
    warnings: tuple[str, ...] = ()
    # every registry of a snapshot of several (`snapshot --region A --region B`), the file's order; () for one
    others: tuple[Snapshot, ...] = ()
    # from the bucket, of several registries: when each registry's repositories were read (registries' order)
    read_times: tuple[dict[str, datetime], ...] = ()
    # every registry of a file of several, whichever --region chose: the sources that decide replicas
    # (domain/planning/replicas.py); () for one
    sources: tuple[Snapshot, ...] = ()

    @property
    def registries(self) -> tuple[Snapshot, ...]:
        return (self.snapshot, *self.others)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", help="registry snapshot JSON (ecr-retention snapshot)")
    source.add_argument(
        "--bucket",
        help="the inventory bucket: the registry as the pipeline's last evaluations read it (snapshots/), the in-use "
        "manifests and the memory; needs s3:GetObject and s3:ListBucket only",
    )
    parser.add_argument("--manifests", help="directory of in-use manifests (<cluster>.json), with --snapshot")
    parser.add_argument(
        "--holds",
        help="directory of holds laid out as the bucket's holds/ (<region>/<repository>/<digest>.json), with "
        "--snapshot; with --bucket, the bucket's holds are read",
    )
    parser.add_argument(
        "--region",
        help="the Region whose registry is planned: with --bucket, when the deployment prunes several Regions; with "
        "--snapshot, one registry of a snapshot of several",
    )


def load_inputs(args: argparse.Namespace, *, several: bool = False) -> RegistryInputs:
    """`several`: a snapshot file of several registries is planned whole (`plan`) unless --region names one; a
    command that reads one registry (`diff`) needs --region then."""
    if args.bucket is None:
        every = load_snapshots(args.snapshot)
        registries = of_region(every, args.region, args.snapshot, several=several)
        return RegistryInputs(
            snapshot=registries[0],
            others=registries[1:],
            inventory=replace(load_manifests(args.manifests), holds=load_holds(args.holds)),
            sources=every if len(every) > 1 else (),
        )
    if args.holds is not None:
        raise InputError("--holds goes with --snapshot: with --bucket, the bucket's holds are read")
    if args.manifests is not None:
        raise InputError("--manifests goes with --snapshot: with --bucket, the bucket's in-use manifests are read")
    return inputs_from_bucket(bucket_name(args.bucket), args.region, several=several)


def of_region(
    registries: tuple[Snapshot, ...], region: str | None, source: str, *, several: bool
) -> tuple[Snapshot, ...]:
    """The registries of the file to plan: `region`'s, or all of them (one, or several when the command takes
    several)."""
    if region is not None:
        chosen = tuple(registry for registry in registries if registry.region == region)
        if not chosen:
            raise InputError(f"--region: {source} holds no registry of {region} (it holds {_regions(registries)})")
        return chosen
    if len(registries) > 1 and not several:
        raise InputError(
            f"{source} holds the registries of several Regions ({_regions(registries)}): name one with --region"
        )
    return registries


def _regions(registries: Sequence[Snapshot]) -> str:
    return ", ".join(registry.region or "a registry of unknown Region" for registry in registries)


def inputs_from_bucket(name: str, region: str | None = None, *, several: bool = False) -> RegistryInputs:
    """`several` without `region`: every Region's kept snapshots, each Region's a registry of its own."""
    from ecr_retention.services.inventory import read_inventory_with_holds
    from ecr_retention.services.swept import ListedFirst, load_swept_registries, load_swept_registry

    region = _region_option(region)
    bucket = ListedFirst(s3_bucket(name))
    with aws_errors():
        registries = (
            load_swept_registries(bucket) if several and region is None else (load_swept_registry(bucket, region),)
        )
        inventory = read_inventory_with_holds(bucket)
    first, *others = registries
    return RegistryInputs(
        snapshot=first.snapshot,
        others=tuple(registry.snapshot for registry in others),
        inventory=inventory,
        read_at=first.read_at if not others else {},
        warnings=tuple(dict.fromkeys(warning for registry in registries for warning in registry.warnings)),
        read_times=tuple(registry.read_at for registry in registries),
        sources=_sources(registries),
    )


def _sources(registries: Sequence[SweptRegistry]) -> tuple[Snapshot, ...]:
    """Every registry read, when there are several (the sources that decide replicas)."""
    return tuple(registry.snapshot for registry in registries) if len(registries) > 1 else ()


def _region_option(region: str | None) -> str | None:
    """--region, checked before any call: a Region botocore does not know is one line (aws_session.region_options)."""
    return None if region is None else region_options((region,))[0]


def say_warnings(command: str, inputs: RegistryInputs, config: RetentionConfig | None = None) -> None:
    for warning in (*inputs.warnings, *unknown_region_warnings(config, inputs.registries)):
        print(f"{command}: warning: {warning}", file=sys.stderr)


def unknown_region_warnings(config: RetentionConfig | None, registries: Sequence[Snapshot]) -> tuple[str, ...]:
    """A registry of unknown Region (a snapshot without `region`) gets only the policies that name no Region: one
    warning for the policies that name some, which never apply to it."""
    if config is None or all(registry.region is not None for registry in registries):
        return ()
    scoped = [f"policies[{index}]" for index, policy in enumerate(config.policies) if policy.regions is not None]
    if not scoped:
        return ()
    return (
        f"the snapshot names no Region, so {', '.join(scoped)} (scoped with regions) never applies to it; a snapshot "
        "written by `ecr-retention snapshot` names its Region",
    )


def read_times_line(read_at: dict[str, datetime], now: datetime) -> str:
    oldest, newest = min(read_at.values()), max(read_at.values())
    return (
        f"the registry as the pipeline last read it: {len(read_at)} repositories, read {oldest:%Y-%m-%d %H:%M} to "
        f"{newest:%Y-%m-%d %H:%M} UTC (oldest {humanize_age(now - oldest)} old)"
    )
