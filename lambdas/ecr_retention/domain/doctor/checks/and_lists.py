"""Tag lists read as OR: ECR selects an image for a rule whose `tagPrefixList` or `tagPatternList` has several
entries only when the image carries a tag for each entry. `["dev", "staging"]` ("keep the last 30 dev and staging
images") therefore selects only images tagged both ways, usually none, and the images the rule was written for
fall to the rules below it."""

from __future__ import annotations

from collections.abc import Sequence

from ecr_retention.domain.doctor.context import DoctorContext, removes
from ecr_retention.domain.doctor.models import Finding, SplitRule
from ecr_retention.domain.lifecycle.matching import storage_class_of, tag_matches
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule, LifecycleSelection
from ecr_retention.domain.registry.images import ImageDetail

AND_RULE = "ECR requires a tag for every entry"


def entries(selection: LifecycleSelection) -> tuple[str, ...]:
    """The entries as written: prefixes or patterns."""
    return selection.tag_prefix_list or selection.tag_pattern_list or ()


def entry_names(selection: LifecycleSelection) -> tuple[str, ...]:
    """The entries as the tags they match: a prefix `dev` is `dev*`."""
    return selection.patterns


def has_several_entries(rule: LifecycleRule) -> bool:
    return rule.selection.tag_status == "tagged" and len(entries(rule.selection)) > 1


def split_edit(rule: LifecycleRule) -> SplitRule:
    return SplitRule(rule_priority=rule.rule_priority, entries=entries(rule.selection))


def split_fix(rule: LifecycleRule, *, fixed_policy: bool = True) -> str:
    listed = ", ".join(entries(rule.selection))
    who = "the fixed policy does, renumbering the rules after it" if fixed_policy else "renumber the rules after it"
    return (
        f"if {rule.label} is meant for images tagged any one of {listed}, write one rule per entry with the same "
        f"count or age ({who}); a list of several entries is AND in ECR, and OR is several rules"
    )


def check_and_lists(context: DoctorContext) -> list[Finding]:
    """A multi-entry rule that selects no image, or that lets an image tagged for one entry only (not every entry)
    fall to a lower rule that expires or archives it, however many images carry every entry.

    Always an error: the same mistake has the same severity whatever the images (issue 43). Whether no image, one
    image or many carry every entry says how much the list costs today, not whether it is a mistake, and a CI gate
    must not pass a policy because CI happened to move one tag onto another's image. A list that costs nothing (it
    selects images and nothing tagged for one entry only is removed below it) is not reported at all, so a deliberate
    AND that loses nothing passes; the text-only check of templates, which has no images, warns."""
    findings: list[Finding] = []
    for rule in context.policy.ordered_rules:
        if not has_several_entries(rule):
            continue
        selected = context.evaluation.rule(rule.rule_priority).selected
        if selected and not removed_below(context, rule):
            continue
        matched = [_images_matching(context, rule, pattern) for pattern in entry_names(rule.selection)]
        findings.append(
            Finding(
                severity="error",
                code="tag-list-is-and",
                message=_message(context, rule, matched, len(selected)),
                fix=split_fix(rule),
                rule_priority=rule.rule_priority,
                policy_edit=split_edit(rule),
            )
        )
    return findings


def removed_below(context: DoctorContext, rule: LifecycleRule) -> list[ImageDetail]:
    """The images of the rule's storage class tagged for some entry (not every one) that a lower rule expires or
    archives: lost because ECR reads the list as AND."""
    lost: list[ImageDetail] = []
    for image in _images_matching_any(context, rule):
        verdict = context.evaluation.verdicts.get(image.image_digest)
        if verdict is not None and verdict.rule.rule_priority > rule.rule_priority:
            lost.append(image)
    return lost


def _images_matching(context: DoctorContext, rule: LifecycleRule, pattern: str) -> list[ImageDetail]:
    """The images of the rule's storage class with a tag matching one entry, youngest first."""
    storage_class = rule.selection.effective_storage_class
    return [
        image
        for image in context.evaluation.images
        if storage_class_of(image) == storage_class and any(tag_matches(tag, pattern) for tag in image.image_tags)
    ]


def _images_matching_any(context: DoctorContext, rule: LifecycleRule) -> list[ImageDetail]:
    """The images of the rule's storage class with a tag matching some entry, youngest first."""
    matching = {
        image.image_digest for name in entry_names(rule.selection) for image in _images_matching(context, rule, name)
    }
    return [image for image in context.evaluation.images if image.image_digest in matching]


