"""The demo's own check of what the real run did, read back from the emulator.

The expectations come from what was seeded (which image runs where, in the clusters, in ECS and in Lambda; which
index lists which children, which signature signs what) and from the registry as ECR describes it right before the
real sweep (tags, push and pull times), not from the plan. The result is compared with the registry as ECR
describes it afterwards, and with the two run reports. The planner is asked one thing only, to show that the
collector's protection mattered: what the same snapshot and rules would give without the collector's manifest
(`plan_without_source`). "verified" is printed only when every check ran and held.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention_dev.demo.registry import (
    DEPLOYED_KEPT,
    MIN_AGE,
    REPLICA_CLUSTER,
    REPLICA_REGION,
    UNMANAGED,
    DemoRegistry,
    InUseEntry,
)
from ecr_retention_dev.emulator.lifecycle import LifecycleExecution
from ecr_retention_dev.emulator.seeding import iter_details

Key = tuple[str, str]  # (repository, digest)

# The tags the demo's keep rules name, per repository pattern (demo/registry.py RULES).
PROTECTED_TAGS = {"app": ("latest", "dev"), "platform/*": ("stable",), "team-*/*": ("main", "release-*")}
DEPLOYED_PREFIX = "deployed-prod-"  # app keeps the DEPLOYED_KEPT newest images carrying such a tag
PULLED_WITHIN = ("docker.io/*", timedelta(days=30))  # the cache keeps what was pulled within 30 days


@dataclass(frozen=True)
class RegistryState:
    """describe-images of every repository, in every storage class: (repository, digest) -> detail."""

    images: dict[Key, dict[str, Any]]
    read_at: datetime

    def active(self, key: Key) -> bool:
        detail = self.images.get(key)
        return detail is not None and detail.get("imageStatus", "ACTIVE") == "ACTIVE"


def read_state(ecr: Any, repositories: Iterable[str], read_at: datetime) -> RegistryState:
    images: dict[Key, dict[str, Any]] = {}
    for repository in repositories:
        for detail in iter_details(ecr, repository, PaginationConfig={"PageSize": 1000}):
            images[(repository, detail["imageDigest"])] = detail
    return RegistryState(images, read_at)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    offenders: tuple[str, ...] = ()


@dataclass
class Verification:
    deleted: set[Key] = field(default_factory=set)
    archived: set[Key] = field(default_factory=set)
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)


def plan_without_source(
    config: RetentionConfig, snapshot: Snapshot, inventory: Inventory, sources: Collection[str], now: datetime
) -> Plan:
    """The plan of a team without the collector, on the same snapshot: the inventory without the manifests of
    `sources` (the collector's: ECS and Lambda's, and Amazon Inspector's reading), and the rules without them in
    safety.clusters (else a missing manifest would block the run)."""
    clusters = tuple(cluster for cluster in config.safety.clusters if str(cluster) not in sources)
    rules = config.model_copy(update={"safety": config.safety.model_copy(update={"clusters": clusters})})
    rest = Inventory(
        manifests=tuple(manifest for manifest in inventory.manifests if manifest.cluster not in sources),
        misfiled={name: manifest for name, manifest in inventory.misfiled.items() if manifest.cluster not in sources},
        problems=dict(inventory.problems),
    )
    return plan_registry(rules, snapshot, rest, now)


def planned_actions(plan: Plan) -> dict[Key, str]:
    """(repository, digest) -> keep, delete or archive; a blocked plan removes nothing."""
    return {
        (repository.repository_name, decision.image_digest): "keep" if plan.blocked else decision.action
        for repository in plan.repositories
        for decision in repository.images
    }


def verify(
    registry: DemoRegistry,
    before: RegistryState,
    after: RegistryState,
    announced: RunReport,
    report: RunReport,
    without_collector: Plan,
    blocked_by: str | None = None,
) -> Verification:
    """`without_collector`: plan_without_source for the collector's manifest, on the dry run's snapshot. `blocked_by`:
    an expected cluster whose manifest the demo deleted before the real sweep, which must block it: then nothing may
    be removed, and the in-use image found archived is still restored (restoring deletes nothing)."""
    result = Verification(
        deleted={key for key in before.images if key not in after.images},
        archived={key for key in before.images if before.active(key) and _status(after, key) == "ARCHIVED"},
    )
    if blocked_by is None:
        result.checks.append(something_removed(result))
    else:
        result.checks.append(blocked(report, result, blocked_by))
    result.checks.append(report_exact(registry, report, result))
    if blocked_by is None:
        result.checks.append(dry_run_announced(registry, announced, result))
    result.checks += kept_checks(registry, before, after, announced, report, without_collector)
    return result


def something_removed(result: Verification) -> Check:
    return Check(
        "something removed",
        bool(result.deleted) and bool(result.archived),
        f"{len(result.deleted)} deleted, {len(result.archived)} archived",
    )


def blocked(report: RunReport, result: Verification, cluster: str) -> Check:
    """The run was blocked by `cluster`'s missing manifest and removed nothing."""
    # A run over several Regions names the Regions a reason blocks first ("eu-west-1, us-east-1: cluster dev: ...").
    reasons = [reason for reason in report.blocked if re.search(rf"(?:^|: )cluster {re.escape(cluster)}:", reason)]
    return Check(
        "blocked",
        report.outcome == "blocked" and bool(reasons) and not _removed(result),
        f"{reasons[0] if reasons else 'not blocked'}: {len(result.deleted)} deleted, {len(result.archived)} archived",
    )


def report_exact(registry: DemoRegistry, report: RunReport, result: Verification) -> Check:
    reported_deleted, reported_archived = _entries(report, "deleted"), _entries(report, "archived")
    return Check(
        "the report is exact",
        reported_deleted == result.deleted and reported_archived == result.archived,
        "the run report lists exactly the images that are gone or archived",
        _labels(registry, (reported_deleted | reported_archived) ^ _removed(result)),
    )


def dry_run_announced(registry: DemoRegistry, announced: RunReport, result: Verification) -> Check:
    announced_removed = _entries(announced, "deleted") | _entries(announced, "archived")
    return Check(
        "the dry run announced it",
        announced_removed == _removed(result),
        "the real run removed exactly what the dry run said it would",
        _labels(registry, announced_removed ^ _removed(result)),
    )


def kept_checks(
    registry: DemoRegistry,
    before: RegistryState,
    after: RegistryState,
    announced: RunReport,
    report: RunReport,
    without_collector: Plan,
) -> list[Check]:
    """What must still be there after the real sweep, each kind of image one check."""

    def kept(name: str, keys: set[Key], what: str) -> Check:
        return kept_check(registry, after, name, keys, what)

    return [
        kept("in use", set(registry.in_use_digests()), "images the clusters run (by digest or by tag)"),
        aws_workloads_kept(registry, after, without_collector),
        kept(
            "replicated",
            set(registry.replicated_in_use()),
            f"image {REPLICA_CLUSTER} runs in {REPLICA_REGION}, where app's deletions replicate",
        ),
        restored_in_use(registry, before, after, announced, report),
        kept("protected", set(protected(before)), "images a keep rule protects by tag or pull"),
        kept("young", young(before), "images pushed less than a day ago"),
        kept("referenced", referenced(registry, after), "children and signatures of what remains"),
        kept("untouched", unmanaged(before), f"images of {UNMANAGED}, which no policy matches"),
    ]


def kept_check(registry: DemoRegistry, after: RegistryState, name: str, keys: set[Key], what: str) -> Check:
    """`keys` are all still there (ACTIVE), and there is at least one to check."""
    gone = _gone(after, keys)
    return Check(name, bool(keys) and not gone, f"{len(keys)} {what}: {_still_there(gone)}", _labels(registry, gone))


def aws_workloads_kept(registry: DemoRegistry, after: RegistryState, without_collector: Plan) -> Check:
    """The images of the seeded ECS service and Lambda function are still there, and the rules alone would have
    removed each of them: the collector's manifest is what kept them."""
    keys = {(workload.repository, workload.digest) for workload in registry.aws_workloads}
    gone = _gone(after, keys)
    actions = planned_actions(without_collector)
    unneeded = sorted(key for key in keys if actions.get(key, "keep") == "keep")
    detail = (
        f"{len(keys)} images an ECS service and a Lambda function use: {_still_there(gone)}"
        f"; without the collector's manifest the plan removes {len(keys) - len(unneeded)} of them"
    )
    offenders = [f"{registry.labelled(*key)}: removed" for key in gone] + [
        f"{registry.labelled(*key)}: kept even without the collector's manifest" for key in unneeded
    ]
    return Check("ECS and Lambda", bool(keys) and not gone and not unneeded, detail, tuple(offenders))


def restored_in_use(
    registry: DemoRegistry, before: RegistryState, after: RegistryState, announced: RunReport, report: RunReport
) -> Check:
    """The in-use images a native pull-time rule archived were ARCHIVED before the real sweep and are ACTIVE after it;
    the real run's report lists them as restored, and the dry run's as would restore."""
    keys = set(registry.archived_in_use)
    offenders = [
        f"{registry.labelled(*key)}: {_status(before, key)} before, {_status(after, key)} after"
        for key in sorted(keys)
        if _status(before, key) != "ARCHIVED" or _status(after, key) != "ACTIVE"
    ]
    for name, run in (("the real run", report), ("the dry run", announced)):
        listed = {(repo.repository_name, entry.image_digest) for repo in run.repositories for entry in repo.restored}
        offenders += [f"{registry.labelled(*key)}: not in {name}'s restored" for key in sorted(keys - listed)]
    detail = f"{len(keys)} in-use image archived by a native pull-time rule: " + (
        "restored, ACTIVE again" if not offenders else "NOT restored"
    )
    return Check("restored", bool(keys) and not offenders, detail, tuple(offenders))


def protected(before: RegistryState) -> Iterator[Key]:
    """Images carrying a tag a keep rule names, backend releases the frontend also has, cache images pulled
    within 30 days, and the newest app images deployed to production."""
    frontend_tags = {tag for (repo, _), detail in before.images.items() if repo == "frontend" for tag in _tags(detail)}
    for key, detail in before.images.items():
        if _kept_by_a_rule(key[0], detail, frontend_tags, before.read_at):
            yield key
    yield from newest_deployed(before)


def _kept_by_a_rule(repository: str, detail: dict[str, Any], frontend_tags: set[str], read_at: datetime) -> bool:
    tags = _tags(detail)
    named = next((names for pattern, names in PROTECTED_TAGS.items() if matches_any(repository, (pattern,))), ())
    return (
        any(matches_any(tag, named) for tag in tags)
        or _recently_pulled(repository, detail, read_at)
        or (repository == "backend" and bool(frontend_tags.intersection(tags)))
    )


def _recently_pulled(repository: str, detail: dict[str, Any], read_at: datetime) -> bool:
    pattern, within = PULLED_WITHIN
    return matches_any(repository, (pattern,)) and read_at - _last_used(detail) < within


def newest_deployed(before: RegistryState) -> list[Key]:
    """The DEPLOYED_KEPT newest app images carrying a deployed-prod- tag (the newest push first, then by digest)."""
    deployed = [
        (_pushed(detail), key)
        for key, detail in before.images.items()
        if key[0] == "app" and any(tag.startswith(DEPLOYED_PREFIX) for tag in _tags(detail))
    ]
    deployed.sort(key=lambda item: (-item[0].timestamp(), item[1][1]))
    return [key for _, key in deployed[:DEPLOYED_KEPT]]


def young(before: RegistryState) -> set[Key]:
    return {key for key, detail in before.images.items() if before.read_at - _pushed(detail) < MIN_AGE}


def unmanaged(before: RegistryState) -> set[Key]:
    return {key for key in before.images if key[0] == UNMANAGED}


def referenced(registry: DemoRegistry, after: RegistryState) -> set[Key]:
    """The children of every index that is still there, and the signatures and SBOMs of every image that is."""
    needed: set[Key] = set()
    for (repository, digest), seeded in registry.images.items():
        if seeded.children and after.active((repository, digest)):
            needed.update((repository, child) for child in seeded.children)
        if seeded.subject and after.active((repository, seeded.subject)):
            needed.add((repository, digest))
    return needed


def _removed(result: Verification) -> set[Key]:
    return result.deleted | result.archived


def _gone(after: RegistryState, keys: set[Key]) -> list[Key]:
    return sorted(key for key in keys if not after.active(key))


def _still_there(gone: list[Key]) -> str:
    return "all still there" if not gone else f"{len(gone)} removed"


def _labels(registry: DemoRegistry, keys: Iterable[Key]) -> tuple[str, ...]:
    return tuple(registry.labelled(*key) for key in sorted(keys))


def _entries(report: RunReport, which: str, region: str | None = None) -> set[Key]:
    """The report's removals of one kind in the registry of `region` (None: the run's own, the home Region's)."""
    where = region or report.region
    return {
        (repo.repository_name, entry.image_digest)
        for repo in report.repositories
        if (repo.region or report.region) == where
        for entry in (repo.deleted if which == "deleted" else repo.archived)
    }


# --- the second Region the deployment prunes ------------------------------------------------------------------


@dataclass(frozen=True)
class OtherRegion:
    """us-east-1 as seeded, and as ECR describes it right before and after the real sweep."""

    registry: DemoRegistry
    before: RegistryState
    after: RegistryState

    @property
    def region(self) -> str:
        return self.registry.ecr.region


def other_region_checks(
    other: OtherRegion, home: DemoRegistry, announced: RunReport, report: RunReport, *, blocked: bool = False
) -> list[Check]:
    """In the other Region: what its clusters and the home Region's run from it is still there; what went is what
    its own report deleted plus what the home registry's deletions replicated there (app, deleteReplication), never
    one image by both Regions' rules; and the dry run announced its own deletions."""
    region = other.region
    gone = {key for key in other.before.images if not other.after.active(key)}
    own = _entries(report, "deleted", region) | _entries(report, "archived", region)
    replicated = {key for key in _entries(report, "deleted") if key[0] == "app" and key in other.before.images}
    in_use = set(other.registry.in_use_digests())
    checks = [
        Check(
            f"in use in {region}",
            bool(in_use) and not _gone(other.after, in_use),
            f"{len(in_use)} images the clusters of both Regions run from {region}: "
            f"{_still_there(_gone(other.after, in_use))}",
            _labels(other.registry, _gone(other.after, in_use)),
        ),
        Check(
            f"{region}'s report is exact",
            gone == own | replicated and not own & replicated,
            f"{len(own)} removed by {region}'s rules, {len(replicated)} by the replication of {home.ecr.region}'s "
            "deletions, none counted by both",
            _labels(other.registry, gone ^ (own | replicated)),
        ),
    ]
    if not blocked:
        planned = _entries(announced, "deleted", region) | _entries(announced, "archived", region)
        checks.append(
            Check(
                f"the dry run announced {region}'s",
                bool(own) and planned == own,
                f"the real run removed in {region} exactly what the dry run said it would",
                _labels(other.registry, planned ^ own),
            )
        )
    return checks


def _tags(detail: dict[str, Any]) -> list[str]:
    return list(detail.get("imageTags", []))


def _status(state: RegistryState, key: Key) -> str | None:
    detail = state.images.get(key)
    return None if detail is None else str(detail.get("imageStatus", "ACTIVE"))


def _pushed(detail: dict[str, Any]) -> datetime:
    pushed: datetime = detail["imagePushedAt"]
    return pushed


def _last_used(detail: dict[str, Any]) -> datetime:
    pulled: datetime | None = detail.get("lastRecordedPullTime")
    return pulled or _pushed(detail)


# --- step 5: a native lifecycle policy deletes an image dev runs ------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    """One message the sentinel published, as the queue subscribed to the report topic received it."""

    subject: str
    message: str

    def names(self, text: str) -> bool:
        return text in self.subject or text in self.message


def verify_native_policy(
    registry: DemoRegistry,
    before: RegistryState,
    after: RegistryState,
    execution: LifecycleExecution,
    alerts: Sequence[Alert],
    report: RunReport,
    reference: str = "app:dev",
    *,
    emptied: str | None = None,
) -> Verification:
    """`reference` (`repository:tag`) runs in a cluster and the policy took its image: the sentinel's alert names the
    workloads that run it, the image and the lifecycle rule; the next sweep reports it in-use-missing, when and by
    what; and the registry lost exactly what the policy expired, nothing else (the sweep was a dry run). `emptied`:
    a cluster whose manifest is empty now; when it runs the reference, both say the in-use memory speaks for it."""
    repository, _, tag = reference.partition(":")
    result = Verification(deleted=_removed_since(before, after))
    workloads = sorted(
        {
            f"{entry.cluster}: {entry.namespace}/{entry.workload}"
            for entry in registry.in_use
            if _pulls(entry, reference)
        }
    )
    rule = f"lifecycle rule {_rule_of(execution, registry.tags[repository][tag])} of {repository}'s policy"
    result.checks += [
        alert_names(alerts, reference, workloads, rule),
        missing_reported(report, reference, workloads, rule),
        nothing_else_changed(registry, before, after, execution, report),
    ]
    if emptied is not None and any(entry.cluster == emptied for entry in registry.in_use if _pulls(entry, reference)):
        result.checks.append(memory_spoke(alerts, report, reference, emptied))
    return result


def memory_spoke(alerts: Sequence[Alert], report: RunReport, reference: str, cluster: str) -> Check:
    """The alert and the sweep's finding for the reference say why the in-use memory names what the cluster runs."""
    words = f"{cluster}'s manifest now reports 0 images; by the in-use memory {cluster} ran it"
    alerted = any(reference in alert.message and words in alert.message for alert in alerts)
    found = next((missing for missing in report.in_use_missing if missing.image == reference), None)
    reported = found is not None and words in found.detail
    offenders = (() if alerted else ("not in the alert",)) + (() if reported else ("not in the sweep's finding",))
    return Check(
        "the in-use memory spoke", alerted and reported, f"the alert and the finding say: {words} ...", offenders
    )


def _pulls(entry: InUseEntry, reference: str) -> bool:
    return entry.image.endswith(f"/{reference}")


def _rule_of(execution: LifecycleExecution, digest: str) -> int | None:
    return next((r.applied_rule_priority for r in execution.preview.preview_results if r.image_digest == digest), None)


def alert_names(alerts: Sequence[Alert], reference: str, workloads: list[str], rule: str) -> Check:
    """One alert names the reference, every workload that runs it, and the rule that took its image."""
    wanted = [reference, *workloads, rule]
    naming = [alert for alert in alerts if reference in alert.message]
    missing = [text for text in wanted if not any(text in alert.message for alert in naming)]
    detail = f"the sentinel's alert names {', '.join(workloads) or 'no workload'}, {reference} and {rule}"
    return Check(
        "alerted",
        bool(naming) and bool(workloads) and not missing,
        detail,
        tuple(f"not named: {text}" for text in missing),
    )


def missing_reported(report: RunReport, reference: str, workloads: list[str], rule: str) -> Check:
    """The sweep's report lists the reference as in-use-missing, with its workloads, when and by what."""
    found = next((missing for missing in report.in_use_missing if missing.image == reference), None)
    named = (
        {f"{workload.cluster}: {workload.namespace}/{workload.workload}" for workload in found.in_use_by}
        if found
        else set()
    )
    removed = found.removed if found is not None else None
    ok = removed is not None and removed.by_what == rule and set(workloads) <= named
    detail = f"the sweep's report lists {reference}: " + (
        removed.told if removed is not None else "NOT with when and by what"
    )
    return Check("in-use-missing", ok, detail, () if found else (f"{reference}: not in the report's inUseMissing",))


def nothing_else_changed(
    registry: DemoRegistry,
    before: RegistryState,
    after: RegistryState,
    execution: LifecycleExecution,
    report: RunReport,
) -> Check:
    """The registry lost exactly the images the policy expired, the rest is as it was (tags, storage status), and
    the sweep after it was a dry run."""
    expired = {(execution.repository, digest) for digest in execution.expired}
    removed = _removed_since(before, after)
    changed = [
        key
        for key in after.images
        if key in before.images and _as_compared(after.images[key]) != _as_compared(before.images[key])
    ]
    offenders = _labels(registry, removed ^ expired) + tuple(f"{registry.labelled(*key)}: changed" for key in changed)
    return Check(
        "nothing else changed",
        removed == expired and not changed and report.dry_run,
        f"the registry lost exactly the {len(expired)} images the policy expired; the sweep was a dry run",
        offenders,
    )


def _removed_since(before: RegistryState, after: RegistryState) -> set[Key]:
    return {key for key in before.images if key not in after.images}


def _as_compared(detail: dict[str, Any]) -> tuple[object, ...]:
    return (sorted(_tags(detail)), detail.get("imageStatus", "ACTIVE"))
