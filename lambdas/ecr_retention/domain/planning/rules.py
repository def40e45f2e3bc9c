"""A policy's keep and delete rules applied to one repository: keep rules protect what they select,
delete rules mark what they select beyond their keep_newest and whose conditions hold.

A selection is a list of ranks (RepositoryImages), newest first. A rule's name and the reasons it gives are the same
in every repository its policy matches: they are worded once per run (`policy_rules`)."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import chain, compress
from operator import attrgetter, not_

from ecr_retention.domain.config import DeleteRule, KeepRule, Policy, Selector, rule_name
from ecr_retention.domain.patterns import compile_globs
from ecr_retention.domain.planning.explain import (
    delete_rule_reason,
    keep_newest_reason,
    keep_rule_reason,
    unknown_tag_source_warning,
)
from ecr_retention.domain.planning.other_tags import OtherRepositoryTags
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.planning.repository import DisplacedSlots, Findings, RepositoryImages


@dataclass(frozen=True)
class TagPatterns:
    """A selector's tag patterns, compiled once per run. A pattern without a wildcard names one tag: it is looked up,
    not matched. The others are matched whole by one regex, against the tags that start with a pattern's first
    character only (None when a pattern starts with a wildcard: any). Most patterns start with a literal character,
    and most of a repository's tags with another one: they are not matched at all."""

    literals: tuple[str, ...]
    fullmatch: Callable[[str], object] | None  # the patterns with a wildcard, None when there are none
    first_characters: tuple[str, ...] | None

    def matching(self, images: RepositoryImages) -> Iterable[str]:
        """The repository's tags that the patterns match, read lazily (a tag that two patterns match, perhaps
        twice)."""
        named = filter(images.rank_by_tag.__contains__, self.literals)
        if self.fullmatch is None:
            return named
        first = self.first_characters
        candidates = images.rank_by_tag if first is None else images.tags_starting_with(first)
        return chain(named, filter(self.fullmatch, candidates))

    def matching_ranks(self, images: RepositoryImages) -> Iterable[int]:
        """The ranks of the tags that `matching` reads, in its order, each read beside its tag (rank_by_tag's
        values) rather than looked up: at 100,000 images a lookup per tag is a cache miss."""
        rank_by_tag = images.rank_by_tag
        named = map(rank_by_tag.__getitem__, filter(rank_by_tag.__contains__, self.literals))
        if self.fullmatch is None:
            return named
        if self.first_characters is None:
            wild = compress(rank_by_tag.values(), map(self.fullmatch, rank_by_tag))
        else:
            tags, ranks = images.tags_and_ranks_starting_with(self.first_characters)
            wild = compress(ranks, map(self.fullmatch, tags))
        return chain(named, wild) if self.literals else wild

    @classmethod
    def of(cls, patterns: tuple[str, ...] | None) -> TagPatterns | None:
        if patterns is None:
            return None
        literals = tuple(pattern for pattern in patterns if not _WILDCARD.search(pattern))
        wild = tuple(pattern for pattern in patterns if _WILDCARD.search(pattern))
        if not wild:
            return cls(literals, None, ())
        return cls(literals, compile_globs(wild).fullmatch, _first_characters(wild))


_WILDCARD = re.compile(r"[*?]")


def _first_characters(patterns: tuple[str, ...]) -> tuple[str, ...] | None:
    """The characters a tag that one of the patterns matches can start with; None when a pattern starts with a
    wildcard (any)."""
    firsts = tuple(dict.fromkeys(pattern[:1] for pattern in patterns))
    return None if any(first in ("*", "?") for first in firsts) else firsts


@dataclass(frozen=True)
class NamedKeep:
    """A keep rule, its name, its tag patterns and the reason it protects with."""

    name: str
    rule: KeepRule
    tags: TagPatterns | None
    reason: Reason


@dataclass(frozen=True)
class NamedDelete:
    """A delete rule, its name, its tag patterns, the reason it marks with and the reason it spares its keep_newest
    with."""

    name: str
    rule: DeleteRule
    tags: TagPatterns | None
    mark: Reason
    spared: Reason


