"""A policy that would remove an image an in-use manifest names."""

from __future__ import annotations

from ecr_retention.domain.doctor.context import DoctorContext, describe_image, protective_tag, removes
from ecr_retention.domain.doctor.models import Finding, KeepTags


def check_in_use(context: DoctorContext) -> list[Finding]:
    findings: list[Finding] = []
    for image in context.evaluation.images:
        action = context.evaluation.action_of(image.image_digest)
        usages = context.usages(image)
        if action is None or not usages:
            continue
        workloads = tuple(dict.fromkeys(usages))
        rule = context.rule_for(image)
        where = "; ".join(
            f"cluster {w.cluster}{f' ({w.replica})' if w.replica else ''}, namespace {w.namespace}, "
            f"{w.workload} ({w.source})"
            for w in workloads[:3]
        ) + (f" and {len(workloads) - 3} more" if len(workloads) > 3 else "")
        verb = removes(action)
        if action == "EXPIRE" and any(w.replica for w in workloads):
            where += ", where ECR repeats the expiry (deleteReplication)"
        used_tags = [t for t in image.image_tags if (context.repository_name, t) in context.in_use.by_tag]
        protection = context.protection(image, used_tags or [protective_tag(image)] if image.image_tags else [])
        edit: KeepTags | None = None
        if isinstance(protection, KeepTags):
            which = " and ".join(
                "this image" if member is image else f"its subject {describe_image(member)}"
                for member in context.removed_by_rules(image)
            )
            fix = (
                f"add a higher-priority rule that selects {which} by its tag, so that no later rule can "
                f"{verb} it (in the fixed policy). Native rules cannot see clusters: a durable fix is to drop "
                f"the rule and let ecr-retention prune this repository, which keeps in-use images"
            )
            edit = protection
        else:
            fix = protection
        findings.append(
            Finding(
                severity="error",
                code="expires-in-use",
                message=f"{rule} would {verb} {describe_image(image)}, which runs in {where}",
                fix=fix,
                rule_priority=context.priority_for(image),
                image_digest=image.image_digest,
                image_tags=image.image_tags,
                in_use_by=workloads,
                policy_edit=edit,
            )
        )
    return findings
