"""Bring archived images back to STANDARD: those a run archived (from its report in the bucket), or those an
operator names by digest or tag. Restoring deletes nothing, and a second restore of the same images does nothing
(they are already ACTIVE, or ACTIVATING).

ECR restores one image per UpdateImageStorageClass call; the image is ACTIVATING until the restore finishes
("within 20 minutes"), then ACTIVE, and each GB restored costs the restore fee (domain/reporting/cost.py).

An image index comes back with its children, nested indexes too, as the pipeline restores an in-use index: a pull of
the index fetches the child of its platform, so an index restored without its archived children still cannot be
pulled. The children are listed in the index's manifest, which ECR does not serve while the index is archived: it is
read from the manifest cache the pipeline keeps (manifests/<digest>.json, with --run), or from ECR once the index
is ACTIVE (with --wait, the children follow in a second round; without it, a second restore finds them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Literal

from ecr_retention.domain.durations import format_duration
from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.planning.ledger import NO_ANSWER, Answer
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES, short_digest
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.reporting.cost import RESTORE_PRICE_PER_GB
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.layout import run_report_key
from ecr_retention.loading import validate_as
from ecr_retention.ports import Bucket, ManifestCache, Registry, RepositoryGone
from ecr_retention.services import act
from ecr_retention.services.snapshot import MemoryManifestCache, index_manifests, read_index_manifest
from ecr_retention.workflow import run_started_at

MAX_RUN_REPORT_BYTES = 256 * 1024 * 1024
POLL_SECONDS = 15.0
PROGRESS_SECONDS = 60.0
GB = 1024**3

RestoreStatus = Literal[
    "would-restore",  # dry run: archived, a restore would start
    "restoring",  # the restore started (ACTIVATING)
    "restored",  # --wait: ACTIVE again
    "already-active",
    "being-restored",  # ACTIVATING already before this command
    "timed-out",  # --wait: still ACTIVATING at the deadline
    "failed",
]
PROBLEMS: frozenset[RestoreStatus] = frozenset({"failed", "timed-out"})


@dataclass(frozen=True)
class Selection:
    """The images of one repository to restore, by digest and by tag."""

    digests: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class RestoreLine:
    repository: str
    image_digest: str  # "" for a tag that names no image
    image_tags: tuple[str, ...]
    status: RestoreStatus
    detail: str
    size: int | None = None
    # The Region of the repository's registry, when a restore spans several (restore_run); None for one.
    region: str | None = None


@dataclass
class RestoreReport:
    dry_run: bool
    lines: list[RestoreLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what is left to do, for people (an index's unknown children)
    # Without --wait: each restored index whose children are not all ACTIVE yet (or not known yet), naming them; the
    # index cannot be pulled until they are, so the restore is not done (exit 1 until a restore finds them ACTIVE).
    unfinished: list[str] = field(default_factory=list)

    @property
    def has_problems(self) -> bool:
        return bool(self.unfinished) or any(line.status in PROBLEMS for line in self.lines)

    def restored_bytes(self) -> int:
        started = ("would-restore", "restoring", "restored", "timed-out")
        return sum(line.size or 0 for line in self.lines if line.status in started)

    def fee(self) -> float:
        return self.restored_bytes() / GB * RESTORE_PRICE_PER_GB


# --- what to restore -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegionRemovals:
    """What a run removed in one Region's registry: the images it archived, by repository (they can be restored), and
    how many it deleted (gone for good: a deletion cannot be undone)."""

    selections: dict[str, Selection] = field(default_factory=dict)
    archived: int = 0
    deleted: int = 0


@dataclass(frozen=True)
class RunRemovals:
    """What a run removed, from its report, by the Region each repository's report names (issue 44: two Regions'
    repositories of one name are two repositories). None: a report that names no Region (written before a run could
    prune several), restored in the registry of the caller's Region, as it always was."""

    regions: dict[str | None, RegionRemovals]

    @property
    def archived(self) -> int:
        return sum(removals.archived for removals in self.regions.values())

    @property
    def deleted(self) -> int:
        return sum(removals.deleted for removals in self.regions.values())

    @property
    def several(self) -> bool:
        return len(self.regions) > 1


