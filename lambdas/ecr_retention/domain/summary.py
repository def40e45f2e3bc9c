"""The run summary people read: an SNS subject under 100 characters and a plain-text body for e-mail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.escaping import printable
from ecr_retention.domain.plan import ReplicaRegistry
from ecr_retention.domain.report import ImageEntry, RepositoryReport, RunReport
from ecr_retention.domain.sizes import human_bytes

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


def subject_line(report: RunReport) -> str:
    mode = "dry run" if report.dry_run else "run"
    totals = report.totals
    verb = "would delete" if report.dry_run else "deleted"
    if report.outcome == "blocked":
        text = f"ecr-retention {mode} BLOCKED: nothing deleted in {totals.repositories} repositories"
    else:
        text = (
            f"ecr-retention {mode} {report.outcome}: {verb} {totals.deleted} images "
            f"({human_bytes(totals.bytes_reclaimed)}) in {totals.repositories} repositories"
        )
        if totals.failed:
            text += f", {totals.failed} failed"
    return text if len(text) <= SUBJECT_LIMIT else text[: SUBJECT_LIMIT - 1] + "…"


def repository_line(repo: RepositoryReport, dry_run: bool) -> str:
    verb = "would delete" if dry_run else "deleted"
    parts = [f"{repo.repository_name}: {repo.outcome}"]
    if repo.outcome in ("busy", "gone", "failed", "unmanaged"):
        return parts[0] + (f" ({repo.error})" if repo.error else "")
    parts.append(f"{repo.images} images, kept {repo.kept}, {verb} {len(repo.deleted)}")
    if repo.archived:
        parts.append(f"{'would archive' if dry_run else 'archived'} {len(repo.archived)}")
    if repo.cancelled:
        parts.append(f"cancelled {len(repo.cancelled)}")
    if repo.failed:
        parts.append(f"FAILED {len(repo.failed)}")
    if repo.restored:
        parts.append(f"{'would restore' if dry_run else 'restored'} {len(repo.restored)} in use")
    if repo.bytes_reclaimed:
        parts.append(human_bytes(repo.bytes_reclaimed))
    return ", ".join(parts)


def entry_line(repository: str, entry: ImageEntry, now: datetime) -> str:
    tags = ", ".join(entry.image_tags[:3]) or "<untagged>"
    if len(entry.image_tags) > 3:
        tags += f" (+{len(entry.image_tags) - 3})"
    size = human_bytes(entry.image_size_in_bytes or 0)
    age = humanize_age(now - entry.image_pushed_at)
    rule = entry.rule or entry.kind
    return f"  {size:>10}  {repository}  {tags}  {age} old  [{rule}]"


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
    lines = [
        f"Run {report.run_id} ({report.trigger}), {report.started_at:%Y-%m-%d %H:%M} UTC",
        "DRY RUN: nothing was deleted; the lists show what a real run would delete."
        if report.dry_run
        else "Deletion run: the lists show what was deleted.",
        f"Outcome: {report.outcome}",
    ]
    if report.blocked:
        lines += ["", "BLOCKED, nothing was deleted anywhere:"] + [f"  - {reason}" for reason in report.blocked]
    totals = report.totals
    lines += [
        "",
        f"Totals: {totals.repositories} repositories, {totals.images} images, kept {totals.kept} "
        f"({totals.protected_in_use} in use), {'would delete' if report.dry_run else 'deleted'} {totals.deleted}, "
        f"archived {totals.archived}, cancelled {totals.cancelled}, failed {totals.failed}, "
        f"reclaims {human_bytes(totals.bytes_reclaimed)}",
        "",
        "Repositories:",
    ]
    shown = [repo for repo in report.repositories if repo.outcome != "unmanaged"]
    for repo in shown[:REPOSITORY_LINES]:
        lines.append(f"  {repository_line(repo, report.dry_run)}")
        if repo.skipped:
            lines.append(f"    skipped: {repo.skipped}")
    if len(shown) > REPOSITORY_LINES:
        lines.append(f"  ... and {len(shown) - REPOSITORY_LINES} more repositories (see the report)")
    lines += replication_lines(shown)
    failed = [(repo.repository_name, entry) for repo in report.repositories for entry in repo.failed]
    if failed:
        lines += ["", "Failures:"]
        lines += [
            f"  {name}  {entry.image_digest[:19]}  {entry.error_code}: {entry.detail}" for name, entry in failed[:20]
        ]
    lines += in_use_archived_lines(report)
    lines += quarantine_lines(report)
    largest = sorted(
        ((repo.repository_name, entry) for repo in report.repositories for entry in repo.deleted),
        key=lambda item: (-(item[1].image_size_in_bytes or 0), item[0], item[1].image_digest),
    )[:LARGEST_SHOWN]
    if largest:
        lines += ["", f"Largest {'would-be deletions' if report.dry_run else 'deletions'}:"]
        lines += [entry_line(name, entry, report.started_at) for name, entry in largest]
    findings = sum(1 for repo in report.repositories for f in repo.lifecycle_findings if f.severity == "error")
    if findings:
        lines += ["", f"Native lifecycle policies: {findings} findings that would break running images (see report)."]
    if report.template_findings:
        prefixes = ", ".join(dict.fromkeys(finding.prefix for finding in report.template_findings))
        lines += [
            "",
            f"Repository creation templates: {len(report.template_findings)} lifecycle findings in the templates for "
            f"{prefixes} (see the report's templateFindings).",
        ]
    if report.warnings:
        lines += ["", f"Warnings ({len(report.warnings)}):"] + [f"  - {w}" for w in report.warnings[:10]]
    lines += ["", f"Full report: {report.report_url or '(not written)'}"]
    if files is not None:
        lines += file_lines(files, report.region)
    return lines


ARCHIVED_IN_USE_SHOWN = 20


def quarantine_lines(report: RunReport) -> list[str]:
    """safety.quarantine at work: what entered it, what left it for good, how many wait archived."""
    totals = report.totals
    if not totals.quarantined:
        return []
    entered = "would enter" if report.dry_run else "entered"
    left = "would leave" if report.dry_run else "left"
    return [
        "",
        f"Quarantine: {entered} {totals.entered_quarantine} (archived instead of deleted), {left} "
        f"{totals.left_quarantine} for good (deleted after their quarantine), {totals.in_quarantine} waiting archived",
    ]


def in_use_archived_lines(report: RunReport) -> list[str]:
    """The in-use images found archived, what became of each and the workloads that run them."""
    found = [(repo, entry) for repo in report.repositories for entry in repo.in_use_archived]
    if not found:
        return []
    lines = ["", f"In-use images found archived ({len(found)}): their workloads cannot pull them until restored"]
    for repo, entry in found[:ARCHIVED_IN_USE_SHOWN]:
        restored = {e.image_digest for e in repo.restored}
        failed = {e.image_digest: e for e in repo.restore_failed}
        if entry.image_digest in restored:
            fate = "would restore" if report.dry_run else "restored"
        elif entry.image_digest in failed:
            fate = f"restore FAILED ({failed[entry.image_digest].error_code})"
        else:
            fate = "NOT restored (safety.restore_in_use: false)"
        tags = ", ".join(entry.image_tags[:3]) or "<untagged>"
        workloads = next((r.detail for r in entry.reasons if r.kind == "in-use"), "")
        lines.append(f"  {repo.repository_name}  {entry.image_digest[:19]}  {tags}  {fate}; used by {workloads}")
    if len(found) > ARCHIVED_IN_USE_SHOWN:
        lines.append(f"  ... and {len(found) - ARCHIVED_IN_USE_SHOWN} more (see the report)")
    return lines


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


def replication_lines(repositories: Sequence[RepositoryReport]) -> list[str]:
    """Where this run's deletions reach beyond this registry, per repository."""
    replicated = [repo for repo in repositories if repo.deletion_replicates_to]
    if not replicated:
        return []
    lines = ["", "Deletions replicate (deleteReplication) to:"]
    for repo in replicated[:REPOSITORY_LINES]:
        lines.append(f"  {repo.repository_name}: {'; '.join(replica_text(r) for r in repo.deletion_replicates_to)}")
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
