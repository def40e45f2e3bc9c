"""Mutable tags (latest, dev) that go with an image a rule removes, or selects through another tag."""

from __future__ import annotations

from collections.abc import Iterator

from ecr_retention.domain.doctor.context import (
    DoctorContext,
    describe_image,
    keeps_forever,
    never_acts,
    removes,
    rule_limit,
)
from ecr_retention.domain.doctor.models import Finding, FindingCode, KeepTags, Severity
from ecr_retention.domain.lifecycle.evaluation import PreviewActionType
from ecr_retention.domain.lifecycle.matching import tags_selected
from ecr_retention.domain.lifecycle.policy import LifecycleRule
from ecr_retention.domain.registry.images import ImageDetail

MUTABLE_TAG_FIX = (
    "give each mutable tag its own keep-1 rule (tagPatternList [tag], imageCountMoreThan 1) at a higher "
    "priority than every other rule (in the fixed policy): the image carrying the tag is then selected first "
    "by that rule, which never expires it, and lower rules cannot act on it; when the tag moves on, "
    "the old image falls back to the other rules. Add a rule whenever you add a mutable tag."
)


def check_mutable_tags(context: DoctorContext) -> list[Finding]:
    return [_finding(context, image, mutable, rule) for image, mutable, rule in _mutable_tags_at_risk(context)]


def _mutable_tags_at_risk(context: DoctorContext) -> Iterator[tuple[ImageDetail, tuple[str, ...], LifecycleRule]]:
    """Each image with mutable tags that a rule removes or may remove, with those tags and the first rule
    that selects it."""
    for image in context.evaluation.images:
        mutable = tuple(tag for tag in image.image_tags if context.is_mutable(tag))
        first = context.evaluation.first_selector.get(image.image_digest)
        if not mutable or first is None:
            continue
        rule = context.evaluation.rule(first).rule
        if _at_risk(context, image, mutable, rule):
            yield image, mutable, rule


def _at_risk(context: DoctorContext, image: ImageDetail, mutable: tuple[str, ...], rule: LifecycleRule) -> bool:
    """Removed now, or selected first by a rule that does not need the mutable tag to see it. Otherwise
    the first rule to see the image selects it through the mutable tag itself and does not act on it:
    the keep-1 protection of seed 002."""
    if context.evaluation.action_of(image.image_digest) is not None:
        return True
    if never_acts(rule) or keeps_forever(rule):
        return False  # a keep-1 rule for one of its tags, or a keep-forever limit: the image stays
    return tags_selected(rule.selection, _other_tags(image, mutable))


def _other_tags(image: ImageDetail, mutable: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(tag for tag in image.image_tags if tag not in mutable)


def _finding(context: DoctorContext, image: ImageDetail, mutable: tuple[str, ...], rule: LifecycleRule) -> Finding:
    # A keep-1 rule per mutable tag, and one for each subject the image would go with.
    protection = context.protection(image, mutable, always=True)
    action = context.evaluation.action_of(image.image_digest)
    how = _how_selected(rule, _other_tags(image, mutable))
    severity: Severity
    code: FindingCode
    if action is not None:
        severity, code = "error", "mutable-tag-expires"
        message = _removed_message(context, image, mutable, action, how)
    else:
        severity, code = "warning", "mutable-tag-at-risk"
        message = (
            f"mutable tag {', '.join(mutable)} rides on {describe_image(image)}, which {rule.label} selects {how}; "
            f"once the rule's {rule_limit(rule)} passes it, {_then(rule, mutable)}"
        )
    return Finding(
        severity=severity,
        code=code,
        message=message,
        rule_priority=context.priority_for(image) or rule.rule_priority,
        image_digest=image.image_digest,
        image_tags=image.image_tags,
        fix=MUTABLE_TAG_FIX if isinstance(protection, KeepTags) else protection,
        policy_edit=protection if isinstance(protection, KeepTags) else None,
    )


def _then(rule: LifecycleRule, mutable: tuple[str, ...]) -> str:
    tags = ", ".join(mutable)
    if rule.action.type == "transition":
        return f"the image is archived with the tag on it, and pulls of {tags} fail until it is restored"
    return "the tag goes with the image"


def _how_selected(rule: LifecycleRule, others: tuple[str, ...]) -> str:
    if not tags_selected(rule.selection, others):
        return "through the mutable tag itself"
    if rule.selection.tag_status == "any":
        return "as it selects every image"
    return f"through its other tags ({', '.join(others)})"


def _removed_message(
    context: DoctorContext, image: ImageDetail, mutable: tuple[str, ...], action: PreviewActionType, how: str
) -> str:
    tags = ", ".join(mutable)
    consequence = (
        f"ECR archives images, not tags, so pulls of the mutable tag {tags} fail until the image is restored"
        if action == "TRANSITION"
        else f"ECR removes images, not tags, so the mutable tag {tags} goes with it"
    )
    return (
        f"{context.rule_for(image)} selects {describe_image(image)} {how} and would {removes(action)} it: {consequence}"
    )
