"""What a change of the rules file changes: both files planned by the planner on the same inputs (snapshot, in-use
manifests and memory, `now`), compared image by image. Only images whose action changes are kept.

A review compares rules, not inputs: both plans are made as if nothing blocked the run (stale manifests would
otherwise keep every image on both sides and hide the change); what would block it is named beside the diff."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import computed_field

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory import Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.plan import (
    REMOVALS,
    Action,
    Decision,
    Plan,
    PlanModel,
    Reason,
    RepositoryPlan,
    main_reason_of,
)
from ecr_retention.domain.planner import plan_registry
from ecr_retention.domain.registry import Snapshot
from ecr_retention.domain.timestamps import UtcDatetime

# How an image's fate changes, in the order a reviewer reads them: what goes first, then what is spared.
ChangeKind = Literal[
    "deleted",  # kept (or restored) before, deleted now
    "archived",  # kept before, archived now
    "archived-instead",  # deleted before, archived now (a quarantine switched on, an archive rule)
    "deleted-instead",  # archived before, deleted now
    "spared",  # deleted or archived before, kept now
    "restore-changed",  # between keep and restore: in-use archived images (safety.restore_in_use)
]
CHANGE_ORDER: tuple[ChangeKind, ...] = (
    "deleted",
    "archived",
    "archived-instead",
    "deleted-instead",
    "spared",
    "restore-changed",
)
Management = Literal["starts", "stops"]


class Fate(PlanModel):
    """One side of a change: the action and every reason the plan gave."""

    action: Action
    reasons: tuple[Reason, ...]

    @property
    def main_reason(self) -> Reason:
        return main_reason_of(self.action, self.reasons)


class ImageChange(PlanModel):
    repository_name: str
    image_digest: str
    image_tags: tuple[str, ...]
    image_pushed_at: UtcDatetime
    image_size_in_bytes: int | None = None
    in_use: bool  # either plan protects it as in use
    before: Fate
    after: Fate

    @computed_field  # type: ignore[prop-decorator]
    @property
    def change(self) -> ChangeKind:
        return change_kind(self.before.action, self.after.action)

    @property
    def removes_more(self) -> bool:
        """Removed (deleted or archived) after the change, not before."""
        return self.before.action not in REMOVALS and self.after.action in REMOVALS

    @property
    def spared(self) -> bool:
        return self.before.action in REMOVALS and self.after.action not in REMOVALS

    @property
    def quarantined(self) -> bool:
        """The quarantine is part of the change: it archives instead, or lets go, on either side."""
        return any(reason.kind == "quarantine" for fate in (self.before, self.after) for reason in fate.reasons)


def change_kind(before: Action, after: Action) -> ChangeKind:
    if after == "delete":
        return "deleted-instead" if before == "archive" else "deleted"
    if after == "archive":
        return "archived-instead" if before == "delete" else "archived"
    return "spared" if before in REMOVALS else "restore-changed"


class RepositoryDiff(PlanModel):
    repository_name: str
    policy_before: str | None = None  # policies[i] that applies, None when no policy matches
    policy_after: str | None = None
    skipped_before: str | None = None  # over max_delete_fraction: every image kept
    skipped_after: str | None = None
    changes: tuple[ImageChange, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def management(self) -> Management | None:
        """Whether the change brings the repository under a policy, or takes it out of every one."""
        if (self.policy_before is None) == (self.policy_after is None):
            return None
        return "starts" if self.policy_before is None else "stops"


class Tally(PlanModel):
    images: int = 0
    bytes: int = 0

    def plus(self, change: ImageChange) -> Tally:
        return Tally(images=self.images + 1, bytes=self.bytes + (change.image_size_in_bytes or 0))


class DiffTotals(PlanModel):
    """What the headline and the --fail-on conditions read."""

    deleted: Tally = Tally()  # newly deleted
    archived: Tally = Tally()  # newly archived
    spared: Tally = Tally()  # deleted or archived before, kept now
    archived_instead: int = 0
    deleted_instead: int = 0
    in_use_changed: int = 0  # in-use images whose action changes (only restores can)
    repositories_removing_more: int = 0
    removals_before: int = 0  # what each whole plan deletes or archives
    removals_after: int = 0

    @property
    def removed_more(self) -> Tally:
        """Newly deleted or archived, together: what --fail-on deletions-over and bytes-over count."""
        return Tally(images=self.deleted.images + self.archived.images, bytes=self.deleted.bytes + self.archived.bytes)


class RulesDiff(PlanModel):
    generated_at: UtcDatetime
    blocked: tuple[str, ...] = ()  # what would block a run on these inputs, whichever rules apply
    warnings: tuple[str, ...] = ()  # warnings the new rules bring that the old ones did not
    # When the inputs were read (`--bucket`: the oldest and newest repository snapshot of the last sweeps).
    inputs_read_from: UtcDatetime | None = None
    inputs_read_until: UtcDatetime | None = None
    totals: DiffTotals
    repositories: tuple[RepositoryDiff, ...]  # only those whose images, management or skipping change

    @property
    def changed_images(self) -> int:
        return sum(len(repository.changes) for repository in self.repositories)


def diff_rules(
    base: RetentionConfig, new: RetentionConfig, snapshot: Snapshot, inventory: Inventory, now: datetime
) -> RulesDiff:
    """Both rules files planned on the same inputs, compared."""
    before = plan_registry(base, snapshot, inventory, now, unblocked=True)
    after = plan_registry(new, snapshot, inventory, now, unblocked=True)
    diff = diff_plans(before, after)
    unseen = unmatched_policy_warnings(new, snapshot)
    return diff.model_copy(update={"warnings": (*diff.warnings, *unseen)}) if unseen else diff


def unmatched_policy_warnings(config: RetentionConfig, snapshot: Snapshot) -> list[str]:
    """A policy that matches no repository of the inputs changes nothing here, which is not the same as changing
    nothing: the bucket holds only the repositories the deployed rules manage."""
    names = [repository.repository_name for repository in snapshot.repositories]
    return [
        f"policies[{index}] ({', '.join(policy.repositories)}) matches no repository of these inputs, so its effect "
        "is not shown: review it on a snapshot of those repositories (ecr-retention snapshot --repositories ...)"
        for index, policy in enumerate(config.policies)
        if not any(matches_any(name, policy.repositories) for name in names)
    ]


def diff_plans(before: Plan, after: Plan) -> RulesDiff:
    """The plans are of the same snapshot: the same repositories, the same images."""
    old = {repository.repository_name: repository for repository in before.repositories}
    repositories = [diff_repository(old[plan.repository_name], plan) for plan in after.repositories]
    changed = tuple(repository for repository in repositories if _is_changed(repository))
    known = set(before.warnings)
    return RulesDiff(
        generated_at=after.generated_at,
        blocked=after.blocked,
        warnings=tuple(warning for warning in after.warnings if warning not in known),
        totals=totals_of(changed, removals(before.repositories), removals(after.repositories)),
        repositories=changed,
    )


def _is_changed(repository: RepositoryDiff) -> bool:
    return bool(
        repository.changes
        or repository.management
        or (repository.skipped_before is None) != (repository.skipped_after is None)
    )


def diff_repository(before: RepositoryPlan, after: RepositoryPlan) -> RepositoryDiff:
    old = {decision.image_digest: decision for decision in before.images}
    changes = [
        image_change(after.repository_name, old[decision.image_digest], decision)
        for decision in after.images
        if old[decision.image_digest].action != decision.action
    ]
    changes.sort(key=lambda change: CHANGE_ORDER.index(change.change))  # stable: newest first within a kind
    return RepositoryDiff(
        repository_name=after.repository_name,
        policy_before=before.policy,
        policy_after=after.policy,
        skipped_before=before.skipped,
        skipped_after=after.skipped,
        changes=tuple(changes),
    )


def image_change(repository: str, before: Decision, after: Decision) -> ImageChange:
    in_use = any(reason.kind == "in-use" for reason in (*before.reasons, *after.reasons))
    return ImageChange(
        repository_name=repository,
        image_digest=after.image_digest,
        image_tags=after.image_tags,
        image_pushed_at=after.image_pushed_at,
        image_size_in_bytes=after.image_size_in_bytes,
        in_use=in_use,
        before=Fate(action=before.action, reasons=before.reasons),
        after=Fate(action=after.action, reasons=after.reasons),
    )


def removals(repositories: Iterable[RepositoryPlan]) -> int:
    return sum(1 for repository in repositories for decision in repository.images if decision.removes)


def totals_of(repositories: Sequence[RepositoryDiff], removals_before: int, removals_after: int) -> DiffTotals:
    tallies: dict[str, Tally] = {"deleted": Tally(), "archived": Tally(), "spared": Tally()}
    counts = {"archived-instead": 0, "deleted-instead": 0}
    in_use_changed = 0
    for change in (change for repository in repositories for change in repository.changes):
        if change.change in tallies:
            tallies[change.change] = tallies[change.change].plus(change)
        elif change.change in counts:
            counts[change.change] += 1
        in_use_changed += change.in_use
    return DiffTotals(
        deleted=tallies["deleted"],
        archived=tallies["archived"],
        spared=tallies["spared"],
        archived_instead=counts["archived-instead"],
        deleted_instead=counts["deleted-instead"],
        in_use_changed=in_use_changed,
        repositories_removing_more=sum(1 for r in repositories if any(c.removes_more for c in r.changes)),
        removals_before=removals_before,
        removals_after=removals_after,
    )


def with_read_times(diff: RulesDiff, read_at: Mapping[str, datetime]) -> RulesDiff:
    """The diff, saying how old its inputs are: `read_at` maps each repository to when it was read."""
    if not read_at:
        return diff
    return diff.model_copy(
        update={"inputs_read_from": min(read_at.values()), "inputs_read_until": max(read_at.values())}
    )
