"""A lifecycle policy diff for people: the table (`lifecycle-diff --format table`) and the pull-request comment
(`--format markdown`), bounded and escaped as `diff`'s is (commands/markdown.py)."""

from __future__ import annotations

from datetime import datetime

from ecr_retention.commands.lifecycle_preview import index_warnings
from ecr_retention.commands.markdown import MARKDOWN_BUDGET, md, plural, within_budget
from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.domain.review.lifecycle_diff import LifecycleChange, LifecycleDiff, LifecycleFate, lifecycle_headline
from ecr_retention.tables import clip, format_rows, printable

DEFAULT_IMAGES_LISTED = 20


def fate_text(fate: LifecycleFate) -> str:
    return "-" if fate.action is None else f"{fate.action} (rule {fate.rule_priority or 'cascade'})"


def table_lines(diff: LifecycleDiff) -> list[str]:
    lines = [printable(lifecycle_headline(diff))]
    if diff.changes:
        rows = [("DIGEST", "TAGS", "AGE", "SIZE", "BEFORE", "AFTER", "RUNS IN")]
        rows += [
            (
                short_digest(change.image_digest),
                ",".join(change.image_tags) or "<untagged>",
                humanize_age(diff.generated_at - change.image_pushed_at),
                human_bytes(change.image_size_in_bytes),
                fate_text(change.before),
                fate_text(change.after),
                ", ".join(change.running) or "-",
            )
            for change in diff.changes
        ]
        lines += ["", *format_rows(rows)]
    return lines + [printable(f"warning: {warning}") for warning in index_warnings(diff.indexes_without_manifest)]


def lifecycle_markdown(
    diff: LifecycleDiff, *, images_listed: int = DEFAULT_IMAGES_LISTED, budget: int = MARKDOWN_BUDGET
) -> str:
    """The headline, the running images it newly removes, then the first `images_listed` changed images (running ones
    first) and the count of the rest; rows that would take the text past `budget` characters are left out and
    counted."""
    name = f" for {md(diff.repository_name)}" if diff.repository_name else ""
    head = [f"### Lifecycle policy review{name}\n\n**{md(lifecycle_headline(diff))}**\n", *_notes(diff)]
    if not diff.changes:
        return "\n".join([*head, "No image changes fate.\n"])
    ordered = sorted(diff.changes, key=lambda change: not (change.running and change.after.action))  # stable
    shown = ordered[:images_listed]
    header = "| image | age | size | before | after | runs in |\n|---|---:|---:|---|---|---|"
    rows = (_row(change, diff.generated_at) for change in shown)
    parts, left_out = within_budget([*head, header], rows, budget)
    rest = len(ordered) - len(shown) + left_out
    if rest:
        parts.append(f"\n_and {plural(rest, 'more changed image')}: see the job log._")
    return "\n".join(parts) + "\n"


def _notes(diff: LifecycleDiff) -> list[str]:
    notes = [f"- warning: {md(warning)}" for warning in index_warnings(diff.indexes_without_manifest)]
    running, unknown = diff.running_removed, diff.unknown_removed
    if running:
        notes.append(f"- :x: **fails**: the change expires or archives {plural(len(running), 'image')} a workload runs")
    elif unknown:
        notes.append(
            f"- :x: **fails**: the change expires or archives {plural(len(unknown), 'image')}, and whether a workload "
            f"runs any of them is unknown: {md(diff.in_use_unknown or '')}"
        )
    return [*notes, ""] if notes else []


def _row(change: LifecycleChange, now: datetime) -> str:
    tags = ",".join(change.image_tags) or "<untagged>"
    runs = ", ".join(change.running) or "-"
    return (
        f"| {md(clip(tags, 40))} `{short_digest(change.image_digest)}` | {humanize_age(now - change.image_pushed_at)} "
        f"| {human_bytes(change.image_size_in_bytes)} | {fate_text(change.before)} | {fate_text(change.after)} "
        f"| {md(clip(runs, 140))} |"
    )
