"""The policy against the pipeline's plan for the same repository (with `--config`)."""

from __future__ import annotations

from ecr_retention.domain.doctor.context import (
    DoctorContext,
    describe_image,
    plan_keep_reasons,
    protective_tag,
    pull_count_detail,
    removes,
)
from ecr_retention.domain.doctor.models import Finding, KeepTags, RaiseCount


def check_plan_keeps(context: DoctorContext) -> list[Finding]:
    """Images the policy removes that the rules file keeps (needs the plan)."""
    findings: list[Finding] = []
    if context.plan is None:
        return findings
    decisions = {d.image_digest: d for d in context.plan.images}
    for image in context.evaluation.images:
        action = context.evaluation.action_of(image.image_digest)
        found = decisions.get(image.image_digest)
        if action is None or found is None:
            continue
        keeps = [r for r in found.reasons if r.kind == "keep-rule"]
        if not keeps:
            continue
        protection = context.protection(image, [protective_tag(image)] if image.image_tags else [])
        rules = ", ".join(dict.fromkeys(r.rule or r.detail for r in keeps))
        archives = action == "TRANSITION"
        message = (
            f"{context.rule_for(image)} would {removes(action)} {describe_image(image)}, "
            f"which the rules file keeps ({rules})"
        )
        if archives:
            message += ": an archived image cannot be pulled until it is restored, which takes up to 20 minutes"
            pulled = pull_count_detail(context, image)
            if pulled:
                message += f". {pulled}"
        findings.append(
            Finding(
                # An archive is undone by a restore, and no manifest names the image (else archives-in-use).
                severity="warning" if archives else "error",
                code="archives-kept-image" if archives else "expires-kept-image",
                message=message,
                fix=(
                    "protect the image's tag with a higher-priority keep-1 rule (in the fixed policy), or drop "
                    "the native rule and let ecr-retention apply the rules file"
                    + (" (its archive rules archive only what the rules file lets go)" if archives else "")
                    if isinstance(protection, KeepTags)
                    else protection
                ),
                rule_priority=context.priority_for(image),
                image_digest=image.image_digest,
                image_tags=image.image_tags,
                policy_edit=protection if isinstance(protection, KeepTags) else None,
            )
        )
    return findings


def check_against_plan(context: DoctorContext) -> list[Finding]:
    findings: list[Finding] = []
    if context.plan is None:
        return findings
    if context.plan.skipped or any(r.kind == "blocked" for d in context.plan.images for r in d.reasons):
        findings.append(
            Finding(
                severity="info",
                code="plan-not-compared",
                message="the pipeline's plan for this repository is blocked or skipped; count rules were not compared",
                fix="compare against an unblocked plan (the doctor command does this: see docs/lifecycle.md)",
            )
        )
        return findings
    decisions = {d.image_digest: d for d in context.plan.images}
    for rule_evaluation in context.evaluation.rules:
        rule = rule_evaluation.rule
        if not rule.is_count_rule:
            continue
        selected = [image for image in rule_evaluation.selected if image.image_digest in decisions]
        plan_keeps = {i.image_digest for i in selected if not decisions[i.image_digest].removes}
        native_removes = {i.image_digest for i in selected if context.evaluation.action_of(i.image_digest)}
        # Native removes what the plan keeps (errors already name in-use and rules-file keeps).
        lost = [
            image
            for image in rule_evaluation.acted
            if image.image_digest in plan_keeps and not plan_keep_reasons(decisions[image.image_digest])
        ]
        extra = [i for i in selected if i.image_digest not in plan_keeps and i.image_digest not in native_removes]
        if lost:
            ranks = [n + 1 for n, image in enumerate(rule_evaluation.selected) if image.image_digest in plan_keeps]
            needed = max(ranks)
            reasons = "; ".join(
                f"{describe_image(image)}: {decisions[image.image_digest].main_reason.detail}" for image in lost[:3]
            )
            findings.append(
                Finding(
                    severity="warning",
                    code="differs-from-plan",
                    message=(
                        f"{rule.label} keeps {rule.selection.count_number} images but would remove "
                        f"{len(lost)} that the pipeline's plan keeps ({reasons}"
                        f"{' ...' if len(lost) > 3 else ''})"
                    ),
                    fix=(
                        f"raise countNumber to {needed} so that every image the plan keeps stays within the "
                        f"rule's count (in the fixed policy), or drop the rule and let ecr-retention prune"
                    ),
                    rule_priority=rule.rule_priority,
                    policy_edit=RaiseCount(rule_priority=rule.rule_priority, count_number=needed),
                )
            )
        if extra:
            findings.append(
                Finding(
                    severity="info",
                    code="differs-from-plan",
                    message=(
                        f"{rule.label} keeps {len(extra)} images that the pipeline's plan removes: "
                        + ", ".join(describe_image(image) for image in extra[:5])
                        + (" ..." if len(extra) > 5 else "")
                    ),
                    fix="nothing to do: the pipeline is stricter than this rule and removes them itself",
                    rule_priority=rule.rule_priority,
                )
            )
    return findings
