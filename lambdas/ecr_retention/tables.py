"""Plans for people: one row per image, one summary line per repository."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import cache
from itertools import repeat

from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.planning.plan import Decision, Plan, QuarantineStage, RepositoryPlan, RepositorySummary
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.planning.tagging import TagReport
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.reporting.escaping import (
    printable as printable,  # re-exported: the commands import it from here
)
from ecr_retention.domain.reporting.report import (
    ENTRY_GROUPS,
    EntryGroup,
    ImageEntry,
    Verb,
    action_verb,
    grouped_entries,
)
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.domain.reporting.summary import replica_text, summary_lines

COLUMNS = ("REPOSITORY", "DIGEST", "TAGS", "AGE", "SIZE", "ACTION", "REASON")
MAX_TAGS_WIDTH = 40
MAX_REASON_WIDTH = 100


def clip(text: str, width: int) -> str:
    return shorten(printable(text), width)  # escaped before measuring, so that escapes count in the width


def shorten(text: str, width: int) -> str:
    """Escaped text cut to the width, its last character an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_reason(reason: Reason) -> str:
    rule = f" [{reason.rule}]" if reason.rule else ""
    return f"{reason.kind}{rule}: {reason.detail}"


def summarize_reasons(image: Decision, main: Reason | None = None) -> str:
    """The main reason (given when the caller has it already). A blocked or skipped run names the block (explained
    below the table), then what the plan would otherwise have done and why."""
    main = main if main is not None else image.main_reason
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
    return "\n".join(plan_table_lines(plan))


def plan_table_lines(plan: Plan) -> Iterator[str]:
    """The table (the rows of `format_rows`), then the summary lines below it, line by line: the CLI writes each
    as it comes, so that the table of a large registry is held once, as its cells."""
    table = PlanTable(plan)
    if table.has_rows:
        yield from table.lines()
        yield ""
    yield from (printable(line) for line in plan_summary_lines(plan, table.quarantine))


class PlanTable:
    """The plan table's cells, column by column, each escaped once, before it is measured (the lines built from
    them need no escaping of their own); and each managed repository's quarantine count, read from the main
    reasons of its rows (each image's main reason is read once)."""

    def __init__(self, plan: Plan) -> None:
        self.columns: tuple[list[str], ...] = tuple([name] for name in COLUMNS)
        self.quarantine: list[Counter[QuarantineStage]] = []
        # Most images share their size's text and their reason's (one per rule): each is made once.
        self._size_text = cache(human_bytes)
        self._reason_text = cache(lambda text: clip(text, MAX_REASON_WIDTH))
        for repo in plan.repositories:
            if repo.policy is not None:
                self.quarantine.append(self._add_rows(repo, plan.generated_at))
        repositories, digests, tags, *rest = self.columns
        tags = [shorten(text, MAX_TAGS_WIDTH) for text in escaped(tags)]  # escaped first: escapes count in the width
        self.columns = (repositories, escaped(digests), tags, *rest)

    @property
    def has_rows(self) -> bool:
        return len(self.columns[0]) > 1

    def _add_rows(self, repo: RepositoryPlan, now: datetime) -> Counter[QuarantineStage]:
        """The repository's rows (their digests and tags escaped later, all at once); its quarantine count."""
        repositories, digests, tags, ages, sizes, actions, reasons = self.columns
        images = repo.images
        mains = [image.main_reason for image in images]
        repositories += repeat(printable(repo.repository_name), len(images))
        rows = [self._image_cells(image, main, now) for image, main in zip(images, mains, strict=True)]
        # One row per image, its cells appended column by column (no rows: nothing appended).
        for column, cells in zip((digests, tags, ages, sizes, actions, reasons), zip(*rows, strict=True), strict=False):
            column += cells
        return quarantine_of_rows(images, mains)

    def _image_cells(self, image: Decision, main: Reason, now: datetime) -> tuple[str, ...]:
        """An image's cells after its repository's: digest, tags, age, size, action, reasons."""
        return (
            short_digest(image.image_digest),
            ",".join(image.image_tags) or "<untagged>",
            humanize_age(now - image.image_pushed_at),
            self._size_text(image.image_size_in_bytes),
            image.action,
            self._reason_text(summarize_reasons(image, main)),
        )

    def lines(self) -> Iterator[str]:
        """Left-aligned columns two spaces apart, as `format_rows` writes them (the last needs no padding: the end
        of each line is stripped)."""
        *padded, _ = self.columns
        template = "  ".join([*(f"%-{max(map(len, column))}s" for column in padded), "%s"])
        return ((template % cells).rstrip() for cells in zip(*self.columns, strict=True))


