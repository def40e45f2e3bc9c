"""Rules that the rules above them stop: a rule that can never act, and count slots held by images a
rule can never act on."""

from __future__ import annotations

from dataclasses import dataclass

from ecr_retention.domain.doctor.context import DoctorContext, describe_image, keeps_forever, selects_one_image_at_most
from ecr_retention.domain.doctor.fixes import intended_own_images, was_raised
from ecr_retention.domain.doctor.models import Finding, RaiseCount, RemoveRule
from ecr_retention.domain.lifecycle.evaluation import RuleEvaluation
from ecr_retention.domain.lifecycle.matching import selection_includes
from ecr_retention.domain.lifecycle.policy import LifecycleRule
from ecr_retention.domain.registry.images import ImageDetail


def check_shadowed_rules(context: DoctorContext) -> list[Finding]:
    findings: list[Finding] = []
    rules = context.policy.ordered_rules
    for position, lower in enumerate(rules):
        for higher in rules[:position]:
            if not selection_includes(higher.selection, lower.selection):
                continue
            findings.append(
                Finding(
                    severity="warning",
                    code="rule-shadowed",
                    message=(
                        f"{lower.label} can never act: every image it selects is selected first by "
                        f"{higher.label}, and a lower rule cannot act on an image a higher rule selects"
                    ),
                    fix=(
                        f"remove {lower.label} (same outcome; the fixed policy does), or, if it is meant to act, "
                        f"give it a lower rulePriority number than {higher.label}"
                    ),
                    rule_priority=lower.rule_priority,
                    policy_edit=RemoveRule(rule_priority=lower.rule_priority),
                )
            )
            break
    return findings


def check_count_reduced(context: DoctorContext) -> list[Finding]:
    """A count rule ranks every image it selects, also those a higher rule selects (or an index guards),
    which it can never act on: they take slots that a reader expects to hold the rule's own images.

    The rule is meant to keep `intended_own_images` of its own: countNumber, or what a fixed policy
    recorded in its description when it raised countNumber to make room. So a raised count, applied,
    is not reported again, while a change in the images that takes more slots still is.

    Reported when an image that stays takes a slot (one a higher rule removes now is gone on the next run, so on
    its own it is no reason to keep more), or when the count is one a fixed policy raised. The slots, and the raised
    count, are those of the evaluated registry, every image the rule ranks now: ECR ranks an image that a higher rule
    removes in the same pass, and an image of the rule's own that it removes then does not come back. An untagged rule
    is not reported: its images are leftovers, and a larger count only keeps more of them.
    """
    slots = [Slots.of(context, rule_evaluation) for rule_evaluation in context.evaluation.rules]
    return [
        _count_reduced(slot)
        for slot in slots
        if _ranks_what_it_cannot_act_on(context, slot) and slot.room < intended_own_images(slot.rule)
    ]


@dataclass(frozen=True)
class Slots:
    """A count rule's window in the evaluated registry: the images it selects, youngest first, those of its window
    that it can never act on, and the images it selects that another rule removes now (gone on the next run)."""

    evaluation: RuleEvaluation
    blocked: tuple[tuple[ImageDetail, int | None], ...]
    leaving: frozenset[str]

    @classmethod
    def of(cls, context: DoctorContext, rule_evaluation: RuleEvaluation) -> Slots:
        leaving = frozenset(
            image.image_digest
            for image in rule_evaluation.selected
            if image not in rule_evaluation.acted and context.evaluation.action_of(image.image_digest) is not None
        )
        return cls(evaluation=rule_evaluation, blocked=rule_evaluation.window_blocked, leaving=leaving)

    @property
    def rule(self) -> LifecycleRule:
        return self.evaluation.rule

    @property
    def selected(self) -> tuple[ImageDetail, ...]:
        return self.evaluation.selected

    @property
    def staying(self) -> tuple[ImageDetail, ...]:
        """The blocked images that stay: they take their slots on the next run too."""
        return tuple(image for image, _ in self.blocked if image.image_digest not in self.leaving)

    @property
    def room(self) -> int:
        """The count's slots for images the rule can act on. When the window holds every image the rule selects, it
        removes none now, and the slots that last are those the images that stay leave; else the slots it keeps now,
        beside every image of its window that it cannot act on."""
        number = self.rule.selection.count_number
        if len(self.selected) <= number:
            return number - len(self.staying)
        return number - len(self.blocked)


