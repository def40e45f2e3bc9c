"""What every check reads, and the questions several checks ask of it: which rule removes an image,
which keep rules would stop that, which images must stay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecr_retention.domain.doctor.models import KeepTags
from ecr_retention.domain.doctor.tag_kinds import DEFAULT_TAG_KINDS, TagKinds
from ecr_retention.domain.in_use.index import InUseIndex
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.lifecycle.evaluation import LifecycleEvaluation, Verdict
from ecr_retention.domain.lifecycle.matching import selection_includes, storage_class_of
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule, LifecycleSelection
from ecr_retention.domain.lifecycle.timing import pull_time
from ecr_retention.domain.planning.plan import Decision, RepositoryPlan
from ecr_retention.domain.registry.images import ImageDetail

AGE_WORD = {
    "imageCountMoreThan": "pushed",
    "sinceImagePushed": "pushed",
    "sinceImagePulled": "last pulled",
    "sinceImageTransitioned": "archived",
}
PROTECTIVE_KINDS = frozenset({"keep-rule", "in-use"})

ARCHIVED_FIX = (
    "the image is archived, and a keep rule sees one storage class: a rule for archived images can only "
    "expire them (sinceImageTransitioned), so no native rule keeps it; restore it if it is needed, or drop "
    "the rule and let ecr-retention prune this repository"
)
UNTAGGED_FIX = (
    "an untagged image cannot be protected by a native rule (here the image or a subject it goes with): tag "
    "deployed images (ecr-retention tagging adds deployed-<cluster>-<time>) and protect that tag pattern with a "
    "higher-priority rule, or drop the rule and let ecr-retention prune this repository"
)


def short_with_algorithm(digest: str) -> str:
    """`sha256:1a2b3c4d5e6f`, as the doctor names images (the planner's `short` drops the algorithm)."""
    algorithm, _, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:12]}"


def describe_image(image: ImageDetail) -> str:
    tags = f" [{', '.join(image.image_tags)}]" if image.image_tags else " (untagged)"
    return short_with_algorithm(image.image_digest) + tags


def protective_tag(image: ImageDetail, kinds: TagKinds = DEFAULT_TAG_KINDS) -> str:
    """The tag to pin an image by: a build tag stays on it, a mutable tag moves on."""
    return min(image.image_tags, key=lambda tag: (kinds.is_mutable(tag), tag))


def _build_tag(image: ImageDetail, kinds: TagKinds) -> list[str]:
    """The tag that pins a subject the image goes with; none when it is untagged."""
    return [protective_tag(image, kinds)] if image.image_tags else []


def selects_one_image_at_most(selection: LifecycleSelection) -> bool:
    """A tagged selection with a pattern without `*` names one tag, and a tag is on one image at most."""
    return selection.tag_status == "tagged" and any("*" not in pattern for pattern in selection.patterns)


def never_acts(rule: LifecycleRule) -> bool:
    """A count rule that selects one image at most keeps it: countNumber is at least 1."""
    return rule.is_count_rule and selects_one_image_at_most(rule.selection)


# Limits at which a rule is a keep, not a cleanup: "keep the newest 9999", "expire after 365000 days" are the
# idioms teams write to keep everything a rule selects (and to shield it from lower rules).
KEEP_FOREVER_COUNT = 1000
KEEP_FOREVER_DAYS = 3650


def keeps_forever(rule: LifecycleRule) -> bool:
    """A count of 1,000 images or more, or an age of 10 years or more: an intentional keep."""
    limit = KEEP_FOREVER_COUNT if rule.is_count_rule else KEEP_FOREVER_DAYS
    return rule.selection.count_number >= limit


def removes(action: str | None) -> str:
    return "archive" if action == "TRANSITION" else "expire"


def plan_keep_reasons(decision: Decision) -> tuple[str, ...]:
    return tuple(reason.kind for reason in decision.reasons if reason.kind in PROTECTIVE_KINDS)


def rule_limit(rule: LifecycleRule) -> str:
    number = rule.selection.count_number
    if rule.is_count_rule:
        return f"count of {number} (newer images selected by it)"
    return f"limit of {number} days since the image was {AGE_WORD[rule.selection.count_type]}"


