"""From findings to one action per image: a protection keeps, a delete rule's marks remove (archive only
when every mark archives), and a dependent follows its parents: kept with a kept parent, removed with a
removed one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ecr_retention.domain.plan import Action, Decision, Reason
from ecr_retention.domain.planner.explain import (
    REFERENCE_CYCLE,
    goes_with_parent_reason,
    no_delete_rule_reason,
    parent_kept_reason,
    skipped_reason,
    too_many_removals,
)
from ecr_retention.domain.planner.repository import Findings, RepositoryImages
from ecr_retention.domain.registry import ImageDetail


def decision(image: ImageDetail, action: Action, reasons: Sequence[Reason]) -> Decision:
    return Decision(
        image_digest=image.image_digest,
        image_tags=tuple(sorted(image.image_tags)),
        image_pushed_at=image.image_pushed_at,
        image_size_in_bytes=image.image_size_in_bytes,
        action=action,
        reasons=tuple(reasons),
    )


def decide(images: RepositoryImages, findings: Findings, now: datetime) -> list[Decision]:
    """Every image's action and reasons, newest first."""
    resolver = _Resolver(images, findings, now)
    for image in images.ordered:
        resolver.decide(image.image_digest)
    return [decision(image, *resolver.actions[image.image_digest]) for image in images.ordered]


def limit_removals(decisions: list[Decision], max_delete_fraction: float) -> tuple[list[Decision], str | None]:
    """A plan that removes more than max_delete_fraction of the repository keeps everything, and says why."""
    removed = sum(1 for d in decisions if d.action != "keep")
    skipped = None
    if decisions and removed / len(decisions) > max_delete_fraction:
        skipped = too_many_removals(removed, len(decisions), max_delete_fraction)
        reason = skipped_reason(skipped)
        decisions = [
            d.model_copy(update={"action": "keep", "reasons": (reason, *d.reasons)}) if d.action != "keep" else d
            for d in decisions
        ]
    return decisions, skipped


class _Resolver:
    def __init__(self, images: RepositoryImages, findings: Findings, now: datetime) -> None:
        self.images = images
        self.findings = findings
        self.now = now
        self.actions: dict[str, tuple[Action, list[Reason]]] = {}
        self.visiting: set[str] = set()

    def decide(self, digest: str) -> Action:
        """The image's action, after its parents' (memoised in `actions`)."""
        if digest in self.actions:
            return self.actions[digest][0]
        if digest in self.visiting:  # a reference cycle cannot come from a real registry; keep and say so
            self.actions[digest] = ("keep", [REFERENCE_CYCLE])
            return "keep"
        findings = self.findings
        protections: list[Reason] = findings.protections.get(digest, [])
        marks = findings.marks.get(digest, ())
        followed: list[Reason] = []
        removed_with: list[Action] = []
        parents = findings.parents.get(digest, ())
        if parents:
            self.visiting.add(digest)
            protections = list(protections)
            for parent, kind in parents:
                parent_action = self.decide(parent)
                parent_image = self.images.by_digest[parent]
                if parent_action == "keep":
                    protections.append(parent_kept_reason(kind, parent_image))
                else:
                    followed.append(goes_with_parent_reason(kind, parent_image, parent_action))
                    removed_with.append(parent_action)
            self.visiting.discard(digest)
        action: Action = "keep"
        if not protections:
            if removed_with:
                action = "archive" if "archive" in removed_with else "delete"
            elif marks:
                action = "archive" if all(archive for _, archive in marks) else "delete"
        marked = [reason for reason, _ in marks]
        if action != "keep":
            reasons = [*marked, *followed]
        else:
            reasons = [*protections, *marked, *findings.notes.get(digest, ())]
            if not reasons:
                image = self.images.by_digest[digest]
                reasons = [no_delete_rule_reason(findings.misses.get(digest, ()), image, self.now)]
        self.actions[digest] = (action, reasons)
        return action
