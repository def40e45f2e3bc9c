"""What a run did (or, in dry run, would do): one JSON report per run, schema in docs/report.md.

Pure: built from the plans and from what the registry answered; no I/O. A report never lists an image
under `deleted` or `archived` unless ECR confirmed the action (or, in dry run, the plan would take it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ecr_retention.domain.doctor import Finding, TemplateFinding
from ecr_retention.domain.manifest_evidence import ManifestEvidence
from ecr_retention.domain.plan import Decision, Plan, PlanModel, Reason, ReasonKind, ReplicaRegistry, RepositoryPlan
from ecr_retention.domain.timestamps import UtcDatetime

Trigger = Literal["schedule", "push", "cli"]
RunOutcome = Literal["ok", "blocked", "partial", "failed"]
# ok: evaluated, every planned action done or not needed; blocked: the inventory stopped every deletion;
# skipped: over max_delete_fraction; partial: some actions failed or were cancelled for a reason other than
# a tag change; busy: another evaluation holds the repository; gone: the repository no longer exists;
# failed: the evaluation itself failed (error names why); unmanaged: no policy matches it.
RepositoryOutcome = Literal["ok", "blocked", "skipped", "partial", "busy", "gone", "failed", "unmanaged"]


class ImageEntry(PlanModel):
    """One image the run acted on, would act on, cancelled or failed on."""

    image_digest: str
    image_tags: tuple[str, ...]
    image_pushed_at: UtcDatetime
    image_size_in_bytes: int | None = None
    kind: ReasonKind
    rule: str | None = None
    detail: str
    error_code: str | None = None
    # Every reason the plan gave, in the plan's vocabulary; kind, rule and detail above are the one that decided
    # (or, for cancelled and failed images, what became of the removal).
    reasons: tuple[Reason, ...] = ()

    @classmethod
    def from_decision(
        cls,
        decision: Decision,
        *,
        kind: ReasonKind | None = None,
        detail: str | None = None,
        error_code: str | None = None,
    ) -> ImageEntry:
        main = decision.main_reason
        return cls(
            image_digest=decision.image_digest,
            image_tags=decision.image_tags,
            image_pushed_at=decision.image_pushed_at,
            image_size_in_bytes=decision.image_size_in_bytes,
            kind=kind or main.kind,
            rule=main.rule,
            detail=detail if detail is not None else main.detail,
            error_code=error_code,
            reasons=decision.reasons,
        )


class RepositoryReport(PlanModel):
    repository_name: str
    outcome: RepositoryOutcome
    policy: str | None = None
    deletion_replicates_to: tuple[ReplicaRegistry, ...] = ()  # see RepositoryPlan
    evaluated_at: UtcDatetime | None = None
    images: int = 0
    kept: int = 0
    protected_in_use: int = 0
    kept_images: tuple[ImageEntry, ...] = ()  # the images the plan keeps, each with its main reason
    # In-use images found ARCHIVED and restored (in dry run: that would be). `kept` counts them, and those in
    # restore_failed (ECR refused the restore: they stay kept, archived); in_use_archived names every in-use image
    # found archived, restored or not (safety.restore_in_use false keeps them in kept_images).
    restored: tuple[ImageEntry, ...] = ()
    restore_failed: tuple[ImageEntry, ...] = ()
    in_use_archived: tuple[ImageEntry, ...] = ()
    deleted: tuple[ImageEntry, ...] = ()
    archived: tuple[ImageEntry, ...] = ()
    cancelled: tuple[ImageEntry, ...] = ()
    failed: tuple[ImageEntry, ...] = ()
    skipped: str | None = None
    blocked: tuple[str, ...] = ()
    bytes_reclaimed: int = 0
    lifecycle_findings: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    error: str | None = None


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
    repositories: tuple[RepositoryReport, ...] = ()
    # The doctor's structural findings on the lifecycle policies of the registry's repository creation templates,
    # each named by its template's prefix (services/templates.py).
    template_findings: tuple[TemplateFinding, ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def to_json(self, indent: int = 1) -> str:
        """The report as stored and printed; pydantic's own encoder (the json module's, indented, takes
        seconds for a sweep that lists tens of thousands of images)."""
        return self.model_dump_json(by_alias=True, indent=indent)

    @property
    def has_problems(self) -> bool:
        """The CLI exits 1: blocked, failed or partial, or any repository skipped or busy."""
        return self.outcome != "ok"


def run_outcome(repositories: Sequence[RepositoryReport], blocked: Sequence[str]) -> RunOutcome:
    if blocked:
        return "blocked"
    if repositories and all(repo.outcome == "failed" for repo in repositories):
        return "failed"
    if any(repo.outcome in ("failed", "partial", "skipped", "busy") for repo in repositories):
        return "partial"
    return "ok"


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


def build_run_report(
    *,
    run_id: str,
    trigger: Trigger,
    dry_run: bool,
    started_at: datetime,
    finished_at: datetime,
    repositories: Sequence[RepositoryReport],
    registry_id: str | None = None,
    region: str | None = None,
    report_url: str | None = None,
    run_warnings: Sequence[str] = (),
    template_findings: Sequence[TemplateFinding] = (),
    manifests: Sequence[ManifestEvidence] = (),
) -> RunReport:
    ordered = sorted(repositories, key=lambda repo: repo.repository_name)
    blocked = tuple(dict.fromkeys(reason for repo in ordered for reason in repo.blocked))
    warnings = tuple(dict.fromkeys([*run_warnings, *(w for repo in ordered for w in repo.warnings)]))
    return RunReport(
        run_id=run_id,
        trigger=trigger,
        dry_run=dry_run,
        started_at=started_at,
        finished_at=finished_at,
        outcome=run_outcome(ordered, blocked),
        blocked=blocked,
        warnings=warnings,
        registry_id=registry_id,
        region=region,
        report_url=report_url,
        manifests=tuple(manifests),
        totals=totals_of(ordered),
        repositories=tuple(ordered),
        template_findings=tuple(template_findings),
    )


def is_in_use_archived(decision: Decision) -> bool:
    """An in-use image the plan found ARCHIVED: restored, or (safety.restore_in_use false) kept with the finding."""
    return decision.action == "restore" or any(r.kind == "in-use-archived" for r in decision.reasons)


def kept_entries(decisions: Iterable[Decision]) -> tuple[ImageEntry, ...]:
    return tuple(ImageEntry.from_decision(d) for d in decisions if d.action == "keep")


def repository_report_of_plan(plan: RepositoryPlan, evaluated_at: datetime, blocked: Sequence[str]) -> RepositoryReport:
    """What a dry run would report of this plan: the same repository report an evaluation in dry run stores."""
    outcome: RepositoryOutcome = (
        "unmanaged" if plan.policy is None else "blocked" if blocked else "skipped" if plan.skipped else "ok"
    )
    return RepositoryReport(
        repository_name=plan.repository_name,
        outcome=outcome,
        policy=plan.policy,
        deletion_replicates_to=plan.deletion_replicates_to,
        evaluated_at=evaluated_at,
        images=len(plan.images),
        kept=sum(1 for d in plan.images if not d.removes),
        protected_in_use=sum(1 for d in plan.images if any(r.kind == "in-use" for r in d.reasons)),
        kept_images=kept_entries(plan.images),
        restored=tuple(ImageEntry.from_decision(d) for d in plan.images if d.action == "restore"),
        in_use_archived=tuple(ImageEntry.from_decision(d) for d in plan.images if is_in_use_archived(d)),
        deleted=tuple(ImageEntry.from_decision(d) for d in plan.images if d.action == "delete"),
        archived=tuple(ImageEntry.from_decision(d) for d in plan.images if d.action == "archive"),
        skipped=plan.skipped,
        blocked=tuple(blocked),
        bytes_reclaimed=plan.summary.bytes_reclaimed,
    )


def report_of_plan(plan: Plan, *, run_id: str, manifests: Sequence[ManifestEvidence]) -> RunReport:
    """A plan as the report of the dry run it is (trigger cli), for the page and the sheet of `ecr-retention plan`."""
    return build_run_report(
        run_id=run_id,
        trigger="cli",
        dry_run=True,
        started_at=plan.generated_at,
        finished_at=plan.generated_at,
        repositories=[repository_report_of_plan(repo, plan.generated_at, plan.blocked) for repo in plan.repositories],
        registry_id=plan.registry_id,
        region=plan.region,
        run_warnings=plan.warnings,
        manifests=manifests,
    )


ReportFormat = Literal["json", "html", "csv"]
