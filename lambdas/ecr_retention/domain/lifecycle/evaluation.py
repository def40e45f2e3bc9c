"""A policy applied to a repository as ECR applies it: every rule selects and ages images on its own,
then the rules act by priority, each image at most once; referrers go with their subject."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ecr_retention.domain.lifecycle.matching import selects
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule
from ecr_retention.domain.lifecycle.timing import age_reference, is_older_than, rank
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES
from ecr_retention.domain.registry.images import ImageDetail

PreviewActionType = Literal["EXPIRE", "TRANSITION"]


@dataclass(frozen=True)
class Verdict:
    """What the policy does to one image, and which rule does it."""

    image: ImageDetail
    rule: LifecycleRule

    @property
    def action(self) -> PreviewActionType:
        return "TRANSITION" if self.rule.action.type == "transition" else "EXPIRE"


@dataclass(frozen=True)
class RuleEvaluation:
    """One rule's view of the repository: what it selects, keeps by count, and may or may not act on."""

    rule: LifecycleRule
    selected: tuple[ImageDetail, ...]  # youngest first
    window: tuple[ImageDetail, ...]  # imageCountMoreThan: the countNumber youngest selected images
    eligible: tuple[ImageDetail, ...]  # beyond the window, or older than the limit
    acted: tuple[ImageDetail, ...]
    already_acted: tuple[ImageDetail, ...]  # eligible, but a higher rule acts on it
    claimed: tuple[tuple[ImageDetail, int], ...]  # eligible, selected (not acted on) by a higher rule
    index_children: tuple[ImageDetail, ...]  # eligible, but a present image index references it
    window_blocked: tuple[tuple[ImageDetail, int | None], ...]  # window images this rule could never act on


@dataclass(frozen=True)
class LifecycleEvaluation:
    now: datetime
    policy: LifecyclePolicy
    images: tuple[ImageDetail, ...]  # youngest first
    rules: tuple[RuleEvaluation, ...]  # by priority
    verdicts: Mapping[str, Verdict]  # digest -> verdict
    cascaded: Mapping[str, str]  # referrer digest -> subject digest, acted on with their subject
    first_selector: Mapping[str, int]  # digest -> priority of the first rule that selects it
    indexes_without_manifest: tuple[str, ...]

    def rule(self, priority: int) -> RuleEvaluation:
        return next(r for r in self.rules if r.rule.rule_priority == priority)

    def action_of(self, digest: str) -> PreviewActionType | None:
        if digest in self.verdicts:
            return self.verdicts[digest].action
        subject = self.cascaded.get(digest)
        while subject is not None:
            if subject in self.verdicts:
                return self.verdicts[subject].action
            subject = self.cascaded.get(subject)
        return None


def index_children(
    images: Sequence[ImageDetail], manifests: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, set[str]], tuple[str, ...]]:
    """Child digest -> digests of the present indexes that reference it; and indexes we cannot read."""
    present = {image.image_digest for image in images}
    parents: dict[str, set[str]] = {}
    unknown: list[str] = []
    for image in images:
        manifest = manifests.get(image.image_digest)
        if manifest is None:
            if image.image_manifest_media_type in INDEX_MEDIA_TYPES:
                unknown.append(image.image_digest)
            continue
        for child in manifest.get("manifests", []):
            if child["digest"] in present and child["digest"] != image.image_digest:
                parents.setdefault(child["digest"], set()).add(image.image_digest)
    return parents, tuple(sorted(unknown))


def evaluate(
    policy: LifecyclePolicy,
    images: Iterable[ImageDetail],
    now: datetime,
    manifests: Mapping[str, Mapping[str, Any]] | None = None,
) -> LifecycleEvaluation:
    """Evaluate every rule against the repository, then apply them by priority, as ECR does."""
    ranked = rank(images)
    if len({image.image_digest for image in ranked}) != len(ranked):
        raise ValueError("a digest appears twice in the images")
    parents, unknown = index_children(ranked, manifests or {})
    guarded = _guarded_children(ranked, parents)
    verdicts: dict[str, Verdict] = {}
    first_selector: dict[str, int] = {}
    evaluations: list[RuleEvaluation] = []
    for rule in policy.ordered_rules:  # by priority: each rule sees what the higher ones decided
        evaluations.append(_apply_rule(rule, ranked, now, guarded, verdicts, first_selector))
    cascaded = _cascade_referrers(ranked, verdicts)
    return LifecycleEvaluation(
        now=now,
        policy=policy,
        images=tuple(ranked),
        rules=tuple(evaluations),
        verdicts=verdicts,
        cascaded=cascaded,
        first_selector=first_selector,
        indexes_without_manifest=unknown,
    )


