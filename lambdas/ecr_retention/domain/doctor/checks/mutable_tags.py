"""Mutable tags (latest, dev) that go with an image a rule removes, or selects through another tag."""

from __future__ import annotations

from ecr_retention.domain.doctor.context import (
    DoctorContext,
    describe_image,
    is_mutable_tag,
    never_acts,
    removes,
    rule_limit,
)
from ecr_retention.domain.doctor.models import Finding, FindingCode, KeepTags, Severity
from ecr_retention.domain.lifecycle.matching import tags_selected
from ecr_retention.domain.lifecycle.policy import LifecycleRule
from ecr_retention.domain.registry import ImageDetail


def check_mutable_tags(context: DoctorContext) -> list[Finding]:
    findings: list[Finding] = []
    at_risk: list[tuple[ImageDetail, tuple[str, ...], LifecycleRule]] = []
    for image in context.evaluation.images:
        mutable = tuple(tag for tag in image.image_tags if is_mutable_tag(tag))
        if not mutable:
            continue
        first = context.evaluation.first_selector.get(image.image_digest)
        if first is None:
            continue
        rule = context.evaluation.rule(first).rule
        others = tuple(tag for tag in image.image_tags if tag not in mutable)
        acted = context.evaluation.action_of(image.image_digest) is not None
        if not acted and never_acts(rule):
            continue  # a keep-1 rule for one of its tags: the image stays while that tag is on it
        if acted or tags_selected(rule.selection, others):
            # Removed now, or selected first by a rule that does not need the mutable tag to see it.
            # Otherwise the first rule to see the image selects it through the mutable tag itself
            # and does not act on it: the keep-1 protection of seed 002.
            at_risk.append((image, mutable, rule))
    if not at_risk:
        return findings
    fix = (
        "give each mutable tag its own keep-1 rule (tagPatternList [tag], imageCountMoreThan 1) at a higher "
        "priority than every other rule (in the fixed policy): the image carrying the tag is then selected first "
        "by that rule, which never expires it, and lower rules cannot act on it; when the tag moves on, "
        "the old image falls back to the other rules. Add a rule whenever you add a mutable tag."
    )
    for image, mutable, rule in at_risk:
        # A keep-1 rule per mutable tag, and one for each subject the image would go with.
        protection = context.protection(image, mutable, always=True)
        action = context.evaluation.action_of(image.image_digest)
        verdict_rule = context.rule_for(image) if action is not None else rule.label
        tags = ", ".join(mutable)
        others = tuple(tag for tag in image.image_tags if tag not in mutable)
        if not tags_selected(rule.selection, others):
            how = "through the mutable tag itself"
        elif rule.selection.tag_status == "any":
            how = "as it selects every image"
        else:
            how = f"through its other tags ({', '.join(others)})"
        if action is not None:
            severity: Severity = "error"
            code: FindingCode = "mutable-tag-expires"
            consequence = (
                f"ECR archives images, not tags, so pulls of the mutable tag {tags} fail until the image is restored"
                if action == "TRANSITION"
                else f"ECR removes images, not tags, so the mutable tag {tags} goes with it"
            )
            message = (
                f"{verdict_rule} selects {describe_image(image)} {how} and would {removes(action)} it: {consequence}"
            )
        else:
            severity, code = "warning", "mutable-tag-at-risk"
            message = (
                f"mutable tag {tags} rides on {describe_image(image)}, which {rule.label} selects {how}; "
                f"once the rule's {rule_limit(rule)} passes it, the tag goes with the image"
            )
        findings.append(
            Finding(
                severity=severity,
                code=code,
                message=message,
                rule_priority=context.priority_for(image) or rule.rule_priority,
                image_digest=image.image_digest,
                image_tags=image.image_tags,
                fix=fix if isinstance(protection, KeepTags) else protection,
                policy_edit=protection if isinstance(protection, KeepTags) else None,
            )
        )
    return findings
