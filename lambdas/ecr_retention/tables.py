"""Plans for people: one row per image, one summary line per repository."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.escaping import printable as printable  # re-exported: the commands import it from here
from ecr_retention.domain.plan import Decision, Plan, Reason, RepositoryPlan
from ecr_retention.domain.report import (
    ENTRY_GROUPS,
    EntryGroup,
    ImageEntry,
    RunReport,
    Verb,
    action_verb,
    grouped_entries,
    short_digest,
)
from ecr_retention.domain.sizes import human_bytes
from ecr_retention.domain.summary import replica_text, summary_lines
from ecr_retention.domain.tagging import TagReport

COLUMNS = ("REPOSITORY", "DIGEST", "TAGS", "AGE", "SIZE", "ACTION", "REASON")
MAX_TAGS_WIDTH = 40
MAX_REASON_WIDTH = 100


def clip(text: str, width: int) -> str:
    text = printable(text)  # before measuring, so that escapes count in the width
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_reason(reason: Reason) -> str:
    rule = f" [{reason.rule}]" if reason.rule else ""
    return f"{reason.kind}{rule}: {reason.detail}"


def summarize_reasons(image: Decision) -> str:
    """The main reason. A blocked or skipped run names the block (explained below the table), then what
    the plan would otherwise have done and why."""
    main = image.main_reason
    if main.kind in ("blocked", "skipped") and len(image.reasons) > 1:
        return f"{main.kind} | {describe_reason(image.reasons[1])}"
    return describe_reason(main)


def row(repository: str, image: Decision, plan: Plan) -> tuple[str, ...]:
    return (
        repository,
        short_digest(image.image_digest),
        clip(",".join(image.image_tags) or "<untagged>", MAX_TAGS_WIDTH),
        humanize_age(plan.generated_at - image.image_pushed_at),
        human_bytes(image.image_size_in_bytes),
        image.action,
        clip(summarize_reasons(image), MAX_REASON_WIDTH),
    )


def format_rows(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart; the first row is usually the header. Cells are escaped
    (`printable`) before they are measured."""
    rows = [tuple(printable(cell) for cell in r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip() for r in rows]


def render_plan_table(plan: Plan) -> str:
    lines: list[str] = []
    rows: list[tuple[str, ...]] = [COLUMNS]
    for repo in plan.repositories:
        if repo.policy is not None:
            rows.extend(row(repo.repository_name, image, plan) for image in repo.images)
    if len(rows) > 1:
        lines.extend(format_rows(rows))
        lines.append("")
    lines.extend(plan_summary_lines(plan))
    return "\n".join(printable(line) for line in lines)


def plan_summary_lines(plan: Plan) -> list[str]:
    """Below the table: one line per repository, the totals, the warnings and why the plan is blocked."""
    managed = [repo for repo in plan.repositories if repo.policy is not None]
    lines = [repository_plan_line(repo) for repo in managed]
    lines += [
        f"{repo.repository_name}: {len(repo.images)} images, untouched (no policy matches)"
        for repo in plan.repositories
        if repo.policy is None
    ]
    lines.append(plan_total_line(plan, managed))
    lines += [f"warning: {warning}" for warning in plan.warnings]
    lines += [f"BLOCKED: {blocker}" for blocker in plan.blocked]
    if plan.blocked:
        lines.append("BLOCKED: no image is deleted anywhere in this run")
    return lines


def repository_plan_line(repo: RepositoryPlan) -> str:
    """What the plan does in one managed repository, then its restores, quarantine, replication and skip."""
    s = repo.summary
    line = (
        f"{repo.repository_name} ({repo.policy}): {s.images} images, kept {s.kept}, "
        f"delete {s.deleted}, archive {s.archived}, reclaims {human_bytes(s.bytes_reclaimed)}"
    )
    if s.restored:
        line += f"; restore {s.restored} in use (archived)"
    line += quarantine_text(repo)
    if repo.deletion_replicates_to:
        line += "; deletions replicate to " + ", ".join(replica_text(r) for r in repo.deletion_replicates_to)
    if repo.skipped:
        line += f"; SKIPPED: {repo.skipped}"
    return line


def quarantine_text(repo: RepositoryPlan) -> str:
    """safety.quarantine in the plan of one repository: how many images enter, leave for good and wait."""
    stages = Counter(d.quarantine_stage for d in repo.images if d.quarantine_stage is not None)
    if not stages:
        return ""
    return (
        f"; quarantine: {stages['enters']} enter (archived instead of deleted), "
        f"{stages['leaves']} leave for good, {stages['waits']} wait"
    )


def plan_total_line(plan: Plan, managed: Sequence[RepositoryPlan]) -> str:
    deleted = sum(repo.summary.deleted for repo in managed)
    archived = sum(repo.summary.archived for repo in managed)
    reclaimed = sum(repo.summary.bytes_reclaimed for repo in managed)
    mode = "dry run: nothing will be deleted" if plan.dry_run else "live: deletions will run"
    return f"total: delete {deleted}, archive {archived}, reclaims {human_bytes(reclaimed)} ({mode})"


RUN_COLUMNS = ("REPOSITORY", "DIGEST", "TAGS", "AGE", "SIZE", "RESULT", "REASON")
# The run's table lists what the run acted on (the kept images only in the summary below it), each with its result.
RUN_GROUPS: tuple[EntryGroup, ...] = tuple(group for group in ENTRY_GROUPS if group != "keep")
DONE_GROUPS: dict[EntryGroup, Verb] = {"delete": "delete", "archive": "archive", "restore": "restore"}


def run_result(group: EntryGroup, dry_run: bool) -> str:
    """`deleted`, `would delete`, `cancelled`, `restore failed`: what became of an entry of this group."""
    if group in DONE_GROUPS:
        return action_verb(DONE_GROUPS[group], dry_run=dry_run)
    return group.replace("-", " ")


def entry_reason(entry: ImageEntry) -> str:
    """The entry's main reason (`kind [rule]: detail`), or for a cancelled or failed one, ECR's code and detail."""
    if entry.error_code:
        return f"{entry.error_code}: {entry.detail}"
    return f"{entry.kind}" + (f" [{entry.rule}]" if entry.rule else "") + f": {entry.detail}"


def run_row(repository: str, group: EntryGroup, entry: ImageEntry, report: RunReport) -> tuple[str, ...]:
    return (
        repository,
        short_digest(entry.image_digest),
        clip(",".join(entry.image_tags) or "<untagged>", MAX_TAGS_WIDTH),
        humanize_age(report.started_at - entry.image_pushed_at),
        human_bytes(entry.image_size_in_bytes),
        run_result(group, report.dry_run),
        clip(entry_reason(entry), MAX_REASON_WIDTH),
    )


def render_run_report(report: RunReport) -> str:
    """Every image the run acted on (or would have), then the summary subscribers receive."""
    rows: list[tuple[str, ...]] = [RUN_COLUMNS]
    rows += [
        run_row(repo.repository_name, group, entry, report)
        for repo in report.repositories
        for group, entry in grouped_entries(repo, RUN_GROUPS)
    ]
    lines = [*format_rows(rows), ""] if len(rows) > 1 else []
    lines.extend(summary_lines(report))  # one by one: escaping the joined body showed its line breaks as \n
    return "\n".join(printable(line) for line in lines)


def render_tag_report(report: TagReport) -> str:
    rows: list[tuple[str, ...]] = [("REPOSITORY", "DIGEST", "TAG", "RESULT", "DETAIL")]
    rows.extend(
        (e.repository_name, short_digest(e.image_digest), e.tag, e.status, clip(e.detail, MAX_REASON_WIDTH))
        for e in report.entries
    )
    lines = format_rows(rows) if report.entries else ["no deployed image of this registry to tag"]
    counts = ", ".join(
        f"{status} {report.count(status)}"
        for status in ("tagged", "would-tag", "already-tagged", "immutable", "gone", "failed")
        if report.count(status)
    )
    mode = "dry run: nothing tagged" if report.dry_run else "live"
    lines.append(f"total: {counts or 'nothing to do'} ({mode})")
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(printable(line) for line in lines)
