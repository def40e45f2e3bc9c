"""Plans for people: one row per image, one summary line per repository."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.escaping import printable as printable  # re-exported: the commands import it from here
from ecr_retention.domain.plan import Decision, Plan, Reason
from ecr_retention.domain.report import RunReport
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
        image.image_digest.split(":", 1)[-1][:12],
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
    lines: list[str] = []
    managed = [repo for repo in plan.repositories if repo.policy is not None]
    unmanaged = [repo for repo in plan.repositories if repo.policy is None]
    total_deleted = total_archived = total_bytes = 0
    for repo in managed:
        s = repo.summary
        total_deleted += s.deleted
        total_archived += s.archived
        total_bytes += s.bytes_reclaimed
        line = (
            f"{repo.repository_name} ({repo.policy}): {s.images} images, kept {s.kept}, "
            f"delete {s.deleted}, archive {s.archived}, reclaims {human_bytes(s.bytes_reclaimed)}"
        )
        if s.restored:
            line += f"; restore {s.restored} in use (archived)"
        stages = Counter(d.quarantine_stage for d in repo.images if d.quarantine_stage is not None)
        if stages:
            line += (
                f"; quarantine: {stages['enters']} enter (archived instead of deleted), "
                f"{stages['leaves']} leave for good, {stages['waits']} wait"
            )
        if repo.deletion_replicates_to:
            line += "; deletions replicate to " + ", ".join(replica_text(r) for r in repo.deletion_replicates_to)
        if repo.skipped:
            line += f"; SKIPPED: {repo.skipped}"
        lines.append(line)
    for repo in unmanaged:
        lines.append(f"{repo.repository_name}: {len(repo.images)} images, untouched (no policy matches)")
    mode = "dry run: nothing will be deleted" if plan.dry_run else "live: deletions will run"
    lines.append(
        f"total: delete {total_deleted}, archive {total_archived}, reclaims {human_bytes(total_bytes)} ({mode})"
    )
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    for blocker in plan.blocked:
        lines.append(f"BLOCKED: {blocker}")
    if plan.blocked:
        lines.append("BLOCKED: no image is deleted anywhere in this run")
    return lines


RUN_COLUMNS = ("REPOSITORY", "DIGEST", "TAGS", "AGE", "SIZE", "RESULT", "REASON")


def render_run_report(report: RunReport) -> str:
    """Every image the run acted on (or would have), then the summary subscribers receive."""
    verb = (
        {"deleted": "would delete", "archived": "would archive", "restored": "would restore"} if report.dry_run else {}
    )
    rows: list[tuple[str, ...]] = [RUN_COLUMNS]
    for repo in report.repositories:
        for result, entries in (
            ("deleted", repo.deleted),
            ("archived", repo.archived),
            ("cancelled", repo.cancelled),
            ("failed", repo.failed),
            ("restored", repo.restored),
            ("restore failed", repo.restore_failed),
        ):
            for entry in entries:
                reason = f"{entry.kind}" + (f" [{entry.rule}]" if entry.rule else "") + f": {entry.detail}"
                if entry.error_code:
                    reason = f"{entry.error_code}: {entry.detail}"
                rows.append(
                    (
                        repo.repository_name,
                        entry.image_digest.split(":", 1)[-1][:12],
                        clip(",".join(entry.image_tags) or "<untagged>", MAX_TAGS_WIDTH),
                        humanize_age(report.started_at - entry.image_pushed_at),
                        human_bytes(entry.image_size_in_bytes),
                        verb.get(result, result),
                        clip(reason, MAX_REASON_WIDTH),
                    )
                )
    lines = [*format_rows(rows), ""] if len(rows) > 1 else []
    lines.extend(summary_lines(report))  # one by one: escaping the joined body showed its line breaks as \n
    return "\n".join(printable(line) for line in lines)


def render_tag_report(report: TagReport) -> str:
    rows: list[tuple[str, ...]] = [("REPOSITORY", "DIGEST", "TAG", "RESULT", "DETAIL")]
    rows.extend(
        (e.repository_name, e.image_digest.split(":", 1)[-1][:12], e.tag, e.status, clip(e.detail, MAX_REASON_WIDTH))
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