def quarantine_of_rows(images: Sequence[Decision], mains: Sequence[Reason]) -> Counter[QuarantineStage]:
    """The quarantine stages of images whose main reasons are known: the stage is the Decision's to tell, and only
    an image whose main reason is the quarantine has one (so the others' main reasons are not read again)."""
    return Counter(
        stage
        for image, main in zip(images, mains, strict=True)
        if main.kind == "quarantine" and (stage := image.quarantine_stage) is not None
    )


def escaped(cells: list[str]) -> list[str]:
    """The cells escaped (`printable`), as they are when none needs it: one pass over them all finds out (it
    escapes character by character), and each cell is escaped on its own only when some need it."""
    joined = "".join(cells)
    return cells if printable(joined) == joined else [printable(cell) for cell in cells]


def plan_summary_lines(plan: Plan, quarantine: Sequence[Counter[QuarantineStage]] | None = None) -> list[str]:
    """Below the table: one line per repository, the totals, the warnings and why the plan is blocked. The
    quarantine counts of the managed repositories, in order, are counted here unless given (`PlanTable`)."""
    managed = [repo for repo in plan.repositories if repo.policy is not None]
    summaries = [repo.summary for repo in managed]
    stages = quarantine if quarantine is not None else [quarantine_stages(repo) for repo in managed]
    lines = [
        repository_plan_line(repo, summary, counts)
        for repo, summary, counts in zip(managed, summaries, stages, strict=True)
    ]
    lines += unmanaged_lines(plan)
    lines.append(plan_total_line(plan, summaries))
    return lines + plan_problem_lines(plan)


def unmanaged_lines(plan: Plan) -> list[str]:
    """One line per repository no policy matches."""
    return [
        f"{repo.repository_name}: {len(repo.images)} images, untouched (no policy matches)"
        for repo in plan.repositories
        if repo.policy is None
    ]


def plan_problem_lines(plan: Plan) -> list[str]:
    """The plan's warnings and why it is blocked."""
    lines = [f"warning: {warning}" for warning in plan.warnings]
    lines += [f"BLOCKED: {blocker}" for blocker in plan.blocked]
    if plan.blocked:
        lines.append("BLOCKED: no image is deleted anywhere in this run")
    return lines


def repository_plan_line(repo: RepositoryPlan, summary: RepositorySummary, quarantine: Counter[QuarantineStage]) -> str:
    """What the plan does in one managed repository (`summary`: its summary), then its restores, quarantine
    (`quarantine`: its stages), replication and skip."""
    line = (
        f"{repo.repository_name} ({repo.policy}): {summary.images} images, kept {summary.kept}, "
        f"delete {summary.deleted}, archive {summary.archived}, reclaims {human_bytes(summary.bytes_reclaimed)}"
    )
    if summary.restored:
        line += f"; restore {summary.restored} in use (archived)"
    line += quarantine_text(quarantine)
    if repo.deletion_replicates_to:
        line += "; deletions replicate to " + ", ".join(replica_text(r) for r in repo.deletion_replicates_to)
    if repo.skipped:
        line += f"; SKIPPED: {repo.skipped}"
    return line


def quarantine_stages(repo: RepositoryPlan) -> Counter[QuarantineStage]:
    """How many of the repository's images stand at each stage of safety.quarantine."""
    return Counter(stage for d in repo.images if (stage := d.quarantine_stage) is not None)


def quarantine_text(stages: Counter[QuarantineStage]) -> str:
    """safety.quarantine in the plan of one repository: how many images enter, leave for good and wait."""
    if not stages:
        return ""
    return (
        f"; quarantine: {stages['enters']} enter (archived instead of deleted), "
        f"{stages['leaves']} leave for good, {stages['waits']} wait"
    )


def plan_total_line(plan: Plan, summaries: Sequence[RepositorySummary]) -> str:
    """The managed repositories' totals (`summaries`: theirs)."""
    deleted = sum(summary.deleted for summary in summaries)
    archived = sum(summary.archived for summary in summaries)
    reclaimed = sum(summary.bytes_reclaimed for summary in summaries)
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
    lines.append(tag_total_line(report))
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(printable(line) for line in lines)


def tag_total_line(report: TagReport) -> str:
    """The count of each result the tagger had (those it had at all), and whether it wrote."""
    counts = ", ".join(
        f"{status} {report.count(status)}"
        for status in ("tagged", "would-tag", "already-tagged", "immutable", "gone", "failed")
        if report.count(status)
    )
    mode = "dry run: nothing tagged" if report.dry_run else "live"
    return f"total: {counts or 'nothing to do'} ({mode})"
