"""Checks on a policy's text alone, for repository creation templates: a template's policy applies to
repositories that do not exist yet, so there are no images to evaluate it against. Each check names a rule
and what any image it could select would lose; docs/lifecycle.md states the exact conditions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ecr_retention.domain.doctor.context import keeps_forever, never_acts, removes
from ecr_retention.domain.doctor.fixes import keep_one_rule
from ecr_retention.domain.doctor.models import Finding, KeepTags
from ecr_retention.domain.doctor.tag_kinds import DEFAULT_TAG_KINDS, TagKinds
from ecr_retention.domain.lifecycle.matching import pattern_includes, selection_includes, tag_matches
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule, LifecycleSelection
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate

# Tag mutability settings under which no tag can move to another image: a mutable tag does not exist there.
IMMUTABLE = "IMMUTABLE"
IMMUTABLE_WITH_EXCLUSION = "IMMUTABLE_WITH_EXCLUSION"
COUNT_TEXT = {
    "sinceImagePushed": "pushed more than {n} days ago",
    "sinceImagePulled": "last pulled more than {n} days ago",
    "sinceImageTransitioned": "archived more than {n} days ago",
}


def names_mutable_tag(pattern: str, kinds: TagKinds = DEFAULT_TAG_KINDS) -> bool:
    """A pattern without `*` that is a mutable tag (latest, dev) names that one tag: see `TagKinds`."""
    return "*" not in pattern and kinds.is_mutable(pattern)


def selects_build_tags(selection: LifecycleSelection, kinds: TagKinds = DEFAULT_TAG_KINDS) -> bool:
    """The selection can select an image through a version or build tag: every image (`any`), or a tag
    pattern that is not one mutable tag's name (`*.*`, `v*`, `release-*`, `1.0`, `*`)."""
    if selection.tag_status == "any":
        return True
    if selection.tag_status == "untagged":
        return False
    return any(not names_mutable_tag(pattern, kinds) for pattern in selection.patterns)


def keeps_tag(rule: LifecycleRule, tag: str) -> bool:
    """A keep-1 rule for `tag` (seed 002's fix): a count rule over standard images whose tagPatternList names
    the tag itself, every other entry matching it too, so it selects the one image carrying the tag and never
    expires it."""
    selection = rule.selection
    return (
        rule.is_count_rule
        and selection.tag_status == "tagged"
        and selection.effective_storage_class == "standard"
        and tag in (selection.tag_pattern_list or ())
        and all(tag_matches(tag, pattern) for pattern in selection.patterns)
    )


def named_mutable_tags(
    policy: LifecyclePolicy, template: RepositoryCreationTemplate, kinds: TagKinds = DEFAULT_TAG_KINDS
) -> tuple[str, ...]:
    """The mutable tags the template names: every tag pattern of the policy that is one mutable tag's name, and,
    with IMMUTABLE_WITH_EXCLUSION, every exclusion filter without a wildcard (a tag that may move)."""
    names = [p for rule in policy.ordered_rules for p in rule.selection.patterns if names_mutable_tag(p, kinds)]
    if template.image_tag_mutability == IMMUTABLE_WITH_EXCLUSION:
        names += [f.filter for f in template.image_tag_mutability_exclusion_filters if "*" not in f.filter]
    return tuple(dict.fromkeys(names))


def rule_summary(rule: LifecycleRule) -> str:
    selection = rule.selection
    if selection.tag_status == "any":
        what = "every image"
    elif selection.tag_prefix_list is not None:
        what = "tag prefixes " + ", ".join(selection.tag_prefix_list)
    else:
        what = "tags " + ", ".join(selection.patterns)
    if rule.is_count_rule:
        limit = f"beyond the newest {selection.count_number}"
    else:
        limit = COUNT_TEXT[selection.count_type].format(n=selection.count_number)
    return f"{what}, {limit}, {removes(rule.action.type.upper())}"


def where(template: RepositoryCreationTemplate) -> str:
    return f"{template.label}, applied for {template.applied_for_text}"


def check_mutable_tags_unprotected(
    policy: LifecyclePolicy, template: RepositoryCreationTemplate, kinds: TagKinds = DEFAULT_TAG_KINDS
) -> list[Finding]:
    """A rule that can act (not a keep-1 rule) on standard images, selecting through a build tag, with a mutable
    tag that no higher-priority keep-1 rule keeps: ECR removes images, not tags, so a mutable tag on the same
    image goes with it. Skipped for IMMUTABLE templates (no tag moves); archive-class rules are skipped (what
    they see was archived by a transition rule, which this check covers)."""
    if template.image_tag_mutability == IMMUTABLE:
        return []
    named = named_mutable_tags(policy, template, kinds)
    rules = policy.ordered_rules
    findings: list[Finding] = []
    for position, rule in enumerate(rules):
        if not _acts_through_build_tags(rule, kinds):
            continue
        if not named:
            findings.append(_no_mutable_tag_kept(template, rule))
            continue
        exposed = _not_kept(named, rules[:position])
        if exposed:
            findings.append(_mutable_tags_exposed(template, rule, exposed))
    return findings


def _not_kept(tags: tuple[str, ...], higher_rules: Sequence[LifecycleRule]) -> tuple[str, ...]:
    """The tags that no keep-1 rule among `higher_rules` keeps."""
    return tuple(tag for tag in tags if not any(keeps_tag(higher, tag) for higher in higher_rules))


def _acts_through_build_tags(rule: LifecycleRule, kinds: TagKinds) -> bool:
    selection = rule.selection
    return (
        selection.effective_storage_class == "standard"
        and not never_acts(rule)
        and not keeps_forever(rule)
        and selects_build_tags(selection, kinds)
    )


