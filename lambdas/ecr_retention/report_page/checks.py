"""The checks a reviewer makes by hand on a run, each a line with pass, warn or fail and its evidence.

Pure: every figure comes from the RunReport. Ids are stable (`data-check` on the page, docs/report.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from ecr_retention.domain.doctor.template_finding import TemplateFinding
from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.inventory.evidence import ManifestEvidence
from ecr_retention.domain.planning.plan_parts import ReplicaRegistry
from ecr_retention.domain.planning.reasons import PROTECTING
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.reporting.report import (
    REMOVED_GROUPS,
    ImageEntry,
    QuarantineStage,
    RepositoryReport,
    action_verb,
    quarantine_entries,
    reaches_unwatched_registry,
    removes,
    replicating,
    run_entries,
    run_images,
)
from ecr_retention.domain.reporting.run_report import RunReport, run_in_use_archived
from ecr_retention.domain.reporting.summary import repository_name
from ecr_retention.domain.timestamps import format_timestamp
from ecr_retention.report_page.text import Line, Part, data, line, plural

Status = Literal["pass", "warn", "fail"]
MARKS: dict[Status, str] = {"pass": "\u2713", "warn": "!", "fail": "\u2717"}
WORDS: dict[Status, str] = {"pass": "pass", "warn": "warn", "fail": "FAIL"}
EVIDENCE_LINES = 50  # a check lists at most this many lines of evidence, then says how many more there are
OPEN_EVIDENCE_LINES = 3  # longer evidence is folded (a <details> element: no script needed to unfold it)
_kind_and_rule = attrgetter("kind", "rule")


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    status: Status
    title: str
    summary: Line
    evidence: tuple[Line, ...] = ()

    @property
    def folded(self) -> bool:
        return len(self.evidence) > OPEN_EVIDENCE_LINES

    @property
    def mark(self) -> str:
        return MARKS[self.status]

    @property
    def word(self) -> str:
        return WORDS[self.status]


def capped(lines: Iterable[Line]) -> tuple[Line, ...]:
    shown = list(lines)
    if len(shown) <= EVIDENCE_LINES:
        return tuple(shown)
    return (*shown[:EVIDENCE_LINES], line(f"… and {len(shown) - EVIDENCE_LINES} more"))


# An entry's reasons as the checks count them: (kind, rule) each.
ReasonKey = tuple[tuple[str, str | None], ...]


def reason_key(entry: ImageEntry) -> ReasonKey:
    reasons = entry.reasons
    if len(reasons) == 1:  # most images: without iterators
        return ((reasons[0].kind, reasons[0].rule),)
    return tuple(map(_kind_and_rule, reasons))


def reason_keys(entries: Iterable[ImageEntry]) -> Counter[ReasonKey]:
    """How many of the entries carry each combination of reasons: a run's images share a few dozen, which the checks
    count from rather than from every image again."""
    return Counter(map(reason_key, entries))


def kind_counts(keys: Counter[ReasonKey]) -> Counter[str]:
    """How many of the entries carry each reason kind (an entry counts once per kind)."""
    counts: Counter[str] = Counter()
    for key, entries in keys.items():
        for kind in {kind for kind, _ in key}:
            counts[kind] += entries
    return counts


def named(report: RunReport, repo: RepositoryReport) -> Part:
    """The repository as the checks name it: with its Region (`us-east-1:app`) when the run spans several."""
    return data(repository_name(report, repo))


def image_ref(report: RunReport, repo: RepositoryReport, entry: ImageEntry) -> tuple[Part, ...]:
    return named(report, repo), Part(" "), data(short_digest(entry.image_digest, with_algorithm=True))


def blocked_check(report: RunReport) -> Check:
    if not report.blocked:
        return Check("blocked", "pass", "Not blocked", line("the inventory allowed deletions"))
    return Check(
        "blocked",
        "fail",
        "Blocked",
        line(f"{_blocked_where(report)}: {plural(len(report.blocked), 'reason')}"),
        capped(line(data(reason)) for reason in report.blocked),
    )


def _blocked_where(report: RunReport) -> str:
    """Nothing deleted anywhere only when the run removed nothing (issue 44)."""
    return "nothing was deleted anywhere" if report.outcome == "blocked" else "nothing was deleted where these apply"


def manifest_check(manifest: ManifestEvidence, report: RunReport) -> Check:
    name = f"manifest:{manifest.cluster}"
    title_ = "In-use manifest"
    facts = [plural(manifest.references, "image reference")]
    if manifest.generated_at is not None:
        age = humanize_age(report.finished_at - manifest.generated_at)
        facts[:0] = [
            f"generated {manifest.generated_at:%Y-%m-%d %H:%M:%S} UTC, {age} old at the run's finish",
            "complete" if manifest.complete else "NOT complete (complete: false)",
        ]
    evidence: list[Line] = [line(", ".join(facts))]
    if manifest.note:
        evidence.append(line(data(manifest.note)))
    if manifest.problem:
        evidence.insert(0, line(data(manifest.problem)))
        return Check(
            name, "fail", title_, line("cluster ", data(manifest.cluster), ": blocks the run"), tuple(evidence)
        )
    if manifest.expected:
        summary = line("cluster ", data(manifest.cluster), " (expected): fresh and complete")
    else:
        summary = line(
            "cluster ", data(manifest.cluster), ": protects its images, not required (not in safety.clusters)"
        )
    return Check(name, "pass", title_, summary, tuple(evidence))


def in_use_check(report: RunReport) -> Check:
    readable = [m for m in report.manifests if m.generated_at is not None]
    references = sum(m.references for m in readable)
    protected = report.totals.protected_in_use
    if not readable:
        return Check(
            "in-use",
            "warn",
            "In use",
            line(f"no in-use manifest was read: no image is protected by use ({plural(protected, 'image')} counted)"),
        )
    return Check(
        "in-use",
        "pass",
        "In use",
        line(
            f"{plural(references, 'reference')} in {plural(len(readable), 'manifest')} "
            f"protect {plural(protected, 'image')}"
        ),
    )


def removals_check(report: RunReport, removed: Counter[ReasonKey]) -> Check:
    checked = sum(removed.values())
    offenders = _unprotected_removals(report, removed)
    if offenders:
        return Check(
            "removals-unprotected",
            "fail",
            "Removals unprotected",
            line(f"{plural(len(offenders), 'removal')} of {checked} carry a protecting reason"),
            capped(offenders),
        )
    return Check(
        "removals-unprotected",
        "pass",
        "Removals unprotected",
        line(f"{plural(checked, 'removal')} checked: none is {_either(PROTECTING.values())}"),
    )


def _unprotected_removals(report: RunReport, removed: Counter[ReasonKey]) -> list[Line]:
    """Each removal that carries a protecting reason, named (looked for only when the counts show one)."""
    offenders: list[Line] = []
    if any(kind in PROTECTING for key in removed for kind, _ in key):
        for repo, entry in run_entries(report, *REMOVED_GROUPS):
            kinds = [reason.kind for reason in entry.reasons if reason.kind in PROTECTING]
            if kinds:
                offenders.append(line(*image_ref(report, repo, entry), f" is removed but carries {', '.join(kinds)}"))
    return offenders


def _either(words: Iterable[str]) -> str:
    """`a, b or c`."""
    *first, last = words
    return f"{', '.join(first)} or {last}" if first else last


def spared_check(kept: Counter[ReasonKey]) -> Check:
    counts = kind_counts(kept)
    rules: Counter[tuple[str, str]] = Counter()
    for key, entries in kept.items():
        for kind, rule in key:
            if kind in ("keep-newest", "keep-rule"):
                rules[kind, rule or ""] += entries
    evidence = [
        line(kind, *((" ", data(rule)) if rule else ()), f": {plural(count, 'image')}")
        for (kind, rule), count in sorted(rules.items())
    ]
    return Check(
        "spared",
        "pass",
        "Spared",
        line(
            f"kept by min-age {counts['min-age']}, by keep-newest {counts['keep-newest']}, "
            f"by keep-rule {counts['keep-rule']}"
        ),
        capped(evidence),
    )


def dependents_check(kept: Counter[ReasonKey], removed: Counter[ReasonKey]) -> Check:
    kept_kinds, gone = kind_counts(kept), kind_counts(removed)
    children = ("child", "children")
    referrers = ("signature or attestation", "signatures or attestations")
    return Check(
        "dependents",
        "pass",
        "Dependents",
        line(
            f"kept with their kept parents: {plural(kept_kinds['index-child'], *children)}, "
            f"{plural(kept_kinds['referrer'], *referrers)}; "
            f"removed with their parents: {plural(gone['index-child'], *children)}, {plural(gone['referrer'], *referrers)}"
        ),
    )


def fraction_check(report: RunReport) -> Check:
    skipped = [repo for repo in report.repositories if repo.skipped]
    if not skipped:
        return Check(
            "max-delete-fraction", "pass", "Max delete fraction", line("no repository is over max_delete_fraction")
        )
    return Check(
        "max-delete-fraction",
        "warn",
        "Max delete fraction",
        line(f"{plural(len(skipped), 'repository', 'repositories')} skipped over max_delete_fraction"),
        capped(line(named(report, repo), ": ", data(repo.skipped or "")) for repo in skipped),
    )


def cancellation_check(report: RunReport) -> Check:
    cancelled = list(run_entries(report, "cancelled"))
    if not cancelled:
        return Check("cancellations", "pass", "Re-check", line("no removal was cancelled by the re-check"))
    return Check(
        "cancellations",
        "warn",
        "Re-check",
        line(f"{plural(len(cancelled), 'removal')} cancelled"),
        capped(
            line(*image_ref(report, repo, entry), f" {entry.kind}: ", data(entry.detail)) for repo, entry in cancelled
        ),
    )


def failure_check(report: RunReport) -> Check:
    failed = list(run_entries(report, "failed"))
    stuck = [repo for repo in report.repositories if repo.outcome in ("failed", "busy")]
    if not failed and not stuck:
        return Check("failures", "pass", "Failures", line("no failure"))
    evidence = [line(named(report, repo), f": {repo.outcome}", *error_parts(repo.error)) for repo in stuck]
    evidence += [
        line(*image_ref(report, repo, entry), ": ", data(entry.error_code or "unknown"), " ", data(entry.detail))
        for repo, entry in failed
    ]
    return Check("failures", "fail", "Failures", failure_summary(failed, stuck), capped(evidence))


def failure_summary(failed: Sequence[tuple[RepositoryReport, ImageEntry]], stuck: Sequence[RepositoryReport]) -> Line:
    """How many images failed, by ECR's error code, and how many repositories failed or were busy."""
    codes = Counter(entry.error_code or "unknown" for _, entry in failed)
    by_code = ", ".join(f"{code} {count}" for code, count in sorted(codes.items()))
    return line(
        f"{plural(len(failed), 'image')} failed",
        *((" (", data(by_code), ")") if codes else ()),
        f"; {plural(len(stuck), 'repository', 'repositories')} failed or busy",
    )


