"""A run's report: its totals, the holds that end soon, and the report itself (RunReport), built at the run's end from
its repositories' reports (domain/reporting/report.py, which re-exports these names).

Apart from the repository report, so that the evaluate step, which builds and stores repository reports only, builds
none of the run's models at its cold start; the report step and the CLI load them where they build or read a run's
report.
"""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, TypeAdapter

from ecr_retention.domain.doctor.template_finding import TemplateFinding
from ecr_retention.domain.holds.stored import Hold
from ecr_retention.domain.in_use.references import MissingReference
from ecr_retention.domain.inventory.evidence import ManifestEvidence
from ecr_retention.domain.planning.plan_model import PlanModel
from ecr_retention.domain.registry.coordinates import UNKNOWN_REGISTRY, RegistryCoordinates
from ecr_retention.domain.reporting.outcomes import RunOutcome, Trigger
from ecr_retention.domain.reporting.report import (
    Fate,
    FateForm,
    ImageEntry,
    RepositoryReport,
    action_verb,
    blocked_reasons,
    passive_verb,
    repository_report,
    repository_warnings,
)
from ecr_retention.domain.timestamps import UtcDatetime

if TYPE_CHECKING:
    from ecr_retention.domain.planning.plan import Plan  # the CLI's (report_of_plan): the report step reads no plan


class RunTotals(PlanModel):
    repositories: int = 0
    images: int = 0
    kept: int = 0
    deleted: int = 0
    archived: int = 0
    cancelled: int = 0
    failed: int = 0
    restored: int = 0
    restore_failed: int = 0
    in_use_archived: int = 0
    # safety.quarantine: archived instead of deleted (among `archived`), deleted for good after the quarantine
    # (among `deleted`), and kept archived while they wait (among `kept`)
    entered_quarantine: int = 0
    left_quarantine: int = 0
    in_quarantine: int = 0
    protected_in_use: int = 0
    bytes_reclaimed: int = 0

    @property
    def quarantined(self) -> bool:
        """safety.quarantine acted in this run: something entered, left or waits in it."""
        return bool(self.entered_quarantine or self.left_quarantine or self.in_quarantine)


SEVERAL_REGIONS = 2  # a report shows Regions when its repositories span at least this many


class RegionTotals(PlanModel):
    """The totals of one Region's repositories in a run that spans several (RunReport.regions)."""

    region: str | None
    totals: RunTotals


def _single_region(regions: tuple[RegionTotals, ...]) -> bool:
    return len(regions) < SEVERAL_REGIONS


class HoldEnding(PlanModel):
    """A hold in force that ends within 7 days (domain/holds/protection.py ending_soon): its owner may want to extend
    it. Named in the summary and on the page."""

    region: str
    repository: str
    image_digest: str
    tag: str | None = None
    owner: str
    reason: str
    until: UtcDatetime

    @classmethod
    def of(cls, hold: Hold, until: datetime) -> "HoldEnding":
        return cls(
            region=hold.region,
            repository=hold.repository,
            image_digest=hold.digest,
            tag=hold.tag,
            owner=hold.owner,
            reason=hold.reason,
            until=until,
        )

    @property
    def image(self) -> str:
        where = f":{self.tag} ({self.image_digest})" if self.tag else f"@{self.image_digest}"
        return f"{self.repository}{where}"


def _none(holds: tuple[HoldEnding, ...]) -> bool:
    return not holds


