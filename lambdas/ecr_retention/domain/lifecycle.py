"""Native ECR lifecycle policies, offline: the policy model with ECR's validation, an evaluator with
ECR's documented semantics, and output shaped like `aws ecr get-lifecycle-policy-preview`.

Where AWS leaves a corner undocumented this module makes one choice and docs/lifecycle.md lists it:
ties in push time break by digest (ascending digest counts as younger), ages are exact 24-hour periods
compared strictly (an image exactly N days old is not older than N days), a restored image's
`lastActivatedAt` stands in for its push time, `ACTIVATING` images belong to no storage class, and a
child of an image index that is still present is never acted on in the same evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ecr_retention.domain.errors import InputError, format_location, parse_json
from ecr_retention.domain.registry import INDEX_MEDIA_TYPES, ImageDetail
from ecr_retention.domain.timestamps import UtcDatetime

MAX_RULES = 50  # service quota, not adjustable
MIN_POLICY_TEXT, MAX_POLICY_TEXT = 100, 30_720  # LifecyclePolicyText length in the API model
MAX_WILDCARDS = 4  # per tagPatternList entry
MIN_ARCHIVE_DAYS = 90  # archive's minimum storage duration; sinceImageTransitioned below it is rejected
DAY = timedelta(days=1)

TagStatus = Literal["tagged", "untagged", "any"]
CountType = Literal["imageCountMoreThan", "sinceImagePushed", "sinceImagePulled", "sinceImageTransitioned"]
StorageClass = Literal["standard", "archive"]
ActionType = Literal["expire", "transition"]
PreviewActionType = Literal["EXPIRE", "TRANSITION"]
TagText = Annotated[str, StringConstraints(min_length=1, max_length=300)]
TagList = Annotated[tuple[TagText, ...], Field(min_length=1)]


class PolicyShape(BaseModel):
    """The policy JSON as ECR reads it: camelCase keys, unknown keys rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class LifecycleSelection(PolicyShape):
    tag_status: TagStatus
    tag_pattern_list: TagList | None = None
    tag_prefix_list: TagList | None = None
    storage_class: StorageClass | None = None
    count_type: CountType
    count_unit: Literal["days"] | None = None
    count_number: Annotated[StrictInt, Field(ge=1)]

    @field_validator("tag_pattern_list")
    @classmethod
    def _at_most_four_wildcards(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for pattern in value or ():
            if pattern.count("*") > MAX_WILDCARDS:
                raise ValueError(f"{pattern!r} has {pattern.count('*')} wildcards; at most {MAX_WILDCARDS} allowed")
        return value

    @model_validator(mode="after")
    def _fields_fit_together(self) -> Self:
        lists = [name for name, value in self._tag_lists() if value is not None]
        if self.tag_status == "tagged" and not lists:
            raise ValueError("tagStatus tagged requires tagPatternList or tagPrefixList")
        if self.tag_status != "tagged" and lists:
            raise ValueError(f"{lists[0]} is only allowed with tagStatus tagged, not {self.tag_status}")
        if len(lists) > 1:
            raise ValueError("tagPatternList and tagPrefixList cannot both be given in one rule")
        if self.count_type == "imageCountMoreThan" and self.count_unit is not None:
            raise ValueError("countUnit is not allowed with countType imageCountMoreThan")
        if self.count_type != "imageCountMoreThan" and self.count_unit is None:
            raise ValueError(f"countUnit (days) is required with countType {self.count_type}")
        if self.count_type == "sinceImageTransitioned":
            if self.storage_class != "archive":
                raise ValueError("countType sinceImageTransitioned requires storageClass archive")
            if self.count_number < MIN_ARCHIVE_DAYS:
                raise ValueError(
                    f"countNumber {self.count_number}: sinceImageTransitioned needs at least "
                    f"{MIN_ARCHIVE_DAYS} days (archive's minimum storage duration)"
                )
        elif self.storage_class == "archive":
            raise ValueError(f"storageClass archive is only allowed with sinceImageTransitioned, not {self.count_type}")
        return self

    def _tag_lists(self) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
        return (("tagPatternList", self.tag_pattern_list), ("tagPrefixList", self.tag_prefix_list))

    @property
    def effective_storage_class(self) -> StorageClass:
        return self.storage_class or "standard"

    @property
    def patterns(self) -> tuple[str, ...]:
        """The tag lists as `*` patterns: a prefix `p` is the pattern `p*`."""
        if self.tag_pattern_list is not None:
            return self.tag_pattern_list
        return tuple(f"{prefix}*" for prefix in self.tag_prefix_list or ())


class LifecycleAction(PolicyShape):
    type: ActionType
    target_storage_class: Literal["archive"] | None = None

    @model_validator(mode="after")
    def _target_fits_type(self) -> Self:
        if self.type == "transition" and self.target_storage_class is None:
            raise ValueError("action type transition requires targetStorageClass archive")
        if self.type == "expire" and self.target_storage_class is not None:
            raise ValueError("targetStorageClass is only allowed with action type transition")
        return self


class LifecycleRule(PolicyShape):
    rule_priority: Annotated[StrictInt, Field(ge=1)]
    description: StrictStr | None = None
    selection: LifecycleSelection
    action: LifecycleAction

    @model_validator(mode="after")
    def _count_type_fits_action(self) -> Self:
        count_type, action = self.selection.count_type, self.action.type
        if count_type == "sinceImagePulled" and action != "transition":
            raise ValueError("countType sinceImagePulled can only be used with action type transition")
        if count_type == "sinceImageTransitioned" and action != "expire":
            raise ValueError("countType sinceImageTransitioned can only be used with action type expire")
        return self

    @property
    def label(self) -> str:
        return f"rule {self.rule_priority}"

    @property
    def is_count_rule(self) -> bool:
        return self.selection.count_type == "imageCountMoreThan"


class LifecyclePolicy(PolicyShape):
    rules: Annotated[tuple[LifecycleRule, ...], Field(min_length=1, max_length=MAX_RULES)]

    @model_validator(mode="after")
    def _rules_fit_together(self) -> Self:
        seen: dict[int, int] = {}
        for index, rule in enumerate(self.rules):
            if rule.rule_priority in seen:
                raise ValueError(
                    f"rules[{seen[rule.rule_priority]}] and rules[{index}] both have rulePriority "
                    f"{rule.rule_priority}; priorities must be unique"
                )
            seen[rule.rule_priority] = index
        for storage_class in ("standard", "archive"):
            rules = [r for r in self.ordered_rules if r.selection.effective_storage_class == storage_class]
            where = f"among rules selecting storageClass {storage_class}"
            any_rules = [r for r in rules if r.selection.tag_status == "any"]
            if any_rules and rules[-1] is not any_rules[0]:
                raise ValueError(
                    f"{any_rules[0].label}: a rule with tagStatus any must have the highest rulePriority "
                    f"{where}, but {rules[-1].label} comes after it"
                )
            untagged = [r for r in rules if r.selection.tag_status == "untagged"]
            if len(untagged) > 1:
                raise ValueError(
                    f"{untagged[1].label}: only one rule may select untagged images {where} "
                    f"({untagged[0].label} already does)"
                )
            prefixes: dict[frozenset[str], LifecycleRule] = {}
            for rule in rules:
                if rule.selection.tag_prefix_list is None:
                    continue
                key = frozenset(rule.selection.tag_prefix_list)
                if key in prefixes:
                    raise ValueError(
                        f"{rule.label}: tagPrefixList {sorted(key)} repeats {prefixes[key].label}; "
                        f"the rules {where} must have a unique set of prefixes"
                    )
                prefixes[key] = rule
        return self

    @property
    def ordered_rules(self) -> tuple[LifecycleRule, ...]:
        return tuple(sorted(self.rules, key=lambda rule: rule.rule_priority))

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass(frozen=True)
class PolicyDocument:
    """A policy read from a file: the raw policy or `aws ecr get-lifecycle-policy` output."""

    policy: LifecyclePolicy
    text: str
    repository_name: str | None = None
    registry_id: str | None = None


def _describe_policy_error(error: ValidationError, data: Any) -> str:
    """One line naming the rule (by priority) and the violated constraint."""
    first = error.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    kind = first["type"]
    context = first.get("ctx", {})
    if kind == "missing":
        message = "required but missing"
    elif kind == "extra_forbidden":
        message = "unknown key (ECR rejects keys that are not in the lifecycle policy schema)"
    elif kind == "too_short":
        message = f"needs at least {context.get('min_length')}, got {context.get('actual_length')}"
    elif kind == "too_long":
        quota = " (ECR's quota of rules per policy)" if loc == ("rules",) else ""
        message = f"at most {context.get('max_length')} allowed{quota}, got {context.get('actual_length')}"
    elif kind == "string_too_short":
        message = "must not be empty"
    elif kind == "string_too_long":
        message = f"longer than {context.get('max_length')} characters"
    elif not isinstance(first.get("input"), dict | list):
        message = f"{first.get('input')!r}: {message[0].lower()}{message[1:]}"
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        rules = data.get("rules") if isinstance(data, dict) else None
        raw = rules[loc[1]] if isinstance(rules, list) and loc[1] < len(rules) else None
        priority = raw.get("rulePriority") if isinstance(raw, dict) else None
        name = f"rule {priority} (rules[{loc[1]}])" if type(priority) is int else f"rules[{loc[1]}]"
        rest = format_location(loc[2:]) if len(loc) > 2 else ""
        return f"{name}: {rest}: {message}" if rest else f"{name}: {message}"
    where = format_location(loc)
    return message if where == "(top level)" else f"{where}: {message}"


def parse_policy(text: str, source: str = "policy") -> LifecyclePolicy:
    """Validate a lifecycle policy text as PutLifecyclePolicy would; InputError names the rule and problem."""
    if not MIN_POLICY_TEXT <= len(text) <= MAX_POLICY_TEXT:
        raise InputError(
            f"{source}: the policy text is {len(text)} characters; ECR accepts {MIN_POLICY_TEXT} to {MAX_POLICY_TEXT}"
        )
    data = parse_json(text, source)
    if not isinstance(data, dict):
        raise InputError(f'{source}: a lifecycle policy is a JSON object {{"rules": [...]}}')
    try:
        return LifecyclePolicy.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {_describe_policy_error(error, data)}") from None


def parse_policy_document(text: str, source: str = "policy") -> PolicyDocument:
    """A raw policy, or `aws ecr get-lifecycle-policy` output whose `lifecyclePolicyText` holds one."""
    data = parse_json(text, source)
    if isinstance(data, dict) and "lifecyclePolicyText" in data:
        inner = data["lifecyclePolicyText"]
        if not isinstance(inner, str):
            raise InputError(f"{source}: lifecyclePolicyText must be a string holding the policy JSON")
        repository = data.get("repositoryName")
        registry = data.get("registryId")
        return PolicyDocument(
            policy=parse_policy(inner, f"{source}: lifecyclePolicyText"),
            text=inner,
            repository_name=repository if isinstance(repository, str) else None,
            registry_id=registry if isinstance(registry, str) else None,
        )
    return PolicyDocument(policy=parse_policy(text, source), text=text)


# --- matching -------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """ECR's tag pattern: `*` is any run of characters, everything else literal, whole tag."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def tag_matches(tag: str, pattern: str) -> bool:
    return _pattern_regex(pattern).fullmatch(tag) is not None


def pattern_includes(outer: str, inner: str) -> bool:
    """True when every tag that matches `inner` also matches `outer` (sound, for `*`-only patterns).

    `inner` is matched as text: its `*` can only be absorbed by a `*` of `outer`, since tags and
    the literal parts of patterns never contain `*`."""
    return _pattern_regex(outer).fullmatch(inner) is not None


def storage_class_of(image: ImageDetail) -> StorageClass | None:
    """ACTIVE images are standard, ARCHIVED are archive; ACTIVATING ones (being restored) are neither."""
    return {"ACTIVE": "standard", "ARCHIVED": "archive"}.get(image.image_status)  # type: ignore[return-value]


def tags_selected(selection: LifecycleSelection, tags: Iterable[str]) -> bool:
    """The tag part of a selection: every list entry matches some tag (AND across entries)."""
    tags = tuple(tags)
    if selection.tag_status == "any":
        return True
    if selection.tag_status == "untagged":
        return not tags
    return bool(tags) and all(any(tag_matches(tag, p) for tag in tags) for p in selection.patterns)


def selects(selection: LifecycleSelection, image: ImageDetail) -> bool:
    """ECR's "matches the tagging requirements" of a rule, within the rule's storage class."""
    if storage_class_of(image) != selection.effective_storage_class:
        return False
    return tags_selected(selection, image.image_tags)


def selection_includes(outer: LifecycleSelection, inner: LifecycleSelection) -> bool:
    """True when every image `inner` selects is also selected by `outer` (sound, not complete)."""
    if outer.effective_storage_class != inner.effective_storage_class:
        return False
    if outer.tag_status == "any":
        return True
    if outer.tag_status == "untagged":
        return inner.tag_status == "untagged"
    if inner.tag_status != "tagged":
        return False
    return all(any(pattern_includes(o, i) for i in inner.patterns) for o in outer.patterns)


# --- time -----------------------------------------------------------------------------------------


def ordering_time(image: ImageDetail) -> datetime:
    """Push time, or `lastActivatedAt` for an image restored from archive (restored = newly pushed)."""
    if image.last_activated_at is not None and image.last_activated_at > image.image_pushed_at:
        return image.last_activated_at
    return image.image_pushed_at


def pull_time(image: ImageDetail) -> datetime:
    """Last recorded pull; push time when never pulled; `lastActivatedAt` when restored and not pulled since."""
    pull = image.last_recorded_pull_time
    activated = image.last_activated_at
    if activated is not None and (pull is None or pull < activated):
        return activated
    return pull or image.image_pushed_at


def age_reference(image: ImageDetail, count_type: CountType) -> datetime | None:
    if count_type == "sinceImagePulled":
        return pull_time(image)
    if count_type == "sinceImageTransitioned":
        return image.last_archived_at
    return ordering_time(image)


def is_older_than(moment: datetime | None, days: int, now: datetime) -> bool:
    """Strictly more than `days` exact 24-hour periods before `now` (house convention)."""
    # No datetime is more than timedelta.max before another, and `days * DAY` would overflow past it.
    return moment is not None and days <= timedelta.max.days and now - moment > days * DAY


def rank(images: Iterable[ImageDetail]) -> list[ImageDetail]:
    """Youngest first by ordering time; equal times break by digest, ascending first."""
    by_digest = sorted(images, key=lambda image: image.image_digest)
    return sorted(by_digest, key=ordering_time, reverse=True)  # stable: ties keep digest order


# --- evaluation -----------------------------------------------------------------------------------


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
    by_digest = {image.image_digest: image for image in ranked}
    # An index that stays in standard storage guards its children: they cannot go before it does.
    guarded = {
        child
        for child, indexes in parents.items()
        if any(by_digest[index].image_status != "ARCHIVED" for index in indexes)
    }
    verdicts: dict[str, Verdict] = {}
    first_selector: dict[str, int] = {}
    evaluations: list[RuleEvaluation] = []
    for rule in policy.ordered_rules:
        selection = rule.selection
        selected = tuple(image for image in ranked if selects(selection, image))
        if rule.is_count_rule:
            window, eligible = selected[: selection.count_number], selected[selection.count_number :]
        else:
            window = ()
            eligible = tuple(
                image
                for image in selected
                if is_older_than(age_reference(image, selection.count_type), selection.count_number, now)
            )
        acted: list[ImageDetail] = []
        already: list[ImageDetail] = []
        claimed: list[tuple[ImageDetail, int]] = []
        children: list[ImageDetail] = []
        for image in eligible:
            digest = image.image_digest
            if digest in verdicts:
                already.append(image)
            elif digest in first_selector:
                claimed.append((image, first_selector[digest]))
            elif digest in guarded:
                children.append(image)
            else:
                verdicts[digest] = Verdict(image=image, rule=rule)
                acted.append(image)
        window_blocked = tuple(
            (image, first_selector.get(image.image_digest))
            for image in window
            if image.image_digest in first_selector or image.image_digest in guarded
        )
        for image in selected:
            first_selector.setdefault(image.image_digest, rule.rule_priority)
        evaluations.append(
            RuleEvaluation(
                rule=rule,
                selected=selected,
                window=window,
                eligible=eligible,
                acted=tuple(acted),
                already_acted=tuple(already),
                claimed=tuple(claimed),
                index_children=tuple(children),
                window_blocked=window_blocked,
            )
        )
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


# --- preview output -------------------------------------------------------------------------------


class PreviewShape(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class PreviewAction(PreviewShape):
    type: PreviewActionType
    target_storage_class: Literal["ARCHIVE"] | None = None


class PreviewResult(PreviewShape):
    image_digest: str
    image_tags: tuple[str, ...]
    image_pushed_at: UtcDatetime
    action: PreviewAction
    applied_rule_priority: int
    storage_class: Literal["STANDARD", "ARCHIVE"]


class TransitioningCount(PreviewShape):
    target_storage_class: Literal["ARCHIVE"]
    image_total_count: int


class PreviewSummary(PreviewShape):
    expiring_image_total_count: int
    transitioning_image_total_counts: tuple[TransitioningCount, ...] = ()


class CascadedReferrer(PreviewShape):
    """Not in AWS's preview: a referrer that ECR removes or archives with its subject, outside any rule."""

    image_digest: str
    image_tags: tuple[str, ...]
    subject_manifest_digest: str
    action: PreviewAction


class LifecyclePolicyPreview(PreviewShape):
    """What `aws ecr get-lifecycle-policy-preview` would return for these images, once COMPLETE."""

    registry_id: str | None = None
    repository_name: str | None = None
    lifecycle_policy_text: str | None = None
    status: Literal["COMPLETE"] = "COMPLETE"
    preview_results: tuple[PreviewResult, ...]
    summary: PreviewSummary
    cascaded_referrers: tuple[CascadedReferrer, ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        if not self.summary.transitioning_image_total_counts:
            del data["summary"]["transitioningImageTotalCounts"]
        if not self.cascaded_referrers:
            del data["cascadedReferrers"]
        return data


def _preview_action(action: PreviewActionType) -> PreviewAction:
    return PreviewAction(type=action, target_storage_class="ARCHIVE" if action == "TRANSITION" else None)


def build_preview(
    evaluation: LifecycleEvaluation,
    *,
    repository_name: str | None = None,
    registry_id: str | None = None,
    policy_text: str | None = None,
) -> LifecyclePolicyPreview:
    """previewResults in rule priority order, each rule's images oldest first (the order ECR marks them)."""
    results: list[PreviewResult] = []
    for rule_evaluation in evaluation.rules:
        for image in reversed(rule_evaluation.acted):
            verdict = evaluation.verdicts[image.image_digest]
            results.append(
                PreviewResult(
                    image_digest=image.image_digest,
                    image_tags=image.image_tags,
                    image_pushed_at=image.image_pushed_at,
                    action=_preview_action(verdict.action),
                    applied_rule_priority=verdict.rule.rule_priority,
                    storage_class="ARCHIVE" if image.image_status == "ARCHIVED" else "STANDARD",
                )
            )
    transitioning = sum(1 for result in results if result.action.type == "TRANSITION")
    by_digest = {image.image_digest: image for image in evaluation.images}
    cascaded: list[CascadedReferrer] = []
    for digest, subject in sorted(evaluation.cascaded.items()):
        action = evaluation.action_of(digest)
        assert action is not None  # a cascaded referrer always has an acted-on root subject
        cascaded.append(
            CascadedReferrer(
                image_digest=digest,
                image_tags=by_digest[digest].image_tags,
                subject_manifest_digest=subject,
                action=_preview_action(action),
            )
        )
    return LifecyclePolicyPreview(
        registry_id=registry_id,
        repository_name=repository_name,
        lifecycle_policy_text=policy_text,
        preview_results=tuple(results),
        summary=PreviewSummary(
            expiring_image_total_count=len(results) - transitioning,
            transitioning_image_total_counts=(
                (TransitioningCount(target_storage_class="ARCHIVE", image_total_count=transitioning),)
                if transitioning
                else ()
            ),
        ),
        cascaded_referrers=tuple(cascaded),
    )


def preview(
    policy: LifecyclePolicy,
    images: Iterable[ImageDetail],
    now: datetime,
    manifests: Mapping[str, Mapping[str, Any]] | None = None,
) -> LifecyclePolicyPreview:
    return build_preview(evaluate(policy, images, now, manifests))
