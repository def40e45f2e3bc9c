"""The run summary people read: an SNS subject under 100 characters and a plain-text body for e-mail."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.planning.plan_parts import ReplicaRegistry
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.reporting.escaping import printable
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport, action_verb, replicating, run_entries
from ecr_retention.domain.reporting.run_report import InUseArchived, RunReport, RunTotals, run_in_use_archived
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.domain.timestamps import format_timestamp

SUBJECT_LIMIT = 99
LARGEST_SHOWN = 10
REPOSITORY_LINES = 50
CONSOLE_OBJECT_URL = "https://console.aws.amazon.com/s3/object/"


@dataclass(frozen=True)
class StoredFile:
    """One of the files the report step writes beside the JSON report: its key, or why it could not be written."""

    key: str
    problem: str | None = None


@dataclass(frozen=True)
class ReportFiles:
    """The page (`.html`) and the sheet (`.csv`) of a run, in the bucket of its JSON report."""

    bucket: str
    page: StoredFile
    sheet: StoredFile


def console_url(bucket: str, key: str, region: str | None) -> str:
    """The S3 console's page of one object (its Open button shows the object, signed for the reader). The key is
    URL-quoted with its slashes kept, as the console writes its own links, so that the link reads as the key."""
    where = f"region={quote(region, safe='')}&" if region else ""
    return f"{CONSOLE_OBJECT_URL}{quote(bucket, safe='')}?{where}prefix={quote(key, safe='/')}"


def nothing_deleted(totals: RunTotals) -> str:
    """A blocked run's headline, in the SNS subject's words (the page's header says the same)."""
    return f"nothing deleted in {totals.repositories} repositories"


def deletions_phrase(totals: RunTotals, dry_run: bool) -> str:
    """`deleted 153 images (23.5 GiB)`: the subject's and the page header's words for the run's deletions."""
    return f"{action_verb('delete', dry_run=dry_run)} {totals.deleted} images ({human_bytes(totals.bytes_reclaimed)})"


def subject_line(report: RunReport) -> str:
    mode = "dry run" if report.dry_run else "run"
    totals = report.totals
    if report.outcome == "blocked":
        text = f"ecr-retention {mode} BLOCKED: {nothing_deleted(totals)}"
    else:
        text = f"ecr-retention {mode} {report.outcome}: {deletions_phrase(totals, report.dry_run)} in {totals.repositories} repositories"
        if totals.failed:
            text += f", {totals.failed} failed"
    return text if len(text) <= SUBJECT_LIMIT else text[: SUBJECT_LIMIT - 1] + "…"


STOPPED = ("busy", "gone", "failed", "unmanaged")  # outcomes of a repository that was not evaluated to the end


def repository_line(repo: RepositoryReport, dry_run: bool, name: str | None = None) -> str:
    head = f"{name or repo.repository_name}: {repo.outcome}"
    if repo.outcome in STOPPED:
        return head + (f" ({repo.error})" if repo.error else "")
    return ", ".join([head, *repository_counts(repo, dry_run)])


def repository_counts(repo: RepositoryReport, dry_run: bool) -> list[str]:
    """What the repository's line counts: its images and deletions always, the other lists when they hold any."""
    counts = [f"{repo.images} images, kept {repo.kept}, {action_verb('delete', dry_run=dry_run)} {len(repo.deleted)}"]
    optional = (
        (repo.archived, f"{action_verb('archive', dry_run=dry_run)} {len(repo.archived)}"),
        (repo.cancelled, f"cancelled {len(repo.cancelled)}"),
        (repo.failed, f"FAILED {len(repo.failed)}"),
        (repo.restored, f"{action_verb('restore', dry_run=dry_run)} {len(repo.restored)} in use"),
    )
    counts += [text for entries, text in optional if entries]
    if repo.bytes_reclaimed:
        counts.append(human_bytes(repo.bytes_reclaimed))
    return counts


def entry_line(repository: str, entry: ImageEntry, now: datetime) -> str:
    size = human_bytes(entry.image_size_in_bytes or 0)
    age = humanize_age(now - entry.image_pushed_at)
    rule = entry.rule or entry.kind
    return f"  {size:>10}  {repository}  {tags_text(entry, shown_more=True)}  {age} old  [{rule}]"


def tags_text(entry: ImageEntry, *, shown_more: bool) -> str:
    """The first three tags, or `<untagged>`; shown_more adds how many more there are (`(+2)`)."""
    tags = ", ".join(entry.image_tags[:3]) or "<untagged>"
    if shown_more and len(entry.image_tags) > 3:
        tags += f" (+{len(entry.image_tags) - 3})"
    return tags


def render_summary(report: RunReport, files: ReportFiles | None = None) -> tuple[str, str]:
    """(subject, body). The body names the run, the mode, each repository, why anything was blocked or
    skipped, the largest removals, and where the full JSON report, its page and its sheet are.

    Each line is escaped (`printable`) before the lines are joined: values from outside (a manifest's workload or
    namespace, an image string, a registry's error text) may hold line breaks or bidirectional controls that would
    forge lines in the e-mail (`Deployment/x\\nOutcome: ok`); the summary's own line breaks are the joins."""
    return subject_line(report), "\n".join(printable(line) for line in summary_lines(report, files)) + "\n"


def summary_lines(report: RunReport, files: ReportFiles | None = None) -> list[str]:
    """The body, line by line: a value from outside (a warning, an error's detail) stays inside its line, so
    a terminal can escape each line's characters without joining or splitting lines."""
    shown = [repo for repo in report.repositories if repo.outcome != "unmanaged"]
    lines = [*heading_lines(report), *blocked_lines(report), *totals_lines(report), *repository_lines(shown, report)]
    lines += replication_lines(shown, report)
    lines += failure_lines(report)
    lines += in_use_missing_lines(report)
    lines += in_use_archived_lines(report)
    lines += quarantine_lines(report)
    lines += largest_lines(report)
    lines += finding_lines(report)
    lines += holds_ending_lines(report)
    lines += warning_lines(report)
    lines += ["", f"Full report: {report.report_url or '(not written)'}"]
    if files is not None:
        lines += file_lines(files, report.region)
    return lines


def heading_lines(report: RunReport) -> list[str]:
    return [
        f"Run {report.run_id} ({report.trigger}), {report.started_at:%Y-%m-%d %H:%M} UTC",
        "DRY RUN: nothing was deleted; the lists show what a real run would delete."
        if report.dry_run
        else "Deletion run: the lists show what was deleted.",
        f"Outcome: {report.outcome}",
    ]


def blocked_lines(report: RunReport) -> list[str]:
    if not report.blocked:
        return []
    return ["", f"{blocked_heading(report)}:"] + [f"  - {reason}" for reason in report.blocked]


def blocked_heading(report: RunReport) -> str:
    """What a block means for the run, as the summary and the page say it: nothing deleted anywhere only when the
    run removed nothing (issue 44: a block of one Region beside removals in another)."""
    if report.outcome == "blocked":
        return "BLOCKED, nothing was deleted anywhere"
    return "BLOCKED in part, nothing was deleted where these apply (the totals count what was elsewhere)"


def totals_text(totals: RunTotals, dry_run: bool) -> str:
    return (
        f"{totals.repositories} repositories, {totals.images} images, kept {totals.kept} "
        f"({totals.protected_in_use} in use), {action_verb('delete', dry_run=dry_run)} {totals.deleted}, "
        f"archived {totals.archived}, cancelled {totals.cancelled}, failed {totals.failed}, "
        f"reclaims {human_bytes(totals.bytes_reclaimed)}"
    )


def totals_lines(report: RunReport) -> list[str]:
    """The overall totals; when the run spans several Regions, a line of each Region's under them."""
    lines = ["", f"Totals: {totals_text(report.totals, report.dry_run)}"]
    lines += [
        f"  {region.region or 'unknown Region'}: {totals_text(region.totals, report.dry_run)}"
        for region in report.regions
    ]
    return lines


def repository_name(report: RunReport, repo: RepositoryReport) -> str:
    """A repository as the summary names it: by name, and by Region too (`us-east-1:team/app`) when the run's
    repositories are not all the home Region's (RunReport.names_regions)."""
    return repository_namer(report)(repo)


def repository_namer(report: RunReport) -> Callable[[RepositoryReport], str]:
    """repository_name for every repository of one report, RunReport.names_regions (a look at every repository)
    decided once: for the page, which names each repository of a run of any size."""
    if report.names_regions:
        return lambda repo: f"{report.region_of(repo)}:{repo.repository_name}"
    return lambda repo: repo.repository_name


def repository_lines(shown: Sequence[RepositoryReport], report: RunReport) -> list[str]:
    """A line per managed repository (at most REPOSITORY_LINES), each skipped one with why."""
    lines = ["", "Repositories:"]
    for repo in shown[:REPOSITORY_LINES]:
        lines.append(f"  {repository_line(repo, report.dry_run, repository_name(report, repo))}")
        if repo.skipped:
            lines.append(f"    skipped: {repo.skipped}")
    if len(shown) > REPOSITORY_LINES:
        lines.append(f"  ... and {len(shown) - REPOSITORY_LINES} more repositories (see the report)")
    return lines


FAILURES_SHOWN = 20


def failure_lines(report: RunReport) -> list[str]:
    failed = list(run_entries(report, "failed"))
    if not failed:
        return []
    return ["", "Failures:"] + [
        f"  {repository_name(report, repo)}  {short_digest(entry.image_digest, with_algorithm=True)}  "
        f"{entry.error_code}: {entry.detail}"
        for repo, entry in failed[:FAILURES_SHOWN]
    ]


MISSING_SHOWN = 20


def in_use_missing_lines(report: RunReport) -> list[str]:
    """The in-use references the next pull cannot get (finding in-use-missing), each with its workloads and, when the
    sentinel recorded it, when and by what the image went."""
    missing = report.in_use_missing
    if not missing:
        return []
    lines = ["", f"In-use images MISSING from the registry ({len(missing)}): the next pull fails"]
    lines += [f"  {found.detail}" for found in missing[:MISSING_SHOWN]]
    if len(missing) > MISSING_SHOWN:
        lines.append(f"  ... and {len(missing) - MISSING_SHOWN} more (see the report's inUseMissing)")
    return lines


def largest_lines(report: RunReport) -> list[str]:
    """The largest deletions (at most LARGEST_SHOWN), ties by repository and digest."""
    largest = heapq.nsmallest(  # sorted(...)[:LARGEST_SHOWN], without sorting every deletion of a large run
        LARGEST_SHOWN,
        run_entries(report, "delete"),
        key=lambda item: (-(item[1].image_size_in_bytes or 0), item[0].repository_name, item[1].image_digest),
    )
    if not largest:
        return []
    return ["", f"Largest {'would-be deletions' if report.dry_run else 'deletions'}:"] + [
        entry_line(repository_name(report, repo), entry, report.started_at) for repo, entry in largest
    ]


def finding_lines(report: RunReport) -> list[str]:
    """How many of the native lifecycle policies' findings would break running images; the creation templates'."""
    lines = []
    findings = sum(1 for repo in report.repositories for f in repo.lifecycle_findings if f.severity == "error")
    if findings:
        lines += ["", f"Native lifecycle policies: {findings} findings that would break running images (see report)."]
    if report.template_findings:
        prefixes = ", ".join(dict.fromkeys(finding.template for finding in report.template_findings))
        lines += [
            "",
            f"Repository creation templates: {len(report.template_findings)} lifecycle findings in the templates for "
            f"{prefixes} (see the report's templateFindings).",
        ]
    return lines


WARNINGS_SHOWN = 10


def holds_ending_lines(report: RunReport) -> list[str]:
    """The holds that end within 7 days, so that their owners can extend them in time."""
    if not report.holds_ending:
        return []
    return ["", f"Holds ending within 7 days ({len(report.holds_ending)}):"] + [
        f"  - {held.image} in {held.region}, held by {held.owner} until {format_timestamp(held.until)}: {held.reason}"
        for held in report.holds_ending
    ]


def warning_lines(report: RunReport) -> list[str]:
    if not report.warnings:
        return []
    return ["", f"Warnings ({len(report.warnings)}):"] + [f"  - {w}" for w in report.warnings[:WARNINGS_SHOWN]]


ARCHIVED_IN_USE_SHOWN = 20


def quarantine_lines(report: RunReport) -> list[str]:
    """safety.quarantine at work: what entered it, what left it for good, how many wait archived."""
    totals = report.totals
    if not totals.quarantined:
        return []
    entered = action_verb("enter", dry_run=report.dry_run)
    left = action_verb("leave", dry_run=report.dry_run)
    return [
        "",
        f"Quarantine: {entered} {totals.entered_quarantine} (archived instead of deleted), {left} "
        f"{totals.left_quarantine} for good (deleted after their quarantine), {totals.in_quarantine} waiting archived",
    ]


def in_use_archived_lines(report: RunReport) -> list[str]:
    """The in-use images found archived, what became of each and the workloads that run them."""
    found = run_in_use_archived(report)
    if not found:
        return []
    lines = ["", f"In-use images found archived ({len(found)}): their workloads cannot pull them until restored"]
    lines += [
        in_use_archived_line(image, report.dry_run, repository_name(report, image.repository))
        for image in found[:ARCHIVED_IN_USE_SHOWN]
    ]
    if len(found) > ARCHIVED_IN_USE_SHOWN:
        lines.append(f"  ... and {len(found) - ARCHIVED_IN_USE_SHOWN} more (see the report)")
    return lines


def in_use_archived_line(image: InUseArchived, dry_run: bool, name: str | None = None) -> str:
    """`name`: the repository as the summary names it (repository_name), by default its name."""
    digest = short_digest(image.entry.image_digest, with_algorithm=True)
    tags = tags_text(image.entry, shown_more=False)
    fate = image.fate_text(dry_run=dry_run, form="line")
    return f"  {name or image.repository.repository_name}  {digest}  {tags}  {fate}; used by {image.workloads}"


def file_lines(files: ReportFiles, region: str | None) -> list[str]:
    """Where the page and the sheet are; a file that could not be written says so (the JSON report is complete)."""
    lines = []
    for label, stored in (("Report page", files.page), ("Sheet (CSV)", files.sheet)):
        if stored.problem is not None:
            problem = " ".join(stored.problem.splitlines())  # one line, whatever the error said
            lines.append(f"{label}: NOT WRITTEN ({problem}); the full report above has everything")
            continue
        lines.append(f"{label}: s3://{files.bucket}/{stored.key}")
        if stored is files.page:
            lines.append(f"  open it from the S3 console: {console_url(files.bucket, stored.key, region)}")
    return lines


def replication_lines(repositories: Sequence[RepositoryReport], report: RunReport) -> list[str]:
    """Where this run's deletions reach beyond this registry, per repository (named as repository_name does)."""
    replicated = replicating(repositories)
    if not replicated:
        return []
    lines = ["", "Deletions replicate (deleteReplication) to:"]
    for repo in replicated[:REPOSITORY_LINES]:
        replicas = "; ".join(replica_text(r) for r in repo.deletion_replicates_to)
        lines.append(f"  {repository_name(report, repo)}: {replicas}")
    if len(replicated) > REPOSITORY_LINES:
        lines.append(f"  ... and {len(replicated) - REPOSITORY_LINES} more repositories (see the report)")
    return lines


def replica_text(replica: ReplicaRegistry) -> str:
    watched = ", ".join(replica.expected_clusters)
    return f"{replica} (expected clusters there: {watched})" if watched else f"{replica} (NO EXPECTED CLUSTER THERE)"


def failure_summary(run_id: str, problem: str) -> tuple[str, str]:
    """What is published when the report itself could not be written or built."""
    subject = f"ecr-retention run {run_id[:40]} FAILED"
    # The problem is an error's text (from S3, from a registry): escaped like every line of the summary.
    body = f"Run {printable(run_id)} failed before its report was stored:\n  {printable(problem)}\n"
    return subject[:SUBJECT_LIMIT], body
