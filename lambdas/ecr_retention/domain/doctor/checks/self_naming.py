"""Age rules that name a mutable tag: "expire images tagged latest pushed more than 180 days ago". The rule selects
the image carrying the tag through the tag itself, so nothing is at risk today and no other check speaks; the day
the image grows old enough, the rule deletes (or archives) it, and the tag with it. Reported as soon as the policy is
read, with the date it would act on the image the tag is on now."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from ecr_retention.domain.doctor.context import DAY_SECONDS, DoctorContext, days_text, keeps_forever, removes
from ecr_retention.domain.doctor.models import Finding
from ecr_retention.domain.doctor.tag_kinds import DEFAULT_TAG_KINDS, TagKinds
from ecr_retention.domain.lifecycle.matching import selects, tags_selected
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule
from ecr_retention.domain.lifecycle.timing import age_reference
from ecr_retention.domain.registry.images import ImageDetail

AGED_BY = {"sinceImagePushed": "pushed", "sinceImagePulled": "last pulled"}


def mutable_tags_named(rule: LifecycleRule, is_mutable: Callable[[str], bool]) -> tuple[str, ...]:
    """The mutable tags an age rule over standard images names by a pattern without `*`; none for a keep-forever age.
    (A count rule that names one tag selects one image and keeps it: countNumber is at least 1.)"""
    if not _ages_tags(rule):
        return ()
    return tuple(p for p in rule.selection.tag_pattern_list or () if "*" not in p and is_mutable(p))


def mutable_prefixes(rule: LifecycleRule, is_mutable: Callable[[str], bool]) -> tuple[str, ...]:
    """The prefixes of an age rule that are a mutable tag too: the prefix `dev` selects the tag `dev`. Only reported
    where an image carries that very tag, since most prefixes (`feature`, `review-`) are never a tag."""
    if not _ages_tags(rule):
        return ()
    return tuple(prefix for prefix in rule.selection.tag_prefix_list or () if is_mutable(prefix))


def _ages_tags(rule: LifecycleRule) -> bool:
    selection = rule.selection
    return selection.count_type in AGED_BY and selection.tag_status == "tagged" and not keeps_forever(rule)


def check_rules_naming_mutable_tags(context: DoctorContext) -> list[Finding]:
    findings: list[Finding] = []
    for rule in context.policy.ordered_rules:
        for tag in mutable_tags_named(rule, context.is_mutable):
            carrier = _carrier(context, tag)
            if carrier is None:
                findings.append(_finding(rule, tag, "no image carries it now"))
            elif _only_this_rule_will_take(context, rule, carrier):
                findings.append(_finding(rule, tag, _when(context, rule, tag, carrier)))
        for tag in mutable_prefixes(rule, context.is_mutable):
            carrier = _carrier(context, tag)
            if carrier is not None and _only_this_rule_will_take(context, rule, carrier):
                findings.append(_finding(rule, tag, _when(context, rule, tag, carrier)))
    return findings


def check_rules_naming_mutable_tags_in_text(
    policy: LifecyclePolicy, kinds: TagKinds = DEFAULT_TAG_KINDS
) -> list[Finding]:
    """The same check on a policy's text alone (repository creation templates): no image, so no date, and only
    tags named by a pattern without `*`."""
    return [
        _finding(rule, tag, "the image it is on goes once it is old enough")
        for rule in policy.ordered_rules
        for tag in mutable_tags_named(rule, kinds.is_mutable)
    ]


def _carrier(context: DoctorContext, tag: str) -> ImageDetail | None:
    return next((image for image in context.evaluation.images if tag in image.image_tags), None)


def _only_this_rule_will_take(context: DoctorContext, rule: LifecycleRule, image: ImageDetail) -> bool:
    """The rule selects the image first, through the mutable tag alone, and does not act on it yet. Acting now is
    `mutable-tag-expires`; an image a higher rule selects is that rule's; and one its build tags select too is
    `mutable-tag-at-risk`."""
    digest = image.image_digest
    others = [tag for tag in image.image_tags if not context.is_mutable(tag)]
    return (
        selects(rule.selection, image)
        and not tags_selected(rule.selection, others)
        and context.evaluation.first_selector.get(digest) == rule.rule_priority
        and context.evaluation.action_of(digest) is None
    )


def _when(context: DoctorContext, rule: LifecycleRule, tag: str, image: ImageDetail) -> str:
    """`latest: image pushed 170 days ago, expires on 2026-12-11 unless latest moves`."""
    moment = age_reference(image, rule.selection.count_type)
    if moment is None:
        return f"{tag}: the image has no time ECR can age it by"
    age = days_text((context.evaluation.now - moment).total_seconds() / DAY_SECONDS)
    due = (moment + timedelta(days=rule.selection.count_number)).date().isoformat()
    verb = "expires" if rule.action.type == "expire" else "is archived"
    unless = f"unless {tag} moves" + (
        " or the image is pulled" if rule.selection.count_type == "sinceImagePulled" else ""
    )
    return f"{tag}: image {AGED_BY[rule.selection.count_type]} {age} ago, {verb} on {due} {unless}"


def _finding(rule: LifecycleRule, tag: str, when: str) -> Finding:
    selection = rule.selection
    verb = removes(rule.action.type.upper())
    return Finding(
        severity="warning",
        code="rule-names-mutable-tag",
        message=(
            f"{rule.label} names the mutable tag {tag} and {verb}s images {AGED_BY[selection.count_type]} more than "
            f"{days_text(selection.count_number)} ago: ECR {verb}s images, not tags, so the image {tag} is on goes "
            f"with the tag once it is that old; {when}"
        ),
        fix=(
            f"if {tag} must stay, put a keep-1 rule for it (tagPatternList [{tag}], imageCountMoreThan 1) ahead of "
            f"{rule.label}; if {rule.label} is meant to drop a {tag} that stopped moving, nothing to change"
        ),
        rule_priority=rule.rule_priority,
        image_tags=(tag,),
    )