class RunReport(PlanModel):
    schema_version: Literal[1] = 1
    run_id: str
    trigger: Trigger
    dry_run: bool
    started_at: UtcDatetime
    finished_at: UtcDatetime
    outcome: RunOutcome
    blocked: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    registry_id: str | None = None
    region: str | None = None
    # s3://bucket/reports/YYYY/MM/DD/<runId>.json: where this document is (reportKey, as the schema has always said).
    report_url: str | None = Field(default=None, alias="reportKey")
    # Each in-use manifest as the run's report step read it (expected clusters first among the checks).
    manifests: tuple[ManifestEvidence, ...] = ()
    totals: RunTotals = Field(default_factory=RunTotals)
    # Per Region, home Region first then the others by name, when the run's repositories span several Regions; left
    # out of a single-Region report, which keeps its shape (docs/report.md).
    regions: tuple[RegionTotals, ...] = Field(default=(), exclude_if=_single_region)
    repositories: tuple[RepositoryReport, ...] = ()
    # The doctor's structural findings on the lifecycle policies of the registry's repository creation templates,
    # each named by its template's prefix (services/templates.py).
    template_findings: tuple[TemplateFinding, ...] = ()
    # Every in-use reference of the run that the next pull cannot get: those the evaluations found in their
    # repositories (also under each repository) and those the report step found in the others (services/in_use_check.py).
    in_use_missing: tuple[MissingReference, ...] = ()
    # The holds that end within 7 days, soonest first; left out of a report without any, which keeps its shape.
    holds_ending: tuple[HoldEnding, ...] = Field(default=(), exclude_if=_none)

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def to_json(self, indent: int = 1) -> str:
        """The report as stored and printed; pydantic's own encoder (the json module's, indented, takes
        seconds for a sweep that lists tens of thousands of images)."""
        return self.model_dump_json(by_alias=True, indent=indent)

    def to_json_bytes(self, indent: int = 1) -> bytes:
        """to_json() as UTF-8, as pydantic's encoder writes it: a large report is never held as text too."""
        return _run_report_adapter().dump_json(self, by_alias=True, indent=indent)

    def region_of(self, repo: RepositoryReport) -> str | None:
        """The Region of a repository of this report: its own, or (a report that predates it) the run's."""
        return repo.region or self.region

    @property
    def regions_evaluated(self) -> tuple[str | None, ...]:
        """The Regions of the run's repositories, the run's own first, then the others by name."""
        found = {self.region_of(repo) for repo in self.repositories}
        return tuple(sorted(found, key=lambda region: (region != self.region, region or "")))

    @property
    def names_regions(self) -> bool:
        """Whether the renderers name each repository's Region: its repositories are not all the run's own Region's
        (several Regions, or a push run in another Region). A run of the home Region alone names none."""
        return any(self.region_of(repo) != self.region for repo in self.repositories)

    @property
    def has_problems(self) -> bool:
        """The CLI exits 1: blocked, failed or partial, or any repository skipped or busy."""
        return self.outcome != "ok"


@cache
def _run_report_adapter() -> TypeAdapter[RunReport]:
    return TypeAdapter(RunReport)


def run_outcome(repositories: Sequence[RepositoryReport], blocked: Sequence[str]) -> RunOutcome:
    """`blocked` only when nothing was removed: a block of one Region (or of one evaluation) beside removals elsewhere
    is a partial run, whose report still lists the reasons (issue 44: "nothing deleted" after 7 deletions)."""
    if blocked:
        return "partial" if removed_any(repositories) else "blocked"
    if repositories and all(repo.outcome == "failed" for repo in repositories):
        return "failed"
    if any(repo.outcome in ("failed", "partial", "skipped", "busy") for repo in repositories):
        return "partial"
    return "ok"


def removed_any(repositories: Iterable[RepositoryReport]) -> bool:
    """Whether the run deleted or archived anything (in dry run: would)."""
    return any(repo.deleted or repo.archived for repo in repositories)


def totals_of(repositories: Iterable[RepositoryReport]) -> RunTotals:
    totals = RunTotals()
    values = totals.model_dump()
    for repo in repositories:
        values["repositories"] += 1
        values["images"] += repo.images
        values["kept"] += repo.kept
        values["deleted"] += len(repo.deleted)
        values["archived"] += len(repo.archived)
        values["cancelled"] += len(repo.cancelled)
        values["failed"] += len(repo.failed)
        values["restored"] += len(repo.restored)
        values["restore_failed"] += len(repo.restore_failed)
        values["in_use_archived"] += len(repo.in_use_archived)
        values["entered_quarantine"] += sum(1 for e in repo.archived if e.kind == "quarantine")
        values["left_quarantine"] += sum(1 for e in repo.deleted if e.kind == "quarantine")
        values["in_quarantine"] += sum(1 for e in repo.kept_images if e.kind == "quarantine")
        values["protected_in_use"] += repo.protected_in_use
        values["bytes_reclaimed"] += repo.bytes_reclaimed
    return RunTotals(**values)


def region_totals_of(repositories: Sequence[RepositoryReport], home: str | None) -> tuple[RegionTotals, ...]:
    """Totals per Region when the repositories span several, home Region first, then the others by name; () for one.
    A repository without a Region (a report that predates it) counts in the home Region."""
    by_region: dict[str | None, list[RepositoryReport]] = {}
    for repo in repositories:
        by_region.setdefault(repo.region or home, []).append(repo)
    if len(by_region) < SEVERAL_REGIONS:
        return ()
    order = sorted(by_region, key=lambda region: (region != home, region is None, region or ""))
    return tuple(RegionTotals(region=region, totals=totals_of(by_region[region])) for region in order)


