"""From findings to one action per image: a protection keeps, a delete rule's marks remove (archive only
when every mark archives), and a dependent follows its parents: kept with a kept parent, removed with a
removed one; an OCI referrer whose subject is gone is removed as its deleted subject was. With a quarantine,
every deletion passes through the archive first (`_Resolver.quarantine_action`)."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta
from itertools import compress, count
from operator import attrgetter

from ecr_retention.domain.planning.explain import (
    REFERENCE_CYCLE,
    RESTORE_OFF_REASON,
    goes_with_parent_reason,
    no_delete_rule_reason,
    parent_kept_reason,
    quarantine_entry_reason,
    quarantine_exit_reason,
    quarantine_unknown_reason,
    quarantine_wait_reason,
    skipped_reason,
    subject_gone_reason,
    too_many_removals,
)
from ecr_retention.domain.planning.plan import REMOVALS, Action, Decision
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.planning.repository import DependentKind, Findings, RepositoryImages
from ecr_retention.domain.registry.images import ImageDetail

_ACTION = attrgetter("action")
_planned = Decision.planned


def decision(image: ImageDetail, action: Action, reasons: Sequence[Reason]) -> Decision:
    """The image's decision, its tags sorted (an image has one or none, mostly: nothing to sort)."""
    tags = image.image_tags
    return _planned(
        image.image_digest,
        tags if len(tags) < 2 else tuple(sorted(tags)),
        image.image_pushed_at,
        image.image_size_in_bytes,
        action,
        tuple(reasons),
    )


def decide(
    images: RepositoryImages, findings: Findings, now: datetime, *, quarantine: timedelta | None = None
) -> list[Decision]:
    """Every image's action and reasons, newest first."""
    resolver = _Resolver(images, findings, now, quarantine)
    return list(map(resolver.decide, range(len(images.ordered))))


def limit_removals(decisions: list[Decision], max_delete_fraction: float) -> tuple[list[Decision], str | None]:
    """A plan that removes more than max_delete_fraction of the repository keeps everything, and says why. A restore
    is no removal: it is not counted and stays a restore."""
    removed = sum(map(REMOVALS.__contains__, map(_ACTION, decisions)))  # Decision.removes, no Python call per image
    skipped = None
    if decisions and removed / len(decisions) > max_delete_fraction:
        skipped = too_many_removals(removed, len(decisions), max_delete_fraction)
        reason = skipped_reason(skipped)
        decisions = [
            d.model_copy(update={"action": "keep", "reasons": (reason, *d.reasons)}) if d.removes else d
            for d in decisions
        ]
    return decisions, skipped


def restore_in_use(decisions: list[Decision], archived_in_use: set[str], *, restore: bool) -> list[Decision]:
    """An ARCHIVED image that an in-use manifest names is restored (it is kept by its in-use protection whatever the
    rules say); with safety.restore_in_use false it stays kept, with a reason that says it is not restored."""
    if not archived_in_use:
        return decisions
    return [
        (
            d.model_copy(update={"action": "restore"})
            if restore
            else d.model_copy(update={"reasons": (*d.reasons, RESTORE_OFF_REASON)})
        )
        if d.image_digest in archived_in_use and d.action == "keep"
        else d
        for d in decisions
    ]


def _ranks_of(digests: list[str], wanted: AbstractSet[str]) -> dict[str, int]:
    """The rank of each wanted digest (of the digests by rank), found without a Python call per image."""
    return dict(compress(zip(digests, count()), map(wanted.__contains__, digests))) if wanted else {}


