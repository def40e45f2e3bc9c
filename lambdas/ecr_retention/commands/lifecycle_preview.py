"""`ecr-retention lifecycle-preview`: what ECR's lifecycle policy preview would say, offline and at once."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.in_use.index import unknown_ecr_host_warnings
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.lifecycle.evaluation import evaluate
from ecr_retention.domain.lifecycle.parsing import PolicyDocument, parse_policy_document
from ecr_retention.domain.lifecycle.preview import LifecyclePolicyPreview, PreviewResult, build_preview
from ecr_retention.domain.limits import IMAGES_FILE, LIFECYCLE_POLICY
from ecr_retention.domain.registry.coordinates import UNKNOWN_REGISTRY, RegistryCoordinates
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.registry.images import ImageDetail, ImagesDocument, RepositorySnapshot, Snapshot
from ecr_retention.loading import parse_now, read_json, read_text, validate_as
from ecr_retention.tables import format_rows, printable


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "lifecycle-preview",
        help="simulate a native ECR lifecycle policy offline",
        description="Evaluate a native ECR lifecycle policy against `aws ecr describe-images` output with ECR's "
        "semantics and print what `aws ecr get-lifecycle-policy-preview` would return. Exit 0, or 2 on bad input.",
    )
    add_policy_and_images(parser)
    parser.add_argument("--now", help="evaluate as of this ISO 8601 time (default: the current time)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(run=run)


def add_policy_and_images(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--policy", required=required, help="lifecycle policy JSON, or `aws ecr get-lifecycle-policy` output"
    )
    parser.add_argument(
        "--images",
        required=required,
        help="`aws ecr describe-images` output (optionally with a `manifests` map), or an ecr-retention snapshot",
    )
    parser.add_argument("--repository", help="which repository of a snapshot file (and the name for references)")


@dataclass(frozen=True)
class RepositoryImages:
    """One repository's images as read from the images file."""

    images: tuple[ImageDetail, ...]
    manifests: dict[str, dict[str, Any]]
    repository_name: str | None
    # describe-images output names the account only (no Region, no replication rules); a snapshot all three.
    registry: RegistryCoordinates = UNKNOWN_REGISTRY


def load_policy(path: str | Path) -> PolicyDocument:
    return parse_policy_document(read_text(path, LIFECYCLE_POLICY), str(path))


def load_images(path: str | Path, repository: str | None) -> RepositoryImages:
    """One repository's images from an ecr-retention snapshot (which repository: --repository, or its only one) or
    from `aws ecr describe-images` output."""
    data = read_json(path, IMAGES_FILE)
    if isinstance(data, dict) and "repositories" in data:
        return snapshot_images(validate_as(Snapshot, data, path), path, repository)
    if not isinstance(data, dict) or "imageDetails" not in data:
        raise InputError(f"{path}: expected `aws ecr describe-images` output, a JSON object with an imageDetails list")
    document = validate_as(ImagesDocument, data, path)
    return RepositoryImages(
        images=document.image_details,
        manifests=dict(document.manifests),
        repository_name=repository or document.image_repository_name,
        registry=RegistryCoordinates(document.image_registry_id),
    )


def snapshot_images(snapshot: Snapshot, path: str | Path, repository: str | None) -> RepositoryImages:
    chosen = chosen_repository(snapshot, path, repository)
    return RepositoryImages(
        images=chosen.image_details,
        manifests=dict(chosen.manifests),
        repository_name=chosen.repository_name,
        registry=snapshot.registry,
    )


def chosen_repository(snapshot: Snapshot, path: str | Path, repository: str | None) -> RepositorySnapshot:
    """The snapshot's repository named --repository, or its only one when none is named."""
    names = [repo.repository_name for repo in snapshot.repositories]
    if repository is None and len(names) != 1:
        raise InputError(f"{path}: a snapshot of {len(names)} repositories; pick one with --repository")
    chosen = next((repo for repo in snapshot.repositories if repository in (None, repo.repository_name)), None)
    if chosen is None:
        raise InputError(f"{path}: no repository {repository} in the snapshot (it has: {', '.join(names)})")
    return chosen


def warn(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"warning: {printable(line)}", file=sys.stderr)


def lookalike_host_warnings(inventory: Inventory) -> list[str]:
    """In-use images whose host looks like ECR's but is none (docs/safety.md section 32): their tags protect nothing in
    the in-use check, which nobody would know without a word."""
    return [warning for manifest in inventory.protecting for warning in unknown_ecr_host_warnings(manifest)]


def index_warnings(unknown: Sequence[str]) -> list[str]:
    if not unknown:
        return []
    return [
        f"{len(unknown)} image indexes have no manifest in the images file, so their children are treated as "
        "ordinary images; add a `manifests` map (index digest -> manifest JSON) for ECR's manifest-list guard"
    ]


def run(args: argparse.Namespace) -> int:
    document = load_policy(args.policy)
    found = load_images(args.images, args.repository)
    now = parse_now(args.now)
    evaluation = evaluate(document.policy, found.images, now, found.manifests)
    warn(index_warnings(evaluation.indexes_without_manifest))
    result = build_preview(
        evaluation,
        repository_name=found.repository_name or document.repository_name,
        registry_id=found.registry.registry_id or document.registry_id,
        policy_text=document.text,
    )
    if args.format == "json":
        json.dump(result.to_json_dict(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_preview_table(result, now, total=len(found.images)))
    return 0


def _preview_row(item: PreviewResult, now: datetime) -> tuple[str, ...]:
    return (
        str(item.applied_rule_priority),
        item.action.type,
        short_digest(item.image_digest),
        item.storage_class,
        humanize_age(now - item.image_pushed_at),
        ", ".join(item.image_tags) or "<untagged>",
    )


def render_preview_table(result: LifecyclePolicyPreview, now: datetime, *, total: int) -> str:
    transitioning = sum(count.image_total_count for count in result.summary.transitioning_image_total_counts)
    name = f" for {result.repository_name}" if result.repository_name else ""
    lines = [
        f"lifecycle preview{name} at {now.isoformat().replace('+00:00', 'Z')}: "
        f"{result.summary.expiring_image_total_count} of {total} images expire, {transitioning} transition to archive"
    ]
    if result.preview_results:
        header = ("RULE", "ACTION", "DIGEST", "STORAGE", "AGE", "TAGS")
        lines.extend(format_rows([header, *(_preview_row(item, now) for item in result.preview_results)]))
    for referrer in result.cascaded_referrers:
        lines.append(
            f"also {referrer.action.type} with its subject {short_digest(referrer.subject_manifest_digest)}: "
            f"referrer {short_digest(referrer.image_digest)} {', '.join(referrer.image_tags) or '<untagged>'}"
        )
    return "\n".join(printable(line) for line in lines)