PolicyRules = tuple[NamedKeep | NamedDelete, ...]


def policy_rules(policy_index: int, policy: Policy) -> PolicyRules:
    """The policy's rules in the order the file lists them, named and worded for every repository of the run."""
    rules: list[NamedKeep | NamedDelete] = []
    for rule_index, rule in enumerate(policy.rules):
        name = rule_name(policy_index, rule_index, rule)
        if rule.keep is not None:
            keep = rule.keep
            rules.append(NamedKeep(name, keep, TagPatterns.of(keep.tags), keep_rule_reason(name, keep)))
        elif rule.delete is not None:
            delete = rule.delete
            spared = keep_newest_reason(name, delete)
            rules.append(
                NamedDelete(name, delete, TagPatterns.of(delete.tags), delete_rule_reason(name, delete), spared)
            )
    return tuple(rules)


def apply_rules(
    rules: PolicyRules,
    images: RepositoryImages,
    findings: Findings,
    *,
    other_tags: OtherRepositoryTags,
    now: datetime,
) -> None:
    """Every rule of the policy, in the order the file lists them, adds to the findings."""
    applier = _RuleApplier(images, findings, other_tags, now)
    for rule in rules:
        if isinstance(rule, NamedKeep):
            applier.apply_keep(rule)
        else:
            applier.apply_delete(rule)


def unmet_conditions(rule: DeleteRule, images: RepositoryImages, selected: list[int], now: datetime) -> set[int]:
    """The selected images that the delete rule does not mark (explain.unmet_condition says why): being restored,
    already archived when the rule archives, not older than older_than, pulled within not_pulled_within. Newest
    first is youngest first: the images not older than older_than are the first of the selection, found by
    bisection."""
    unmet: set[int] = set()
    if rule.older_than is not None:
        young = bisect_right(images.ages, rule.older_than)  # the ranks below are not older than older_than
        unmet.update(selected[: bisect_left(selected, young)])
    if rule.not_pulled_within is not None:
        unmet.update(_active_within(images, selected, rule.not_pulled_within, now))
    not_to_mark = images.activating | images.archived if rule.archive else images.activating
    if not_to_mark:
        unmet.update(rank for rank in selected if rank in not_to_mark)
    return unmet


def _active_within(
    images: RepositoryImages, selected: list[int], window: timedelta, now: datetime, *, inclusive: bool = True
) -> list[int]:
    """The selected ranks pulled (or pushed) within the window: `now - last activity` at most the window (below it,
    not `inclusive`). Compared as `last activity >= now - window`, without a Python call per image: the same answer,
    datetime arithmetic being exact."""
    try:
        since = now - window
    except OverflowError:  # a window longer than the calendar before now: every image is within it
        return list(selected)
    within = since.__le__ if inclusive else since.__lt__
    return list(compress(selected, map(within, map(images.last_activities.__getitem__, selected))))


def _tag_ranks(
    images: RepositoryImages, patterns: TagPatterns | None, present_elsewhere: Callable[[str], bool] | None
) -> Iterable[int]:
    """The ranks of the tags the patterns match (of every tag, without patterns) that `present_elsewhere` keeps (all,
    when None); read beside the tags when nothing filters them, looked up otherwise."""
    if present_elsewhere is None:
        return images.rank_by_tag.values() if patterns is None else patterns.matching_ranks(images)
    tags = images.rank_by_tag if patterns is None else patterns.matching(images)  # read lazily
    return map(images.rank_by_tag.__getitem__, filter(present_elsewhere, tags))


def _untagged(images: RepositoryImages) -> list[int]:
    return list(compress(range(len(images.ordered)), map(not_, map(_TAGS, images.ordered))))


