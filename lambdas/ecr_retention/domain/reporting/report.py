"""What a run did (or, in dry run, would do): one JSON report per run, schema in docs/report.md.

Pure: built from the plans and from what the registry answered; no I/O. A report never lists an image
under `deleted` or `archived` unless ECR confirmed the action (or, in dry run, the plan would take it).

Here: what one repository's evaluation builds (its report, ImageEntry) and what reads reports of either kind. The
run's own models (RunReport, its totals, RunFacts) are in run_report.py, so that the evaluate step, which builds and
stores repository reports only, builds none of them at its cold start.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from itertools import chain
from typing import TYPE_CHECKING, Literal, NamedTuple, TypedDict

from pydantic import ConfigDict, RootModel
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass as pydantic_dataclass

from ecr_retention.domain.doctor.models import Finding
from ecr_retention.domain.in_use.references import MissingReference
from ecr_retention.domain.planning.plan_model import PlanModel, slot_writer
from ecr_retention.domain.planning.plan_parts import Reason, ReplicaRegistry
from ecr_retention.domain.planning.reasons import ReasonKind
from ecr_retention.domain.reporting.outcomes import RepositoryOutcome
from ecr_retention.domain.timestamps import LeanPushedAt, UtcDatetime

if TYPE_CHECKING:
    # The plan's models and the ledger: a repository report is built from them (repository_report, in the evaluate
    # step and the CLI), never in the report step, which reads reports and builds none of them at its cold start.
    from ecr_retention.domain.planning.ledger import Ledger
    from ecr_retention.domain.planning.plan import Decision, RepositoryPlan
    from ecr_retention.domain.reporting.run_report import RunReport


@pydantic_dataclass(
    frozen=True, slots=True, kw_only=True, config=ConfigDict(alias_generator=to_camel, populate_by_name=True)
)
class ImageEntry:
    """One image the run acted on, would act on, cancelled or failed on. Validated as a model is, but held in slots:
    a run report holds one per image, and a model's per-instance dict and set of the fields given would be most of a
    large report's memory (1,100 of 2,100 bytes per image at 100,000)."""

    image_digest: str
    image_tags: tuple[str, ...]
    image_pushed_at: LeanPushedAt  # UtcDatetime without a Python call: one per image of a JSON report
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
        decision: "Decision",
        *,
        kind: ReasonKind | None = None,
        detail: str | None = None,
        error_code: str | None = None,
    ) -> "ImageEntry":
        """The decision's image with its main reason, or with `kind`, `detail` and `error_code` given (what became of
        its removal, validated). Without them every value is the decision's own, validated already: the entry is
        then built without validating them again (_planned_entry)."""
        main = decision.main_reason
        if kind is None and detail is None and error_code is None and cls is ImageEntry:
            return _planned_entry(decision, main)
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


def _planned_entry(decision: "Decision", main: Reason) -> ImageEntry:
    """ImageEntry.from_decision(decision), built as unpickling would restore it, its slots written directly: the values
    are a validated decision's (its push time aware UTC already), and a report holds one entry per image (2.7 -> 1.0
    us an entry; tests/unit/test_report_entries_built_from_decisions.py holds it to the validated entry)."""
    entry = _new_entry(ImageEntry)
    _set_entry_digest(entry, decision.image_digest)
    _set_entry_tags(entry, decision.image_tags)
    _set_entry_pushed_at(entry, decision.image_pushed_at)
    _set_entry_size(entry, decision.image_size_in_bytes)
    _set_entry_kind(entry, main.kind)
    _set_entry_rule(entry, main.rule)
    _set_entry_detail(entry, main.detail)
    _set_entry_error_code(entry, None)
    _set_entry_reasons(entry, decision.reasons)
    return entry


_new_entry = object.__new__
_set_entry_digest = slot_writer(ImageEntry, "image_digest")
_set_entry_tags = slot_writer(ImageEntry, "image_tags")
_set_entry_pushed_at = slot_writer(ImageEntry, "image_pushed_at")
_set_entry_size = slot_writer(ImageEntry, "image_size_in_bytes")
_set_entry_kind = slot_writer(ImageEntry, "kind")
_set_entry_rule = slot_writer(ImageEntry, "rule")
_set_entry_detail = slot_writer(ImageEntry, "detail")
_set_entry_error_code = slot_writer(ImageEntry, "error_code")
_set_entry_reasons = slot_writer(ImageEntry, "reasons")