def removals_of_run(bucket: Bucket, run_id: str) -> RunRemovals:
    """The run's report (reports/YYYY/MM/DD/<runId>.json) read for what it archived and deleted in each Region."""
    report = _run_report(bucket, run_id)
    regions: dict[str | None, list[RepositoryReport]] = {}
    for repo in report.repositories:
        if not (repo.archived or repo.deleted):
            continue
        regions.setdefault(report.region_of(repo), []).append(repo)
    return RunRemovals({region: _removals_of(repositories) for region, repositories in regions.items()})


def _removals_of(repositories: Sequence[RepositoryReport]) -> RegionRemovals:
    return RegionRemovals(
        {
            repo.repository_name: Selection(digests=tuple(entry.image_digest for entry in repo.archived))
            for repo in repositories
            if repo.archived
        },
        sum(len(repo.archived) for repo in repositories),
        sum(len(repo.deleted) for repo in repositories),
    )


def _run_report(bucket: Bucket, run_id: str) -> RunReport:
    key = run_report_key(run_id, run_started_at(run_id))
    where = f"s3://{bucket.name}/{key}"
    body = bucket.read(key, max_bytes=MAX_RUN_REPORT_BYTES)
    if body is None:
        raise InputError(f"unknown run {run_id}: no report at {where}")
    data = parse_json(body.decode("utf-8", errors="replace"), where)
    report = validate_as(RunReport, data, f"{where}: unreadable run report")
    if report.run_id != run_id:
        raise InputError(f"{where}: the report is of run {report.run_id}, not {run_id}")
    if report.dry_run:
        raise InputError(f"run {run_id} was a dry run: it archived nothing")
    return report


class ReadOnlyManifests:
    """The pipeline's manifest cache (BucketManifestCache) read and never written: a restore needs S3 read access
    only, and what it reads from ECR is kept for this process."""

    def __init__(self, cache: ManifestCache) -> None:
        self._cache = cache
        self._read: dict[str, str] = {}

    def get(self, digest: str) -> str | None:
        return self._read.get(digest) or self._cache.get(digest)

    def put(self, digest: str, text: str) -> None:
        self._read[digest] = text


# --- restoring ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    """--wait: poll until every restore has finished, or the timeout (seconds) has passed."""

    timeout: float
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    progress: Callable[[str], None]
    interval: float = POLL_SECONDS


# (child digest, its platform as the index lists it: linux/arm64, attestation, index), in the index's order
Children = tuple[tuple[str, str], ...]


@dataclass
class _Restoring:
    """What one restore has seen: the lines, each child's index, each index's children, and the indexes whose
    children are still unknown (their manifest cannot be read yet), each keyed by (repository, digest)."""

    lines: list[RestoreLine] = field(default_factory=list)
    index_of: dict[tuple[str, str], str] = field(default_factory=dict)
    children_of: dict[tuple[str, str], Children] = field(default_factory=dict)
    unknown_indexes: set[tuple[str, str]] = field(default_factory=set)

    def add(self, repository: str, restored: _RepositoryRestore) -> None:
        seen = {(line.repository, line.image_digest) for line in self.lines}
        self.lines.extend(line for line in restored.lines if (repository, line.image_digest) not in seen)
        self.index_of.update({(repository, child): index for child, index in restored.found.index_of.items()})
        self.children_of.update({(repository, index): kids for index, kids in restored.found.children_of.items()})
        self.unknown_indexes.update((repository, index) for index in restored.found.unknown)


@dataclass(frozen=True)
class _Found:
    """The images to restore: those chosen and every image their indexes list, nested indexes too, each once."""

    images: list[ImageDetail]
    index_of: dict[str, str] = field(default_factory=dict)  # child digest -> the index that brought it
    children_of: dict[str, Children] = field(default_factory=dict)  # index digest -> every child it lists here
    unknown: tuple[str, ...] = ()  # indexes whose manifest cannot be read now (archived and not cached)


@dataclass(frozen=True)
class _RepositoryRestore:
    lines: list[RestoreLine]
    found: _Found


