"""Planning one run: the context every repository is planned against, each repository's plan, and the
registry's plan."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ecr_retention.domain.config import Policy, RetentionConfig
from ecr_retention.domain.holds.protection import NO_HOLD_CHECK, HoldCheck, check_holds
from ecr_retention.domain.in_use.index import InUseIndex, InventoryCheck, check_inventory
from ecr_retention.domain.in_use.memory import reading_warnings, remembered_note, still_protecting
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.planning.decisions import decide, decision, limit_removals, restore_in_use
from ecr_retention.domain.planning.explain import (
    archived_in_use_warning,
    assumed_delete_replication_warning,
    blocked_reason,
    future_image_warnings,
    no_policy_reason,
    unwatched_replica_warning,
)
from ecr_retention.domain.planning.guards import apply_guards, defer_to_sources, link_dependents
from ecr_retention.domain.planning.managed import first_matching_policy
from ecr_retention.domain.planning.other_tags import OtherRepositoryTags
from ecr_retention.domain.planning.plan import Plan, RepositoryPlan
from ecr_retention.domain.planning.plan_parts import ReplicaRegistry
from ecr_retention.domain.planning.replicas import Replicas, replicas_of_snapshots
from ecr_retention.domain.planning.repository import Findings, RepositoryImages, newest_first
from ecr_retention.domain.planning.rules import PolicyRules, apply_rules, policy_rules
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import RepositorySnapshot, Snapshot


def plan_registry(
    config: RetentionConfig,
    snapshot: Snapshot,
    inventory: Inventory,
    now: datetime,
    *,
    brakes_off: bool = False,
    other_registries: Collection[tuple[str, str]] = (),
    sources: Sequence[Snapshot] = (),
) -> Plan:
    """Decide keep, delete or archive for every image of every repository that a policy matches.

    `brakes_off` (for `diff`, which compares rules, not inputs): what blocks the run is named in `blocked`, and a
    repository over max_delete_fraction names it in `skipped`, but no decision is held back by either: every image
    has the action the rules and the protecting guards (in use, min_age, index children, referrers) give it, so that
    two rules files show what each decides even where a brake stops a run today. `other_registries`: the (account,
    Region) of the other registries planned with this one (a snapshot of several). `sources`: every registry of a
    snapshot of several, this one among them: the replicas a source decides are left to it, as a run leaves them
    (domain/planning/replicas.py)."""
    run = build_run_context(
        config,
        inventory,
        now,
        registry=snapshot.registry,
        tags_by_repository=_tags_of_named_repositories(config, snapshot),
        other_registries=other_registries,
    )
    blocked = run.blocked
    if brakes_off:
        run = replace(run, blocked=(), brakes_off=True)
    replicas = replicas_of_snapshots(config, sources, snapshot) if sources else Replicas({})
    planned = [
        plan_repository(repository, run, replicas.decided.get(repository.repository_name))
        for repository in sorted(snapshot.repositories, key=lambda repo: repo.repository_name)
    ]
    # Only a snapshot can lack deleteReplication (the live adapter states it), so the warning is the snapshot's.
    rules = run.registry.replication.rules_without_delete_replication
    assumed = (assumed_delete_replication_warning(index) for index in rules)
    repository_warnings = (warning for repository in planned for warning in repository.warnings)
    warnings = [*assumed, *run.warnings, *replicas.warnings, *repository_warnings]
    return Plan(
        generated_at=now,
        dry_run=config.dry_run,
        registry_id=run.registry.registry_id,
        region=run.registry.region,
        blocked=blocked,
        warnings=tuple(dict.fromkeys(warnings)),
        repositories=tuple(repository.plan for repository in planned),
    )


def _tags_of_named_repositories(config: RetentionConfig, snapshot: Snapshot) -> dict[str, frozenset[str]]:
    """The tags of the repositories that some tag_in_repositories names: what a run needs of the others' tags (the
    repositories no pattern names would never be read)."""
    sources = tuple(dict.fromkeys(pattern for policy in config.policies for pattern in _tag_sources_of(policy)))
    named = (repo for repo in snapshot.repositories if matches_any(repo.repository_name, sources))
    return {repo.repository_name: repo_tags(repo) for repo in named}


@dataclass(frozen=True)
class RunContext:
    """What every repository of one run is planned against, built once per run by build_run_context, so
    that one repository planned alone (a Lambda worker) gets the plan it would get inside plan_registry."""

    config: RetentionConfig
    inventory: Inventory
    now: datetime
    registry: RegistryCoordinates  # its account, Region and replication rules
    in_use: InUseIndex
    blocked: tuple[str, ...]  # why the run may delete nothing; every repository plan is blocked then
    warnings: tuple[str, ...]  # about the run as a whole (the inventory); repositories return their own
    # Tags of the repositories that tag_in_repositories names (see tag_sources). A name missing here is not
    # known: a keep rule naming only unknown repositories keeps what it selects, a delete rule selects none.
    other_tags: OtherRepositoryTags
    # Each policy's rules (by policy index), named and worded once for every repository of the run.
    rules: tuple[PolicyRules, ...]
    # plan_registry(brakes_off=True): a repository over max_delete_fraction is named skipped, its removals kept
    brakes_off: bool = False
    # The holds in force in this registry (domain/holds/protection.py), read from the inventory's holds.
    holds: HoldCheck = NO_HOLD_CHECK


def build_run_context(
    config: RetentionConfig,
    inventory: Inventory,
    now: datetime,
    *,
    registry: RegistryCoordinates,
    tags_by_repository: Mapping[str, frozenset[str]],
    replication_problem: str | None = None,
    other_registries: Collection[tuple[str, str]] = (),
) -> RunContext:
    """`replication_problem`: why the registry's replication rules could not be read (the run is blocked then).
    `other_registries`: the (account, Region) of the other registries the run prunes."""
    grace = config.safety.in_use_grace
    remembered = [
        (image, remembered_note(image, now, grace)) for image in still_protecting(inventory.memory, now, grace)
    ]
    in_use = InUseIndex.build(inventory.protecting, registry, remembered=remembered, at=(now, grace))
    check = check_inventory(config.safety, inventory, in_use, now, other_registries) + InventoryCheck(
        warnings=reading_warnings(inventory.memory, inventory, now, grace)
    )
    holds = check_holds(inventory.holds, registry, now, config.safety.max_hold)
    check += InventoryCheck(blocked=holds.blocked)
    if replication_problem is not None:
        check += InventoryCheck(blocked=(replication_problem,))
    return RunContext(
        config=config,
        inventory=inventory,
        now=now,
        registry=registry,
        in_use=in_use,
        blocked=check.blocked,
        warnings=check.warnings,
        other_tags=OtherRepositoryTags(tags_by_repository),
        rules=tuple(policy_rules(index, policy) for index, policy in enumerate(config.policies)),
        holds=holds,
    )


@dataclass(frozen=True)
class PlannedRepository:
    """One repository's plan, and the warnings about it (the run's own are in RunContext.warnings)."""

    plan: RepositoryPlan
    warnings: tuple[str, ...] = ()


def plan_repository(
    repository: RepositorySnapshot, run: RunContext, replicated: Mapping[str, str] | None = None
) -> PlannedRepository:
    """Decide keep, delete or archive for every image of one repository; a blocked run keeps everything.
    `replicated`: the images replicated here from a source registry the run also prunes (digest -> its Region),
    which that source's rules decide (guards.defer_to_sources)."""
    match = first_matching_policy(run.config.policies, repository.repository_name, run.registry.region)
    if match is None:
        planned = PlannedRepository(plan=unmanaged_repository(repository))
    else:
        planned = _plan_with_policy(repository, match[0], run, replicated or {})
        reach = deletion_reach(repository.repository_name, run)
        if reach:
            planned = PlannedRepository(
                plan=planned.plan.model_copy(update={"deletion_replicates_to": reach}),
                warnings=(*planned.warnings, *unwatched_replica_warnings(planned.plan, reach, run)),
            )
    if run.blocked:
        return PlannedRepository(plan=block_repository(planned.plan, run.blocked), warnings=planned.warnings)
    return planned