class DoctorContext:
    """One policy's evaluation against one repository, with the in-use index and the pipeline's plan."""

    def __init__(
        self,
        policy: LifecyclePolicy,
        evaluation: LifecycleEvaluation,
        *,
        repository_name: str | None,
        in_use: InUseIndex,
        plan: RepositoryPlan | None,
        manifests: Mapping[str, Mapping[str, Any]],
        tag_kinds: TagKinds = DEFAULT_TAG_KINDS,
    ) -> None:
        self.policy = policy
        self.evaluation = evaluation
        self.repository_name = repository_name
        self.in_use = in_use
        self.plan = plan
        self.manifests = manifests
        self.tag_kinds = tag_kinds
        self.by_digest = {image.image_digest: image for image in evaluation.images}
        self.decisions = {decision.image_digest: decision for decision in plan.images} if plan else {}

    def usages(self, image: ImageDetail) -> list[Workload]:
        if self.repository_name is not None:
            return self.in_use.usages(self.repository_name, image)
        return list(self.in_use.by_digest.get(image.image_digest, ()))

    def is_mutable(self, tag: str) -> bool:
        return self.tag_kinds.is_mutable(tag)

    def pin_tag(self, image: ImageDetail) -> str:
        return protective_tag(image, self.tag_kinds)

    def must_stay(self, image: ImageDetail) -> bool:
        """In use, carrying a mutable tag, or kept by the rules file (or the in-use guard) in the plan."""
        if self.usages(image) or any(self.is_mutable(tag) for tag in image.image_tags):
            return True
        decision = self.decisions.get(image.image_digest)
        return decision is not None and not decision.removes and bool(plan_keep_reasons(decision))

    def removed_by_rules(self, image: ImageDetail) -> list[ImageDetail]:
        """Every image a rule acts on that takes `image` with it: the image itself when a rule acts on it,
        and each subject it goes with (a referrer goes with its subject, transitively) that a rule acts on."""
        removed: list[ImageDetail] = []
        seen: set[str] = set()
        current: ImageDetail | None = image
        while current is not None and current.image_digest not in seen:
            seen.add(current.image_digest)
            if current.image_digest in self.evaluation.verdicts:
                removed.append(current)
            subject = current.subject_manifest_digest
            gone = subject is not None and self.evaluation.action_of(subject) is not None
            current = self.by_digest.get(subject) if gone and subject is not None else None
        return removed

    def protection(self, image: ImageDetail, own_tags: Sequence[str], *, always: bool = False) -> KeepTags | str:
        """The keep-1 rules that stop every removal of `image`, or why no native rule can.

        `own_tags` pin the image itself, when a rule acts on it (or `always`); each subject it would go with
        is pinned by a build tag. A keep rule sees only standard (ACTIVE) images, and only tagged ones.
        """
        tags: list[str] = []
        for member in self._to_pin(image, always=always):
            member_tags = list(own_tags) if member is image else _build_tag(member, self.tag_kinds)
            if not member_tags:
                return UNTAGGED_FIX
            if storage_class_of(member) != "standard":
                return ARCHIVED_FIX
            tags.extend(member_tags)
        return KeepTags(tags=tuple(dict.fromkeys(tags)))

    def _to_pin(self, image: ImageDetail, *, always: bool) -> list[ImageDetail]:
        """The image (when a rule acts on it, or `always`), then every subject whose removal takes it along."""
        removed = self.removed_by_rules(image)
        pinned = [image] if always or any(member is image for member in removed) else []
        return pinned + [member for member in removed if member is not image]

    def priority_for(self, image: ImageDetail) -> int | None:
        verdict = self.acting_on(image)
        return verdict.rule.rule_priority if verdict else None

    def acting_on(self, image: ImageDetail) -> Verdict | None:
        """The verdict that takes `image`: its own, or that of the subject it goes with."""
        digest = image.image_digest
        while digest in self.evaluation.cascaded:
            digest = self.evaluation.cascaded[digest]
        return self.evaluation.verdicts.get(digest)

    def rule_for(self, image: ImageDetail) -> str:
        priority = self.priority_for(image)
        if image.image_digest in self.evaluation.cascaded:
            return f"rule {priority} (through the referrer's subject)"
        return f"rule {priority}"

    def shadowed(self, rule: LifecycleRule) -> bool:
        higher = (r for r in self.policy.ordered_rules if r.rule_priority < rule.rule_priority)
        return any(selection_includes(h.selection, rule.selection) for h in higher)


DAY_SECONDS = 86400


def days_text(days: float) -> str:
    """`1 day`, `1.7 days`, `45 days`: a tenth of a day below ten days, whole days above."""
    number = f"{days:.1f}".removesuffix(".0") if days < 10 else str(int(days))
    return f"{number} day" if number == "1" else f"{number} days"


def pull_count_detail(context: DoctorContext, image: ImageDetail) -> str:
    """Why a `sinceImagePulled` rule takes an image that runs, or "" when the rule that takes it counts
    otherwise: ECR ages the image by its last recorded pull, and a container that keeps running pulls nothing."""
    verdict = context.acting_on(image)
    if verdict is None or verdict.rule.selection.count_type != "sinceImagePulled":
        return ""
    acted = verdict.image
    moment = pull_time(acted)
    days = days_text((context.evaluation.now - moment).total_seconds() / DAY_SECONDS)
    if acted.last_activated_at is not None and moment == acted.last_activated_at:
        when = f"has not been pulled since its restore {days} ago"
    elif acted.last_recorded_pull_time is None:
        when = f"has no recorded pull, so ECR counts from its push {days} ago"
    else:
        when = f"was last pulled {days} ago"
    who = "the image" if acted is image else f"its subject {describe_image(acted)}"
    return (
        f"{verdict.rule.label} counts days since the last recorded pull (sinceImagePulled, more than "
        f"{days_text(verdict.rule.selection.count_number)}), and {who} {when}: ECR records pulls, not what runs, and a "
        "long-running pod pulls only when it starts, so a native policy cannot see that it still runs the image"
    )