def restore(
    selections: Mapping[str, Selection],
    *,
    registry: Registry,
    dry_run: bool = False,
    waiting: Waiting | None = None,
    manifests: ManifestCache | None = None,
) -> RestoreReport:
    """Restore each selected image that is ARCHIVED, and the archived children of each selected index (nested
    indexes too); report the others as they are. With `waiting`, poll until the restores have finished (ACTIVE) or
    the timeout has passed; an index whose children were unknown while it was archived is read once ACTIVE, and
    its children restored and waited for in the time left. `manifests`: index manifests known already (the
    pipeline's cache)."""
    cache = manifests if manifests is not None else MemoryManifestCache()
    restoring = _Restoring()
    for repository, selection in selections.items():
        restoring.add(repository, _restore_repository(repository, selection, registry, cache, dry_run=dry_run))
    if waiting is not None and not dry_run:
        _wait_for_every_round(restoring, registry, cache, waiting)
    return _report(restoring, dry_run=dry_run, waited=waiting is not None)


def restore_run(
    removals: RunRemovals,
    *,
    registry_in: Callable[[str | None], Registry],
    dry_run: bool = False,
    waiting: Waiting | None = None,
    manifests: ManifestCache | None = None,
) -> RestoreReport:
    """Restore what a run archived, each Region's images through the registry of that Region (`registry_in`; None: a
    report that names no Region), one Region after the other within the one --wait timeout. When the run archived in
    several Regions, each line, note and unfinished index names its Region."""
    deadline = waiting.clock() + waiting.timeout if waiting is not None else 0.0
    whole = RestoreReport(dry_run=dry_run)
    for region, removed in removals.regions.items():
        if not removed.selections:
            continue
        left = None if waiting is None else replace(waiting, timeout=max(deadline - waiting.clock(), 0.0))
        done = restore(
            removed.selections, registry=registry_in(region), dry_run=dry_run, waiting=left, manifests=manifests
        )
        _add_region(whole, done, region if removals.several else None)
    return whole


def _add_region(whole: RestoreReport, done: RestoreReport, region: str | None) -> None:
    """One Region's restore added to the whole, named by its Region (None: not named, a run of one Region)."""
    named = (lambda text: f"{region}: {text}") if region is not None else (lambda text: text)
    whole.lines.extend(replace(line, region=region) for line in done.lines)
    whole.notes.extend(map(named, done.notes))
    whole.unfinished.extend(map(named, done.unfinished))


def _report(restoring: _Restoring, *, dry_run: bool, waited: bool) -> RestoreReport:
    unknown = [_unknown_children_note(repo, index, dry_run) for repo, index in sorted(restoring.unknown_indexes)]
    # Without --wait, nothing is known to be pullable yet: an index whose children are not all ACTIVE is unfinished.
    unfinished = not waited and not dry_run
    return RestoreReport(
        dry_run=dry_run,
        lines=[_explained(line, restoring) for line in restoring.lines],
        notes=[] if unfinished else unknown,
        unfinished=[*_children_not_active(restoring), *unknown] if unfinished else [],
    )


def _children_not_active(restoring: _Restoring) -> list[str]:
    """Each index whose listed children are not all ACTIVE now, naming those children (short digest, platform and
    what they are doing)."""
    status = {(line.repository, line.image_digest): line.status for line in restoring.lines}
    said = []
    for (repository, index), children in sorted(restoring.children_of.items()):
        waiting = [
            f"{short_digest(child)} {platform} ({status[(repository, child)]})"
            for child, platform in children
            if status.get((repository, child), "already-active") not in ("already-active", "restored")
        ]
        if waiting:
            said.append(
                f"{repository}: index {short_digest(index)} cannot be pulled until its children are ACTIVE, and "
                f"{len(waiting)} of {len(children)} are not yet: {', '.join(waiting)}; restore again once they are "
                "(it exits 0 then), or use --wait"
            )
    return said


def _wait_for_every_round(restoring: _Restoring, registry: Registry, cache: ManifestCache, waiting: Waiting) -> None:
    """Wait; then restore the children of the indexes that have become readable (ACTIVE), and wait for them, as
    many rounds as indexes are nested, all within the one timeout."""
    deadline = waiting.clock() + waiting.timeout
    while True:
        restoring.lines = _wait(restoring.lines, registry, waiting, deadline)
        readable = {key for key in restoring.unknown_indexes if _status(restoring.lines, key) == "restored"}
        if not readable or waiting.clock() >= deadline:
            return
        _restore_readable(restoring, readable, registry, cache)