class RepositoryReport(PlanModel):
    repository_name: str
    # The Region of the repository's registry (a run may prune several); None in a report that predates it.
    region: str | None = None
    outcome: RepositoryOutcome
    policy: str | None = None
    deletion_replicates_to: tuple[ReplicaRegistry, ...] = ()  # see RepositoryPlan
    evaluated_at: UtcDatetime | None = None
    # When the pipeline last read the repository and kept its snapshot for reviews (snapshots/, `diff --bucket`).
    last_read_at: UtcDatetime | None = None
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
    # In-use references into this repository that the next pull cannot get (finding in-use-missing, SPEC "The
    # sentinel"), checked against the snapshot the evaluation read; the report step adds when and by what.
    in_use_missing: tuple[MissingReference, ...] = ()
    warnings: tuple[str, ...] = ()
    error: str | None = None


class BatchReports(RootModel[dict[str, RepositoryReport]]):
    """A batch's reports object (run_files.py): each report by the key of the repository's own report object
    (layout.py), so that the run's reports read back as they would from one object each, in the same order."""


def blocked_reasons(repositories: Sequence[RepositoryReport], home: str | None) -> tuple[str, ...]:
    """Each reason that blocked a repository, once. When the run's repositories are not all the home Region's, each
    names the Regions it blocked (`us-east-1: the registry's replication configuration is unknown: ...`): a block of
    one Region is that Region's. A run of one Region keeps its reasons as they are."""
    return regional_lines(repositories, home, lambda repo: repo.blocked)


def repository_warnings(repositories: Sequence[RepositoryReport], home: str | None) -> tuple[str, ...]:
    """Each warning of an evaluation, once, named with the Regions it was given in as blocked reasons are
    (`us-east-1: ...`) when the run's repositories are not all the home Region's."""
    return regional_lines(repositories, home, lambda repo: repo.warnings)


def regional_lines(
    repositories: Sequence[RepositoryReport], home: str | None, lines_of: Callable[[RepositoryReport], Sequence[str]]
) -> tuple[str, ...]:
    """Each line the repositories give (`lines_of`), once, in their order; prefixed with the Regions that gave it,
    the home Region first, unless every repository is the home Region's (a run of one Region keeps its words)."""
    regions_of = _regions_by_line(repositories, home, lines_of)
    if all((repo.region or home) == home for repo in repositories):
        return tuple(regions_of)
    return tuple(f"{', '.join(_home_first(regions, home))}: {line}" for line, regions in regions_of.items())


def _regions_by_line(
    repositories: Sequence[RepositoryReport], home: str | None, lines_of: Callable[[RepositoryReport], Sequence[str]]
) -> dict[str, dict[str, None]]:
    """Each line, in the repositories' order, with the Regions of the repositories that gave it."""
    regions_of: dict[str, dict[str, None]] = {}
    for repo in repositories:
        region = repo.region or home or "unknown Region"
        for line in lines_of(repo):
            regions_of.setdefault(line, {})[region] = None
    return regions_of


def _home_first(regions: Iterable[str], home: str | None) -> list[str]:
    return sorted(regions, key=lambda region: (region != home, region))


def is_in_use_archived(decision: "Decision") -> bool:
    """An in-use image the plan found ARCHIVED: restored, or (safety.restore_in_use false) kept with the finding."""
    return decision.action == "restore" or any(r.kind == "in-use-archived" for r in decision.reasons)


def kept_entries(decisions: "Iterable[Decision]") -> tuple[ImageEntry, ...]:
    return tuple(ImageEntry.from_decision(d) for d in decisions if d.action == "keep")


def repository_report(
    plan: "RepositoryPlan",
    evaluated_at: datetime,
    blocked: Sequence[str],
    ledger: "Ledger | None" = None,
    *,
    lifecycle_findings: Sequence[Finding] = (),
    warnings: Sequence[str] = (),
    in_use_missing: Sequence[MissingReference] = (),
) -> RepositoryReport:
    """The repository's report: what the plan decided and, with a ledger, what became of it. Without one (a dry
    run), or for what the ledger did not attempt, the plan's actions are reported as taken: the same report a dry
    run stores and `ecr-retention plan` renders."""
    from ecr_retention.domain.planning.ledger import Ledger  # loaded already where a plan was made (see TYPE_CHECKING)

    ledger = ledger or Ledger()
    restores = _restores(plan, ledger)
    return RepositoryReport(
        repository_name=plan.repository_name,
        policy=plan.policy,
        deletion_replicates_to=plan.deletion_replicates_to,
        evaluated_at=evaluated_at,
        images=len(plan.images),
        protected_in_use=sum(1 for d in plan.images if any(r.kind == "in-use" for r in d.reasons)),
        kept_images=kept_entries(plan.images),
        in_use_archived=tuple(ImageEntry.from_decision(d) for d in plan.images if is_in_use_archived(d)),
        skipped=plan.skipped,
        blocked=tuple(blocked),
        lifecycle_findings=tuple(lifecycle_findings),
        in_use_missing=tuple(in_use_missing),
        warnings=(*warnings, *restores.warnings),
        restored=restores.restored,
        restore_failed=restores.failed,
        **_removals(plan, blocked, ledger),
    )


