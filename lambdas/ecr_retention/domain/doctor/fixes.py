"""One fixed policy per repository: every policy edit of the findings applied together, and checked
again until nothing is left that a policy edit fixes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecr_retention.domain.doctor.models import Finding, KeepTags, RaiseCount, RemoveRule, SplitRule
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.lifecycle.matching import selection_includes
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule, LifecycleSelection

_OWN_IMAGES = re.compile(r"keep (\d+) of its own images, plus one slot per image a higher rule keeps")


def own_images_marker(count: int) -> str:
    return f"keep {count} of its own images, plus one slot per image a higher rule keeps"


def intended_own_images(rule: LifecycleRule) -> int:
    """How many images of its own a count rule is meant to keep: what a fixed policy wrote in the rule's
    description when it raised countNumber for images the rule ranks but cannot act on, else countNumber."""
    found = _OWN_IMAGES.search(rule.description or "")
    return int(found.group(1)) if found else rule.selection.count_number


def was_raised(rule: LifecycleRule) -> bool:
    """A count rule whose countNumber a fixed policy raised for images it ranks but cannot act on."""
    return _OWN_IMAGES.search(rule.description or "") is not None


def keep_one_rule(priority: int, tag: str) -> dict[str, Any]:
    """Seed 002's fix: a rule that selects the one image carrying `tag` and keeps it (count 1)."""
    return {
        "rulePriority": priority,
        "description": f"keep the image tagged {tag}",
        "selection": {
            "tagStatus": "tagged",
            "tagPatternList": [tag],
            "countType": "imageCountMoreThan",
            "countNumber": 1,
        },
        "action": {"type": "expire"},
    }


# Each round applies what the previous round's findings ask for; edits only add keep rules, remove rules
# and raise counts, so rounds are few (two or three in practice) and the limit is never the answer.
MAX_FIX_ROUNDS = 20