def _restore_readable(
    restoring: _Restoring, readable: set[tuple[str, str]], registry: Registry, cache: ManifestCache
) -> None:
    """The indexes that have become readable (ACTIVE) are restored again: now their children are known."""
    restoring.unknown_indexes -= readable
    for repository in sorted({repo for repo, _ in readable}):
        indexes = tuple(sorted(digest for repo, digest in readable if repo == repository))
        again = _restore_repository(repository, Selection(digests=indexes), registry, cache, dry_run=False)
        restoring.add(repository, again)


def _status(lines: Sequence[RestoreLine], key: tuple[str, str]) -> RestoreStatus | None:
    return next((line.status for line in lines if (line.repository, line.image_digest) == key), None)


def _explained(line: RestoreLine, restoring: _Restoring) -> RestoreLine:
    """The line of a child names the index that brought it."""
    index = restoring.index_of.get((line.repository, line.image_digest))
    if index is None:
        return line
    detail = f"{line.detail} (child of index {short_digest(index)})"
    return RestoreLine(line.repository, line.image_digest, line.image_tags, line.status, detail, line.size)


def _unknown_children_note(repository: str, index: str, dry_run: bool) -> str:
    then = "a restore restores them" if dry_run else "restore again (or use --wait) to restore them"
    return (
        f"{repository}: index {short_digest(index)} is not ACTIVE and its manifest is not cached, so its archived children "
        f"are not known yet (ECR serves no manifest of an archived image): once it is ACTIVE, {then}"
    )


def _restore_repository(
    repository: str, selection: Selection, registry: Registry, cache: ManifestCache, *, dry_run: bool
) -> _RepositoryRestore:
    try:
        chosen, lines = _resolve(repository, selection, registry)
        found = _with_children(repository, chosen, registry, cache)
    except RepositoryGone as error:
        gone = RestoreLine(repository, "", (), "failed", f"repository gone: {error}")
        return _RepositoryRestore([gone], _Found(images=[]))
    lines.extend(_restore_found(repository, found.images, registry, dry_run=dry_run))
    return _RepositoryRestore(lines, found)


def _restore_found(
    repository: str, found: Sequence[ImageDetail], registry: Registry, *, dry_run: bool
) -> list[RestoreLine]:
    lines = [_line_of_unarchived(repository, detail) for detail in found if detail.image_status != "ARCHIVED"]
    archived = [detail for detail in found if detail.image_status == "ARCHIVED"]
    if dry_run:
        return [
            *lines,
            *(_line(repository, d, "would-restore", "archived: would restore to STANDARD") for d in archived),
        ]
    return [*lines, *_restore_archived(repository, archived, registry)] if archived else lines


def _restore_archived(repository: str, archived: Sequence[ImageDetail], registry: Registry) -> list[RestoreLine]:
    """One restore of the archived images (services/act.py), read from its ledger: an image already ACTIVE or
    ACTIVATING is re-read to say which."""
    ledger = act.restore(registry, repository, [detail.image_digest for detail in archived])
    answers = {detail.image_digest: ledger.answer(detail.image_digest) for detail in archived}
    now = _reread(repository, [digest for digest, answer in answers.items() if answer.kind == "already"], registry)
    return [_line_of_answer(repository, d, answers[d.image_digest], now.get(d.image_digest)) for d in archived]


def _line_of_unarchived(repository: str, detail: ImageDetail) -> RestoreLine:
    if detail.image_status == "ACTIVATING":
        return _line(repository, detail, "being-restored", "ACTIVATING: a restore is under way")
    return _line(repository, detail, "already-active", "not archived: nothing to restore")


def _with_children(repository: str, chosen: Sequence[ImageDetail], registry: Registry, cache: ManifestCache) -> _Found:
    """The chosen images and every image their indexes list, nested indexes too, each once; which index brought
    each child, what each index lists, and the indexes whose manifest cannot be read now (archived and not cached)."""
    found = {detail.image_digest: detail for detail in chosen}
    frontier = _indexes(chosen)
    if not frontier:
        return _Found(images=list(found.values()))
    everything = {detail.image_digest: detail for detail in registry.describe_images(repository)}
    result = _Found(images=[])
    unknown: list[str] = []
    while frontier:
        manifests = _index_manifests(registry, repository, frontier, cache)
        unknown.extend(index.image_digest for index in frontier if index.image_digest not in manifests)
        result.children_of.update({index.image_digest: _listed(index, manifests, everything) for index in frontier})
        listed = _new_children(frontier, manifests, everything, found, result.index_of)
        frontier = _indexes(listed)
    return _Found(list(found.values()), result.index_of, result.children_of, tuple(unknown))