class _Removals(TypedDict, total=False):
    outcome: RepositoryOutcome
    kept: int
    deleted: tuple[ImageEntry, ...]
    archived: tuple[ImageEntry, ...]
    cancelled: tuple[ImageEntry, ...]
    failed: tuple[ImageEntry, ...]
    bytes_reclaimed: int


class _Restores(NamedTuple):
    restored: tuple[ImageEntry, ...]
    failed: tuple[ImageEntry, ...]
    warnings: tuple[str, ...]


def _restores(plan: "RepositoryPlan", ledger: "Ledger") -> _Restores:
    """The planned restores, those ECR refused moved to `failed`, each named in a warning."""
    planned = {d.image_digest: d for d in plan.images if d.action == "restore"}
    failed = _entries_of(planned, ledger.restore_failed, kind="restore-failed")
    warnings = tuple(
        f"{plan.repository_name}: in-use image {entry.image_digest} could not be restored from archive "
        f"({entry.error_code}: {entry.detail}); it stays kept, restore it with ecr-retention restore"
        for entry in failed
    )
    restored = tuple(
        ImageEntry.from_decision(d) for digest, d in planned.items() if digest not in ledger.restore_failed
    )
    return _Restores(restored, failed, warnings)


def _removals(plan: "RepositoryPlan", blocked: Sequence[str], ledger: "Ledger") -> _Removals:
    """The report's removal fields: as planned, or, once the removals were attempted, as the ledger has them."""
    return _removals_done(plan, ledger) if ledger.removing else _planned_removals(plan, blocked)


def _removals_done(plan: "RepositoryPlan", ledger: "Ledger") -> _Removals:
    candidates = {d.image_digest: d for d in plan.images if d.removes}
    deleted, archived = _confirmed(candidates, ledger.deleted), _confirmed(candidates, ledger.archived)
    failed = _entries_of(candidates, ledger.failed, kind="delete-failed")
    untouched = len(candidates) - len(deleted) - len(archived)
    return {
        "outcome": "partial" if failed else "ok",
        "kept": _kept_as_planned(plan) + untouched,
        "deleted": deleted,
        "archived": archived,
        "cancelled": _entries_of(candidates, _without_code(ledger.cancelled), kind="tag-changed"),
        "failed": failed,
        "bytes_reclaimed": _bytes_of(deleted),
    }


def _confirmed(candidates: "Mapping[str, Decision]", digests: Iterable[str]) -> tuple[ImageEntry, ...]:
    return tuple(ImageEntry.from_decision(candidates[d]) for d in digests)


def _kept_as_planned(plan: "RepositoryPlan") -> int:
    return sum(1 for d in plan.images if not d.removes)


def _bytes_of(entries: Iterable[ImageEntry]) -> int:
    return sum(entry.image_size_in_bytes or 0 for entry in entries)


def _without_code(why: Mapping[str, str]) -> dict[str, tuple[str | None, str]]:
    return {digest: (None, detail) for digest, detail in why.items()}


def _entries_of(
    decisions: "Mapping[str, Decision]", what: Mapping[str, tuple[str | None, str]], *, kind: ReasonKind
) -> tuple[ImageEntry, ...]:
    """An entry for each planned image that `what` says (code, detail) went otherwise than planned, by digest."""
    return tuple(
        ImageEntry.from_decision(decisions[d], kind=kind, detail=detail, error_code=code)
        for d, (code, detail) in sorted(what.items())
        if d in decisions
    )


def _planned_removals(plan: "RepositoryPlan", blocked: Sequence[str]) -> _Removals:
    outcome: RepositoryOutcome = (
        "unmanaged" if plan.policy is None else "blocked" if blocked else "skipped" if plan.skipped else "ok"
    )
    return {
        "outcome": outcome,
        "kept": _kept_as_planned(plan),
        "deleted": tuple(ImageEntry.from_decision(d) for d in plan.images if d.action == "delete"),
        "archived": tuple(ImageEntry.from_decision(d) for d in plan.images if d.action == "archive"),
        "bytes_reclaimed": plan.summary.bytes_reclaimed,
    }


ReportFormat = Literal["json", "html", "csv"]


# --- The read model: the facts every renderer reads (the SNS summary, the page, the sheet, the CLI tables) ----------
# A renderer formats these facts; it neither groups the report's lists again nor words a verb of its own.

