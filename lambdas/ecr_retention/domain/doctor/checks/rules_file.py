"""The policy against the pipeline's plan for the same repository (with `--config`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ecr_retention.domain.doctor.context import (
    DoctorContext,
    describe_image,
    plan_keep_reasons,
    pull_count_detail,
    removes,
)
from ecr_retention.domain.doctor.models import Finding, KeepTags, RaiseCount
from ecr_retention.domain.lifecycle.evaluation import PreviewActionType, RuleEvaluation
from ecr_retention.domain.planning.plan import Decision, RepositoryPlan
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.registry.images import ImageDetail

PLAN_KEEPS_FIX = (
    "protect the image's tag with a higher-priority keep-1 rule (in the fixed policy), or drop "
    "the native rule and let ecr-retention apply the rules file"
)
ARCHIVE_RULES_NOTE = " (its archive rules archive only what the rules file lets go)"
RESTORE_DELAY = ": an archived image cannot be pulled until it is restored, which takes up to 20 minutes"
PLAN_NOT_COMPARED = Finding(
    severity="info",
    code="plan-not-compared",
    message="the pipeline's plan for this repository is blocked or skipped; count rules were not compared",
    fix="compare against an unblocked plan (the doctor command does this: see docs/lifecycle.md)",
)
LOST_NAMED, EXTRA_NAMED = 3, 5  # how many images a differs-from-plan message names before "..."


def check_plan_keeps(context: DoctorContext) -> list[Finding]:
    """Images the policy removes that the rules file keeps (needs the plan)."""
    return [_plan_keeps_finding(context, image, action, keeps) for image, action, keeps in _removed_but_kept(context)]


def _removed_but_kept(context: DoctorContext) -> Iterator[tuple[ImageDetail, PreviewActionType, list[Reason]]]:
    """Each image a rule removes whose plan decision has a keep rule of the rules file, with those reasons."""
    if context.plan is None:
        return
    for image in context.evaluation.images:
        action = context.evaluation.action_of(image.image_digest)
        found = context.decisions.get(image.image_digest)
        if action is None or found is None:
            continue
        keeps = [r for r in found.reasons if r.kind == "keep-rule"]
        if keeps:
            yield image, action, keeps


def _plan_keeps_finding(
    context: DoctorContext, image: ImageDetail, action: PreviewActionType, keeps: Sequence[Reason]
) -> Finding:
    protection = context.protection(image, [context.pin_tag(image)] if image.image_tags else [])
    archives = action == "TRANSITION"
    return Finding(
        # An archive is undone by a restore, and no manifest names the image (else archives-in-use).
        severity="warning" if archives else "error",
        code="archives-kept-image" if archives else "expires-kept-image",
        message=_plan_keeps_message(context, image, action, keeps),
        fix=_plan_keeps_fix(protection, archives=archives),
        rule_priority=context.priority_for(image),
        image_digest=image.image_digest,
        image_tags=image.image_tags,
        policy_edit=protection if isinstance(protection, KeepTags) else None,
    )


def _plan_keeps_fix(protection: KeepTags | str, *, archives: bool) -> str:
    if not isinstance(protection, KeepTags):
        return protection  # why no native rule can keep the image
    return PLAN_KEEPS_FIX + (ARCHIVE_RULES_NOTE if archives else "")


def _plan_keeps_message(
    context: DoctorContext, image: ImageDetail, action: PreviewActionType, keeps: Sequence[Reason]
) -> str:
    rules = ", ".join(dict.fromkeys(r.rule or r.detail for r in keeps))
    message = (
        f"{context.rule_for(image)} would {removes(action)} {describe_image(image)}, "
        f"which the rules file keeps ({rules})"
    )
    if action == "TRANSITION":
        message += RESTORE_DELAY + _pull_count_sentence(context, image)
    return message


def _pull_count_sentence(context: DoctorContext, image: ImageDetail) -> str:
    pulled = pull_count_detail(context, image)
    return f". {pulled}" if pulled else ""


def check_against_plan(context: DoctorContext) -> list[Finding]:
    """Count rules whose keeps differ from the plan's: images the plan keeps that a rule removes, and images
    a rule keeps that the plan removes."""
    if context.plan is None:
        return []
    if _plan_not_comparable(context.plan):
        return [PLAN_NOT_COMPARED]
    return [
        finding
        for rule_evaluation in context.evaluation.rules
        if rule_evaluation.rule.is_count_rule
        for finding in _compare_count_rule(context, rule_evaluation)
    ]


def _plan_not_comparable(plan: RepositoryPlan) -> bool:
    return bool(plan.skipped) or any(r.kind == "blocked" for d in plan.images for r in d.reasons)


def _compare_count_rule(context: DoctorContext, rule_evaluation: RuleEvaluation) -> list[Finding]:
    selected = [image for image in rule_evaluation.selected if image.image_digest in context.decisions]
    plan_keeps = {i.image_digest for i in selected if not context.decisions[i.image_digest].removes}
    lost = _removed_though_plan_keeps(context, rule_evaluation, plan_keeps)
    extra = _kept_though_plan_removes(context, selected, plan_keeps)
    findings = [_removes_what_plan_keeps(rule_evaluation, lost, plan_keeps, context.decisions)] if lost else []
    if extra:
        findings.append(_keeps_what_plan_removes(rule_evaluation, extra))
    return findings


def _removed_though_plan_keeps(
    context: DoctorContext, rule_evaluation: RuleEvaluation, plan_keeps: set[str]
) -> list[ImageDetail]:
    """What the rule removes and the plan keeps, except what the plan keeps for a keep rule or because it
    is in use: errors already name those."""
    return [
        image
        for image in rule_evaluation.acted
        if image.image_digest in plan_keeps and not plan_keep_reasons(context.decisions[image.image_digest])
    ]


def _kept_though_plan_removes(
    context: DoctorContext, selected: Sequence[ImageDetail], plan_keeps: set[str]
) -> list[ImageDetail]:
    return [
        image
        for image in selected
        if image.image_digest not in plan_keeps and not context.evaluation.action_of(image.image_digest)
    ]


def _removes_what_plan_keeps(
    rule_evaluation: RuleEvaluation,
    lost: Sequence[ImageDetail],
    plan_keeps: set[str],
    decisions: Mapping[str, Decision],
) -> Finding:
    rule = rule_evaluation.rule
    # The count that holds every image the plan keeps: the rank of the last of them among those the rule selects.
    needed = max(n + 1 for n, image in enumerate(rule_evaluation.selected) if image.image_digest in plan_keeps)
    reasons = "; ".join(
        f"{describe_image(image)}: {decisions[image.image_digest].main_reason.detail}" for image in lost[:LOST_NAMED]
    )
    return Finding(
        severity="warning",
        code="differs-from-plan",
        message=(
            f"{rule.label} keeps {rule.selection.count_number} images but would remove "
            f"{len(lost)} that the pipeline's plan keeps ({reasons}"
            f"{' ...' if len(lost) > LOST_NAMED else ''})"
        ),
        fix=(
            f"raise countNumber to {needed} so that every image the plan keeps stays within the "
            f"rule's count (in the fixed policy), or drop the rule and let ecr-retention prune"
        ),
        rule_priority=rule.rule_priority,
        policy_edit=RaiseCount(rule_priority=rule.rule_priority, count_number=needed),
    )


def _keeps_what_plan_removes(rule_evaluation: RuleEvaluation, extra: Sequence[ImageDetail]) -> Finding:
    rule = rule_evaluation.rule
    return Finding(
        severity="info",
        code="differs-from-plan",
        message=(
            f"{rule.label} keeps {len(extra)} images that the pipeline's plan removes: "
            + ", ".join(describe_image(image) for image in extra[:EXTRA_NAMED])
            + (" ..." if len(extra) > EXTRA_NAMED else "")
        ),
        fix="nothing to do: the pipeline is stricter than this rule and removes them itself",
        rule_priority=rule.rule_priority,
    )
