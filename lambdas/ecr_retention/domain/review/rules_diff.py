"""What a change of the rules file changes: both files planned by the planner on the same inputs (snapshot, in-use
manifests and memory, `now`), compared image by image. Only images whose action changes are kept.

A review compares rules, not inputs, and a brake is not a decision: both plans are made with the brakes off (a run
blocked by stale manifests would keep every image on both sides and hide the change; a repository over
`max_delete_fraction` would keep every image the new rules remove, and show a stricter change as one that spares).
Each side's fate carries the brake that holds a removal back in a run on these inputs today (`held_by`), so the diff
states both figures: what the rules decide, and what happens now."""

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import computed_field

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import REMOVALS, Action, Decision, Plan, RepositoryPlan, main_reason_of
from ecr_retention.domain.planning.plan_model import PlanModel
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.registry.images import Snapshot
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
# What holds a removal the rules decide back in a run on these inputs: the run is blocked (a missing, stale or
# unreadable manifest, unreadable replication rules), the repository is over max_delete_fraction, or the image waits in
# the quarantine (archived, deleted once archived longer than safety.quarantine; or ECR does not say since when).
Brake = Literal["blocked", "max_delete_fraction", "quarantine"]
Side = Literal["before", "after"]


class Fate(PlanModel):
    """One side of a change: the action the rules decide (brakes off), every reason the plan gave, and the brake that
    keeps that removal from happening in a run on these inputs now."""

    action: Action
    reasons: tuple[Reason, ...]
    held_by: Brake | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def action_now(self) -> Action:
        """What a run on these inputs does today: a held removal is kept."""
        return "keep" if self.held_by is not None else self.action

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
    skipped_before: str | None = None  # over max_delete_fraction: a run keeps every image the rules remove
    skipped_after: str | None = None
    changes: tuple[ImageChange, ...] = ()
    # What each side's rules remove here (brakes off), and what a run on these inputs removes now.
    removals_before: int = 0
    removals_after: int = 0
    removals_before_now: int = 0
    removals_after_now: int = 0

    def skip_holds(self, side: Side) -> bool:
        """max_delete_fraction skips the repository on that side while its rules remove something there."""
        if side == "before":
            return self.skipped_before is not None and self.removals_before > 0
        return self.skipped_after is not None and self.removals_after > 0

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

    def plus(self, change: ImageChange) -> "Tally":
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
    removals_before: int = 0  # what each side's rules delete or archive in all, brakes off: what --fail-on judges
    removals_after: int = 0
    removals_before_now: int = 0  # what a run on these inputs removes today, with the brakes
    removals_after_now: int = 0

    @property
    def braked(self) -> bool:
        """A brake holds back some removal the rules decide, on either side."""
        return (self.removals_before, self.removals_after) != (self.removals_before_now, self.removals_after_now)

    @property
    def removed_more(self) -> Tally:
        """Newly deleted or archived, together: what --fail-on deletions-over and bytes-over count."""
        return Tally(images=self.deleted.images + self.archived.images, bytes=self.deleted.bytes + self.archived.bytes)


class RulesDiff(PlanModel):
    generated_at: UtcDatetime
    blocked: tuple[str, ...] = ()  # what would block a run on these inputs under the new rules
    blocked_before: tuple[str, ...] = ()  # under the old rules (safety.clusters, inventory_max_age may differ)
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
    base: RetentionConfig,
    new: RetentionConfig,
    snapshot: Snapshot,
    inventory: Inventory,
    now: datetime,
    *,
    sources: Sequence[Snapshot] = (),
) -> RulesDiff:
    """Both rules files planned on the same inputs, compared. `sources`: every registry of a snapshot of several (the
    replicas a source decides are its rules', as a run leaves them: domain/planning/replicas.py)."""
    before = plan_registry(base, snapshot, inventory, now, brakes_off=True, sources=sources)
    after = plan_registry(new, snapshot, inventory, now, brakes_off=True, sources=sources)
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
    """The plans are of the same snapshot (the same repositories, the same images), made with the brakes off."""
    old = {repository.repository_name: repository for repository in before.repositories}
    blocked = (bool(before.blocked), bool(after.blocked))
    repositories = [diff_repository(old[plan.repository_name], plan, blocked=blocked) for plan in after.repositories]
    changed = tuple(repository for repository in repositories if _is_changed(repository))
    known = set(before.warnings)
    return RulesDiff(
        generated_at=after.generated_at,
        blocked=after.blocked,
        blocked_before=before.blocked,
        warnings=tuple(warning for warning in after.warnings if warning not in known),
        totals=diff_totals_of(changed, repositories),
        repositories=changed,
    )