def error_parts(error: str | None) -> tuple[Part, ...]:
    return (Part(" ("), data(error), Part(")")) if error else ()


def replication_check(report: RunReport) -> Check:
    replicated = replicating(report.repositories)
    if not replicated:
        return Check("replication", "pass", "Replication", line("no repository's deletions replicate"))
    warn = any(reaches_unwatched_registry(repo) for repo in replicated)
    evidence = [replica_line(report, repo, replica) for repo in replicated for replica in repo.deletion_replicates_to]
    summary = line(
        f"{plural(len(replicated), 'repository', 'repositories')} replicate deletions",
        "; a destination without an expected cluster receives this run's removals" if warn else "",
    )
    return Check("replication", "warn" if warn else "pass", "Replication", summary, capped(evidence))


def replica_line(report: RunReport, repo: RepositoryReport, replica: ReplicaRegistry) -> Line:
    """Where one repository's deletions reach, and whether an expected cluster watches that registry."""
    if replica.expected_clusters:
        watched = line(" (expected clusters there: ", data(", ".join(replica.expected_clusters)), ")")
    else:
        watched = line(" (no expected cluster there", "" if removes(repo) else "; this run removes nothing here", ")")
    return line(named(report, repo), " deletions reach ", data(str(replica)), *watched)


def in_use_archived_check(report: RunReport) -> Check:
    """In-use images found ARCHIVED: their workloads cannot pull them until they are restored."""
    found = run_in_use_archived(report)
    if not found:
        return Check("in-use-archived", "pass", "In use, archived", line("no in-use image was found archived"))
    restores = {
        (report.region_of(repo), repo.repository_name, entry.image_digest)
        for repo, entry in run_entries(report, "restore")
    }
    # The page names each image's workloads by digest across the run (as it always has): an image found archived in
    # two repositories shows the workloads of the later one in both.
    workloads = {image.entry.image_digest: image.workloads for image in found}
    return Check(
        "in-use-archived",
        "warn",
        "In use, archived",
        line(f"{plural(len(found), 'in-use image')} found archived, {plural(len(restores), 'restore')}"),
        capped(
            line(
                *image_ref(report, image.repository, image.entry),
                f" {image.fate_text(dry_run=report.dry_run, form='check')}, used by ",
                data(workloads[image.entry.image_digest]),
            )
            for image in found
        ),
    )


