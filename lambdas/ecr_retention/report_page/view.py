"""What the page shows, as plain data the template reads: the header, the checks, the totals, a row per repository,
the charts' geometry, the cost lines and a row per image. Pure: no HTML here (the template writes every tag and
escapes every value); text from registries and clusters passes through `visible` (text.py) on its way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import starmap
from operator import attrgetter
from typing import NamedTuple

from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.reporting.cost import (
    ARCHIVE_DISCOUNT_ABOVE_TB,
    ARCHIVE_MINIMUM_DAYS,
    RESTORE_PRICE_PER_GB,
    RunCost,
    StoragePrice,
    run_cost,
)
from ecr_retention.domain.reporting.report import (
    PAST_TENSE,
    EntryGroup,
    ImageEntry,
    RepositoryReport,
    Verb,
    action_verb,
    entries_in,
)
from ecr_retention.domain.reporting.run_report import RunReport, RunTotals
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.domain.reporting.summary import deletions_phrase, nothing_deleted, repository_namer
from ecr_retention.report_page.charts import AgeChart, BarChart, age_chart, bytes_chart
from ecr_retention.report_page.checks import Check, checks_of
from ecr_retention.report_page.text import visible

# The order of the image table: what the run removed (or failed to) first, then what it kept.
TABLE_GROUPS: tuple[EntryGroup, ...] = ("delete", "archive", "failed", "cancelled", "restore", "restore-failed", "keep")
# The table's filter knows one restore action: a failed restore is named in its action column ("restore failed").
TABLE_ACTIONS: dict[EntryGroup, str] = {"restore-failed": "restore"}
# The actions whose rows name what became of the removal before the plan's reasons.
OUTCOME_ACTIONS = ("cancelled", "failed")


@dataclass(frozen=True, slots=True)
class Header:
    mode: str  # "Dry run" or "Run"
    outcome: str
    dry_run: bool
    trigger: str
    run_id: str
    registry: str
    region: str  # the run's Region; of a run over several, each (regions_text: "eu-west-1 and us-east-1")
    started_iso: str
    started: str
    finished_iso: str
    finished: str
    duration: str
    report_url: str | None
    headline: str  # what the run did, in the SNS subject's words: "deleted 153 images (23.5 GiB) in 6 repositories"
    verbs: dict[Verb, str]  # each verb of what the run did, for the mode: {"delete": "would delete", ...} in dry run


def headline_of(report: RunReport) -> str:
    totals = report.totals
    if report.outcome == "blocked":
        return nothing_deleted(totals)
    dry_run = report.dry_run
    optional = (
        (totals.archived, f"{action_verb('archive', dry_run=dry_run)} {totals.archived}"),
        (totals.failed, f"{totals.failed} failed"),
        (totals.restored, f"{action_verb('restore', dry_run=dry_run)} {totals.restored} in use"),
    )
    parts = [deletions_phrase(totals, dry_run), *(text for count, text in optional if count)]
    return f"{', '.join(parts)} in {totals.repositories} repositories; kept {totals.kept}"


def regions_text(report: RunReport) -> str:
    """The Region of the run's registry; of a run over several, each, the home Region first
    (`eu-west-1 and us-east-1`), and of a push run in another Region that one, so that the header names the
    registries the run evaluated, not the home Region's alone."""
    if not report.names_regions:
        return visible(report.region or "unknown")
    names = [visible(region or "unknown") for region in report.regions_evaluated]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def utc(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def header_of(report: RunReport) -> Header:
    seconds = int((report.finished_at - report.started_at).total_seconds())
    return Header(
        mode="Dry run" if report.dry_run else "Run",
        outcome=report.outcome,
        dry_run=report.dry_run,
        trigger=report.trigger,
        run_id=visible(report.run_id),
        registry=visible(report.registry_id or "unknown"),
        region=regions_text(report),
        started_iso=report.started_at.isoformat(),
        started=utc(report.started_at),
        finished_iso=report.finished_at.isoformat(),
        finished=utc(report.finished_at),
        duration=humanize_age(timedelta(seconds=seconds)),
        report_url=visible(report.report_url) if report.report_url else None,
        headline=headline_of(report),
        verbs={verb: action_verb(verb, dry_run=report.dry_run) for verb in PAST_TENSE},
    )


@dataclass(frozen=True, slots=True)
class Total:
    key: str  # the RunTotals field, camelCase, as in the JSON
    label: str
    value: int
    human: str


TOTAL_LABELS = {
    "repositories": "repositories",
    "images": "images",
    "kept": "kept",
    "protected_in_use": "protected in use",
    "deleted": "deleted",
    "archived": "archived",
    "cancelled": "cancelled",
    "failed": "failed",
    "restored": "restored (in use)",
    "restore_failed": "restore failed",
    "in_use_archived": "in use, found archived",
    "entered_quarantine": "entered quarantine",
    "left_quarantine": "left quarantine (deleted)",
    "in_quarantine": "in quarantine",
    "bytes_reclaimed": "reclaimed",
}
QUARANTINE_TOTALS = ("entered_quarantine", "left_quarantine", "in_quarantine")  # shown when safety.quarantine acted


def total_labels(dry_run: bool) -> dict[str, str]:
    """TOTAL_LABELS, the figures of what the run did worded for its mode (a dry run's would be done)."""

    def did(verb: Verb) -> str:
        return action_verb(verb, dry_run=dry_run)

    return TOTAL_LABELS | {
        "deleted": did("delete"),
        "archived": did("archive"),
        "restored": f"{did('restore')} (in use)",
        "entered_quarantine": f"{did('enter')} quarantine",
        "left_quarantine": f"{did('leave')} quarantine (deleted)",
        "bytes_reclaimed": did("reclaim"),
    }


def total_cards(totals: RunTotals, dry_run: bool) -> tuple[Total, ...]:
    values = totals.model_dump(by_alias=False)
    labels = total_labels(dry_run)
    fields = RunTotals.model_fields
    return tuple(
        Total(
            key=fields[name].alias or name,
            label=labels[name],
            value=values[name],
            human=human_bytes(values[name]) if name == "bytes_reclaimed" else str(values[name]),
        )
        for name in TOTAL_LABELS
        if totals.quarantined or name not in QUARANTINE_TOTALS
    )


@dataclass(frozen=True, slots=True)
class RepositoryRow:
    name: str  # raw, for data-repository (an attribute: escaped, never shown)
    label: str
    outcome: str
    policy: str
    images: int
    kept: int
    deleted: int
    archived: int
    cancelled: int
    failed: int
    bytes_reclaimed: int
    bytes_human: str
    note: str  # why it was skipped, or what failed
    region: str  # the repository's Region (the run's for a report that predates it), shown when the run spans several


def repository_row(repo: RepositoryReport, region: str | None = None) -> RepositoryRow:
    return RepositoryRow(
        region=visible(region or "unknown"),
        name=repo.repository_name,
        label=visible(repo.repository_name),
        outcome=repo.outcome,
        policy=visible(repo.policy or "-"),
        images=repo.images,
        kept=repo.kept,
        deleted=len(repo.deleted),
        archived=len(repo.archived),
        cancelled=len(repo.cancelled),
        failed=len(repo.failed),
        bytes_reclaimed=repo.bytes_reclaimed,
        bytes_human=human_bytes(repo.bytes_reclaimed),
        note=visible(repo.skipped or repo.error or ""),
    )


@dataclass(frozen=True, slots=True)
class RegionView:
    """One Region's totals on the page of a run over several Regions."""

    region: str  # raw, for data-region (an attribute: escaped, never shown)
    label: str
    totals: tuple[Total, ...]


def regions_of(report: RunReport) -> tuple[RegionView, ...]:
    return tuple(
        RegionView(
            region=region.region or "unknown",
            label=visible(region.region or "unknown"),
            totals=total_cards(region.totals, report.dry_run),
        )
        for region in report.regions
    )


@dataclass(frozen=True, slots=True)
class Figure:
    key: str  # data-cost
    value: float
    text: str


@dataclass(frozen=True, slots=True)
class CostView:
    dry_run: bool
    price: str
    source: str
    deleted: str  # bytes, human
    archived: str
    figures: dict[str, Figure]
    restore_price: str
    minimum_days: int
    discount_above_tb: int


def usd(value: float) -> str:
    return "$0.00" if value == 0 else "< $0.01" if value < 0.005 else f"${value:,.2f}"


def cost_view(cost: RunCost, dry_run: bool) -> CostView:
    figures = (
        Figure("deletedGbMonth", cost.deleted_gb_month, f"{cost.deleted_gb_month:,.3f} GB-month"),
        Figure("deletedMonthlyUsd", cost.deleted_monthly_usd, usd(cost.deleted_monthly_usd) + " a month"),
        Figure("archivedGb", cost.archived_gb, f"{cost.archived_gb:,.3f} GB"),
        Figure("archiveMinimumUsd", cost.archive_minimum_usd, usd(cost.archive_minimum_usd)),
        Figure("restoreUsd", cost.restore_usd, usd(cost.restore_usd)),
    )
    return CostView(
        dry_run=dry_run,
        price=f"${cost.price.per_gb_month:g} per GB-month",
        source=visible(cost.price.source),
        deleted=human_bytes(cost.deleted_bytes),
        archived=human_bytes(cost.archived_bytes),
        figures={figure.key: figure for figure in figures},
        restore_price=f"${RESTORE_PRICE_PER_GB:g}/GB",
        minimum_days=ARCHIVE_MINIMUM_DAYS,
        discount_above_tb=ARCHIVE_DISCOUNT_ABOVE_TB,
    )


class ReasonText(NamedTuple):
    kind: str
    rule: str
    detail: str


ReasonTextOf = Callable[[str, str | None, str], ReasonText]
_reason_fields = attrgetter("kind", "rule", "detail")


def reason_text(kind: str, rule: str | None, detail: str) -> ReasonText:
    return ReasonText(kind, visible(rule or ""), visible(detail))


def reasons_of(entry: ImageEntry, action: str, text_of: ReasonTextOf = reason_text) -> tuple[ReasonText, ...]:
    """Every reason of an image's row; `text_of` words each (a caller may word each distinct reason once)."""
    given = entry.reasons
    if len(given) == 1:  # most images: the iterators below cost twice the wording
        reasons: tuple[ReasonText, ...] = (text_of(given[0].kind, given[0].rule, given[0].detail),)
    else:
        reasons = tuple(starmap(text_of, map(_reason_fields, given)))
    if action in OUTCOME_ACTIONS or entry.kind == "restore-failed" or not reasons:  # what became of the removal first
        detail = f"{entry.error_code}: {entry.detail}" if entry.error_code else entry.detail
        return (text_of(entry.kind, entry.rule, detail), *reasons)
    return reasons


def action_label(entry: ImageEntry, action: str, dry_run: bool) -> str:
    """What the action column says: "would restore" in dry run, "restore failed"."""
    if action != "restore":
        return action
    if entry.kind == "restore-failed":
        return "restore failed"
    return action_verb("restore", dry_run=True) if dry_run else action


def table_entries(repo: RepositoryReport) -> Iterator[tuple[str, tuple[ImageEntry, ...]]]:
    """The image table's entries of one repository by action (a failed restore: kept, still archived, named before
    what was kept), in the table's order."""
    for group in TABLE_GROUPS:
        yield TABLE_ACTIONS.get(group, group), entries_in(repo, group)


def image_count(report: RunReport) -> int:
    return sum(len(entries) for repo in report.repositories for _, entries in table_entries(repo))


@dataclass(frozen=True, slots=True)
class Page:
    header: Header
    blocked: tuple[str, ...]
    blocked_title: str  # "Blocked: nothing was deleted anywhere", or (removals elsewhere) in part
    checks: tuple[Check, ...]
    totals: tuple[Total, ...]
    regions: tuple[RegionView, ...]  # per Region when the run spans several; () for one
    repositories: tuple[RepositoryRow, ...]
    bytes_chart: BarChart
    age_charts: tuple[AgeChart, ...]
    cost: CostView
    image_count: int  # the image table's rows (rows.py writes them)


def _has_images(repo: RepositoryReport) -> bool:
    """A repository with any image to chart by age: evaluated, kept or removed."""
    return bool(repo.images or repo.kept_images or repo.deleted or repo.archived)


def page_view_of(report: RunReport, price: StoragePrice) -> Page:
    """The page's view model: every figure and text the template shows, computed here."""
    name = repository_namer(report)
    return Page(
        header=header_of(report),
        blocked=tuple(visible(reason) for reason in report.blocked),
        blocked_title="Blocked: nothing was deleted anywhere"
        if report.outcome == "blocked"
        else "Blocked in part: nothing was deleted where these apply",
        checks=checks_of(report),
        totals=total_cards(report.totals, report.dry_run),
        regions=regions_of(report),
        repositories=tuple(repository_row(repo, report.region_of(repo)) for repo in report.repositories),
        bytes_chart=bytes_chart(report.repositories, report.dry_run, name),
        age_charts=tuple(
            age_chart(repo, repo.evaluated_at or report.started_at, report.dry_run, name)
            for repo in report.repositories
            if _has_images(repo)
        ),
        cost=cost_view(run_cost(report, price), report.dry_run),
        image_count=image_count(report),
    )