def _listed(
    index: ImageDetail, manifests: Mapping[str, dict[str, Any]], everything: Mapping[str, ImageDetail]
) -> Children:
    """The children the index lists that the repository holds, each with its platform."""
    listed = manifests.get(index.image_digest, {"manifests": []})["manifests"]
    return tuple((entry["digest"], platform_of(entry)) for entry in listed if entry["digest"] in everything)


def platform_of(entry: Mapping[str, Any]) -> str:
    """How an index lists a child: `linux/arm64/v8`, `attestation` (buildx's provenance), `index` (nested)."""
    annotations = entry.get("annotations") or {}
    if annotations.get("vnd.docker.reference.type") == "attestation-manifest":
        return "attestation"
    if entry.get("mediaType") in INDEX_MEDIA_TYPES:
        return "index"
    platform = entry.get("platform") or {}
    parts = [str(platform[key]) for key in ("os", "architecture", "variant") if platform.get(key)]
    return "/".join(parts) if parts else "platform unknown"


def _indexes(images: Sequence[ImageDetail]) -> list[ImageDetail]:
    return [detail for detail in images if detail.image_manifest_media_type in INDEX_MEDIA_TYPES]


def _new_children(
    indexes: Sequence[ImageDetail],
    manifests: Mapping[str, dict[str, Any]],
    everything: Mapping[str, ImageDetail],
    found: dict[str, ImageDetail],
    index_of: dict[str, str],
) -> list[ImageDetail]:
    """The images these indexes list that were not found before, now added to `found`, each with its index."""
    listed: list[ImageDetail] = []
    for index in indexes:
        children = (entry["digest"] for entry in manifests.get(index.image_digest, {"manifests": []})["manifests"])
        for child in children:
            detail = everything.get(child)
            if detail is not None and child not in found:
                found[child] = detail
                index_of[child] = index.image_digest
                listed.append(detail)
    return listed


def _index_manifests(
    registry: Registry, repository: str, indexes: Sequence[ImageDetail], cache: ManifestCache
) -> dict[str, dict[str, Any]]:
    """The manifests of these indexes that can be read: from the cache, and from ECR for an ACTIVE index only (ECR
    serves no manifest of an archived or activating image: it cannot be pulled)."""
    active = [index.image_digest for index in indexes if index.image_status == "ACTIVE"]
    manifests = dict(index_manifests(registry, repository, active, cache))
    for index in indexes:
        text = cache.get(index.image_digest) if index.image_digest not in manifests else None
        parsed = read_index_manifest(index.image_digest, text) if text is not None else None
        if parsed is not None:
            manifests[index.image_digest] = parsed
    return manifests


def _resolve(repository: str, selection: Selection, registry: Registry) -> tuple[list[ImageDetail], list[RestoreLine]]:
    """The images selected, once each, and a failure line for each digest or tag that names none."""
    by_digest = registry.describe_image_ids(repository, selection.digests) if selection.digests else {}
    failures = [
        RestoreLine(repository, digest, (), "failed", "no such image in the repository")
        for digest in dict.fromkeys(selection.digests)
        if digest not in by_digest
    ]
    chosen: dict[str, ImageDetail] = {d: by_digest[d] for d in selection.digests if d in by_digest}
    if selection.tags:
        failures.extend(_resolve_tags(repository, selection.tags, registry, chosen))
    return list(chosen.values()), failures


def _resolve_tags(
    repository: str, tags: Sequence[str], registry: Registry, chosen: dict[str, ImageDetail]
) -> list[RestoreLine]:
    """Adds the image each tag names to `chosen`; a failure line for each tag that names none."""
    tagged = {tag: detail for detail in registry.describe_images(repository) for tag in detail.image_tags}
    failures = []
    for tag in dict.fromkeys(tags):
        if tag in tagged:
            chosen.setdefault(tagged[tag].image_digest, tagged[tag])
        else:
            failures.append(RestoreLine(repository, "", (tag,), "failed", f"tag {tag} names no image"))
    return failures