def _plan_with_policy(
    repository: RepositorySnapshot, policy_index: int, run: RunContext, replicated: Mapping[str, str]
) -> PlannedRepository:
    """Rules, then guards, then one action per image; the repository's warnings come with its plan."""
    images = RepositoryImages.of(repository, run.now)
    findings = Findings()
    findings.warnings.extend(run.holds.warnings_of(images.name))
    apply_rules(run.rules[policy_index], images, findings, other_tags=run.other_tags, now=run.now)
    apply_guards(images, findings, in_use=run.in_use, min_age=run.config.safety.min_age, holds=run.holds, now=run.now)
    defer_to_sources(images, findings, replicated)
    link_dependents(images, findings)
    safety = run.config.safety
    decided = decide(images, findings, run.now, quarantine=safety.quarantine)
    held, skipped = limit_removals(decided, safety.max_delete_fraction)
    decisions = decided if run.brakes_off else held
    restoring = safety.restore_in_use
    decisions = restore_in_use(decisions, findings.archived_in_use, restore=restoring)
    if not restoring:  # a finding: the workload runs an image it cannot pull
        findings.warnings.extend(
            archived_in_use_warning(images.name, d) for d in decisions if d.image_digest in findings.archived_in_use
        )
    # what became of the images that future ones displaced: read only when some were
    actions = {d.image_digest: d.action for d in decisions} if findings.displaced else {}
    findings.warnings.extend(future_image_warnings(images.name, images.future, findings.displaced, actions, run.now))
    plan = RepositoryPlan(
        repository_name=images.name,
        policy=f"policies[{policy_index}]",
        skipped=skipped,
        images=tuple(decisions),
    )
    return PlannedRepository(plan=plan, warnings=tuple(findings.warnings))