class _Resolver:
    def __init__(
        self, images: RepositoryImages, findings: Findings, now: datetime, quarantine: timedelta | None
    ) -> None:
        self.images = images
        self.findings = findings
        self.now = now
        self.quarantine = quarantine
        self.entering_quarantine: set[str] = set()  # archived instead of deleted
        self.decided: dict[int, Decision] = {}  # the parents': their dependents read them; any other is decided once
        self.visiting: set[str] = set()
        # The images that follow a parent (an index, a subject) or go as their absent subject went (follow_parents),
        # and the parents they follow, by rank: `decide` reads every image by rank (and the rules' findings so).
        followers = findings.parents.keys() | findings.orphans.keys()
        parents = {parent for links in findings.parents.values() for parent, _ in links}
        self.rank_of = _ranks_of(images.digests, followers | parents) if followers else {}
        self.followers = {self.rank_of[digest] for digest in followers}
        self.parents = {self.rank_of[digest] for digest in parents}
        self.parent_reasons: dict[tuple[str, DependentKind, Action], Reason] = {}

    def decide(self, rank: int) -> Decision:
        """The decision of the image of that rank, after its parents' (a parent's memoised in `decided`). Called for
        every image, most of which follow no parent and are no parent: their path is kept short."""
        decided = self.decided.get(rank)
        if decided is not None:
            return decided
        image = self.images.ordered[rank]
        digest = image.image_digest
        if rank not in self.followers:  # most images: their protections are the findings' own
            protections: Sequence[Reason] = self.findings.protections.get(digest, ())
            followed: Sequence[Reason] = ()
            removed_with: Sequence[Action] = ()
        elif digest in self.visiting:  # a reference cycle cannot come from a real registry; keep and say so
            self.decided[rank] = cycle = decision(image, "keep", [REFERENCE_CYCLE])
            return cycle
        else:
            protections, followed, removed_with = self.follow_parents(digest)
        marks = self.findings.marks.get(rank, ())
        action, reasons = self.outcome(rank, protections, marks, followed, removed_with)
        if action == "delete" and self.quarantine is not None:
            action, quarantine_reason = self.quarantine_action(image, self.quarantine, marks)
            reasons = (quarantine_reason, *reasons)
        tags = image.image_tags
        decided = _planned(
            digest,
            tags if len(tags) < 2 else tuple(sorted(tags)),
            image.image_pushed_at,
            image.image_size_in_bytes,
            action,
            reasons,
        )
        if rank in self.parents:
            self.decided[rank] = decided
        return decided

    def quarantine_action(
        self, image: ImageDetail, quarantine: timedelta, marks: Sequence[Reason]
    ) -> tuple[Action, Reason]:
        """A deletion under quarantine: an image not yet archived is archived instead; an archived one is deleted
        once archived longer than the quarantine, kept until then (and kept when ECR does not say since when).
        Dependents pass through it too: nothing is deleted that was not archived longer than the quarantine."""
        marked_by = marks[0].rule if marks else None
        if image.image_status != "ARCHIVED":
            self.entering_quarantine.add(image.image_digest)
            return "archive", quarantine_entry_reason(quarantine, marked_by)
        if image.last_archived_at is None:
            return "keep", quarantine_unknown_reason(marked_by)
        archived_at = min(image.last_archived_at, self.now)  # a future time: archived just now
        if self.now - archived_at > quarantine:
            return "delete", quarantine_exit_reason(self.now - archived_at, quarantine, marked_by)
        return "keep", quarantine_wait_reason(archived_at, self.now, quarantine, marked_by)

    def follow_parents(self, digest: str) -> tuple[Sequence[Reason], Sequence[Reason], Sequence[Action]]:
        """The image's protections, a kept parent's among them; then the reasons and the actions of the removed
        parents it goes with. An orphaned OCI referrer goes as its subject went: deleted (an archived subject
        would be in the snapshot). Most images have no parent: their protections are the findings' own."""
        protections = self.findings.protections.get(digest, ())
        parents = self.findings.parents.get(digest, ())
        gone_subject = self.findings.orphans.get(digest)
        if not parents and gone_subject is None:
            return protections, (), ()
        protections = list(protections)
        followed: list[Reason] = []
        removed_with: list[Action] = []
        self.visiting.add(digest)
        for parent, kind in parents:
            parent_action = self.decide(self.rank_of[parent]).action
            if parent_action == "keep":
                protections.append(self.parent_reason(parent, kind, parent_action))
            else:
                followed.append(self.parent_reason(parent, kind, parent_action))
                # a parent the quarantine archives was deleted in truth: its dependents enter quarantine with it
                removed_with.append("delete" if parent in self.entering_quarantine else parent_action)
        self.visiting.discard(digest)
        if gone_subject is not None:
            followed.append(subject_gone_reason(gone_subject))
            removed_with.append("delete")
        return protections, followed, removed_with

    def parent_reason(self, parent: str, kind: DependentKind, parent_action: Action) -> Reason:
        """Why a dependent follows its parent: worded once per parent, shared by its children (an index has several)."""
        key = (parent, kind, parent_action)
        reason = self.parent_reasons.get(key)
        if reason is None:
            parent_image = self.images.by_digest[parent]
            reason = (
                parent_kept_reason(kind, parent_image)
                if parent_action == "keep"
                else goes_with_parent_reason(kind, parent_image, parent_action)
            )
            self.parent_reasons[key] = reason
        return reason

    def outcome(
        self,
        rank: int,
        protections: Sequence[Reason],
        marks: Sequence[Reason],
        followed: Sequence[Reason],
        removed_with: Sequence[Action],
    ) -> tuple[Action, tuple[Reason, ...]]:
        """A protection keeps: the image names its protections, the marks they overrule and the keep_newest notes.
        Otherwise a dependent goes as its parents went (archived when one of them is), whatever its own marks say; an
        image that follows no parent goes as its marks say (archived only when every mark archives: deleted when a
        rule that deletes marks it). A removal names its marks and the parents it goes with; a kept image that nothing
        protects or marks its keep_newest notes, or why nothing marks it."""
        findings = self.findings
        if protections:
            return "keep", (*protections, *marks, *findings.notes.get(rank, ()))
        if removed_with:
            return "archive" if "archive" in removed_with else "delete", (*marks, *followed)
        if marks:
            return "delete" if rank in findings.deleting else "archive", (*marks, *followed)
        notes = findings.notes.get(rank)
        if notes:
            return "keep", tuple(notes)
        return "keep", (no_delete_rule_reason(findings.misses(rank), self.images.ordered[rank], self.now),)
