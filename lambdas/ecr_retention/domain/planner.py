"""The retention engine: registry snapshot + in-use inventory + rules -> a plan with every reason.

Pure: no AWS calls, no clock (the caller passes `now`), no input order dependence.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from ecr_retention.domain.config import (
    DeleteRule,
    KeepRule,
    Policy,
    RetentionConfig,
    Safety,
    Selector,
    rule_name,
)
from ecr_retention.domain.durations import format_duration, humanize_age
from ecr_retention.domain.in_use import CLOCK_SKEW, InUseIndex, check_inventory
from ecr_retention.domain.inventory import Inventory
from ecr_retention.domain.patterns import compile_globs, matches_any
from ecr_retention.domain.plan import Action, Decision, Plan, Reason, RepositoryPlan
from ecr_retention.domain.registry import ImageDetail, RepositorySnapshot, Snapshot, is_index
from ecr_retention.domain.timestamps import format_timestamp

DependentKind = Literal["index-child", "referrer"]

COSIGN_TAG = re.compile(r"^(sha256)-([0-9a-f]{64})\.(sig|att|sbom)$")
MAX_USAGES_IN_DETAIL = 3
MAX_FUTURE_IMAGES_NAMED = 5


def plan_registry(config: RetentionConfig, snapshot: Snapshot, inventory: Inventory, now: datetime) -> Plan:
    """Decide keep, delete or archive for every image of every repository that a policy matches."""
    run = build_run_context(
        config,
        inventory,
        now,
        registry_id=snapshot.effective_registry_id,
        region=snapshot.region,
        tags_by_repository={repo.repository_name: repo_tags(repo) for repo in snapshot.repositories},
    )
    planned = [
        plan_repository(repository, run)
        for repository in sorted(snapshot.repositories, key=lambda repo: repo.repository_name)
    ]
    warnings = [*run.warnings, *(warning for repository in planned for warning in repository.warnings)]
    return Plan(
        generated_at=now,
        dry_run=config.dry_run,
        registry_id=run.registry_id,
        region=run.region,
        blocked=run.blocked,
        warnings=tuple(dict.fromkeys(warnings)),
        repositories=tuple(repository.plan for repository in planned),
    )


@dataclass(frozen=True)
class RunContext:
    """What every repository of one run is planned against, built once per run by build_run_context, so
    that one repository planned alone (a Lambda worker) gets the plan it would get inside plan_registry."""

    config: RetentionConfig
    inventory: Inventory
    now: datetime
    registry_id: str | None
    region: str | None
    in_use: InUseIndex
    blocked: tuple[str, ...]  # why the run may delete nothing; every repository plan is blocked then
    warnings: tuple[str, ...]  # about the run as a whole (the inventory); repositories return their own
    # Tags of the repositories that tag_in_repositories names (see tag_sources). A name missing here is not
    # known: a keep rule naming only unknown repositories keeps what it selects, a delete rule selects none.
    tags_by_repository: Mapping[str, frozenset[str]]


def build_run_context(
    config: RetentionConfig,
    inventory: Inventory,
    now: datetime,
    *,
    registry_id: str | None,
    region: str | None,
    tags_by_repository: Mapping[str, frozenset[str]],
) -> RunContext:
    in_use = InUseIndex.build(inventory.protecting, registry_id, region)
    check = check_inventory(config.safety, inventory, in_use, now)
    return RunContext(
        config=config,
        inventory=inventory,
        now=now,
        registry_id=registry_id,
        region=region,
        in_use=in_use,
        blocked=check.blocked,
        warnings=check.warnings,
        tags_by_repository=dict(tags_by_repository),
    )


@dataclass(frozen=True)
class PlannedRepository:
    """One repository's plan, and the warnings about it (the run's own are in RunContext.warnings)."""

    plan: RepositoryPlan
    warnings: tuple[str, ...] = ()


def plan_repository(repository: RepositorySnapshot, run: RunContext) -> PlannedRepository:
    """Decide keep, delete or archive for every image of one repository; a blocked run keeps everything."""
    match = first_matching_policy(run.config.policies, repository.repository_name)
    if match is None:
        planned = PlannedRepository(plan=unmanaged_repository(repository))
    else:
        policy_index, policy = match
        planner = RepositoryPlanner(
            repository=repository,
            policy=policy,
            policy_index=policy_index,
            safety=run.config.safety,
            in_use=run.in_use,
            tags_by_repository=run.tags_by_repository,
            now=run.now,
        )
        plan, warnings = planner.plan()
        planned = PlannedRepository(plan=plan, warnings=warnings)
    if run.blocked:
        return PlannedRepository(plan=block_repository(planned.plan, run.blocked), warnings=planned.warnings)
    return planned


def tag_sources(config: RetentionConfig, repository_name: str) -> tuple[str, ...]:
    """The repository patterns that the tag_in_repositories rules of the repository's policy name: the
    repositories whose tags a worker must read to plan this one. Empty when none (or no policy) does."""
    match = first_matching_policy(config.policies, repository_name)
    if match is None:
        return ()
    selectors = (rule.keep or rule.delete for rule in match[1].rules)
    return tuple(
        dict.fromkeys(pattern for selector in selectors if selector for pattern in selector.tag_in_repositories or ())
    )


def repo_tags(repository: RepositorySnapshot) -> frozenset[str]:
    return frozenset(tag for image in repository.image_details for tag in image.image_tags)


def first_matching_policy(policies: Sequence[Policy], repository_name: str) -> tuple[int, Policy] | None:
    for index, policy in enumerate(policies):
        if matches_any(repository_name, policy.repositories):
            return index, policy
    return None


def newest_first(images: Iterable[ImageDetail]) -> list[ImageDetail]:
    """Push time descending, ties by digest ascending: the one order every "newest" count uses."""
    by_digest = sorted(images, key=lambda image: image.image_digest)
    return sorted(by_digest, key=lambda image: image.image_pushed_at, reverse=True)


def unmanaged_repository(repository: RepositorySnapshot) -> RepositoryPlan:
    reason = (Reason(kind="no-policy", detail="no policy's repositories match this repository"),)
    return RepositoryPlan(
        repository_name=repository.repository_name,
        images=tuple(decision(image, "keep", reason) for image in newest_first(repository.image_details)),
    )


def decision(image: ImageDetail, action: Action, reasons: Sequence[Reason]) -> Decision:
    return Decision(
        image_digest=image.image_digest,
        image_tags=tuple(sorted(image.image_tags)),
        image_pushed_at=image.image_pushed_at,
        image_size_in_bytes=image.image_size_in_bytes,
        action=action,
        reasons=tuple(reasons),
    )


def block_repository(repository: RepositoryPlan, blocked: Sequence[str]) -> RepositoryPlan:
    """A blocked run keeps everything; what would have happened stays visible in the reasons."""
    reason = Reason(kind="blocked", detail="; ".join(blocked))
    images = tuple(
        image.model_copy(update={"action": "keep", "reasons": (reason, *image.reasons)}) for image in repository.images
    )
    return repository.model_copy(update={"images": images})


def short(digest: str) -> str:
    return digest.split(":", 1)[-1][:12]


def image_label(image: ImageDetail) -> str:
    """`1a2b3c4d5e6f (v1, latest)`: how warnings and reasons name an image."""
    tags = sorted(image.image_tags)[:3]
    return f"{short(image.image_digest)} ({', '.join(tags)})" if tags else short(image.image_digest)


class RepositoryPlanner:
    def __init__(
        self,
        *,
        repository: RepositorySnapshot,
        policy: Policy,
        policy_index: int,
        safety: Safety,
        in_use: InUseIndex,
        tags_by_repository: Mapping[str, frozenset[str]],
        now: datetime,
    ) -> None:
        self.repository = repository
        self.name = repository.repository_name
        self.policy = policy
        self.policy_index = policy_index
        self.safety = safety
        self.in_use = in_use
        self.tags_by_repository = tags_by_repository
        self.now = now
        self.warnings: list[str] = []  # this repository's, returned by plan()
        self.ordered = newest_first(repository.image_details)
        self.rank_by_tag = {tag: rank for rank, image in enumerate(self.ordered) for tag in image.image_tags}
        self.by_digest = {image.image_digest: image for image in self.ordered}
        # What rules and guards find, per digest; lists exist only for images something applies to.
        self.protections: defaultdict[str, list[Reason]] = defaultdict(list)
        self.marks: defaultdict[str, list[tuple[Reason, bool]]] = defaultdict(list)  # (reason, archive?)
        self.notes: defaultdict[str, list[Reason]] = defaultdict(list)  # keep-newest: spared by a delete rule
        self.misses: defaultdict[str, list[tuple[str, DeleteRule]]] = defaultdict(list)  # selected, unmet
        self.parents: defaultdict[str, list[tuple[str, DependentKind]]] = defaultdict(list)
        # Pushed after `now` (beyond clock skew): the newest by rank, 0 s old by age. Such an image takes
        # keep_newest slots; `displaced` records, per delete rule, which older images lose theirs to it.
        self.future = [image for image in self.ordered if image.image_pushed_at - now > CLOCK_SKEW]
        self.displaced: list[tuple[str, int, list[ImageDetail], list[ImageDetail]]] = []

    def plan(self) -> tuple[RepositoryPlan, tuple[str, ...]]:
        """The repository's plan, and the warnings about it."""
        for rule_index, rule in enumerate(self.policy.rules):
            name = rule_name(self.policy_index, rule_index, rule)
            if rule.keep is not None:
                self.apply_keep(name, rule.keep)
            elif rule.delete is not None:
                self.apply_delete(name, rule.delete)
        self.apply_guards()
        self.link_dependents()
        actions: dict[str, tuple[Action, list[Reason]]] = {}
        visiting: set[str] = set()
        for image in self.ordered:
            self.decide(image.image_digest, actions, visiting)
        decisions = [decision(image, *actions[image.image_digest]) for image in self.ordered]
        removed = sum(1 for d in decisions if d.action != "keep")
        skipped = None
        if decisions and removed / len(decisions) > self.safety.max_delete_fraction:
            skipped = (
                f"the plan removes {removed} of {len(decisions)} images ({removed / len(decisions):.0%}), "
                f"more than max_delete_fraction {self.safety.max_delete_fraction:g}; nothing is deleted here"
            )
            reason = Reason(kind="skipped", detail=skipped)
            decisions = [
                d.model_copy(update={"action": "keep", "reasons": (reason, *d.reasons)}) if d.action != "keep" else d
                for d in decisions
            ]
        self.warn_about_future_images({d.image_digest: d.action for d in decisions})
        plan = RepositoryPlan(
            repository_name=self.name,
            policy=f"policies[{self.policy_index}]",
            skipped=skipped,
            images=tuple(decisions),
        )
        return plan, tuple(self.warnings)

    # --- rules -------------------------------------------------------------------------------

    def select(self, selector: Selector, *, unknown_means: bool) -> list[ImageDetail]:
        """Images the selector's tag conditions select, newest first. `unknown_means` answers for
        tag_in_repositories when a named repository is not in the snapshot (keep: True, delete: False)."""
        if selector.untagged:
            return [image for image in self.ordered if not image.image_tags]
        if selector.tags is None and selector.tag_in_repositories is None:
            return list(self.ordered)
        candidates: Iterable[str] = self.rank_by_tag
        if selector.tags is not None:
            candidates = filter(compile_globs(selector.tags).fullmatch, candidates)
        if selector.tag_in_repositories is not None:
            other_tags = self.tags_in_other_repositories(selector.tag_in_repositories)
            if other_tags is not None:
                candidates = other_tags.intersection(candidates)
            elif not unknown_means:
                return []
        return [self.ordered[i] for i in sorted({self.rank_by_tag[tag] for tag in candidates})]

    def tags_in_other_repositories(self, patterns: tuple[str, ...]) -> frozenset[str] | None:
        """Tags present in the other repositories the patterns name, or None when a pattern names none
        that the snapshot holds (then nothing can be known about those tags)."""
        tags: set[str] = set()
        for pattern in patterns:
            names = [n for n in self.tags_by_repository if n != self.name and matches_any(n, (pattern,))]
            if not names:
                self.warnings.append(
                    f"{self.name}: tag_in_repositories {pattern!r} names no other repository in the snapshot; "
                    "keep rules that use it keep every image they select, delete rules that use it select none"
                )
                return None
            for n in names:
                tags |= self.tags_by_repository[n]
        return frozenset(tags)

    def apply_keep(self, name: str, keep: KeepRule) -> None:
        selected = self.select(keep, unknown_means=True)
        if keep.pulled_within is not None:
            window = keep.pulled_within
            selected = [image for image in selected if self.now - image.last_activity < window]
        if keep.newest is not None:
            selected = selected[: keep.newest]
        reason = Reason(kind="keep-rule", rule=name, detail=describe_keep(keep))
        for image in selected:
            self.protections[image.image_digest].append(reason)

    def apply_delete(self, name: str, rule: DeleteRule) -> None:
        selected = self.select(rule, unknown_means=False)
        mark = (Reason(kind="delete-rule", rule=name, detail=describe_delete(rule)), rule.archive)
        spared = Reason(
            kind="keep-newest", rule=name, detail=f"one of the {rule.keep_newest} newest images this rule selects"
        )
        for rank, image in enumerate(selected):
            if not self.meets_conditions(rule, image):
                self.misses[image.image_digest].append((name, rule))
            elif rank < rule.keep_newest:
                self.notes[image.image_digest].append(spared)
            else:
                self.marks[image.image_digest].append(mark)
        if rule.keep_newest and self.future:
            self.record_displaced(name, rule.keep_newest, selected)

    def record_displaced(self, name: str, keep_newest: int, selected: list[ImageDetail]) -> None:
        """The older images that would hold the rule's keep_newest slots if future images took none."""
        future = {image.image_digest for image in self.future}
        in_slots = [image for image in selected[:keep_newest] if image.image_digest in future]
        if in_slots:
            present = [image for image in selected if image.image_digest not in future][:keep_newest]
            slotted = {image.image_digest for image in selected[:keep_newest]}
            displaced = [image for image in present if image.image_digest not in slotted]
            self.displaced.append((name, keep_newest, in_slots, displaced))

    def warn_about_future_images(self, actions: Mapping[str, Action]) -> None:
        for image in self.future[:MAX_FUTURE_IMAGES_NAMED]:
            self.warnings.append(
                f"{self.name}: image {image_label(image)} was pushed {humanize_age(image.image_pushed_at - self.now)} "
                f"after the plan's time ({format_timestamp(image.image_pushed_at)}); it ranks as the newest image "
                "and counts as 0s old: kept as young, and it takes keep_newest slots"
            )
        if len(self.future) > MAX_FUTURE_IMAGES_NAMED:
            self.warnings.append(
                f"{self.name}: {len(self.future) - MAX_FUTURE_IMAGES_NAMED} more images were pushed after the plan's time"
            )
        for name, keep_newest, in_slots, displaced in self.displaced:
            removed = [image for image in displaced if actions[image.image_digest] != "keep"]
            if not removed:
                continue
            verbs = {actions[image.image_digest] for image in removed}
            verb = "archived" if verbs == {"archive"} else "deleted" if verbs == {"delete"} else "removed"
            takers = ", ".join(image_label(image) for image in in_slots)
            taken = (
                f"the future image {takers} takes one"
                if len(in_slots) == 1
                else f"the future images {takers} take {len(in_slots)}"
            )
            losers = ", ".join(image_label(image) for image in removed)
            lost = f"{losers} is {verb} in its place" if len(removed) == 1 else f"{losers} are {verb} in their place"
            self.warnings.append(f"{self.name}: {name}: {taken} of its {keep_newest} keep_newest slots, so {lost}")

    def meets_conditions(self, rule: DeleteRule, image: ImageDetail) -> bool:
        return (
            image.image_status != "ACTIVATING"
            and not (rule.archive and image.image_status == "ARCHIVED")
            and (rule.older_than is None or self.now - image.image_pushed_at > rule.older_than)
            and (rule.not_pulled_within is None or self.now - image.last_activity > rule.not_pulled_within)
        )

    def unmet_condition(self, rule: DeleteRule, image: ImageDetail) -> str | None:
        if image.image_status == "ACTIVATING":
            return "being restored from archive"
        if rule.archive and image.image_status == "ARCHIVED":
            return "already archived"
        if rule.older_than is not None and not self.now - image.image_pushed_at > rule.older_than:
            return f"pushed {humanize_age(self.now - image.image_pushed_at)} ago, not older than " + format_duration(
                rule.older_than
            )
        if rule.not_pulled_within is not None and not self.now - image.last_activity > rule.not_pulled_within:
            return (
                f"last pulled or pushed {humanize_age(self.now - image.last_activity)} ago, within "
                + format_duration(rule.not_pulled_within)
            )
        return None

    # --- guards --------------------------------------------------------------------------------

    def apply_guards(self) -> None:
        for image in self.ordered:
            usages = self.in_use.usages(self.name, image)
            if usages:
                unique = sorted(set(usages), key=str)
                shown = ", ".join(str(u) for u in unique[:MAX_USAGES_IN_DETAIL])
                more = len(unique) - MAX_USAGES_IN_DETAIL
                self.protections[image.image_digest].append(
                    Reason(kind="in-use", detail=shown + (f" and {more} more" if more > 0 else ""))
                )
            age = self.now - image.image_pushed_at
            if not age > self.safety.min_age:
                pushed = (
                    f"pushed {humanize_age(-age)} in the future, so counted as 0s old:"
                    if age < timedelta(0)
                    else f"pushed {humanize_age(age)} ago,"
                )
                self.protections[image.image_digest].append(
                    Reason(kind="min-age", detail=f"{pushed} within min_age {format_duration(self.safety.min_age)}")
                )

    def link_dependents(self) -> None:
        """Children of indexes and referrers of subjects live and die with their parents."""
        unknown_indexes = []
        for image in self.ordered:
            if not is_index(image, self.repository):
                continue
            children = self.repository.children_of(image.image_digest)
            if children is None:
                unknown_indexes.append(image.image_digest)
                continue
            for child in children:
                if child in self.by_digest and child != image.image_digest:
                    self.parents[child].append((image.image_digest, "index-child"))
        for image in self.ordered:
            subject = image.subject_manifest_digest or cosign_subject(image.image_tags)
            if subject and subject in self.by_digest and subject != image.image_digest:
                self.parents[image.image_digest].append((subject, "referrer"))
        if unknown_indexes:
            listed = ", ".join(short(d) for d in unknown_indexes[:3])
            for image in self.ordered:
                if not is_index(image, self.repository):
                    self.protections[image.image_digest].append(
                        Reason(
                            kind="index-child",
                            detail=f"the snapshot lacks the manifest of index {listed}, so any image here "
                            "may be its child",
                        )
                    )

    # --- decisions -----------------------------------------------------------------------------

    def decide(self, digest: str, actions: dict[str, tuple[Action, list[Reason]]], visiting: set[str]) -> Action:
        if digest in actions:
            return actions[digest][0]
        if digest in visiting:  # a reference cycle cannot come from a real registry; keep and say so
            actions[digest] = ("keep", [Reason(kind="index-child", detail="manifest references form a cycle")])
            return "keep"
        protections: list[Reason] = self.protections.get(digest, [])
        marks = self.marks.get(digest, ())
        followed: list[Reason] = []
        removed_with: list[Action] = []
        parents = self.parents.get(digest, ())
        if parents:
            visiting.add(digest)
            protections = list(protections)
            for parent, kind in parents:
                parent_action = self.decide(parent, actions, visiting)
                label = f"{'index' if kind == 'index-child' else 'subject'} {image_label(self.by_digest[parent])}"
                if parent_action == "keep":
                    protections.append(Reason(kind=kind, detail=f"{label} is kept"))
                else:
                    verb = "archived" if parent_action == "archive" else "deleted"
                    followed.append(Reason(kind=kind, detail=f"goes with {label}, which is {verb}"))
                    removed_with.append(parent_action)
            visiting.discard(digest)
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
            reasons = [*protections, *marked, *self.notes.get(digest, ())]
            if not reasons:
                reasons = [self.no_delete_rule(digest)]
        actions[digest] = (action, reasons)
        return action

    def no_delete_rule(self, digest: str) -> Reason:
        misses = self.misses.get(digest)
        if not misses:
            return Reason(kind="no-delete-rule", detail="no delete rule selects it")
        rule, delete = misses[0]
        why = self.unmet_condition(delete, self.by_digest[digest])
        more = f" (and {len(misses) - 1} more rules)" if len(misses) > 1 else ""
        return Reason(kind="no-delete-rule", rule=rule, detail=f"no delete rule marks it: {why}{more}")


