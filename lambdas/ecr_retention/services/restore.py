"""Bring archived images back to STANDARD: those a run archived (from its report in the bucket), or those an
operator names by digest or tag. Restoring deletes nothing, and a second restore of the same images does nothing
(they are already ACTIVE, or ACTIVATING).

ECR restores one image per UpdateImageStorageClass call; the image is ACTIVATING until the restore finishes
("within 20 minutes"), then ACTIVE, and each GB restored costs the restore fee (domain/cost.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from pydantic import ValidationError

from ecr_retention.domain.cost import RESTORE_PRICE_PER_GB
from ecr_retention.domain.durations import format_duration
from ecr_retention.domain.errors import InputError, describe_validation_error, parse_json
from ecr_retention.domain.registry import ImageDetail
from ecr_retention.domain.report import RunReport, report_key
from ecr_retention.ports import BatchOutcome, Bucket, Registry, RepositoryGone

RUN_ID = re.compile(r"^(\d{8}T\d{6}Z)-[a-z-]+-[0-9a-f]{8}$")
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


@dataclass
class RestoreReport:
    dry_run: bool
    lines: list[RestoreLine] = field(default_factory=list)

    def count(self, status: RestoreStatus) -> int:
        return sum(1 for line in self.lines if line.status == status)

    @property
    def has_problems(self) -> bool:
        return any(line.status in PROBLEMS for line in self.lines)

    def restored_bytes(self) -> int:
        started = ("would-restore", "restoring", "restored", "timed-out")
        return sum(line.size or 0 for line in self.lines if line.status in started)

    def fee(self) -> float:
        return self.restored_bytes() / GB * RESTORE_PRICE_PER_GB


# --- what to restore -------------------------------------------------------------------------------------------


def run_started_at(run_id: str) -> datetime:
    """The start of a run, from its id (`YYYYMMDDTHHMMSSZ-<trigger>-<8 hex>`, services.run.new_run_id)."""
    match = RUN_ID.match(run_id)
    if match is None:
        raise InputError(f"--run: {run_id!r} is not a run id (such as 20261201T030000Z-schedule-1a2b3c4d)")
    try:
        return datetime.strptime(match[1] + "+0000", "%Y%m%dT%H%M%SZ%z")
    except ValueError:
        raise InputError(f"--run: {run_id!r} does not start with a valid date and time") from None


@dataclass(frozen=True)
class RunRemovals:
    """What a run removed, from its report: the images it archived, by repository (they can be restored), and how
    many it deleted (gone for good: a deletion cannot be undone)."""

    selections: dict[str, Selection]
    archived: int
    deleted: int


def removals_of_run(bucket: Bucket, run_id: str) -> RunRemovals:
    """The run's report (reports/YYYY/MM/DD/<runId>.json) read for what it archived and deleted."""
    report = _run_report(bucket, run_id)
    return RunRemovals(
        selections={
            repo.repository_name: Selection(digests=tuple(entry.image_digest for entry in repo.archived))
            for repo in report.repositories
            if repo.archived
        },
        archived=sum(len(repo.archived) for repo in report.repositories),
        deleted=sum(len(repo.deleted) for repo in report.repositories),
    )


def selections_of_run(bucket: Bucket, run_id: str) -> dict[str, Selection]:
    """Every image the run archived, by repository, from its report (reports/YYYY/MM/DD/<runId>.json)."""
    return removals_of_run(bucket, run_id).selections


def _run_report(bucket: Bucket, run_id: str) -> RunReport:
    key = report_key(run_id, run_started_at(run_id))
    where = f"s3://{bucket.name}/{key}"
    body = bucket.read(key, max_bytes=MAX_RUN_REPORT_BYTES)
    if body is None:
        raise InputError(f"unknown run {run_id}: no report at {where}")
    data = parse_json(body.decode("utf-8", errors="replace"), where)
    try:
        report = RunReport.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{where}: unreadable run report: {describe_validation_error(error, RunReport)}") from None
    if report.run_id != run_id:
        raise InputError(f"{where}: the report is of run {report.run_id}, not {run_id}")
    if report.dry_run:
        raise InputError(f"run {run_id} was a dry run: it archived nothing")
    return report


# --- restoring ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    """--wait: poll until every restore has finished, or the timeout (seconds) has passed."""

    timeout: float
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    progress: Callable[[str], None]
    interval: float = POLL_SECONDS


def restore(
    selections: Mapping[str, Selection],
    *,
    registry: Registry,
    dry_run: bool = False,
    waiting: Waiting | None = None,
) -> RestoreReport:
    """Restore each selected image that is ARCHIVED; report the others as they are. With `waiting`, poll until
    the restores have finished (ACTIVE) or the timeout has passed."""
    report = RestoreReport(dry_run=dry_run)
    for repository, selection in selections.items():
        report.lines.extend(_restore_repository(repository, selection, registry, dry_run=dry_run))
    if waiting is not None and not dry_run:
        report.lines = _wait(report.lines, registry, waiting)
    return report


