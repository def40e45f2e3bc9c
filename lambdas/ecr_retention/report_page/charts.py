"""Chart geometry for the page's inline SVG: Python computes the numbers, the template draws them."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ecr_retention.domain.reporting.report import (
    REMOVED_GROUPS,
    STAYING_GROUPS,
    ImageEntry,
    RepositoryReport,
    action_verb,
    grouped_entries,
)
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.report_page.text import visible

TOP_REPOSITORIES = 20
LABEL_CHARS = 32

# Bytes chart: one row per repository, the label left, the bar and its figure right.
BAR_LABEL_WIDTH = 230
BAR_AREA = 380
BAR_ROW = 20
BAR_HEIGHT = 14
BAR_TOP = 6
BAR_VALUE_GAP = 6
BAR_WIDTH = BAR_LABEL_WIDTH + BAR_AREA + 90

# Age chart: six buckets, removed stacked on kept.
DAY = 86400
AGE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("<1d", DAY),
    ("1-7d", 7 * DAY),
    ("7-30d", 30 * DAY),
    ("30-90d", 90 * DAY),
    ("90-365d", 365 * DAY),
    (">1y", float("inf")),
)
AGE_WIDTH = 264
AGE_HEIGHT = 112
AGE_COLUMN = 42
AGE_BAR = 30
AGE_LEFT = 6
AGE_TOP = 16  # room for the count above the tallest bar
AGE_PLOT = 62
AGE_BASE = AGE_TOP + AGE_PLOT


def short_label(name: str) -> str:
    shown = visible(name)
    return shown if len(shown) <= LABEL_CHARS else shown[: LABEL_CHARS - 1] + "…"


@dataclass(frozen=True, slots=True)
class Bar:
    label: str  # cut short for the axis
    name: str  # in full, for the bar's <title>
    value: int
    human: str
    y: int
    width: int
    text_y: int
    value_x: int


@dataclass(frozen=True, slots=True)
class BarChart:
    title: str
    bars: tuple[Bar, ...]
    width: int = BAR_WIDTH
    height: int = BAR_TOP * 2 + BAR_ROW
    label_width: int = BAR_LABEL_WIDTH
    bar_height: int = BAR_HEIGHT


def by_name(repo: RepositoryReport) -> str:
    return repo.repository_name


def bytes_chart(
    repositories: Sequence[RepositoryReport], dry_run: bool, named: Callable[[RepositoryReport], str] = by_name
) -> BarChart:
    """`named`: a repository's label (with several Regions the page's, `us-east-1:app`, so that two Regions' `app`
    are two bars told apart)."""
    verb = action_verb("reclaim", dry_run=dry_run)
    items = _top_reclaiming(repositories, named)
    title = f"Bytes {verb} per repository (top {TOP_REPOSITORIES}, the rest as others)"
    if not items:
        return BarChart(title=f"Bytes {verb} per repository: none", bars=())
    largest = max(value for _, value in items)
    bars = tuple(
        Bar(
            label=short_label(name),
            name=visible(name),
            value=value,
            human=human_bytes(value),
            y=BAR_TOP + index * BAR_ROW,
            width=max(1, round(BAR_AREA * value / largest)),
            text_y=BAR_TOP + index * BAR_ROW + BAR_HEIGHT - 3,
            value_x=BAR_LABEL_WIDTH + max(1, round(BAR_AREA * value / largest)) + BAR_VALUE_GAP,
        )
        for index, (name, value) in enumerate(items)
    )
    return BarChart(title=title, bars=bars, height=BAR_TOP * 2 + BAR_ROW * len(bars))


def _top_reclaiming(
    repositories: Sequence[RepositoryReport], named: Callable[[RepositoryReport], str]
) -> list[tuple[str, int]]:
    """The repositories that reclaim most, largest first (ties by name), the rest summed as others."""
    ranked = sorted(
        (repo for repo in repositories if repo.bytes_reclaimed > 0),
        key=lambda repo: (-repo.bytes_reclaimed, named(repo)),
    )
    items = [(named(repo), repo.bytes_reclaimed) for repo in ranked[:TOP_REPOSITORIES]]
    rest = ranked[TOP_REPOSITORIES:]
    if rest:
        items.append((f"others ({len(rest)} repositories)", sum(repo.bytes_reclaimed for repo in rest)))
    return items


@dataclass(frozen=True, slots=True)
class AgeColumn:
    label: str
    kept: int
    removed: int
    x: int
    label_x: int
    kept_y: int
    kept_height: int
    removed_y: int
    removed_height: int
    count_y: int


@dataclass(frozen=True, slots=True)
class AgeChart:
    repository: str  # raw, for data-repository
    label: str
    title: str
    columns: tuple[AgeColumn, ...]
    width: int = AGE_WIDTH
    height: int = AGE_HEIGHT
    bar_width: int = AGE_BAR
    base: int = AGE_BASE


# Each bucket's upper limit as an age (the last has none): an age compares with a limit as its exact seconds would.
_LIMITS = [timedelta.max if limit == float("inf") else timedelta(seconds=limit) for _, limit in AGE_BUCKETS]


def bucket_of(age: timedelta) -> int:
    """The first bucket whose upper limit is above the age (an image exactly one day old is in 1-7d)."""
    return bisect_right(_LIMITS, age)


def age_counts(entries: Sequence[ImageEntry], at: datetime) -> list[int]:
    counts = [0] * len(AGE_BUCKETS)
    for entry in entries:
        counts[bucket_of(at - entry.image_pushed_at)] += 1
    return counts


def age_chart(
    repo: RepositoryReport, at: datetime, dry_run: bool, named: Callable[[RepositoryReport], str] = by_name
) -> AgeChart:
    """`named`: the repository's label, as in bytes_chart."""
    removed = age_counts([entry for _, entry in grouped_entries(repo, REMOVED_GROUPS)], at)
    kept = age_counts([entry for _, entry in grouped_entries(repo, STAYING_GROUPS)], at)
    tallest = max([k + r for k, r in zip(kept, removed, strict=True)] + [1])
    columns = []
    for index, (label, _) in enumerate(AGE_BUCKETS):
        kept_height = round(AGE_PLOT * kept[index] / tallest)
        removed_height = round(AGE_PLOT * removed[index] / tallest)
        x = AGE_LEFT + index * AGE_COLUMN
        columns.append(
            AgeColumn(
                label=label,
                kept=kept[index],
                removed=removed[index],
                x=x,
                label_x=x + AGE_BAR // 2,
                kept_y=AGE_BASE - kept_height,
                kept_height=kept_height,
                removed_y=AGE_BASE - kept_height - removed_height,
                removed_height=removed_height,
                count_y=AGE_BASE - kept_height - removed_height - 3,
            )
        )
    verb = action_verb("remove", dry_run=dry_run)
    title = f"Image age in {visible(named(repo))}: {sum(kept)} kept, {sum(removed)} {verb}, " + ", ".join(
        f"{c.label}: {c.kept} kept {c.removed} {verb}" for c in columns
    )
    return AgeChart(repository=repo.repository_name, label=visible(named(repo)), title=title, columns=tuple(columns))
