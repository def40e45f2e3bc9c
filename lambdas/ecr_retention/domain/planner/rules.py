"""A policy's keep and delete rules applied to one repository: keep rules protect what they select,
delete rules mark what they select beyond their keep_newest and whose conditions hold."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from ecr_retention.domain.config import DeleteRule, KeepRule, Policy, Selector, rule_name
from ecr_retention.domain.patterns import compile_globs
from ecr_retention.domain.planner.explain import (
    delete_rule_reason,
    keep_newest_reason,
    keep_rule_reason,
    unknown_tag_source_warning,
)
from ecr_retention.domain.planner.other_tags import OtherRepositoryTags
from ecr_retention.domain.planner.repository import DisplacedSlots, Findings, RepositoryImages
from ecr_retention.domain.registry import ImageDetail


def apply_rules(
    policy: Policy,
    policy_index: int,
    images: RepositoryImages,
    findings: Findings,
    *,
    other_tags: OtherRepositoryTags,
    now: datetime,
) -> None:
    """Every rule of the policy, in the order the file lists them, adds to the findings."""
    rules = _RuleApplier(images, findings, other_tags, now)
    for rule_index, rule in enumerate(policy.rules):
        name = rule_name(policy_index, rule_index, rule)
        if rule.keep is not None:
            rules.apply_keep(name, rule.keep)
        elif rule.delete is not None:
            rules.apply_delete(name, rule.delete)


def meets_conditions(rule: DeleteRule, image: ImageDetail, now: datetime) -> bool:
    """Whether a delete rule that selects the image marks it (explain.unmet_condition says why not)."""
    return (
        image.image_status != "ACTIVATING"
        and not (rule.archive and image.image_status == "ARCHIVED")
        and (rule.older_than is None or now - image.image_pushed_at > rule.older_than)
        and (rule.not_pulled_within is None or now - image.last_activity > rule.not_pulled_within)
    )


class _RuleApplier:
    def __init__(
        self,
        images: RepositoryImages,
        findings: Findings,
        other_tags: OtherRepositoryTags,
        now: datetime,
    ) -> None:
        self.images = images
        self.findings = findings
        self.other_tags = other_tags
        self.now = now

    def select(self, selector: Selector, *, unknown_means: bool) -> list[ImageDetail]:
        """Images the selector's tag conditions select, newest first. `unknown_means` answers for
        tag_in_repositories when a named repository is not in the snapshot (keep: True, delete: False)."""
        if selector.untagged:
            return [image for image in self.images.ordered if not image.image_tags]
        if selector.tags is None and selector.tag_in_repositories is None:
            return list(self.images.ordered)
        return self._select_by_tags(selector, unknown_means=unknown_means)

    def _select_by_tags(self, selector: Selector, *, unknown_means: bool) -> list[ImageDetail]:
        tags = self._tags_matching(selector.tags)
        if selector.tag_in_repositories is not None:
            present_elsewhere = self.tags_in_other_repositories(selector.tag_in_repositories)
            if present_elsewhere is not None:
                tags = filter(present_elsewhere, tags)
            elif not unknown_means:
                return []
        return self._images_tagged(tags)

    def _tags_matching(self, patterns: tuple[str, ...] | None) -> Iterable[str]:
        """The repository's tags that the patterns match (all of them without patterns), read lazily."""
        tags: Iterable[str] = self.images.rank_by_tag
        return tags if patterns is None else filter(compile_globs(patterns).fullmatch, tags)

    def _images_tagged(self, tags: Iterable[str]) -> list[ImageDetail]:
        """The images that carry any of the tags, newest first."""
        ordered, rank_by_tag = self.images.ordered, self.images.rank_by_tag
        return [ordered[i] for i in sorted({rank_by_tag[tag] for tag in tags})]

    def tags_in_other_repositories(self, patterns: tuple[str, ...]) -> Callable[[str], bool] | None:
        """Whether a tag is present in the other repositories the patterns name, or None when a pattern names none
        that the snapshot holds (then nothing can be known about those tags)."""
        name = self.images.name
        unnamed = self.other_tags.unnamed(name, patterns)
        if unnamed is not None:
            self.findings.warnings.append(unknown_tag_source_warning(name, unnamed))
            return None
        return self.other_tags.present_elsewhere(name, patterns)

    def apply_keep(self, name: str, keep: KeepRule) -> None:
        selected = self._kept_by(keep)
        reason = keep_rule_reason(name, keep)
        for image in selected:
            self.findings.protections[image.image_digest].append(reason)

    def _kept_by(self, keep: KeepRule) -> list[ImageDetail]:
        """What a keep rule selects, within its pulled_within window, up to its newest."""
        selected = self.select(keep, unknown_means=True)
        if keep.pulled_within is not None:
            window = keep.pulled_within
            selected = [image for image in selected if self.now - image.last_activity < window]
        if keep.newest is not None:
            selected = selected[: keep.newest]
        return selected

    def apply_delete(self, name: str, rule: DeleteRule) -> None:
        selected = self.select(rule, unknown_means=False)
        mark = (delete_rule_reason(name, rule), rule.archive)
        spared = keep_newest_reason(name, rule)
        findings, now = self.findings, self.now
        for rank, image in enumerate(selected):
            if not meets_conditions(rule, image, now):
                findings.misses[image.image_digest].append((name, rule))
            elif rank < rule.keep_newest:
                findings.notes[image.image_digest].append(spared)
            else:
                findings.marks[image.image_digest].append(mark)
        if rule.keep_newest and self.images.future:
            self.record_displaced(name, rule.keep_newest, selected)

    def record_displaced(self, name: str, keep_newest: int, selected: list[ImageDetail]) -> None:
        """The older images that would hold the rule's keep_newest slots if future images took none."""
        future = {image.image_digest for image in self.images.future}
        in_slots = [image for image in selected[:keep_newest] if image.image_digest in future]
        if in_slots:
            displaced = _displaced_by_future(selected, future, keep_newest)
            self.findings.displaced.append(DisplacedSlots(name, keep_newest, in_slots, displaced))


def _displaced_by_future(selected: list[ImageDetail], future: set[str], keep_newest: int) -> list[ImageDetail]:
    """The present images that would be among the newest keep_newest without the future ones, and are not now."""
    present = [image for image in selected if image.image_digest not in future][:keep_newest]
    slotted = {image.image_digest for image in selected[:keep_newest]}
    return [image for image in present if image.image_digest not in slotted]