def _selects_by_build_tags(template: RepositoryCreationTemplate, rule: LifecycleRule) -> str:
    return f"{where(template)}: {rule.label} ({rule_summary(rule)}) selects images by version or build tags"


def _mutable_tags_exposed(
    template: RepositoryCreationTemplate, rule: LifecycleRule, exposed: tuple[str, ...]
) -> Finding:
    verb = removes(rule.action.type.upper())
    tags = ", ".join(exposed)
    edit = KeepTags(tags=exposed)
    return Finding(
        severity="warning",
        code="mutable-tag-unprotected",
        message=(
            f"{_selects_by_build_tags(template, rule)}, and no higher-priority rule keeps the mutable tag {tags}: "
            f"ECR {verb}s images, not tags, so when {tags} shares an image with a tag this rule selects, "
            f"{_goes(rule, tags)}"
        ),
        fix=(
            f"add {edit} (tagPatternList [tag], imageCountMoreThan 1): the image carrying the tag is "
            f"then selected first by a rule that never expires it, and {rule.label} cannot act on it"
        ),
        rule_priority=rule.rule_priority,
        policy_edit=edit,
    )


def _goes(rule: LifecycleRule, tags: str) -> str:
    """What becomes of a mutable tag on an image the rule removes: gone, or archived with it."""
    if rule.action.type == "transition":
        return f"the image is archived with {tags} on it, and pulls of {tags} fail until it is restored"
    return "it goes with that image"


def _no_mutable_tag_kept(template: RepositoryCreationTemplate, rule: LifecycleRule) -> Finding:
    verb = removes(rule.action.type.upper())
    example = json.dumps(keep_one_rule(1, "latest"), separators=(",", ":"))
    return Finding(
        severity="warning",
        code="mutable-tag-unprotected",
        message=(
            f"{_selects_by_build_tags(template, rule)}, and the policy keeps no mutable tag: ECR {verb}s images, "
            f"not tags, so a mutable tag (latest, dev, main, ...) that shares an image with a tag this rule selects "
            f"goes with it"
        ),
        fix=(
            f"add one keep-1 rule per mutable tag your builds push, ahead of every other rule, for latest: "
            f"{example}; renumber the other rules after them"
        ),
        rule_priority=rule.rule_priority,
    )


def check_count_over_shared_tags(
    policy: LifecyclePolicy, template: RepositoryCreationTemplate, kinds: TagKinds = DEFAULT_TAG_KINDS
) -> list[Finding]:
    """A count rule over tag patterns that can act, and a lower-priority tagged rule over standard images that
    names tags the count rule's patterns do not cover (mutable tags' names aside: the check above has them). An
    image carrying both is selected first by the count rule, so the lower rule can never act on it: when the
    count passes the image, the lower rule's tags go with it, whatever that rule says."""
    rules = policy.ordered_rules
    findings: list[Finding] = []
    for position, rule in enumerate(rules):
        if not _counts_by_tag(rule):
            continue
        shared = _tags_of_lower_rules(rule, rules[position + 1 :], kinds)
        if shared:
            findings.append(_count_shares_tags(template, rule, shared))
    return findings


def _counts_by_tag(rule: LifecycleRule) -> bool:
    """A count rule over tag patterns that can act."""
    return (
        rule.is_count_rule
        and rule.selection.tag_status == "tagged"
        and not never_acts(rule)
        and not keeps_forever(rule)
    )


def _tags_of_lower_rules(
    rule: LifecycleRule, lower_rules: Sequence[LifecycleRule], kinds: TagKinds
) -> list[tuple[LifecycleRule, tuple[str, ...]]]:
    """Each lower tagged rule over standard images, with the patterns it names that `rule` does not cover."""
    shared: list[tuple[LifecycleRule, tuple[str, ...]]] = []
    for lower in lower_rules:
        if lower.selection.tag_status != "tagged" or lower.selection.effective_storage_class != "standard":
            continue
        if selection_includes(rule.selection, lower.selection):
            continue  # every tag it names is this rule's own
        other = _patterns_not_covered(rule.selection, lower.selection, kinds)
        if other:
            shared.append((lower, other))
    return shared


def _patterns_not_covered(selection: LifecycleSelection, lower: LifecycleSelection, kinds: TagKinds) -> tuple[str, ...]:
    """The lower selection's patterns that no pattern of `selection` includes, mutable tags' names aside."""
    return tuple(
        pattern
        for pattern in lower.patterns
        if not names_mutable_tag(pattern, kinds) and not any(pattern_includes(p, pattern) for p in selection.patterns)
    )


def _count_shares_tags(
    template: RepositoryCreationTemplate,
    rule: LifecycleRule,
    shared: Sequence[tuple[LifecycleRule, tuple[str, ...]]],
) -> Finding:
    named = "; ".join(f"{lower.label}: {', '.join(other)}" for lower, other in shared)
    lower_labels = " and ".join(lower.label for lower, _ in shared)
    return Finding(
        severity="warning",
        code="count-rule-shares-tags",
        message=(
            f"{where(template)}: {rule.label} ({rule_summary(rule)}) counts images, not tags: an image that "
            f"also carries a tag that a lower rule names ({named}) is ranked by {rule.label}, which no lower "
            f"rule can override, so that tag goes with the image when the count passes it"
        ),
        fix=(
            f"if those tags must live by their own rule, give {lower_labels} a lower rulePriority number than "
            f"{rule.label} (images carrying both then go by that rule, and still take slots of "
            f"{rule.label}'s count: raise its countNumber by as many), or push the two kinds of tag on "
            f"separate images"
        ),
        rule_priority=rule.rule_priority,
    )