def in_use_missing_check(report: RunReport) -> Check:
    """In-use references the next pull cannot get (SPEC "The sentinel"): removed by something else, since the planner
    never removes what runs. A warning, not a failure: the page's FAIL marks what this run did wrong or could not do,
    and this finding neither blocks the run nor changes its outcome."""
    missing = report.in_use_missing
    if not missing:
        return Check(
            "in-use-missing", "pass", "In use, missing", line("no in-use reference into the registry was found missing")
        )
    return Check(
        "in-use-missing",
        "warn",
        "In use, missing",
        line(f"In-use images missing: {len(missing)}; the next pull of their workloads fails"),
        capped(line(data(found.detail)) for found in missing),
    )


def quarantine_check(report: RunReport) -> Check:
    """safety.quarantine: what entered it (archived instead of deleted), what left it for good (deleted), and how
    many wait archived. Information for the reviewer, never a failure: the planner decided each from lastArchivedAt."""
    totals = report.totals
    if not totals.quarantined:
        return Check("quarantine", "pass", "Quarantine", line("no image entered or left a quarantine"))
    entered = action_verb("enter", dry_run=report.dry_run)
    left = action_verb("leave", dry_run=report.dry_run)
    stages: dict[QuarantineStage, str] = {"enter": entered, "leave": f"{left} for good"}
    evidence = [
        line(*image_ref(report, repo, entry), f" {stages[stage]}: ", data(entry.detail))
        for repo in report.repositories
        for stage, entry in quarantine_entries(repo)
    ]
    return Check(
        "quarantine",
        "pass",
        "Quarantine",
        line(
            f"{plural(totals.entered_quarantine, 'image')} {entered} quarantine (archived instead of deleted), "
            f"{totals.left_quarantine} {left} it for good (deleted), {totals.in_quarantine} waiting archived"
        ),
        capped(evidence),
    )