_TAGS = attrgetter("image_tags")


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

    def select(self, selector: Selector, patterns: TagPatterns | None, *, unknown_means: bool) -> list[int]:
        """The ranks of the images the selector's tag conditions select, newest first (`patterns`: its tags).
        `unknown_means` answers for tag_in_repositories when a named repository is not in the snapshot (keep:
        True, delete: False)."""
        images = self.images
        if selector.untagged:
            return _untagged(images)
        if patterns is None and selector.tag_in_repositories is None:
            return list(range(len(images.ordered)))
        present_elsewhere = None
        if selector.tag_in_repositories is not None:
            present_elsewhere = self.tags_in_other_repositories(selector.tag_in_repositories)
            if present_elsewhere is None and not unknown_means:
                return []
        # the images that carry any of the tags (an image with two of them once)
        return sorted(set(_tag_ranks(images, patterns, present_elsewhere)))

    def tags_in_other_repositories(self, patterns: tuple[str, ...]) -> Callable[[str], bool] | None:
        """Whether a tag is present in the other repositories the patterns name, or None when a pattern names none
        that the snapshot holds (then nothing can be known about those tags)."""
        name = self.images.name
        unnamed = self.other_tags.unnamed(name, patterns)
        if unnamed is not None:
            self.findings.warnings.append(unknown_tag_source_warning(name, unnamed))
            return None
        return self.other_tags.present_elsewhere(name, patterns)

    def apply_keep(self, keep: NamedKeep) -> None:
        protections, reason = self.findings.protections, keep.reason
        for digest in self.images.digests_of(self._kept_by(keep.rule, keep.tags)):
            protections[digest].append(reason)

    def _kept_by(self, keep: KeepRule, patterns: TagPatterns | None) -> list[int]:
        """What a keep rule selects, within its pulled_within window, up to its newest."""
        selected = self.select(keep, patterns, unknown_means=True)
        if keep.pulled_within is not None:
            selected = _active_within(self.images, selected, keep.pulled_within, self.now, inclusive=False)
        if keep.newest is not None:
            selected = selected[: keep.newest]
        return selected

    def apply_delete(self, delete: NamedDelete) -> None:
        """Of what the rule selects, those whose conditions fail are its misses (the decisions say why); the others
        are spared while among the keep_newest newest of the selection, marked beyond."""
        rule, images = delete.rule, self.images
        selected = self.select(rule, delete.tags, unknown_means=False)
        if not selected:
            return
        unmet = unmet_conditions(rule, images, selected, self.now)
        if unmet:
            self.findings.unmet.append((delete.name, rule, unmet))
        self._spare_and_mark(delete, selected, unmet)
        if rule.keep_newest and images.future:
            self.record_displaced(delete.name, rule.keep_newest, selected)

    def _spare_and_mark(self, delete: NamedDelete, selected: list[int], unmet: set[int]) -> None:
        """The selected images whose conditions hold: spared among the keep_newest newest of the selection (an
        image whose conditions fail holds a slot all the same), marked beyond."""
        keep_newest, findings = delete.rule.keep_newest, self.findings
        notes, spared = findings.notes, delete.spared
        for rank in selected[:keep_newest]:
            if rank not in unmet:
                notes[rank].append(spared)
        marked = [rank for rank in selected[keep_newest:] if rank not in unmet]
        marks, mark = findings.marks, delete.mark
        for rank in marked:
            marks[rank].append(mark)
        if not delete.rule.archive:
            findings.deleting.update(marked)

    def record_displaced(self, name: str, keep_newest: int, selected: list[int]) -> None:
        """The older images that would hold the rule's keep_newest slots if future images took none. The future
        images are the newest: the ranks below len(future)."""
        future = len(self.images.future)
        in_slots = [rank for rank in selected[:keep_newest] if rank < future]
        if in_slots:
            present = [rank for rank in selected if rank >= future][:keep_newest]
            slotted = set(selected[:keep_newest])
            displaced = [rank for rank in present if rank not in slotted]
            images = self.images
            self.findings.displaced.append(
                DisplacedSlots(name, keep_newest, images.images_of(in_slots), images.images_of(displaced))
            )