@dataclass
class PolicyFixes:
    """Every edit asked for so far, keyed by the original policy's rule priorities."""

    keep_tags: set[str] = field(default_factory=set)
    removed: set[int] = field(default_factory=set)
    counts: dict[int, int] = field(default_factory=dict)
    own_images: dict[int, int] = field(default_factory=dict)
    split: set[int] = field(default_factory=set)

    def add(self, edit: KeepTags | RemoveRule | RaiseCount | SplitRule, original_priority: Mapping[int, int]) -> bool:
        """Record one edit made against the fixed policy whose priorities map back through
        `original_priority`; True when it changes anything."""
        if isinstance(edit, KeepTags):
            new = set(edit.tags) - self.keep_tags
            self.keep_tags |= new
            return bool(new)
        if edit.rule_priority not in original_priority:  # one of our keep rules: never edited
            return False
        priority = original_priority[edit.rule_priority]
        if isinstance(edit, RemoveRule | SplitRule):
            done = self.removed if isinstance(edit, RemoveRule) else self.split
            changed = priority not in done
            done.add(priority)
            return changed
        changed = edit.count_number > self.counts.get(priority, 0)
        self.counts[priority] = max(self.counts.get(priority, 0), edit.count_number)
        if edit.own_images is not None and priority not in self.own_images:
            self.own_images[priority] = edit.own_images
            changed = True
        return changed

    def apply(self, policy: LifecyclePolicy) -> tuple[dict[str, Any] | None, dict[int, int]]:
        """The policy with every edit, and the map from its priorities to the original ones; None for the
        policy when every rule is removed."""
        tags = sorted(self.keep_tags)
        rules = [keep_one_rule(index + 1, tag) for index, tag in enumerate(tags)]
        original_priority: dict[int, int] = {}
        offset = len(tags)  # rules keep their numbers, shifted past the keep rules and the parts of split rules
        prefix_sets = self._prefix_sets(policy)
        for rule in policy.ordered_rules:
            # A split wins over a removal: a list read as AND is shadowed by a rule for one of its entries, but it
            # was written for the images of each entry; a part that can never act is left out.
            if rule.rule_priority in self.removed - self.split:
                continue
            parts = self._parts(rule, prefix_sets, rules)
            for index, data in enumerate(parts):
                data["rulePriority"] = rule.rule_priority + offset + index
                original_priority[data["rulePriority"]] = rule.rule_priority
                rules.append(data)
            offset += max(len(parts) - 1, 0)
        return ({"rules": rules} if rules else None), original_priority

    def _prefix_sets(self, policy: LifecyclePolicy) -> set[frozenset[str]]:
        """The prefix sets of the rules that stay whole: a split part must not repeat one."""
        return {
            frozenset(rule.selection.tag_prefix_list)
            for rule in policy.rules
            if rule.selection.tag_prefix_list is not None and rule.rule_priority not in self.removed | self.split
        }

    def _parts(
        self, rule: LifecycleRule, prefix_sets: set[frozenset[str]], higher: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The rule with its raised count; when it is split, one rule per tag list entry that can act."""
        data = rule.model_dump(mode="json", by_alias=True, exclude_none=True)
        if rule.rule_priority in self.counts:
            data["selection"]["countNumber"] = max(rule.selection.count_number, self.counts[rule.rule_priority])
        if rule.rule_priority in self.own_images:
            data["description"] = _with_marker(rule.description, self.own_images[rule.rule_priority])
        if rule.rule_priority not in self.split:
            return [data]
        selection = data["selection"]
        if "tagPatternList" in selection:
            parts = [_one_entry(data, "tagPatternList", entry) for entry in dict.fromkeys(selection["tagPatternList"])]
        else:
            parts = [_prefix_part(data, entry, prefix_sets) for entry in dict.fromkeys(selection["tagPrefixList"])]
        return _acting_parts(parts, higher)


def _acting_parts(parts: Sequence[dict[str, Any]], higher: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parts of a split rule that no higher rule, nor an earlier part, selects all of."""
    kept: list[dict[str, Any]] = []
    for part in parts:
        if not _selected_first(part, [*higher, *kept]):
            kept.append(part)
    return kept


def _selected_first(part: dict[str, Any], higher: Sequence[dict[str, Any]]) -> bool:
    """A part of a split rule that a higher rule selects all of can never act: it is left out (same outcome), since
    a later round removing it as shadowed would remove every part of the rule."""
    selection = LifecycleSelection.model_validate(part["selection"])
    return any(selection_includes(LifecycleSelection.model_validate(h["selection"]), selection) for h in higher)


def _prefix_part(data: dict[str, Any], entry: str, prefix_sets: set[frozenset[str]]) -> dict[str, Any]:
    """A part of a split prefix rule. ECR wants a unique set of prefixes per rule: a part whose prefix another rule
    lists alone becomes the pattern `prefix*`, which selects the same images."""
    if frozenset([entry]) in prefix_sets:
        return _one_entry(data, "tagPatternList", f"{entry}*", drop="tagPrefixList")
    prefix_sets.add(frozenset([entry]))
    return _one_entry(data, "tagPrefixList", entry)


def _one_entry(data: dict[str, Any], key: str, entry: str, drop: str = "") -> dict[str, Any]:
    """A part of a split rule: the same rule for one entry of its tag list (under `key`, without `drop`)."""
    selection = {name: value for name, value in data["selection"].items() if name != drop} | {key: [entry]}
    description = data.get("description")
    what = f"{entry} only" if description else f"{entry} only: one rule per entry, since ECR reads a tag list as AND"
    return {**data, "selection": selection, "description": f"{description} ({what})" if description else what}


def _with_marker(description: str | None, own_images: int) -> str:
    marker = own_images_marker(own_images)
    if description and _OWN_IMAGES.search(description):
        return _OWN_IMAGES.sub(marker, description)
    return f"{description}; {marker}" if description else marker


@dataclass(frozen=True)
class MergedFix:
    policy: dict[str, Any] | None = None
    problem: str | None = None
    findings: tuple[Finding, ...] = ()  # what the doctor finds in `policy`: nothing a policy edit fixes


def merge_fixes(
    policy: LifecyclePolicy, findings: Sequence[Finding], find: Callable[[LifecyclePolicy], list[Finding]]
) -> MergedFix:
    """Apply every policy edit together, check the result, and repeat with what that check still asks
    for, until the doctor finds nothing left that a policy edit fixes.

    One edit can call for another: a keep rule makes a lower count rule rank one more image it cannot act
    on, or shadows a rule that selects the same tag. Edits only add keep rules, remove rules and raise
    counts, so the rounds end.
    """
    fixes = PolicyFixes()
    original_priority = {rule.rule_priority: rule.rule_priority for rule in policy.rules}
    fixed: dict[str, Any] | None = None
    for _ in range(MAX_FIX_ROUNDS):
        settled = _record_edits(fixes, findings, fixed, original_priority)
        if settled is not None:
            return settled
        fixed, original_priority = fixes.apply(policy)
        candidate = _fixed_policy(fixed)
        if isinstance(candidate, MergedFix):
            return candidate
        findings = find(candidate)
    return MergedFix(problem=f"the policy edits did not settle in {MAX_FIX_ROUNDS} rounds")


def _record_edits(
    fixes: PolicyFixes,
    findings: Sequence[Finding],
    fixed: dict[str, Any] | None,
    original_priority: Mapping[int, int],
) -> MergedFix | None:
    """Add the edits `findings` ask for to `fixes`; the result when they ask for none (`fixed` settled),
    or for none that changes anything (they cannot all be met), else None: another round."""
    edits = [finding.policy_edit for finding in findings if finding.policy_edit is not None]
    if not edits:
        return MergedFix(policy=fixed, findings=tuple(findings)) if fixed is not None else MergedFix()
    changes = [fixes.add(edit, original_priority) for edit in edits]  # every edit, not up to the first change
    if any(changes):
        return None
    return MergedFix(problem=f"the policy edits, applied together, still leave {_codes_asking_edits(findings)}")


def _codes_asking_edits(findings: Sequence[Finding]) -> str:
    return ", ".join(sorted({finding.code for finding in findings if finding.policy_edit is not None}))


def _fixed_policy(fixed: dict[str, Any] | None) -> LifecyclePolicy | MergedFix:
    """The fixed policy as ECR would read it, or why there is none."""
    if fixed is None:
        return MergedFix(
            problem="every rule is removed: delete the lifecycle policy (aws ecr delete-lifecycle-policy) "
            "and let ecr-retention prune this repository"
        )
    try:
        return parse_policy(json.dumps(fixed, indent=2), "the fixed policy")
    except InputError as error:  # for example more than 50 rules
        return MergedFix(problem=f"no policy that ECR accepts holds every fix: {error}")