def _is_changed(repository: RepositoryDiff) -> bool:
    return bool(
        repository.changes
        or repository.management
        or (repository.skipped_before is None) != (repository.skipped_after is None)
    )


def brake_of(plan: RepositoryPlan, *, blocked: bool) -> Brake | None:
    """The brake that holds back every removal of this repository's plan in a run on these inputs, if any."""
    if blocked:
        return "blocked"
    return "max_delete_fraction" if plan.skipped is not None else None


def diff_repository(
    before: RepositoryPlan, after: RepositoryPlan, *, blocked: tuple[bool, bool] = (False, False)
) -> RepositoryDiff:
    """`blocked`: whether a run under the old, and under the new rules is blocked on these inputs."""
    old = {decision.image_digest: decision for decision in before.images}
    brakes = (brake_of(before, blocked=blocked[0]), brake_of(after, blocked=blocked[1]))
    changes = [
        image_change(after.repository_name, old[decision.image_digest], decision, brakes)
        for decision in after.images
        if rules_action(old[decision.image_digest]) != rules_action(decision)
    ]
    changes.sort(key=lambda change: CHANGE_ORDER.index(change.change))  # stable: newest first within a kind
    removed = (rules_removals(before), rules_removals(after))
    return RepositoryDiff(
        repository_name=after.repository_name,
        policy_before=before.policy,
        policy_after=after.policy,
        skipped_before=before.skipped,
        skipped_after=after.skipped,
        changes=tuple(changes),
        removals_before=removed[0],
        removals_after=removed[1],
        removals_before_now=0 if brakes[0] else removals((before,)),
        removals_after_now=0 if brakes[1] else removals((after,)),
    )


def waits_in_quarantine(decision: Decision) -> bool:
    """An archived image the rules remove, kept by the quarantine until it has been archived long enough (its first
    reason is the quarantine's: a protection would come first, and a plan with the brakes off has no block or skip)."""
    return decision.action == "keep" and bool(decision.reasons) and decision.reasons[0].kind == "quarantine"


def rules_action(decision: Decision) -> Action:
    """What the rules decide: a removal the quarantine postpones is a deletion."""
    return "delete" if waits_in_quarantine(decision) else decision.action


def rules_removals(plan: RepositoryPlan) -> int:
    return sum(1 for decision in plan.images if decision.removes or waits_in_quarantine(decision))


def rules_fate(decision: Decision, brake: Brake | None) -> Fate:
    """One side's fate: what the rules decide, and the brake that holds a removal back today (the block holds all)."""
    if waits_in_quarantine(decision):
        return Fate(
            action="delete", reasons=decision.reasons, held_by="blocked" if brake == "blocked" else "quarantine"
        )
    return Fate(action=decision.action, reasons=decision.reasons, held_by=brake if decision.removes else None)


def image_change(
    repository: str, before: Decision, after: Decision, brakes: tuple[Brake | None, Brake | None] = (None, None)
) -> ImageChange:
    in_use = any(reason.kind == "in-use" for reason in (*before.reasons, *after.reasons))
    return ImageChange(
        repository_name=repository,
        image_digest=after.image_digest,
        image_tags=after.image_tags,
        image_pushed_at=after.image_pushed_at,
        image_size_in_bytes=after.image_size_in_bytes,
        in_use=in_use,
        before=rules_fate(before, brakes[0]),
        after=rules_fate(after, brakes[1]),
    )


def removals(repositories: Iterable[RepositoryPlan]) -> int:
    return sum(1 for repository in repositories for decision in repository.images if decision.removes)


def diff_totals_of(repositories: Sequence[RepositoryDiff], every_repository: Sequence[RepositoryDiff]) -> DiffTotals:
    """`repositories`: the changed ones, whose changes are tallied; `every_repository`: all, whose removals add up."""
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
        repositories_removing_more=sum(1 for r in repositories if _removes_more(r)),
        **removal_counts(every_repository),
    )


def _removes_more(repository: RepositoryDiff) -> bool:
    return any(change.removes_more for change in repository.changes)


REMOVAL_COUNTS = ("removals_before", "removals_after", "removals_before_now", "removals_after_now")


def removal_counts(repositories: Sequence[RepositoryDiff]) -> dict[str, int]:
    """Each side's removals in all: what the rules decide, and what a run removes now."""
    return {name: sum(getattr(repository, name) for repository in repositories) for name in REMOVAL_COUNTS}


def with_read_times(diff: RulesDiff, read_at: Mapping[str, datetime]) -> RulesDiff:
    """The diff, saying how old its inputs are: `read_at` maps each repository to when it was read."""
    if not read_at:
        return diff
    return diff.model_copy(
        update={"inputs_read_from": min(read_at.values()), "inputs_read_until": max(read_at.values())}
    )