@dataclass(frozen=True)
class RunFacts:
    """What a run's end knows of it, for its report: who ran it, when, on which registry, what each repository
    did, and what the run itself found (warnings, creation templates, manifests, in-use references missing in
    repositories it did not plan)."""

    run_id: str
    trigger: Trigger
    dry_run: bool
    started_at: datetime
    finished_at: datetime
    repositories: Sequence[RepositoryReport]
    registry: RegistryCoordinates = UNKNOWN_REGISTRY
    warnings: Sequence[str] = ()
    template_findings: Sequence[TemplateFinding] = ()
    manifests: Sequence[ManifestEvidence] = ()
    other_in_use_missing: Sequence[MissingReference] = ()
    holds_ending: Sequence[HoldEnding] = ()


def run_report_of(facts: RunFacts, report_url: str | None = None) -> RunReport:
    """The run report of a run's facts, to be found at report_url."""
    # By name, then (two Regions' repositories of one name) by Region.
    ordered = sorted(facts.repositories, key=lambda repo: (repo.repository_name, repo.region or ""))
    blocked = blocked_reasons(ordered, facts.registry.region)
    warnings = tuple(dict.fromkeys([*facts.warnings, *repository_warnings(ordered, facts.registry.region)]))
    return RunReport(
        run_id=facts.run_id,
        trigger=facts.trigger,
        dry_run=facts.dry_run,
        started_at=facts.started_at,
        finished_at=facts.finished_at,
        outcome=run_outcome(ordered, blocked),
        blocked=blocked,
        warnings=warnings,
        registry_id=facts.registry.registry_id,
        region=facts.registry.region,
        report_url=report_url,
        manifests=tuple(facts.manifests),
        totals=totals_of(ordered),
        regions=region_totals_of(ordered, facts.registry.region),
        repositories=tuple(ordered),
        template_findings=tuple(facts.template_findings),
        in_use_missing=tuple(
            sorted(
                chain((found for repo in ordered for found in repo.in_use_missing), facts.other_in_use_missing),
                key=lambda found: (found.repository_name, found.image),
            )
        ),
        holds_ending=tuple(facts.holds_ending),
    )


def report_of_plan(plan: "Plan", *, run_id: str, manifests: Sequence[ManifestEvidence]) -> RunReport:
    """A plan as the report of the dry run it is (trigger cli), for the page and the sheet of `ecr-retention plan`."""
    return run_report_of(
        RunFacts(
            run_id=run_id,
            trigger="cli",
            dry_run=True,
            started_at=plan.generated_at,
            finished_at=plan.generated_at,
            repositories=[repository_report(repo, plan.generated_at, plan.blocked) for repo in plan.repositories],
            registry=plan.registry,
            warnings=plan.warnings,
            manifests=manifests,
        )
    )


@dataclass(frozen=True, slots=True)
class InUseArchived:
    """An in-use image found archived: its repository, its entry, its fate and (a refused restore) ECR's code."""

    repository: RepositoryReport
    entry: ImageEntry
    fate: Fate
    error_code: str | None = None

    @property
    def workloads(self) -> str:
        """The workloads that run it, as its in-use reason names them."""
        return next((reason.detail for reason in self.entry.reasons if reason.kind == "in-use"), "")

    def fate_text(self, *, dry_run: bool, form: FateForm) -> str:
        """The fate in words. The two forms differ and stay as they are: the summary's line ("line") says what the
        run did (`restored`, `would restore`), a refused restore's error code, and the setting by its path
        (`safety.restore_in_use`), for a reader who has only the e-mail; the page's check ("check") says what became
        of the image (`would be restored`, `NOT restored`) beside evidence that names the setting by its key."""
        if self.fate == "restored":
            verb = action_verb if form == "line" else passive_verb
            return verb("restore", dry_run=dry_run)
        if self.fate == "restore-failed":
            return f"restore FAILED ({self.error_code})" if form == "line" else "NOT restored"
        setting = "safety.restore_in_use" if form == "line" else "restore_in_use"
        return f"NOT restored ({setting}: false)"


def in_use_archived_of(repo: RepositoryReport) -> Iterator[InUseArchived]:
    restored = {entry.image_digest for entry in repo.restored}
    refused = {entry.image_digest: entry for entry in repo.restore_failed}
    for entry in repo.in_use_archived:
        if entry.image_digest in restored:
            yield InUseArchived(repo, entry, "restored")
        elif entry.image_digest in refused:
            yield InUseArchived(repo, entry, "restore-failed", refused[entry.image_digest].error_code)
        else:
            yield InUseArchived(repo, entry, "not-restored")


def run_in_use_archived(report: RunReport) -> tuple[InUseArchived, ...]:
    """Every in-use image found archived, repository by repository."""
    return tuple(found for repo in report.repositories for found in in_use_archived_of(repo))