# Where an image of a repository report stands, one word per list of the report. The sheet shows these words; the
# page and the CLI tables map them to their own labels.
EntryGroup = Literal["keep", "delete", "archive", "cancelled", "failed", "restore", "restore-failed"]
# What was kept, then what the plan removes and what became of the removals, then the in-use images restored.
ENTRY_GROUPS: tuple[EntryGroup, ...] = ("keep", "delete", "archive", "cancelled", "failed", "restore", "restore-failed")


# What a run removes (deletes or archives), and what stays in the repository: kept, restored, or still there after
# a cancelled or failed removal.
REMOVED_GROUPS: tuple[EntryGroup, ...] = ("delete", "archive")
STAYING_GROUPS: tuple[EntryGroup, ...] = ("keep", "restore", "restore-failed", "cancelled", "failed")


def entries_in(repo: RepositoryReport, group: EntryGroup) -> tuple[ImageEntry, ...]:
    lists: dict[EntryGroup, tuple[ImageEntry, ...]] = {
        "keep": repo.kept_images,
        "delete": repo.deleted,
        "archive": repo.archived,
        "cancelled": repo.cancelled,
        "failed": repo.failed,
        "restore": repo.restored,
        "restore-failed": repo.restore_failed,
    }
    return lists[group]


def grouped_entries(
    repo: RepositoryReport, groups: Sequence[EntryGroup] = ENTRY_GROUPS
) -> Iterator[tuple[EntryGroup, ImageEntry]]:
    """Each entry of these groups with its group, the groups in the order given."""
    for group in groups:
        for entry in entries_in(repo, group):
            yield group, entry


def run_entries(report: "RunReport", *groups: EntryGroup) -> Iterator[tuple[RepositoryReport, ImageEntry]]:
    """Each entry of these groups with its repository, repository by repository (the report's order)."""
    for repo in report.repositories:
        for _, entry in grouped_entries(repo, groups):
            yield repo, entry


def run_images(report: "RunReport", *groups: EntryGroup) -> Iterator[ImageEntry]:
    """run_entries without the repositories: each entry of these groups, repository by repository."""
    return chain.from_iterable(entries_in(repo, group) for repo in report.repositories for group in groups)


def removes(repo: RepositoryReport) -> bool:
    """The repository's report deletes or archives something (in dry run: would)."""
    return bool(repo.deleted or repo.archived)


# The verbs of what a run did, worded once: a dry run says what it would do.
Verb = Literal["delete", "archive", "restore", "remove", "reclaim", "enter", "leave"]
PAST_TENSE: dict[Verb, str] = {
    "delete": "deleted",
    "archive": "archived",
    "restore": "restored",
    "remove": "removed",
    "reclaim": "reclaimed",
    "enter": "entered",
    "leave": "left",
}


def action_verb(verb: Verb, *, dry_run: bool) -> str:
    """`deleted`, or in dry run `would delete`."""
    return f"would {verb}" if dry_run else PAST_TENSE[verb]


def passive_verb(verb: Verb, *, dry_run: bool) -> str:
    """`restored`, or in dry run `would be restored`."""
    return f"would be {PAST_TENSE[verb]}" if dry_run else PAST_TENSE[verb]


# What became of an in-use image the run found ARCHIVED: restored (in dry run: would be), its restore refused by ECR,
# or left archived because safety.restore_in_use is false.
Fate = Literal["restored", "restore-failed", "not-restored"]
# "line": the SNS summary's line; "check": the page's check (see InUseArchived.fate_text).
FateForm = Literal["line", "check"]


# safety.quarantine in one repository's report: "enter", archived instead of deleted; "leave", deleted for good after
# the quarantine. RunTotals counts them (entered_quarantine, left_quarantine).
QuarantineStage = Literal["enter", "leave"]


def quarantine_entries(repo: RepositoryReport) -> Iterator[tuple[QuarantineStage, ImageEntry]]:
    stages: tuple[tuple[QuarantineStage, tuple[ImageEntry, ...]], ...] = (
        ("enter", repo.archived),
        ("leave", repo.deleted),
    )
    for stage, entries in stages:
        for entry in entries:
            if entry.kind == "quarantine":
                yield stage, entry


def replicating(repositories: Iterable[RepositoryReport]) -> tuple[RepositoryReport, ...]:
    """The repositories whose deletions replicate (deleteReplication) to other registries."""
    return tuple(repo for repo in repositories if repo.deletion_replicates_to)


def reaches_unwatched_registry(repo: RepositoryReport) -> bool:
    """This run's removals replicate to a registry where no expected cluster guards what is in use."""
    return removes(repo) and any(not replica.expected_clusters for replica in repo.deletion_replicates_to)