def deletion_reach(repository_name: str, run: RunContext) -> tuple[ReplicaRegistry, ...]:
    """The registries a deletion in this repository also deletes in, each with the expected clusters that
    report from it."""
    return tuple(
        ReplicaRegistry(
            registry_id=replica.registry_id,
            region=replica.region,
            expected_clusters=tuple(run.in_use.clusters_in(replica.registry, run.config.safety.clusters)),
        )
        for replica in run.registry.replication.deletion_reach(repository_name)
    )


def unwatched_replica_warnings(plan: RepositoryPlan, reach: Sequence[ReplicaRegistry], run: RunContext) -> list[str]:
    """A plan that deletes images, whose deletions reach a registry no expected cluster reports from (a plan that
    only archives deletes nothing there)."""
    if run.blocked or plan.skipped or all(decision.action != "delete" for decision in plan.images):
        return []
    return [
        unwatched_replica_warning(plan.repository_name, replica) for replica in reach if not replica.expected_clusters
    ]


def tag_sources(config: RetentionConfig, repository_name: str, region: str | None) -> tuple[str, ...]:
    """The repository patterns that the tag_in_repositories rules of the repository's policy (in the registry of that
    Region) name: the repositories whose tags a worker must read to plan this one. Empty when none (or no policy)
    does."""
    match = first_matching_policy(config.policies, repository_name, region)
    if match is None:
        return ()
    return tuple(dict.fromkeys(_tag_sources_of(match[1])))


def _tag_sources_of(policy: Policy) -> Iterator[str]:
    selectors = (rule.keep or rule.delete for rule in policy.rules)
    return (pattern for selector in selectors if selector for pattern in selector.tag_in_repositories or ())


def repo_tags(repository: RepositorySnapshot) -> frozenset[str]:
    return frozenset(tag for image in repository.image_details for tag in image.image_tags)


def unmanaged_repository(repository: RepositorySnapshot) -> RepositoryPlan:
    reason = (no_policy_reason(),)
    return RepositoryPlan(
        repository_name=repository.repository_name,
        images=tuple(decision(image, "keep", reason) for image in newest_first(repository.image_details)),
    )


def block_repository(repository: RepositoryPlan, blocked: Sequence[str]) -> RepositoryPlan:
    """A blocked run keeps everything; what would have happened stays visible in the reasons. A restore deletes
    nothing, so it stays a restore."""
    reason = blocked_reason(blocked)
    images = tuple(
        image
        if image.action == "restore"
        else image.model_copy(update={"action": "keep", "reasons": (reason, *image.reasons)})
        for image in repository.images
    )
    return repository.model_copy(update={"images": images})
