"""Tag deployed images: BatchGetImage the exact manifest, PutImage it back under the new tag (services/act.py `tag`,
whose ledger says what became of it). In every registry the deployment prunes: a reference names its registry's host,
so each Region's registry tags what the manifests run from it (`tag_deployed_everywhere`)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning.ledger import IMMUTABLE_TAG, NO_ANSWER, Answer
from ecr_retention.domain.planning.tagging import TagCandidate, TagEntry, TagReport, already_marked, select_for_tagging
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.ports import Registry, RepositoryGone, TagStatus
from ecr_retention.registries import Registries
from ecr_retention.services import act

# Every manifest and index type ECR stores, so that BatchGetImage returns the image itself, never a child
# chosen for the caller's platform.
ACCEPTED_MEDIA_TYPES = (
    *sorted(INDEX_MEDIA_TYPES),
    "application/vnd.docker.distribution.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v1+prettyjws",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
)


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
    selection = select_for_tagging(config, inventory.standing, registry=RegistryCoordinates.of(registry), now=now)
    by_repository: dict[str, list[TagCandidate]] = defaultdict(list)
    for candidate in selection.candidates:
        by_repository[candidate.repository].append(candidate)
    entries: list[TagEntry] = []
    for repository, candidates in sorted(by_repository.items()):
        entries.extend(tag_repository(registry, repository, candidates, dry_run=dry_run))
    return TagReport(run_id=run_id, dry_run=dry_run, generated_at=now, entries=tuple(entries), notes=selection.notes)


def tag_deployed_everywhere(
    config: RetentionConfig,
    inventory: Inventory,
    *,
    registries: Registries,
    run_id: str,
    now: datetime,
    dry_run: bool,
) -> TagReport:
    """`tag_deployed` in each pruned registry, the home Region's first, as one report: another Region's entries say
    their Region; a note every registry made (a cluster without a readable manifest) is said once."""
    reports = [
        (
            pruned.key,
            tag_deployed(config, inventory, registry=pruned.port, run_id=run_id, now=now, dry_run=dry_run),
        )
        for pruned in registries
    ]
    if len(reports) == 1:
        return reports[0][1]
    entries = tuple(
        entry.model_copy(update={"region": region}) for region, report in reports for entry in report.entries
    )
    notes = tuple(dict.fromkeys(note for _, report in reports for note in report.notes))
    return TagReport(run_id=run_id, dry_run=dry_run, generated_at=now, entries=entries, notes=notes)


def tag_repository(
    registry: Registry, repository: str, candidates: list[TagCandidate], *, dry_run: bool
) -> list[TagEntry]:
    """Each candidate re-read first: gone, already marked, or (dry run) would be tagged; the rest are tagged."""
    try:
        current = registry.describe_image_ids(repository, sorted({c.image_digest for c in candidates}))
    except RepositoryGone:
        return [_entry(repository, c, "gone", "the repository does not exist") for c in candidates]
    entries: list[TagEntry] = []
    pending: list[TagCandidate] = []
    for candidate in candidates:
        settled = _settled(repository, candidate, current.get(candidate.image_digest), dry_run=dry_run)
        if settled is None:
            pending.append(candidate)
        else:
            entries.append(settled)
    if pending:
        entries.extend(_put_tags(registry, repository, pending))
    return entries


def _entry(repository: str, candidate: TagCandidate, status: str, detail: str = "") -> TagEntry:
    return TagEntry(
        repository_name=repository,
        image_digest=candidate.image_digest,
        tag=candidate.tag,
        status=status,  # type: ignore[arg-type]
        detail=detail,
    )


def _settled(repository: str, candidate: TagCandidate, image: ImageDetail | None, *, dry_run: bool) -> TagEntry | None:
    """What the image as it is now says of the candidate, or None when it is to be tagged."""
    if image is None:
        return _entry(repository, candidate, "gone", "the image is no longer in the repository")
    if already_marked(image.image_tags, candidate.tag_prefix):
        mark = next(t for t in image.image_tags if t.startswith(candidate.tag_prefix))
        return _entry(repository, candidate, "already-tagged", f"already carries {mark}")
    if dry_run:
        return _entry(repository, candidate, "would-tag", "dry run")
    return None


def _put_tags(registry: Registry, repository: str, pending: list[TagCandidate]) -> list[TagEntry]:
    """PutImage of each image's exact manifest under its new tag."""
    manifests = registry.get_manifests(repository, sorted({c.image_digest for c in pending}), ACCEPTED_MEDIA_TYPES)
    entries: list[TagEntry] = []
    for candidate in pending:
        manifest = manifests.get(candidate.image_digest)
        if manifest is None:
            entries.append(_entry(repository, candidate, "gone", "ECR returned no manifest for this digest"))
            continue
        answer = act.tag(registry, repository, manifest, candidate.tag).answer(candidate.image_digest)
        entries.append(_entry(repository, candidate, *_tag_status(answer)))
    return entries


def _tag_status(answer: Answer) -> tuple[TagStatus, str]:
    """The entry's status and detail, from the ledger's answer about the tag."""
    if answer.kind == "done":
        return "tagged", ""
    if answer.kind == "already":
        return "already-tagged", ""
    code, detail = answer.failure or NO_ANSWER
    return ("immutable" if code == IMMUTABLE_TAG else "failed"), detail
