"""Tag deployed images: BatchGetImage the exact manifest, PutImage it back under the new tag."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory import Inventory
from ecr_retention.domain.registry import INDEX_MEDIA_TYPES
from ecr_retention.domain.tagging import TagCandidate, TagEntry, TagReport, already_marked, select_for_tagging
from ecr_retention.ports import Registry, RepositoryGone

# Every manifest and index type ECR stores, so that BatchGetImage returns the image itself, never a child
# chosen for the caller's platform.
ACCEPTED_MEDIA_TYPES = (
    *sorted(INDEX_MEDIA_TYPES),
    "application/vnd.docker.distribution.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v1+prettyjws",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
)


def tag_run_id(now: datetime) -> str:
    return f"tag-{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def tag_deployed(
    config: RetentionConfig,
    inventory: Inventory,
    *,
    registry: Registry,
    run_id: str,
    now: datetime,
    dry_run: bool,
) -> TagReport:
    """Adds `<tag_prefix><unix seconds>` once to each deployed image. Dry run reads, and tags nothing."""
    selection = select_for_tagging(
        config, inventory.manifests, registry_id=registry.registry_id, region=registry.region, now=now
    )
    by_repository: dict[str, list[TagCandidate]] = defaultdict(list)
    for candidate in selection.candidates:
        by_repository[candidate.repository].append(candidate)
    entries: list[TagEntry] = []
    for repository, candidates in sorted(by_repository.items()):
        entries.extend(tag_repository(registry, repository, candidates, dry_run=dry_run))
    return TagReport(run_id=run_id, dry_run=dry_run, generated_at=now, entries=tuple(entries), notes=selection.notes)


def tag_repository(
    registry: Registry, repository: str, candidates: list[TagCandidate], *, dry_run: bool
) -> list[TagEntry]:
    def entry(candidate: TagCandidate, status: str, detail: str = "") -> TagEntry:
        return TagEntry(
            repository_name=repository,
            image_digest=candidate.image_digest,
            tag=candidate.tag,
            status=status,  # type: ignore[arg-type]
            detail=detail,
        )

    try:
        current = registry.describe_image_ids(repository, sorted({c.image_digest for c in candidates}))
    except RepositoryGone:
        return [entry(c, "gone", "the repository does not exist") for c in candidates]
    entries: list[TagEntry] = []
    pending: list[TagCandidate] = []
    for candidate in candidates:
        image = current.get(candidate.image_digest)
        if image is None:
            entries.append(entry(candidate, "gone", "the image is no longer in the repository"))
        elif already_marked(image.image_tags, candidate.tag_prefix):
            mark = next(t for t in image.image_tags if t.startswith(candidate.tag_prefix))
            entries.append(entry(candidate, "already-tagged", f"already carries {mark}"))
        elif dry_run:
            entries.append(entry(candidate, "would-tag", "dry run"))
        else:
            pending.append(candidate)
    if not pending:
        return entries
    manifests = registry.get_manifests(repository, sorted({c.image_digest for c in pending}), ACCEPTED_MEDIA_TYPES)
    for candidate in pending:
        manifest = manifests.get(candidate.image_digest)
        if manifest is None:
            entries.append(entry(candidate, "gone", "ECR returned no manifest for this digest"))
            continue
        outcome = registry.put_tag(repository, manifest, candidate.tag)
        entries.append(entry(candidate, outcome.status, outcome.detail))
    return entries
