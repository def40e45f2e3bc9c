"""Run reports for the page's tests, built from the domain models as a run's report step builds them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ecr_retention.domain.in_use.references import MissingReference, Removal
from ecr_retention.domain.inventory.evidence import ManifestEvidence
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.planning.reasons import ReasonKind
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.domain.reporting.run_report import RunFacts, RunReport, run_report_of
from support.builders import digest

STARTED = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
FINISHED = STARTED + timedelta(minutes=4)
MIB = 1024 * 1024
PRICE = StoragePrice(0.10, "ECR standard storage in eu-west-1, test price")
DELETE_RULE = Reason(kind="delete-rule", rule="policies[0].rules[1]", detail="delete tags *.*, older than 30d")


def reason(kind: ReasonKind, detail: str | None = None, rule: str | None = None) -> Reason:
    return Reason(kind=kind, rule=rule, detail=detail or f"{kind} detail")


def entry(
    seed: str,
    *tags: str,
    reasons: Sequence[Reason] = (DELETE_RULE,),
    age: timedelta = timedelta(days=100),
    size: int | None = 10 * MIB,
    kind: ReasonKind | None = None,
    detail: str | None = None,
    error_code: str | None = None,
) -> ImageEntry:
    main = reasons[0]
    return ImageEntry(
        image_digest=digest(seed),
        image_tags=tags,
        image_pushed_at=STARTED - age,
        image_size_in_bytes=size,
        kind=kind or main.kind,
        rule=main.rule,
        detail=detail or main.detail,
        error_code=error_code,
        reasons=tuple(reasons),
    )


def kept(seed: str, *tags: str, kind: ReasonKind = "no-delete-rule", **options: Any) -> ImageEntry:
    return entry(
        seed, *tags, reasons=[reason(kind, rule="policies[0].rules[0]" if kind == "keep-rule" else None)], **options
    )


def repo(
    name: str,
    *,
    kept_images: Sequence[ImageEntry] = (),
    deleted: Sequence[ImageEntry] = (),
    archived: Sequence[ImageEntry] = (),
    cancelled: Sequence[ImageEntry] = (),
    failed: Sequence[ImageEntry] = (),
    **fields: Any,
) -> RepositoryReport:
    fields.setdefault("outcome", "ok")
    everything = (*kept_images, *deleted, *archived, *cancelled, *failed)
    return RepositoryReport(
        repository_name=name,
        policy=fields.pop("policy", "policies[0]"),
        evaluated_at=STARTED + timedelta(minutes=1),
        images=len(everything),
        kept=len(kept_images) + len(cancelled) + len(failed),
        protected_in_use=sum(1 for e in everything if any(r.kind == "in-use" for r in e.reasons)),
        kept_images=tuple(kept_images),
        deleted=tuple(deleted),
        archived=tuple(archived),
        cancelled=tuple(cancelled),
        failed=tuple(failed),
        bytes_reclaimed=sum(e.image_size_in_bytes or 0 for e in deleted),
        **fields,
    )


def missing(repository: str, tag: str, *, workload: str = "Deployment/app", removed: bool = False) -> MissingReference:
    """An in-use reference by tag the next pull cannot get; `removed`: the sentinel recorded lifecycle rule 1."""
    return MissingReference(
        repository_name=repository,
        image=f"{repository}:{tag}",
        image_tag=tag,
        missing="tag",
        in_use_by=(Workload(cluster="prod", namespace="prod", workload=workload, source="pod"),),
        resolved_digests=(digest(f"{repository}:{tag}"),),
        removed=Removal(
            repository_name=repository,
            image_digest=digest(f"{repository}:{tag}"),
            action="deleted",
            cause="lifecycle",
            rule_priority=1,
            removed_at=STARTED - timedelta(hours=2),
            event_id="e-1",
        )
        if removed
        else None,
    )


def prod_manifest(**fields: Any) -> ManifestEvidence:
    values: dict[str, Any] = {
        "cluster": "prod",
        "expected": True,
        "generated_at": STARTED - timedelta(minutes=30),
        "complete": True,
        "references": 12,
    }
    values.update(fields)
    return ManifestEvidence(**values)


def run(
    *repositories: RepositoryReport,
    manifests: Sequence[ManifestEvidence] = (),
    dry_run: bool = False,
    **fields: Any,
) -> RunReport:
    report_url = fields.pop("report_url", None)
    return run_report_of(
        RunFacts(
            run_id=fields.pop("run_id", "20261130T030000Z-schedule-1a2b3c4d"),
            trigger=fields.pop("trigger", "schedule"),
            dry_run=dry_run,
            started_at=STARTED,
            finished_at=FINISHED,
            repositories=repositories,
            registry=RegistryCoordinates(registry_id="123456789012", region="eu-west-1"),
            manifests=manifests if manifests else (prod_manifest(),),
            warnings=fields.pop("run_warnings", ()),
            **fields,
        ),
        report_url=report_url,
    )


def mixed_run(**fields: Any) -> RunReport:
    """A run that did a bit of everything: deletions, an archive, a cancellation, a failure, children, referrers."""
    app = repo(
        "app",
        kept_images=[
            kept("k1", "latest", kind="keep-rule"),
            kept("k2", "1.2.0", kind="keep-newest"),
            kept("k3", kind="min-age", age=timedelta(hours=3)),
            kept("k4", "1.1.0", kind="in-use", age=timedelta(days=400)),
            kept("k5", kind="index-child"),
            kept("k6", "sha256-abc.sig", kind="referrer"),
        ],
        deleted=[
            entry("d1", "1.0.0", age=timedelta(days=40), size=300 * MIB),
            entry("d2", reasons=[DELETE_RULE, reason("index-child", "child of a deleted index")], size=None),
            entry("d3", "sha256-d1.att", reasons=[reason("referrer", "its subject goes")], age=timedelta(days=5)),
        ],
        archived=[entry("a1", "pr-12", age=timedelta(days=20), size=2 * 1024 * MIB)],
        cancelled=[entry("c1", "1.0.1", kind="tag-changed", detail="its tags changed since the plan")],
        failed=[entry("f1", "0.9.0", kind="delete-failed", detail="ECR refused", error_code="ImageNotFoundException")],
        outcome="partial",
    )
    web = repo("team-a/web", kept_images=[kept("w1", "v1")], deleted=[entry("w2", "v0", size=50 * MIB)])
    return run(app, web, **fields)
