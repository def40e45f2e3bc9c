"""A rules diff for people: the headline, the table (`diff --format table`) and the pull-request comment
(`--format markdown`), which stays under GitHub's comment limit however large the change."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from ecr_retention.commands.diff_brakes import blocked_notes, brakes_clause, markdown_brake_notes, skip_notes
from ecr_retention.commands.markdown import MARKDOWN_BUDGET, md, plural, within_budget
from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.domain.review.rules_diff import DiffTotals, Fate, ImageChange, RepositoryDiff, RulesDiff
from ecr_retention.tables import clip, describe_reason, format_rows, printable

COLUMNS = ("REPOSITORY", "DIGEST", "TAGS", "AGE", "SIZE", "CHANGE", "BEFORE", "AFTER")
MAX_REASON_WIDTH = 70
MARKDOWN_REASON_WIDTH = 140  # a comment wraps its cells: room for the whole reason
DEFAULT_IMAGES_PER_REPOSITORY = 20
MAX_SUMMARY_ROWS = 50


def headline(diff: RulesDiff) -> str:
    """`this change deletes 14 more images (3.2 GiB) in 2 repositories and keeps 3 that were to be deleted; no in-use
    image changes fate`."""
    totals = diff.totals
    parts = [*_removal_parts(totals), *_other_fate_parts(diff)]
    text = "this change " + _and(parts) if parts else "this change changes no image's fate"
    in_use = totals.in_use_changed
    text += "; " + ("no in-use image changes fate" if not in_use else f"{plural(in_use, 'in-use image')} change fate")
    held = brakes_clause(diff)
    return f"{text}; {held}" if held else text


def _removal_parts(totals: DiffTotals) -> list[str]:
    """The more images deleted and archived, the last part saying in how many repositories."""
    parts = []
    if totals.deleted.images:
        parts.append(f"deletes {plural(totals.deleted.images, 'more image')} ({human_bytes(totals.deleted.bytes)})")
    if totals.archived.images:
        parts.append(f"archives {plural(totals.archived.images, 'more image')} ({human_bytes(totals.archived.bytes)})")
    if parts:
        parts[-1] += f" in {plural(totals.repositories_removing_more, 'repository', 'repositories')}"
    return parts


def _other_fate_parts(diff: RulesDiff) -> list[str]:
    """The images spared, and those removed the other way."""
    totals = diff.totals
    parts = []
    if totals.spared.images:
        parts.append(f"keeps {totals.spared.images} that were to be {_spared_from(diff)}")
    if totals.archived_instead:
        parts.append(f"archives {totals.archived_instead} that were to be deleted")
    if totals.deleted_instead:
        parts.append(f"deletes {totals.deleted_instead} that were to be archived")
    return parts


def _spared_from(diff: RulesDiff) -> str:
    spared = [change.before.action for repo in diff.repositories for change in repo.changes if change.spared]
    return "deleted" if "archive" not in spared else "archived" if "delete" not in spared else "deleted or archived"


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def inputs_line(diff: RulesDiff) -> str | None:
    """How old the inputs are, when they were read by the pipeline (`--bucket`)."""
    start, end = diff.inputs_read_from, diff.inputs_read_until
    if start is None or end is None:
        return None
    age = humanize_age(diff.generated_at - start)
    return f"inputs: the registry as the pipeline last read it, {_when(start)} to {_when(end)} (oldest {age} old)"


def _when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def repository_line(repository: RepositoryDiff) -> str:
    """One line per changed repository: its management, skipping and counts."""
    name = repository.repository_name
    if repository.management == "starts":
        head = f"{name}: starts being managed ({repository.policy_after})"
    elif repository.management == "stops":
        head = f"{name}: leaves every policy (was {repository.policy_before}); nothing there is deleted any more"
    else:
        head = f"{name} ({repository.policy_after})"
    counts = _change_counts(repository.changes)
    line = f"{head}: {counts}" if counts else head
    return line + "".join(f"; {note}" for note in skip_notes(repository))


@dataclass(frozen=True)
class _Tally:
    """A repository's changes counted: those that remove more (and their bytes), those spared, the others."""

    removed: int
    removed_bytes: int
    spared: int
    others: int


def _tally(changes: Sequence[ImageChange]) -> _Tally:
    removed = [change for change in changes if change.removes_more]
    spared = sum(change.spared for change in changes)
    removed_bytes = sum(change.image_size_in_bytes or 0 for change in removed)
    return _Tally(len(removed), removed_bytes, spared, len(changes) - len(removed) - spared)


def _change_counts(changes: Sequence[ImageChange]) -> str:
    tally = _tally(changes)
    parts = [
        (tally.removed, f"{tally.removed} more removed ({human_bytes(tally.removed_bytes)})"),
        (tally.spared, f"{tally.spared} spared"),
        (tally.others, f"{tally.others} other changes"),
    ]
    return ", ".join(text for count, text in parts if count)


_HELD = {"max_delete_fraction": ", skipped now", "blocked": ", blocked now", "quarantine": ", after the quarantine"}