def cosign_subject(tags: Iterable[str]) -> str | None:
    """cosign's tag scheme names the subject: sha256-<hex>.sig / .att / .sbom -> sha256:<hex>."""
    for tag in tags:
        match = COSIGN_TAG.match(tag)
        if match:
            return f"{match.group(1)}:{match.group(2)}"
    return None


def describe_selector(selector: Selector) -> list[str]:
    parts = []
    if selector.untagged:
        parts.append("untagged")
    if selector.tags is not None:
        parts.append("tags " + ", ".join(selector.tags))
    if selector.tag_in_repositories is not None:
        parts.append("a tag also in " + ", ".join(selector.tag_in_repositories))
    return parts


def describe_keep(keep: KeepRule) -> str:
    parts = describe_selector(keep) or ["every image"]
    if keep.pulled_within is not None:
        parts.append(f"pulled within {format_duration(keep.pulled_within)}")
    if keep.newest is not None:
        parts.append(f"the {keep.newest} newest")
    return "keep " + ", ".join(parts)


def describe_delete(rule: DeleteRule) -> str:
    parts = describe_selector(rule) or ["every image"]
    if rule.older_than is not None:
        parts.append(f"older than {format_duration(rule.older_than)}")
    if rule.not_pulled_within is not None:
        parts.append(f"not pulled within {format_duration(rule.not_pulled_within)}")
    if rule.keep_newest:
        parts.append(f"beyond the {rule.keep_newest} newest")
    return ("archive " if rule.archive else "delete ") + ", ".join(parts)