def _message(context: DoctorContext, rule: LifecycleRule, matched: Sequence[list[ImageDetail]], selected: int) -> str:
    names = entry_names(rule.selection)
    listed = ", ".join(entries(rule.selection))
    field = "tagPrefixList" if rule.selection.tag_prefix_list is not None else "tagPatternList"
    outcomes = "; ".join(_fate_of(context, rule, name, images) for name, images in zip(names, matched, strict=True))
    if not selected:
        return (
            f"{rule.label} selects no image: {AND_RULE} ({field} {listed}), and no image carries a tag for each; "
            f"{outcomes}"
        )
    carry = "the image that carries" if selected == 1 else f"the {selected} images that carry"
    return (
        f"{rule.label} selects only {carry} a tag for each entry: {AND_RULE} ({field} {listed}), so an image tagged "
        f"for one entry only falls to the rules below it; {outcomes}"
    )


def _fate_of(context: DoctorContext, listing: LifecycleRule, name: str, images: Sequence[ImageDetail]) -> str:
    """What the policy does to the images one entry matches: the rules that select them first, and how many
    of them each removes. `listing`: the rule with the list."""
    if not images:
        return f"no image has a {name} tag"
    by_rule: dict[int | None, list[ImageDetail]] = {}
    for image in images:
        by_rule.setdefault(context.evaluation.first_selector.get(image.image_digest), []).append(image)
    if len(by_rule) == 1:
        [(priority, group)] = by_rule.items()
        return f"{name} images {_under_rule(context, listing, priority, group, plural=True)}"
    parts = [
        f"{len(group)} {_under_rule(context, listing, priority, group, plural=len(group) > 1)}"
        for priority, group in sorted(by_rule.items(), key=_rule_order)
    ]
    return f"of the {len(images)} {name} images, " + ", ".join(parts)


def _rule_order(item: tuple[int | None, list[ImageDetail]]) -> int:
    return item[0] if item[0] is not None else 1 << 31


def _under_rule(
    context: DoctorContext, listing: LifecycleRule, priority: int | None, group: Sequence[ImageDetail], *, plural: bool
) -> str:
    """`fall to rule 2 and 2 of them expire`: the rule that selects the group first, and what it does; `carry every
    entry and are selected by rule 1` for the images the listing rule selects."""
    if priority is None:
        return "fall to no rule and stay"
    rule = context.evaluation.rule(priority).rule
    where = _where(priority, listing.rule_priority, plural=plural)
    removed = sum(1 for image in group if context.evaluation.action_of(image.image_digest) is not None)
    verb = removes(rule.action.type.upper())
    if not removed:
        return f"{where} {rule.label}, which {verb}s none of them yet"
    return f"{where} {rule.label} and {_how_many(removed, rule.action.type == 'transition')}"


def _where(priority: int, listing_priority: int, *, plural: bool) -> str:
    """How the group meets its rule: selected by the listing rule itself, one above it, or falling to one below."""
    if priority == listing_priority:
        return f"{'carry' if plural else 'carries'} every entry and {'are' if plural else 'is'} selected by"
    return "fall to" if priority > listing_priority else f"{'are' if plural else 'is'} selected by"


def _how_many(removed: int, archived: bool) -> str:
    """`2 of them expire`, `1 of them expires`, `2 of them are archived`."""
    if archived:
        return f"{removed} of them {'is' if removed == 1 else 'are'} archived"
    return f"{removed} of them {'expires' if removed == 1 else 'expire'}"


def check_and_lists_in_text(policy: LifecyclePolicy) -> list[Finding]:
    """The same check on a policy's text alone (repository creation templates): without images the doctor cannot
    see whether the entries co-occur, so every multi-entry list is a warning."""
    return [
        Finding(
            severity="warning",
            code="tag-list-is-and",
            message=(
                f"{rule.label} selects only images that carry a tag for each of its entries "
                f"({', '.join(entry_names(rule.selection))}): {AND_RULE}, so an image tagged for one entry only is "
                f"not selected and falls to the rules below it"
            ),
            fix=split_fix(rule, fixed_policy=False),
            rule_priority=rule.rule_priority,
            policy_edit=split_edit(rule),
        )
        for rule in policy.ordered_rules
        if has_several_entries(rule)
    ]
