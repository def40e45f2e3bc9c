"""Every text the plan shows: how a rule reads, why an image is kept, deleted or archived, and the
warnings about one repository. The planner decides; this module only words its decisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from ecr_retention.domain.config import DeleteRule, KeepRule, Selector
from ecr_retention.domain.durations import format_duration, humanize_age
from ecr_retention.domain.holds.protection import LiveHold
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.planning.plan import REMOVALS, Action, Decision
from ecr_retention.domain.planning.plan_parts import Reason, ReplicaRegistry
from ecr_retention.domain.planning.reasons import words_of
from ecr_retention.domain.planning.repository import DependentKind, DisplacedSlots
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.timestamps import format_timestamp

MAX_USAGES_IN_DETAIL = 3
MAX_FUTURE_IMAGES_NAMED = 5
MAX_UNKNOWN_INDEXES_NAMED = 3


def image_label(image: ImageDetail) -> str:
    """`1a2b3c4d5e6f (v1, latest)`: how warnings and reasons name an image."""
    tags = sorted(image.image_tags)[:3]
    return f"{short_digest(image.image_digest)} ({', '.join(tags)})" if tags else short_digest(image.image_digest)


# --- rules ---------------------------------------------------------------------------------------


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


def keep_rule_reason(name: str, keep: KeepRule) -> Reason:
    return Reason(kind="keep-rule", rule=name, detail=describe_keep(keep))


def delete_rule_reason(name: str, rule: DeleteRule) -> Reason:
    return Reason(kind="delete-rule", rule=name, detail=describe_delete(rule))


def keep_newest_reason(name: str, rule: DeleteRule) -> Reason:
    return Reason(
        kind="keep-newest", rule=name, detail=f"one of the {rule.keep_newest} newest images this rule selects"
    )


def unmet_condition(rule: DeleteRule, image: ImageDetail, now: datetime) -> str | None:
    """Why a delete rule that selects the image does not mark it; None when it would."""
    if image.image_status == "ACTIVATING":
        return "being restored from archive"
    if rule.archive and image.image_status == "ARCHIVED":
        return "already archived"
    if rule.older_than is not None and not now - image.image_pushed_at > rule.older_than:
        return f"pushed {humanize_age(now - image.image_pushed_at)} ago, not older than " + format_duration(
            rule.older_than
        )
    if rule.not_pulled_within is not None and not now - image.last_activity > rule.not_pulled_within:
        return f"last pulled or pushed {humanize_age(now - image.last_activity)} ago, within " + format_duration(
            rule.not_pulled_within
        )
    return None


def no_delete_rule_reason(misses: Sequence[tuple[str, DeleteRule]], image: ImageDetail, now: datetime) -> Reason:
    """Why nothing marks a kept image: no delete rule selects it, or the first that does names its unmet condition."""
    if not misses:
        return Reason(kind="no-delete-rule", detail="no delete rule selects it")
    rule, delete = misses[0]
    why = unmet_condition(delete, image, now)
    more = f" (and {len(misses) - 1} more rules)" if len(misses) > 1 else ""
    return Reason(kind="no-delete-rule", rule=rule, detail=f"no delete rule marks it: {why}{more}")


def unknown_tag_source_warning(repository_name: str, pattern: str) -> str:
    return (
        f"{repository_name}: tag_in_repositories {pattern!r} names no other repository in the snapshot; "
        "keep rules that use it keep every image they select, delete rules that use it select none"
    )


# --- guards --------------------------------------------------------------------------------------


def in_use_reasons(usages: Sequence[Workload]) -> list[Reason]:
    """What the manifests name now, then what only the in-use memory still names (rule `remembered`): a workload a
    current manifest names is not repeated from the memory."""
    current = [usage for usage in usages if usage.remembered is None]
    running = {usage.runs_where for usage in current}
    remembered = [usage for usage in usages if _only_remembered(usage, running)]
    reasons = [in_use_reason(current)] if current else []
    if remembered:
        reasons.append(in_use_reason(remembered, rule="remembered", separator="; "))
    return reasons


def _only_remembered(usage: Workload, running: set[tuple[str, str, str, str, str | None]]) -> bool:
    """A workload the memory names where no current manifest has it run."""
    return usage.remembered is not None and usage.runs_where not in running


def in_use_reason(usages: Sequence[Workload], *, rule: str | None = None, separator: str = ", ") -> Reason:
    # Amazon Inspector's reading last: the workloads a cluster names say more, and come first when the detail is cut.
    unique = sorted(set(usages), key=lambda usage: (usage.inspector is not None, str(usage)))
    shown = separator.join(str(u) for u in unique[:MAX_USAGES_IN_DETAIL])
    more = len(unique) - MAX_USAGES_IN_DETAIL
    return Reason(kind="in-use", rule=rule, detail=shown + (f" and {more} more" if more > 0 else ""))


def quarantine_entry_reason(quarantine: timedelta, marked_by: str | None) -> Reason:
    return Reason(
        kind="quarantine",
        rule=marked_by,
        detail=f"archived instead of deleted, for safety.quarantine {format_duration(quarantine)}",
    )


def quarantine_exit_reason(archived_for: timedelta, quarantine: timedelta, marked_by: str | None) -> Reason:
    return Reason(
        kind="quarantine",
        rule=marked_by,
        detail=f"archived {humanize_age(archived_for)} ago, past safety.quarantine {format_duration(quarantine)}: "
        "deleted for good",
    )


def quarantine_wait_reason(
    archived_at: datetime, now: datetime, quarantine: timedelta, marked_by: str | None
) -> Reason:
    return Reason(
        kind="quarantine",
        rule=marked_by,
        detail=f"in quarantine: archived {humanize_age(now - archived_at)} ago, deleted after "
        f"{format_timestamp(archived_at + quarantine)} (safety.quarantine {format_duration(quarantine)})",
    )


def quarantine_unknown_reason(marked_by: str | None) -> Reason:
    return Reason(
        kind="quarantine",
        rule=marked_by,
        detail="archived, but ECR reports no lastArchivedAt: kept, since the quarantine cannot tell how long it has "
        "been archived",
    )


def replica_reason(source_region: str, repository_name: str) -> Reason:
    """An image replicated here from a registry this deployment also prunes, whose deletions replicate here."""
    return Reason(
        kind="replica",
        detail=f"a replica of {repository_name} in {source_region}, whose deletions replicate here "
        f"(deleteReplication): {source_region}'s rules decide it",
    )


RESTORING_REASON = Reason(kind="restoring", detail=words_of("restoring"))
RESTORE_OFF_REASON = Reason(kind="in-use-archived", detail=words_of("in-use-archived"))


def archived_in_use_warning(repository_name: str, decision: Decision) -> str:
    """Names an in-use image found archived that is not restored (safety.restore_in_use false), and its workloads."""
    workloads = next((r.detail for r in decision.reasons if r.kind == "in-use"), None)
    index = next((r.detail for r in decision.reasons if r.kind == "index-child"), "")
    used = f"used by {workloads}" if workloads is not None else f"the child of an in-use index ({index})"
    label = short_digest(decision.image_digest) + (
        f" ({', '.join(decision.image_tags[:3])})" if decision.image_tags else ""
    )
    return (
        f"{repository_name}: in-use image {label} is archived, {used}; safety.restore_in_use is false, "
        "so it stays archived: restore it with ecr-retention restore"
    )


def min_age_reason(age: timedelta, min_age: timedelta) -> Reason:
    pushed = (
        f"pushed {humanize_age(-age)} in the future, so counted as 0s old:"
        if age < timedelta(0)
        else f"pushed {humanize_age(age)} ago,"
    )
    return Reason(kind="min-age", detail=f"{pushed} within min_age {format_duration(min_age)}")


def unknown_index_reason(index_digests: Sequence[str]) -> Reason:
    listed = ", ".join(short_digest(d) for d in index_digests[:MAX_UNKNOWN_INDEXES_NAMED])
    return Reason(
        kind="index-child",
        detail=f"the snapshot lacks the manifest of index {listed}, so any image here may be its child",
    )


# --- decisions -----------------------------------------------------------------------------------

REFERENCE_CYCLE = Reason(kind="index-child", detail="manifest references form a cycle")


def _parent_label(kind: DependentKind, parent: ImageDetail) -> str:
    return f"{'index' if kind == 'index-child' else 'subject'} {image_label(parent)}"


def parent_kept_reason(kind: DependentKind, parent: ImageDetail) -> Reason:
    return Reason(kind=kind, detail=f"{_parent_label(kind, parent)} is kept")


def goes_with_parent_reason(kind: DependentKind, parent: ImageDetail, parent_action: Action) -> Reason:
    verb = "archived" if parent_action == "archive" else "deleted"
    return Reason(kind=kind, detail=f"goes with {_parent_label(kind, parent)}, which is {verb}")


def subject_gone_reason(subject: str) -> Reason:
    return Reason(kind="referrer", detail=f"its subject {short_digest(subject)} is gone from the repository")


def too_many_removals(removed: int, total: int, max_delete_fraction: float) -> str:
    return (
        f"the plan removes {removed} of {total} images ({removed / total:.0%}), "
        f"more than max_delete_fraction {max_delete_fraction:g}; nothing is deleted here"
    )


def skipped_reason(skipped: str) -> Reason:
    return Reason(kind="skipped", detail=skipped)


def no_policy_reason() -> Reason:
    return Reason(kind="no-policy", detail=words_of("no-policy"))


def unwatched_replica_warning(repository_name: str, replica: ReplicaRegistry) -> str:
    return (
        f"{repository_name}: deletions replicate to {replica}, where no expected cluster reports: list the clusters "
        "that run there in safety.clusters, or a deletion here may remove what they run"
    )


def assumed_delete_replication_warning(rule_index: int) -> str:
    return (
        f"snapshot replication rules[{rule_index}]: no deleteReplication field, read as replicating deletions (the "
        "safe side); an AWS CLI whose botocore predates ECR's replication of deletions drops it: take the snapshot "
        "with ecr-retention snapshot or a newer CLI"
    )


def blocked_reason(blocked: Sequence[str]) -> Reason:
    return Reason(kind="blocked", detail="; ".join(blocked))


# --- warnings about images pushed after the plan's time --------------------------------------------


def future_image_warnings(
    repository_name: str,
    future: Sequence[ImageDetail],
    displaced: Sequence[DisplacedSlots],
    actions: Mapping[str, Action],
    now: datetime,
) -> list[str]:
    """Name the images pushed after `now`, and the older images removed because they took keep_newest slots."""
    warnings = [
        f"{repository_name}: image {image_label(image)} was pushed {humanize_age(image.image_pushed_at - now)} "
        f"after the plan's time ({format_timestamp(image.image_pushed_at)}); it ranks as the newest image "
        "and counts as 0s old: kept as young, and it takes keep_newest slots"
        for image in future[:MAX_FUTURE_IMAGES_NAMED]
    ]
    if len(future) > MAX_FUTURE_IMAGES_NAMED:
        warnings.append(
            f"{repository_name}: {len(future) - MAX_FUTURE_IMAGES_NAMED} more images were pushed after the plan's time"
        )
    for slots in displaced:
        removed = [image for image in slots.displaced if actions[image.image_digest] in REMOVALS]
        if removed:
            warnings.append(f"{repository_name}: {slots.rule}: {_lost_slots(slots, removed, actions)}")
    return warnings


def _lost_slots(slots: DisplacedSlots, removed: Sequence[ImageDetail], actions: Mapping[str, Action]) -> str:
    verbs = {actions[image.image_digest] for image in removed}
    verb = "archived" if verbs == {"archive"} else "deleted" if verbs == {"delete"} else "removed"
    takers = ", ".join(image_label(image) for image in slots.future_in_slots)
    taken = (
        f"the future image {takers} takes one"
        if len(slots.future_in_slots) == 1
        else f"the future images {takers} take {len(slots.future_in_slots)}"
    )
    losers = ", ".join(image_label(image) for image in removed)
    lost = f"{losers} is {verb} in its place" if len(removed) == 1 else f"{losers} are {verb} in their place"
    return f"{taken} of its {slots.keep_newest} keep_newest slots, so {lost}"


def hold_reasons(holds: Sequence[LiveHold], image_tags: Sequence[str], now: datetime) -> list[Reason]:
    """One reason per hold in force on the image (owner, until, reason); a hold placed by a tag the image no longer
    carries says that the tag has moved (the hold stays on the digest it was placed on)."""
    reasons = []
    for held in holds:
        detail = held.words(now)
        tag = held.hold.tag if held.hold is not None else None
        if tag is not None and tag not in image_tags:
            detail += f" (placed by tag {tag}, which has moved since: the hold stays on this digest)"
        reasons.append(Reason(kind="hold", detail=detail))
    return reasons
