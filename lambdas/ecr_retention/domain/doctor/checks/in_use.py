"""A policy that would remove an image an in-use manifest names: `expires-in-use` when a rule expires it,
`archives-in-use` when a rule transitions it to archive (an archived image cannot be pulled)."""

from __future__ import annotations

from collections.abc import Sequence

from ecr_retention.domain.doctor.context import (
    DoctorContext,
    describe_image,
    pull_count_detail,
    removes,
)
from ecr_retention.domain.doctor.models import Finding, KeepTags, Severity
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.lifecycle.evaluation import PreviewActionType
from ecr_retention.domain.registry.images import ImageDetail

ARCHIVE_DANGER = (
    "an archived image cannot be pulled: its next pull (a restart, a rescheduled pod, a scale-out) fails until "
    "it is restored (ImagePullBackOff), and restores take up to 20 minutes"
)
REPLICA_ARCHIVE = (
    "ECR documents no replication of an archive, only of deletions, so the copy there stays pullable; but when "
    "this policy later expires the archived image (sinceImageTransitioned), ECR deletes it there too (deleteReplication)"
)


def check_in_use(context: DoctorContext) -> list[Finding]:
    findings: list[Finding] = []
    for image in context.evaluation.images:
        action = context.evaluation.action_of(image.image_digest)
        usages = context.usages(image)
        if action is None or not usages:
            continue
        findings.append(_finding(context, image, action, tuple(dict.fromkeys(usages))))
    return findings


def _where(workloads: Sequence[Workload]) -> str:
    return "; ".join(
        f"cluster {w.cluster}{f' ({w.replica})' if w.replica else ''}, namespace {w.namespace}, "
        f"{w.workload} ({w.source})"
        for w in workloads[:3]
    ) + (f" and {len(workloads) - 3} more" if len(workloads) > 3 else "")


def _finding(
    context: DoctorContext, image: ImageDetail, action: PreviewActionType, workloads: tuple[Workload, ...]
) -> Finding:
    protection = _protection(context, image)
    expires = action == "EXPIRE"
    return Finding(
        severity=_severity(action, workloads),
        code="expires-in-use" if expires else "archives-in-use",
        message=_expiry_message(context, image, workloads) if expires else _archive_message(context, image, workloads),
        fix=_keep_rule_fix(context, image, action) if isinstance(protection, KeepTags) else protection,
        rule_priority=context.priority_for(image),
        image_digest=image.image_digest,
        image_tags=image.image_tags,
        in_use_by=workloads,
        policy_edit=protection if isinstance(protection, KeepTags) else None,
    )


def _protection(context: DoctorContext, image: ImageDetail) -> KeepTags | str:
    """What protects the image: its tags in use, else a pin tag; an untagged image by its digest."""
    used_tags = [t for t in image.image_tags if (context.repository_name, t) in context.in_use.by_tag]
    return context.protection(image, used_tags or [context.pin_tag(image)] if image.image_tags else [])


def _severity(action: PreviewActionType, workloads: Sequence[Workload]) -> Severity:
    """An error, but for an archive that only clusters of delete-replicating destinations run: their copy
    stays until an expiry reaches it."""
    if action == "EXPIRE" or _runs_here(workloads):
        return "error"
    return "warning"


def _runs_here(workloads: Sequence[Workload]) -> bool:
    return any(not w.replica for w in workloads)


def _expiry_message(context: DoctorContext, image: ImageDetail, workloads: Sequence[Workload]) -> str:
    where = _where(workloads)
    if any(w.replica for w in workloads):
        where += ", where ECR repeats the expiry (deleteReplication)"
    return f"{context.rule_for(image)} would expire {describe_image(image)}, which runs in {where}"


def _archive_message(context: DoctorContext, image: ImageDetail, workloads: Sequence[Workload]) -> str:
    danger = ARCHIVE_DANGER if _runs_here(workloads) else REPLICA_ARCHIVE
    message = (
        f"{context.rule_for(image)} would archive {describe_image(image)}, which runs in {_where(workloads)}: {danger}"
    )
    pulled = pull_count_detail(context, image)
    return f"{message}. {pulled}" if pulled else message


def _keep_rule_fix(context: DoctorContext, image: ImageDetail, action: PreviewActionType) -> str:
    which = " and ".join(
        "this image" if member is image else f"its subject {describe_image(member)}"
        for member in context.removed_by_rules(image)
    )
    return (
        f"add a higher-priority rule that selects {which} by its tag, so that no later rule can "
        f"{removes(action)} it (in the fixed policy). Native rules cannot see clusters: a durable fix is to drop "
        + (
            "the rule and let ecr-retention prune this repository, which keeps in-use images"
            if action == "EXPIRE"
            else "the transition rule and archive with ecr-retention's archive rules (`delete: {..., archive: "
            "true}`), which know what runs, never archive an in-use image and restore an archived one a "
            "cluster runs"
        )
    )