def findings_check(report: RunReport) -> Check:
    lifecycle = [(repo, finding) for repo in report.repositories for finding in repo.lifecycle_findings]
    templates = report.template_findings
    if not lifecycle and not templates:
        return Check(
            "findings",
            "pass",
            "Native lifecycle",
            line("no finding on native lifecycle policies or creation templates"),
        )
    evidence = [
        line(named(report, repo), f": {finding.severity} {finding.code}: ", data(finding.message))
        for repo, finding in lifecycle
    ]
    evidence += _template_evidence(templates)
    errors = sum(1 for _, finding in lifecycle if finding.severity == "error")
    return Check(
        "findings",
        "warn",
        "Native lifecycle",
        line(
            f"{plural(len(lifecycle), 'lifecycle policy finding')} ({errors} errors), "
            f"{plural(len(templates), 'creation-template finding')}"
        ),
        capped(evidence),
    )


def _template_evidence(templates: Sequence[TemplateFinding]) -> list[Line]:
    return [
        line("template ", data(finding.template), f": {finding.severity} {finding.code}: ", data(finding.message))
        for finding in templates
    ]


def warnings_check(report: RunReport) -> Check:
    if not report.warnings:
        return Check("warnings", "pass", "Warnings", line("no warning"))
    return Check(
        "warnings",
        "warn",
        "Warnings",
        line(plural(len(report.warnings), "warning")),
        capped(line(data(warning)) for warning in report.warnings),
    )


def checks_of(report: RunReport) -> tuple[Check, ...]:
    # The kept and the removed images' reasons, counted once for the checks that read them.
    kept, removed = reason_keys(run_images(report, "keep")), reason_keys(run_images(report, *REMOVED_GROUPS))
    return (
        blocked_check(report),
        *(manifest_check(manifest, report) for manifest in sorted(report.manifests, key=lambda m: not m.expected)),
        in_use_check(report),
        in_use_archived_check(report),
        in_use_missing_check(report),
        removals_check(report, removed),
        spared_check(kept),
        dependents_check(kept, removed),
        fraction_check(report),
        quarantine_check(report),
        cancellation_check(report),
        failure_check(report),
        replication_check(report),
        findings_check(report),
        *holds_ending_checks(report),
        warnings_check(report),
    )


def holds_ending_checks(report: RunReport) -> tuple[Check, ...]:
    """The holds that end within 7 days (none: no check, and the page is as it was before holds)."""
    if not report.holds_ending:
        return ()
    evidence = (
        line(
            data(held.image),
            " in ",
            data(held.region),
            ", held by ",
            data(held.owner),
            " until ",
            data(format_timestamp(held.until)),
            ": ",
            data(held.reason),
        )
        for held in report.holds_ending
    )
    return (
        Check(
            "holds-ending",
            "warn",
            "Holds ending within 7 days",
            line(f"{plural(len(report.holds_ending), 'hold')} end within 7 days: extend them or let them end"),
            capped(evidence),
        ),
    )