def _restore_repository(
    repository: str, selection: Selection, registry: Registry, *, dry_run: bool
) -> list[RestoreLine]:
    try:
        found, lines = _resolve(repository, selection, registry)
    except RepositoryGone as error:
        return [RestoreLine(repository, "", (), "failed", f"repository gone: {error}")]
    archived = [detail for detail in found if detail.image_status == "ARCHIVED"]
    for detail in found:
        if detail.image_status == "ACTIVE":
            lines.append(_line(repository, detail, "already-active", "not archived: nothing to restore"))
        elif detail.image_status == "ACTIVATING":
            lines.append(_line(repository, detail, "being-restored", "ACTIVATING: a restore is under way"))
    if dry_run:
        lines.extend(
            _line(repository, detail, "would-restore", "archived: would restore to STANDARD") for detail in archived
        )
        return lines
    if archived:
        try:
            outcome = registry.restore_images(repository, [detail.image_digest for detail in archived])
        except RepositoryGone as error:
            return [*lines, *(_line(repository, d, "failed", f"repository gone: {error}") for d in archived)]
        lines.extend(_lines_of_outcome(repository, archived, outcome, registry))
    return lines


def _resolve(repository: str, selection: Selection, registry: Registry) -> tuple[list[ImageDetail], list[RestoreLine]]:
    """The images selected, once each, and a failure line for each digest or tag that names none."""
    failures: list[RestoreLine] = []
    by_digest = registry.describe_image_ids(repository, selection.digests) if selection.digests else {}
    for digest in dict.fromkeys(selection.digests):
        if digest not in by_digest:
            failures.append(RestoreLine(repository, digest, (), "failed", "no such image in the repository"))
    chosen: dict[str, ImageDetail] = {d: by_digest[d] for d in selection.digests if d in by_digest}
    if selection.tags:
        tagged = {tag: detail for detail in registry.describe_images(repository) for tag in detail.image_tags}
        for tag in dict.fromkeys(selection.tags):
            if tag in tagged:
                chosen.setdefault(tagged[tag].image_digest, tagged[tag])
            else:
                failures.append(RestoreLine(repository, "", (tag,), "failed", f"tag {tag} names no image"))
    return list(chosen.values()), failures


def _lines_of_outcome(
    repository: str, archived: Sequence[ImageDetail], outcome: BatchOutcome, registry: Registry
) -> list[RestoreLine]:
    details = {detail.image_digest: detail for detail in archived}
    failures = {failure.image_digest: failure for failure in outcome.failed}
    now = _reread(repository, outcome.already, registry)
    lines: list[RestoreLine] = []
    for digest, detail in details.items():
        if digest in outcome.done:
            lines.append(
                _line(repository, detail, "restoring", "restore started (ACTIVATING; ECR says within 20 minutes)")
            )
        elif digest in outcome.already:
            status = now.get(digest)
            if status == "ACTIVE":
                lines.append(_line(repository, detail, "already-active", "ACTIVE: restored meanwhile"))
            else:
                lines.append(_line(repository, detail, "being-restored", "ACTIVATING: a restore is under way"))
        elif digest in failures:
            failure = failures[digest]
            lines.append(_line(repository, detail, "failed", f"{failure.code}: {failure.message}"))
        else:  # already_gone, unconfirmed
            lines.append(_line(repository, detail, "failed", "gone: deleted since it was read"))
    return lines


def _reread(repository: str, digests: Sequence[str], registry: Registry) -> dict[str, str]:
    if not digests:
        return {}
    try:
        return {d: detail.image_status for d, detail in registry.describe_image_ids(repository, digests).items()}
    except RepositoryGone:
        return {}


def _wait(lines: list[RestoreLine], registry: Registry, waiting: Waiting) -> list[RestoreLine]:
    """Poll the images being restored (DescribeImages) until each is ACTIVE or the timeout has passed. Progress
    when the count changes, and at least once a minute."""
    pending = {(line.repository, line.image_digest) for line in lines if line.status in ("restoring", "being-restored")}
    total = len(pending)
    finished: dict[tuple[str, str], RestoreLine] = {}
    started = waiting.clock()
    deadline = started + waiting.timeout
    said: tuple[int, float] | None = None  # (restored, when) of the last progress line
    while pending:
        finished.update(_poll(pending, registry))
        pending -= set(finished)
        if not pending or waiting.clock() >= deadline:
            break
        now = waiting.clock()
        if said is None or said[0] != len(finished) or now - said[1] >= PROGRESS_SECONDS:
            waiting.progress(f"waiting: {len(finished)} of {total} restored, {now - started:.0f}s elapsed")
            said = (len(finished), now)
        waiting.sleep(min(waiting.interval, max(deadline - now, 0.0)))
    return [_after_wait(line, finished, pending, waiting.timeout) for line in lines]


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
            detail = now.get(digest)
            if detail is None:
                finished[(repository, digest)] = RestoreLine(repository, digest, (), "failed", "gone while restoring")
            elif detail.image_status != "ACTIVATING":
                status: RestoreStatus = "restored" if detail.image_status == "ACTIVE" else "failed"
                finished[(repository, digest)] = _line(repository, detail, status, f"{detail.image_status} now")
    return finished


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