def _guarded_children(images: Sequence[ImageDetail], parents: Mapping[str, set[str]]) -> set[str]:
    """An index that stays in standard storage guards its children: they cannot go before it does."""
    by_digest = {image.image_digest: image for image in images}
    return {
        child
        for child, indexes in parents.items()
        if any(by_digest[index].image_status != "ARCHIVED" for index in indexes)
    }


def _eligible(
    rule: LifecycleRule, selected: tuple[ImageDetail, ...], now: datetime
) -> tuple[tuple[ImageDetail, ...], tuple[ImageDetail, ...]]:
    """The count window a rule keeps, and the selected images it may act on."""
    selection = rule.selection
    if rule.is_count_rule:
        return selected[: selection.count_number], selected[selection.count_number :]
    eligible = tuple(
        image
        for image in selected
        if is_older_than(age_reference(image, selection.count_type), selection.count_number, now)
    )
    return (), eligible


def _apply_rule(
    rule: LifecycleRule,
    ranked: Sequence[ImageDetail],
    now: datetime,
    guarded: set[str],
    verdicts: dict[str, Verdict],
    first_selector: dict[str, int],
) -> RuleEvaluation:
    """One rule, after every higher-priority one: adds its verdicts, and records the images it selects
    first, since a lower rule cannot act on them."""
    selected = tuple(image for image in ranked if selects(rule.selection, image))
    window, eligible = _eligible(rule, selected, now)
    fates = {image.image_digest: _fate(image.image_digest, guarded, verdicts, first_selector) for image in eligible}
    acted = _with_fate(eligible, fates, "acted")
    for image in acted:
        verdicts[image.image_digest] = Verdict(image=image, rule=rule)
    claimed = tuple((image, first_selector[image.image_digest]) for image in _with_fate(eligible, fates, "claimed"))
    window_blocked = _never_acted_on_in(window, guarded, first_selector)
    for image in selected:
        first_selector.setdefault(image.image_digest, rule.rule_priority)
    return RuleEvaluation(
        rule=rule,
        selected=selected,
        window=window,
        eligible=eligible,
        acted=acted,
        already_acted=_with_fate(eligible, fates, "already-acted"),
        claimed=claimed,
        index_children=_with_fate(eligible, fates, "index-child"),
        window_blocked=window_blocked,
    )


def _never_acted_on_in(
    window: Sequence[ImageDetail], guarded: set[str], first_selector: Mapping[str, int]
) -> tuple[tuple[ImageDetail, int | None], ...]:
    """The window's images that a higher rule selects (with its priority) or that an index guards (None)."""
    return tuple(
        (image, first_selector.get(image.image_digest))
        for image in window
        if image.image_digest in first_selector or image.image_digest in guarded
    )


Fate = Literal["acted", "already-acted", "claimed", "index-child"]


def _fate(digest: str, guarded: set[str], verdicts: Mapping[str, Verdict], first_selector: Mapping[str, int]) -> Fate:
    """What becomes of an eligible image, decided by the higher rules: a rule may act on it only when no
    higher rule acts on it or selects it, and no index that stays references it."""
    if digest in verdicts:
        return "already-acted"
    if digest in first_selector:
        return "claimed"
    if digest in guarded:
        return "index-child"
    return "acted"


def _with_fate(images: Sequence[ImageDetail], fates: Mapping[str, Fate], fate: Fate) -> tuple[ImageDetail, ...]:
    return tuple(image for image in images if fates[image.image_digest] == fate)


def _cascade_referrers(images: Sequence[ImageDetail], verdicts: Mapping[str, Verdict]) -> dict[str, str]:
    """Referrers (`subjectManifestDigest`) go with their subject, transitively; ECR does this within
    24 hours of the subject's expiry or archival, outside any rule."""
    gone = set(verdicts)
    cascaded: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for image in images:
            subject = image.subject_manifest_digest
            if subject in gone and image.image_digest not in gone:
                cascaded[image.image_digest] = subject
                gone.add(image.image_digest)
                changed = True
    return cascaded