def _ranks_what_it_cannot_act_on(context: DoctorContext, slots: Slots) -> bool:
    """A count rule with images in its window that it can never act on (one that stays, or any in a count a fixed
    policy raised), and that can act at all: a rule that selects one image at most never acts, a keep-forever count
    keeps them all anyway, an untagged rule keeps leftovers, and a shadowed one is reported as rule-shadowed and
    removed by the fix."""
    rule = slots.rule
    if not rule.is_count_rule or not slots.blocked or selects_one_image_at_most(rule.selection):
        return False
    if not slots.staying and not was_raised(rule):
        return False
    if keeps_forever(rule) or rule.selection.tag_status == "untagged":
        return False
    return not context.shadowed(rule)


def _count_reduced(slots: Slots) -> Finding:
    rule = slots.rule
    number = rule.selection.count_number
    wanted = intended_own_images(rule)
    raised = _count_for_own_images(slots, wanted)
    acted = slots.evaluation.acted
    taken = ", ".join(describe_image(image) + _why_blocked(slots, image, by) for image, by in slots.blocked)
    consequence = (
        f"; it removes {', '.join(describe_image(i) for i in reversed(acted))} although only "
        f"{slots.room} of its own images are kept"
        if acted
        else ""
    )
    return Finding(
        severity="warning" if acted else "info",
        code="count-reduced",
        message=(
            f"{rule.label} keeps {number} images by count, but {len(slots.blocked)} of those {number} slots are "
            f"taken by images it can never act on: {taken}. Protected images still occupy a lower "
            f"rule's count{consequence}"
        ),
        fix=(
            f"to keep {wanted} images of its own, raise countNumber to {raised} (one more per image it ranks and "
            f"cannot act on, e.g. per mutable tag with a keep-1 rule, counting those a higher rule removes now); the "
            f"fixed policy does, and says in the rule's description that it keeps {wanted} of its own"
        ),
        rule_priority=rule.rule_priority,
        policy_edit=RaiseCount(rule_priority=rule.rule_priority, count_number=raised, own_images=wanted),
    )


def _why_blocked(slots: Slots, image: ImageDetail, by: int | None) -> str:
    if by is None:
        return " (index child)"
    if image.image_digest in slots.leaving:
        return f" (selected by rule {by}, which removes it now)"
    return f" (selected by rule {by})"


def _count_for_own_images(slots: Slots, wanted: int) -> int:
    """The countNumber that keeps `wanted` images the rule can act on, in the evaluated registry. Images it can
    never act on may also sit just beyond the window: count up to its wanted-th own image."""
    never = _never_acted_on(slots.evaluation)
    own_ranks = [n + 1 for n, image in enumerate(slots.selected) if image.image_digest not in never]
    if len(own_ranks) >= wanted:
        return own_ranks[wanted - 1]
    # Fewer own images than wanted: every image it selects now, and the wanted number beside the images it cannot act
    # on that stay.
    staying = sum(
        1 for image in slots.selected if image.image_digest in never and image.image_digest not in slots.leaving
    )
    return max(len(slots.selected), wanted + staying)


def _never_acted_on(rule_evaluation: RuleEvaluation) -> set[str]:
    """The selected images the rule can never act on: in its window or beyond it."""
    beyond = (
        *rule_evaluation.already_acted,
        *(image for image, _ in rule_evaluation.claimed),
        *rule_evaluation.index_children,
    )
    return {image.image_digest for image, _ in rule_evaluation.window_blocked} | {
        image.image_digest for image in beyond
    }