def fate_text(fate: Fate, width: int = MAX_REASON_WIDTH) -> str:
    """The action the rules decide and its main reason; a removal that a brake holds back today says so (`delete,
    skipped now: ...`): the plans of a diff are made with the brakes off, so no reason is a skip or a block."""
    held = _HELD[fate.held_by] if fate.held_by else ""
    return clip(f"{fate.action}{held}: {describe_reason(fate.main_reason)}", width)


def change_row(change: ImageChange, now: datetime) -> tuple[str, ...]:
    return (
        change.repository_name,
        short_digest(change.image_digest),
        clip(",".join(change.image_tags) or "<untagged>", 40),
        humanize_age(now - change.image_pushed_at),
        human_bytes(change.image_size_in_bytes),
        f"{change.before.action} -> {change.after.action}",
        fate_text(change.before),
        fate_text(change.after),
    )


def diff_table_lines(diff: RulesDiff, breached: Sequence[str] = ()) -> Iterator[str]:
    yield printable(headline(diff))
    yield from _notes(diff)
    rows = [change_row(change, diff.generated_at) for repo in diff.repositories for change in repo.changes]
    if rows:
        yield ""
        yield from format_rows([COLUMNS, *rows])
    yield ""
    yield from (printable(repository_line(repository)) for repository in diff.repositories)
    yield from (printable(f"warning: {warning}") for warning in diff.warnings)
    yield from (printable(f"FAIL: {reason}") for reason in breached)


def _notes(diff: RulesDiff) -> Iterator[str]:
    line = inputs_line(diff)
    if line is not None:
        yield line
    yield from (printable(f"note: {note}") for note in blocked_notes(diff))


# --- Markdown, for a pull-request comment and the job summary.


def diff_markdown(
    diff: RulesDiff,
    *,
    breached: Sequence[str] = (),
    images_per_repository: int = DEFAULT_IMAGES_PER_REPOSITORY,
    budget: int = MARKDOWN_BUDGET,
) -> str:
    """The headline, a summary table (one row per repository), then the first `images_per_repository` changed
    images of each repository in a collapsed section with the count of the rest. Sections that would take the text
    past `budget` characters are left out and counted."""
    head = [f"### Retention rules review\n\n**{md(headline(diff))}**\n", *_markdown_notes(diff, breached)]
    sections = (
        _details(repository, diff.generated_at, images_per_repository)
        for repository in diff.repositories
        if repository.changes
    )
    parts, left_out = within_budget(["\n".join(head), _summary_table(diff.repositories)], sections, budget)
    if left_out:
        parts.append(f"_{plural(left_out, 'more repository', 'more repositories')} changed: see the job log._\n")
    return "\n".join(parts)


def _markdown_notes(diff: RulesDiff, breached: Sequence[str]) -> list[str]:
    notes = []
    line = inputs_line(diff)
    if line is not None:
        notes.append(f"- {md(line)}")
    notes += markdown_brake_notes(diff, MAX_SUMMARY_ROWS)
    notes += [f"- warning: {md(warning)}" for warning in diff.warnings[:10]]
    notes += [f"- :x: **fails** `--fail-on` {md(reason)}" for reason in breached]
    return [*notes, ""] if notes else []


def _summary_table(repositories: Sequence[RepositoryDiff]) -> str:
    if not repositories:
        return "No repository changes.\n"
    lines = ["| repository | policy | more removed | bytes | spared | other |", "|---|---|---:|---:|---:|---:|"]
    for repository in repositories[:MAX_SUMMARY_ROWS]:
        tally = _tally(repository.changes)
        lines.append(
            f"| {md(repository.repository_name)} | {md(_policy_text(repository))} | {tally.removed} "
            f"| {human_bytes(tally.removed_bytes)} | {tally.spared} | {tally.others} |"
        )
    if len(repositories) > MAX_SUMMARY_ROWS:
        lines.append(f"\n_and {len(repositories) - MAX_SUMMARY_ROWS} more repositories_")
    return "\n".join(lines) + "\n"


def _policy_text(repository: RepositoryDiff) -> str:
    if repository.management == "starts":
        return f"starts: {repository.policy_after}"
    if repository.management == "stops":
        return f"leaves {repository.policy_before}"
    skipped = " (now skipped)" if repository.skipped_after and not repository.skipped_before else ""
    return f"{repository.policy_after}{skipped}"


def _details(repository: RepositoryDiff, now: datetime, limit: int) -> str:
    shown = repository.changes[:limit]
    lines = [
        f"<details><summary>{md(repository.repository_name)}: {md(_change_counts(repository.changes))}</summary>\n",
        "| image | age | size | change | before | after |",
        "|---|---|---:|---|---|---|",
    ]
    for change in shown:
        tags = ",".join(change.image_tags) or "<untagged>"
        lines.append(
            f"| {md(clip(tags, 40))} `{short_digest(change.image_digest)}` | {humanize_age(now - change.image_pushed_at)} "
            f"| {human_bytes(change.image_size_in_bytes)} | {change.before.action} → {change.after.action} "
            f"| {md(fate_text(change.before, MARKDOWN_REASON_WIDTH))} | {md(fate_text(change.after, MARKDOWN_REASON_WIDTH))} |"
        )
    rest = len(repository.changes) - len(shown)
    if rest:
        lines.append(f"\n_and {plural(rest, 'more changed image')}_")
    lines.append("\n</details>\n")
    return "\n".join(lines)