def _line_of_answer(repository: str, detail: ImageDetail, answer: Answer, status_now: str | None) -> RestoreLine:
    if answer.kind == "done":
        return _line(repository, detail, "restoring", "restore started (ACTIVATING; ECR says within 20 minutes)")
    if answer.kind == "already" and status_now == "ACTIVE":
        return _line(repository, detail, "already-active", "ACTIVE: restored meanwhile")
    if answer.kind == "already":
        return _line(repository, detail, "being-restored", "ACTIVATING: a restore is under way")
    if answer.kind in ("gone", "unconfirmed"):
        return _line(repository, detail, "failed", "gone: deleted since it was read")
    code, message = answer.failure or NO_ANSWER
    return _line(repository, detail, "failed", f"{code}: {message}")


def _reread(repository: str, digests: Sequence[str], registry: Registry) -> dict[str, str]:
    if not digests:
        return {}
    try:
        return {d: detail.image_status for d, detail in registry.describe_image_ids(repository, digests).items()}
    except RepositoryGone:
        return {}


def _wait(lines: list[RestoreLine], registry: Registry, waiting: Waiting, deadline: float) -> list[RestoreLine]:
    """Poll the images being restored (DescribeImages) until each is ACTIVE or the deadline (of the whole restore)
    has passed. Progress when the count changes, and at least once a minute."""
    pending = {(line.repository, line.image_digest) for line in lines if line.status in ("restoring", "being-restored")}
    finished: dict[tuple[str, str], RestoreLine] = {}
    progress = _Progress(waiting.progress, total=len(pending), started=waiting.clock())
    while pending:
        finished.update(_poll(pending, registry))
        pending -= set(finished)
        if not pending or waiting.clock() >= deadline:
            break
        now = waiting.clock()
        progress.tell(len(finished), now)
        waiting.sleep(min(waiting.interval, max(deadline - now, 0.0)))
    return [_after_wait(line, finished, pending, waiting.timeout) for line in lines]


@dataclass
class _Progress:
    """--wait's progress lines: one when the count of restored images changes, and at least one a minute."""

    say: Callable[[str], None]
    total: int
    started: float
    said: tuple[int, float] | None = None  # (restored, when) of the last line

    def tell(self, restored: int, now: float) -> None:
        if self.said is None or self.said[0] != restored or now - self.said[1] >= PROGRESS_SECONDS:
            self.say(f"waiting: {restored} of {self.total} restored, {now - self.started:.0f}s elapsed")
            self.said = (restored, now)


def _poll(pending: set[tuple[str, str]], registry: Registry) -> dict[tuple[str, str], RestoreLine]:
    """The pending images that are no longer ACTIVATING, as they are now."""
    finished: dict[tuple[str, str], RestoreLine] = {}
    for repository in sorted({repo for repo, _ in pending}):
        digests = sorted(digest for repo, digest in pending if repo == repository)
        try:
            now = registry.describe_image_ids(repository, digests)
        except RepositoryGone:
            now = {}
        for digest in digests:
            line = _finished(repository, digest, now.get(digest))
            if line is not None:
                finished[(repository, digest)] = line
    return finished


def _finished(repository: str, digest: str, detail: ImageDetail | None) -> RestoreLine | None:
    """An image polled, as it is now: None while it is ACTIVATING."""
    if detail is None:
        return RestoreLine(repository, digest, (), "failed", "gone while restoring")
    if detail.image_status == "ACTIVATING":
        return None
    status: RestoreStatus = "restored" if detail.image_status == "ACTIVE" else "failed"
    return _line(repository, detail, status, f"{detail.image_status} now")


def _after_wait(
    line: RestoreLine,
    finished: Mapping[tuple[str, str], RestoreLine],
    pending: set[tuple[str, str]],
    timeout: float,
) -> RestoreLine:
    key = (line.repository, line.image_digest)
    if key in finished:
        done = finished[key]
        return RestoreLine(line.repository, line.image_digest, line.image_tags, done.status, done.detail, line.size)
    if key in pending:
        detail = f"still ACTIVATING after {format_duration(timedelta(seconds=timeout))} (the restore goes on)"
        return RestoreLine(line.repository, line.image_digest, line.image_tags, "timed-out", detail, line.size)
    return line


def _line(repository: str, detail: ImageDetail, status: RestoreStatus, text: str) -> RestoreLine:
    return RestoreLine(
        repository,
        detail.image_digest,
        detail.image_tags,
        status,
        text,
        detail.image_size_in_bytes,
    )
